"""Beam pipelines, one module per stage, built from corpus/ and models/ functions."""
