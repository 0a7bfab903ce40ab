"""Provenance of an experiment page: what built it, from what, and how much data.

The experiment task (workflows/experiments.py) gathers the facts from its parameters and the
``_SUCCESS`` manifests of the stages it ran on; :class:`Provenance` only formats them, at the
top of index.html and report.md and in report.json, so a reader can tell when, with which code,
options and input files a table was made, and whether its numbers mean anything (the embedded
demo corpus: they do not).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from corpus.tables import html_table, markdown_table

DEMO_HEADLINE = "Demo data: these numbers are meaningless."
DEMO_DETAIL = (
    "Part or all of the training data is the embedded demo corpus: a few hundred sentence pairs, "
    "too few to train or measure anything, so the page only shows that the experiment runs end to "
    "end. For real numbers give real data: --inputs (CzEng files), --pairs (ParaNMT release files "
    "or a pairs dataset) or, for MegabatchAblation and ModelTable, --train-data (your own pairs)."
)


def input_file_row(fingerprint: str) -> list[str]:
    """A stage manifest's input fingerprint ``path:size:content hash`` (``path:missing``) as
    [path, size in bytes, content hash]."""
    path, _, rest = fingerprint.rpartition(":")
    if rest in ("missing", "not-a-file"):
        return [path, rest.replace("-", " "), "–"]
    path, _, size = path.rpartition(":")
    return [path, f"{int(size):,}", rest]


def count_range(values: Sequence[int]) -> str:
    """One stage's count, or the range of several runs' counts ("28–40 (3 runs)")."""
    low, high = min(values), max(values)
    value = f"{low:,}" if low == high else f"{low:,}–{high:,}"
    return value if len(values) == 1 else f"{value} ({len(values)} runs)"


@dataclass
class Provenance:
    """The facts at the top of an experiment page (all plain values, for report.json)."""

    created: datetime
    code: Mapping  # workflows.base.RELEASE
    revision: str  # git commit of the code ("" when not in a git checkout)
    command: str  # the luigi command that rebuilds this output (options that differ from their defaults)
    output: str  # the experiment's output directory, relative to the work directory
    training_data: str  # where the training pairs come from, in words
    demo: bool  # some training data is the embedded demo corpus
    data_sizes: Mapping[str, Sequence[int]]  # what was counted → the counts of the stages that counted it
    parameters: Mapping[str, str]  # every significant parameter of the experiment
    input_files: Sequence[str]  # the stages' input fingerprints (path:size:content hash)

    def facts(self) -> dict[str, str]:
        """The short list shown first: label → text."""
        code = f"paranmt {self.code.get('paranmt', '?')}" + (f" (git {self.revision})" if self.revision else "")
        return {
            "built": self.created.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC"),
            "code version": f"{code}; dataset schemas {', '.join(self.code.get('schemas', []))}",
            "command": self.command,
            "output": self.output,
            "training data": self.training_data,
            **{f"data size: {label}": count_range(counts) for label, counts in self.data_sizes.items() if counts},
        }

    def input_rows(self) -> list[list[str]]:
        return [input_file_row(fingerprint) for fingerprint in sorted(set(self.input_files))]

    def html(self) -> str:
        warning = f'<p class="warning"><strong>{html.escape(DEMO_HEADLINE)}</strong> {html.escape(DEMO_DETAIL)}</p>\n' if self.demo else ""
        facts = "".join(f"<dt>{html.escape(label)}</dt><dd>{_code(label, text)}</dd>" for label, text in self.facts().items())
        parameters = html_table(["parameter", "value"], sorted(self.parameters.items()))
        inputs = html_table(["input file", "bytes", "content hash (BLAKE2b)"], self.input_rows())
        return (
            f"{warning}<section class=\"provenance\"><h2>How this page was made</h2>\n<dl>{facts}</dl>\n"
            f"<details><summary>All {len(self.parameters)} parameters</summary>\n{parameters}\n</details>\n"
            f"<details><summary>{len(self.input_rows())} input files (path, size and content hash: "
            f"what the stages' fingerprints identify them by)</summary>\n{inputs}\n</details></section>\n"
        )

    def markdown_summary(self) -> str:
        """The demo warning and the short list, for the top of report.md."""
        warning = f"> **{DEMO_HEADLINE}** {DEMO_DETAIL}\n\n" if self.demo else ""
        facts = "".join(f"- {label}: {f'`{text}`' if label in ('command', 'output') else text}\n" for label, text in self.facts().items())
        return f"{warning}## How this page was made\n\n{facts}"

    def markdown_details(self) -> str:
        """Every parameter and input file, for the end of report.md."""
        parameters = markdown_table(["parameter", "value"], sorted(self.parameters.items()))
        inputs = markdown_table(["input file", "bytes", "content hash (BLAKE2b)"], self.input_rows(), align_right=[1])
        return f"## Parameters\n\n{parameters}\n## Input files\n\n{inputs}"

    def to_json(self) -> dict:
        return {**asdict(self), "created": self.created.astimezone(UTC).isoformat(timespec="seconds"), "input_files": sorted(set(self.input_files))}


def _code(label: str, text: str) -> str:
    return f"<code>{html.escape(text)}</code>" if label in ("command", "output") else html.escape(text)
