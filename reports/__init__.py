"""Experiment reports: the paper's tables, plots and an HTML page per experiment, built from the
results of finished runs. Above ``models`` (it reads STS reports), below ``workflows``."""
