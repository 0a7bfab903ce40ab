"""The error type for the user's mistakes, as opposed to bugs."""


class InputError(ValueError):
    """A problem with the user's input files or parameters, reported in one line that names the
    file or parameter and what is wrong. ``luigi --module workflows …`` prints it without a
    traceback (workflows.console_errors) and exits non-zero; a traceback is kept for bugs."""
