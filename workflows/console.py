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
import json
import logging
from pathlib import Path

import luigi
from luigi.cmdline_parser import CmdlineParser
from luigi.task_register import Register

STAGES = logging.getLogger("paranmt")
_LUIGI = logging.getLogger("luigi-interface")


class _ConsoleFormat(logging.Formatter):
    """``12:03:04 ingest: 400 pairs`` for the stages' progress (``paranmt`` and its children);
    the level and source for anything else."""

    def format(self, record: logging.LogRecord) -> str:
        self._style._fmt = "%(asctime)s %(message)s" if record.levelno == logging.INFO and record.name.startswith(STAGES.name) else "%(asctime)s %(levelname)s %(name)s: %(message)s"
        return super().format(record)


def install() -> None:
    """One console handler on the root logger; Luigi's own messages go only to Luigi's handler
    (without this they also reached a root handler: every Luigi line printed twice)."""
    root = logging.getLogger()
    if not any(isinstance(handler.formatter, _ConsoleFormat) for handler in root.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(_ConsoleFormat(datefmt="%H:%M:%S"))
        root.addHandler(handler)
    _LUIGI.propagate = False
    STAGES.setLevel(logging.INFO)


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
    """Luigi's parser, where the root task's ``--Task-param`` twins of its ``--param`` flags are
    hidden from the help (both still parse) and every help line ends with the default in force
    (luigi.cfg's value where it sets one)."""

    def build(root_task=None, help_all=False):
        parser = build_parser(root_task, help_all)
        if not root_task or root_task not in Register._get_reg():
            return parser
        task = Register.get_task_cls(root_task)
        defaults = {name: parameter_default(task, name) for name, _ in task.get_params()}
        for action in parser._actions:
            flag = action.option_strings[0] if action.option_strings else ""
            name = flag[2:].replace("-", "_")
            if flag.startswith(f"--{root_task}-") and name[len(root_task) + 1:] in defaults:
                action.help = argparse.SUPPRESS
            elif name in defaults and action.help != argparse.SUPPRESS:
                action.help = f"{action.help or ''} Default: {defaults[name]}".replace("%", "%%")
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

def _root_task_family() -> str | None:
    parser = CmdlineParser.get_instance()
    return parser.known_args.root_task if parser else None


def corpus_summary(summary_dir: Path) -> str:
    """BuildParaNMT's result from AssignDeciles' summary.json: where, pairs, rejects, deciles."""
    summary = json.loads((summary_dir / "summary.json").read_text())
    lines = [f"ParaNMT corpus: {summary['rows']} pairs in {summary['corpus_dir']}",
             f"  summary with score ranges and example pairs: {summary_dir / 'summary.md'}"]
    for stage, rejects in summary["rejects"].items():
        reasons = ", ".join(f"{reason} {count}" for reason, count in sorted(rejects["by_reason"].items())) or "none"
        lines.append(f"  rejected at {stage}: {rejects['total']} ({reasons})")
    for scorer, deciles in summary["deciles"].items():
        sizes = " ".join(str(deciles[str(d)]["rows"]) if str(d) in deciles else "0" for d in range(10))
        lines.append(f"  pairs per decile of {summary['scorers'][scorer]} (0 … 9): {sizes}")
    return "\n".join(lines)


def sts_summary(report_dir: Path, encoder_dir: Path) -> str:
    """TrainOnFiltered's result: the STS table and the dev score after each epoch."""
    from models.evaluation import StsReport, sts_table

    report = StsReport.from_json(json.loads((report_dir / "report.json").read_text()))
    training = json.loads((encoder_dir / "training.json").read_text())
    table = sts_table({report.meta.get("model"): report}).rstrip()
    lines = [f"Encoder {report.meta.get('model')}: {encoder_dir} (trained on {training['pairs']} pairs)",
             f"STS (Pearson × 100; every dataset in {report_dir / 'report.md'}):", table]
    if "–" in table:
        absent = ", ".join(dict.fromkeys(report.meta.get("absent", []))) or "none"
        lines.append(f"–: that set is absent from the STS folder (absent: {absent})")
    steps_per_epoch = max(1, -(-training["steps"] // max(1, training["train"]["epochs"])))
    dev = ", ".join(f"epoch {-(-step // steps_per_epoch)} {score:.2f}" for step, score in training["dev"])
    dev_set = training["train"].get("dev_set", "sts2017")  # the set that picked the kept weights
    lines.append(f"dev score ({dev_set}) per epoch: {dev} (best {training['best_dev']:.2f} kept)" if dev else f"dev set ({dev_set}) absent: the last weights were kept")
    return "\n".join(lines)


def result_of(task: luigi.Task) -> str | None:
    """What the command built, for the tasks a user runs to get a result."""
    from workflows.build import BuildParaNMT
    from workflows.encoders import EvaluateSTS

    if isinstance(task, BuildParaNMT):
        return corpus_summary(task.requires().output_dir)
    if isinstance(task, EvaluateSTS):
        return sts_summary(task.output_dir, task.requires().output_dir)
    return None


@luigi.Task.event_handler(luigi.Event.SUCCESS)
@luigi.Task.event_handler(luigi.Event.DEPENDENCY_PRESENT)
def _print_result(task: luigi.Task) -> None:
    """The command's own task prints its result last (also when it was already complete)."""
    if task.get_task_family() == _root_task_family() and (text := result_of(task)):
        print(f"\n{text}", flush=True)


install()  # on import: every task module imports this one through workflows.base
