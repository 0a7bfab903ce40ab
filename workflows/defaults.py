"""Luigi settings the package ships, so that ``luigi --module workflows …`` behaves the same from
any folder: a ``luigi.cfg`` in the working directory (or ``LUIGI_CONFIG_PATH``) only overrides
them, option by option."""

from __future__ import annotations

import luigi

PACKAGE_DEFAULTS = {
    # Luigi's scheduling events show with --log-level INFO; the stages' progress, warnings and
    # the result always show; --log-level DEBUG adds every library's messages.
    # no_lock: Luigi's process lock compares command lines only, so the same command run in two
    # folders (other inputs, other work directories) was refused; each output has its own lock
    # (workflows.fingerprints.exclusive_lock), which lets a second run on the same work directory wait.
    "core": {"log_level": "WARNING", "no_lock": "true"},
    # One GPU: at most one task that declares the resource {"gpu": 1} runs at a time.
    "resources": {"gpu": "1"},
    # Exit status (Luigi's recommended codes; 0 only when every task succeeded).
    "retcode": {"already_running": "10", "missing_data": "20", "not_run": "25", "task_failed": "30",
                "scheduling_error": "35", "unhandled_exception": "40"},
}


def apply_package_defaults(config: luigi.configuration.LuigiConfigParser | None = None) -> None:
    """Set every package default the user's configuration leaves unset."""
    config = config or luigi.configuration.get_config()
    for section, options in PACKAGE_DEFAULTS.items():
        for option, value in options.items():
            if not config.has_option(section, option):
                if not config.has_section(section):
                    config.add_section(section)
                config.set(section, option, value)
