"""What ``luigi --module workflows …`` prints: each event once, stage progress, third-party
chatter only with ``--log-level DEBUG``, and the result of the command at its end.

Luigi logs its own events through the ``luigi-interface`` logger with its own handler, at
``[core] log_level`` (luigi.cfg: WARNING, so its scheduling events show with ``--log-level
INFO``). Everything else reaches one handler on the root logger, which shows the stages'
progress (the ``paranmt`` logger, INFO) and other libraries' warnings; with ``--log-level DEBUG``
it shows every library's messages as well (Beam's workers through ``pipelines.options``).
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

import luigi
from luigi.cmdline_parser import CmdlineParser
from luigi.task_register import Register

STAGES = logging.getLogger("paranmt")
_LUIGI = logging.getLogger("luigi-interface")


class _ConsoleFormat(logging.Formatter):
    """``12:03:04 ingest: 400 pairs`` for the stages' progress (``paranmt`` and its children);
    the level and source for anything else."""

    def format(self, record: logging.LogRecord) -> str:
        self._style._fmt = ("%(asctime)s %(message)s" if record.levelno == logging.INFO and record.name.startswith(STAGES.name)
                            else "%(asctime)s %(levelname)s %(name)s: %(message)s")
        return super().format(record)


def install() -> None:
    """One console handler on the root logger; Luigi's own messages go only to Luigi's handler
    (without this they also reached a root handler: every Luigi line printed twice); Ctrl-C said
    in one line. workflows/__init__.py calls it (again: nothing is installed twice)."""
    root = logging.getLogger()
    if not any(isinstance(handler.formatter, _ConsoleFormat) for handler in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(_ConsoleFormat(datefmt="%H:%M:%S"))
        root.addHandler(handler)
    _LUIGI.propagate = False
    STAGES.setLevel(logging.INFO)
    _handle_ctrl_c()


def log_level() -> int:
    """The level asked for with ``--log-level`` / ``[core] log_level`` (Luigi sets it on its logger)."""
    return _LUIGI.getEffectiveLevel()


@luigi.Task.event_handler(luigi.Event.START)
def _follow_log_level(task: luigi.Task) -> None:
    """``--log-level DEBUG`` shows every library's messages (Luigi applies it after import)."""
    if log_level() <= logging.DEBUG:
        logging.getLogger().setLevel(logging.DEBUG)
        STAGES.setLevel(logging.DEBUG)


# -- --help: each parameter once, with its default -------------------------------------------

def _with_defaults(build_parser):
    """Luigi's parser, where the root task's ``--Task-param`` twins of its ``--param`` flags and
    its parameters of HIDDEN visibility (older spellings, kept) are hidden from the help (all
    still parse; Luigi itself lists hidden ones), every help line of the root task ends with the
    default in force (luigi.cfg's value where it sets one), and a ``%`` in any description
    (``--help-all`` shows every task's) is text, not an argparse format (``95 % interval`` made
    ``--help-all`` end in a traceback)."""

    def build(root_task=None, help_all=False):
        parser = build_parser(root_task, help_all)
        if not root_task or root_task not in Register._get_reg():
            return parser
        task = Register.get_task_cls(root_task)
        defaults = {name: parameter_default(task, name) for name, _ in task.get_params()}
        hidden = {name for name, parameter in task.get_params() if parameter.visibility == luigi.parameter.ParameterVisibility.HIDDEN}
        for action in parser._actions:
            flag = action.option_strings[0] if action.option_strings else ""
            name = flag[2:].replace("-", "_")
            if (flag.startswith(f"--{root_task}-") and name[len(root_task) + 1:] in defaults) or name in hidden:
                action.help = argparse.SUPPRESS
            elif action.help != argparse.SUPPRESS and (action.help or name in defaults):
                default = f" Default: {defaults[name]}" if name in defaults else ""
                action.help = f"{action.help or ''}{default}".replace("%", "%%")
        return parser

    return build


def parameter_default(task: type[luigi.Task], name: str) -> str:
    """The value a parameter takes when not given on the command line, as the help shows it."""
    parameter = dict(task.get_params())[name]
    value = parameter._get_value(task.get_task_family(), name)
    if value is luigi.parameter._no_value:
        return "(required)"
    text = parameter.serialize(value)
    return repr(text) if text == "" else str(text)


CmdlineParser._build_parser = staticmethod(_with_defaults(CmdlineParser._build_parser))


# -- the result, printed at the end of the command --------------------------------------------

def _is_the_commands_task(task: luigi.Task) -> bool:
    """Whether ``task`` is the one the command line names (not another task of its family: a
    DecileSweep cell, or the task TrainOnFiltered --decile auto chose, is a TrainOnFiltered too)."""
    parser = CmdlineParser.get_instance()
    return bool(parser) and task.get_task_family() == parser.known_args.root_task and task.task_id == parser.get_task_obj().task_id


@luigi.Task.event_handler(luigi.Event.SUCCESS)
@luigi.Task.event_handler(luigi.Event.DEPENDENCY_PRESENT)
def _print_result(task: luigi.Task) -> None:
    """The command's own task prints its result last (also when it was already complete): the
    text of its ``result_summary()``, for the tasks a user runs to get a result (each task says
    its own, so this module knows no task)."""
    summarize = getattr(task, "result_summary", None)
    if summarize and _is_the_commands_task(task) and (text := summarize()):
        print(f"\n{text}", flush=True)


# -- Ctrl-C ------------------------------------------------------------------------------------

_INTERRUPTED = threading.Event()


def _ctrl_c(signum, frame):
    """Python's own SIGINT handler (KeyboardInterrupt in the main thread), remembering it came."""
    _INTERRUPTED.set()
    raise KeyboardInterrupt


def interrupted() -> bool:
    """Whether Ctrl-C was pressed: what fails after it is its consequence, not a fault to report."""
    return _INTERRUPTED.is_set()


def _interrupted_in_one_line(previous):
    """``sys.excepthook`` that says a Ctrl-C in one line instead of its traceback (a stage's work
    is in its ``.partial`` directory, so nothing looks finished and the same command resumes);
    the process still ends by SIGINT (exit status 130). Other errors go to ``previous``."""

    def hook(kind, error, trace):
        if issubclass(kind, KeyboardInterrupt):
            print("\ninterrupted: nothing unfinished looks finished; run the same command again to resume", file=sys.stderr, flush=True)
        else:
            previous(kind, error, trace)

    return hook


def _quiet_after_ctrl_c(previous):
    """``threading.excepthook`` that, after a Ctrl-C, drops the errors of threads it stopped
    (Beam's, whose worker processes the Ctrl-C ended too)."""
    return lambda args: None if _INTERRUPTED.is_set() else previous(args)


def _handle_ctrl_c() -> None:
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _ctrl_c)
        sys.excepthook = _interrupted_in_one_line(sys.excepthook)
        threading.excepthook = _quiet_after_ctrl_c(threading.excepthook)

