"""IngestBitext: raw CzEng / line-aligned files → ``bitext`` and ``rejects`` datasets."""

from __future__ import annotations

import shutil
from functools import cached_property
from importlib import resources
from pathlib import Path

import luigi

import schemas
from corpus import languages
from corpus.errors import InputError
from corpus.inputs import plain_unit, resolve_inputs, source_languages
from corpus.readers import DEFAULT_MAX_LINE_BYTES, InputUnit
from pipelines import io, stages
from pipelines.ingest import ingest
from pipelines.options import LINES_PER_WORKER
from pipelines.rawshards import DEFAULT_SHARD_ROWS, ShardPlan, plan_shards
from workflows.base import StageTask
from workflows.config import CorpusParameter
from workflows.console import STAGES as log

# Share of an input's lines that, rejected, earns a warning on the console.
REJECTED_SHARE_WARNING = 0.05
# Where a stage decompresses gzip inputs once (corpus.lines.decompressed_copy), in its partial
# output; removed when the stage ends.
PLAIN_COPIES = ".plain-copies"


def demo_corpus() -> str:
    """The embedded Czech–English demo corpus (CzEng 1.6 format), used when no input is given."""
    return str(resources.files("corpus") / "demo" / "czeng_demo.train.gz")


def checked_rejects(stage: str, rows: int, rejects: dict[str, int], nothing_usable: str, rejects_dir: Path, of: str, committed: Path) -> dict:
    """The manifest's reject counts, ``rejects`` by reason beside ``rows`` kept, of the lines of
    ``of`` (the inputs, a translation file). No row kept is an InputError starting with
    ``nothing_usable`` that points at ``rejects_dir`` (the partial output, which a failed run
    keeps); more than REJECTED_SHARE_WARNING of them rejected is a warning naming ``of`` and the
    top reasons, pointing at ``committed``, where the rejects are once the run has ended."""
    total = sum(rejects.values())
    top = ", ".join(f"{reason} {count}" for reason, count in sorted(rejects.items(), key=lambda item: -item[1])[:3])
    if rows == 0:
        raise InputError(f"{nothing_usable}: {total} lines rejected ({top}); see {rejects_dir}")
    if total > REJECTED_SHARE_WARNING * (rows + total):
        log.warning("%s: %d of %d lines of %s rejected (%.0f %%): %s; see %s", stage, total, rows + total, of, 100 * total / (rows + total),
                    top, committed)
    return {"total": total, "by_reason": rejects}


def remove_plain_copies(partial_dir: Path) -> None:
    """Remove the plain copies a stage made of gzip files (PLAIN_COPIES), once it has read them."""
    shutil.rmtree(partial_dir / PLAIN_COPIES, ignore_errors=True)


class ReadsRawFiles(StageTask):
    """A stage that reads the user's raw text files into sharded Parquet: its shared parameters,
    checked before any work."""

    keeps_partial_output = True  # finished shards are kept: a rerun reads only the others
    rows_per_worker = LINES_PER_WORKER

    shard_rows = luigi.IntParameter(default=DEFAULT_SHARD_ROWS,
                                    description="Lines of input per Parquet shard (a shard is what a kill can lose, and a worker's unit of work).")
    num_shards = luigi.IntParameter(default=0,
                                    description="About this many shards over all inputs instead of --shard-rows lines each (0: by --shard-rows).")
    max_line_bytes = luigi.IntParameter(default=DEFAULT_MAX_LINE_BYTES, description="Longer input lines are rejected as too_long.")
    source_language = languages.DEFAULT  # IngestBitext's parameter; other raw files have no pivot

    def resolved_inputs(self) -> str:
        """The input specification (corpus.readers.parse_input_spec)."""
        raise NotImplementedError

    @cached_property
    def units(self) -> list[InputUnit]:
        """The inputs, resolved and checked (corpus.inputs.resolve_inputs) once per task: the
        fingerprint, computed many times per run, would otherwise reopen every file each time."""
        return resolve_inputs(self.resolved_inputs(), self.source_language)

    def check_inputs(self) -> None:
        if self.num_shards < 0:
            raise InputError(f"--num-shards must be 0 (by --shard-rows) or more, got {self.num_shards}")
        for name in ("shard_rows", "max_line_bytes"):
            if getattr(self, name) < 1:
                raise InputError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        _ = self.units  # InputError naming the file when an input is unusable

    def plan(self, partial_dir: Path) -> ShardPlan:
        """The inputs' shards (one scan of each file), said on the console. Each intact gzip input
        is read from a plain copy (corpus.inputs.plain_unit) in ``partial_dir``, so its shards go
        to every worker instead of one worker reading it through (the shards, their ids and bytes
        are the same either way); remove_plain_copies removes the copies."""
        folder = str(partial_dir / PLAIN_COPIES)
        units = [plain_unit(unit, folder) for unit in self.units]
        if copied := sum(unit is not original for unit, original in zip(units, self.units, strict=True)):
            self.progress(f"{copied} gzip input(s) decompressed once, so that every worker reads their shards")
        plan = plan_shards(units, self.shard_rows, self.num_shards)
        self.progress(f"{len(self.units)} input file(s), {plan.lines} lines: {plan.shards} shard(s)")
        return plan

    def count_rejects(self, rows: int, rejects_dir: Path) -> dict:
        """The manifest's reject counts (checked_rejects)."""
        return checked_rejects(self.stage, rows, io.rejects_by_reason(str(rejects_dir)), f"no usable line in {self.resolved_inputs()}", rejects_dir,
                               self.resolved_inputs(), self.output_dir / rejects_dir.name)

    def input_files(self) -> list[str]:
        try:
            units = self.units
        except InputError:
            return []  # check_inputs reports it, in one line, before any work
        return [path for unit in units for path in (unit.path, unit.partner) if path]


class IngestBitext(ReadsRawFiles):
    """Read CzEng 1.6 / line-aligned foreign–English files into sharded, validated Parquet."""

    stage = stages.INGEST

    inputs = CorpusParameter(
        default="",
        description="Comma-separated inputs: CzEng files or globs (gzip or plain), x.cs files "
        "(x.en beside them; x.de … for --source-language de), or foreign_file::english_file pairs; @FILE: the items FILE lists, one a line. "
        "Empty: the embedded demo corpus.",
    )
    source_language = CorpusParameter(
        default=languages.DEFAULT,
        description="The foreign side's language (ISO 639: cs, de, deu …), or several, comma-separated, for "
        "multi-parallel inputs (x.de, x.fr beside one x.en): a file's suffix names its language, others are in the first.",
    )

    def resolved_inputs(self) -> str:
        return self.inputs or demo_corpus()

    def bitext_dir(self, root: Path | None = None) -> Path:
        return (root or self.output_dir) / "bitext"

    def build(self, partial_dir: Path) -> dict:
        bitext_dir, rejects_dir = self.bitext_dir(partial_dir), partial_dir / "rejects"
        plan = self.plan(partial_dir)
        ingest(self.sized_runner(plan.lines), plan, str(bitext_dir), str(rejects_dir), self.max_line_bytes, str(partial_dir), self.progress)
        remove_plain_copies(partial_dir)
        io.ensure_nonempty(str(rejects_dir), schemas.REJECTS)
        io.ensure_nonempty(str(bitext_dir), schemas.BITEXT)
        rows = io.dataset_rows(str(bitext_dir))
        rejects = self.count_rejects(rows, rejects_dir)
        self.progress(f"{rows} pairs, {rejects['total']} rejects", 100)
        return {
            "schema": {"bitext": schemas.version_of(schemas.BITEXT), "rejects": schemas.version_of(schemas.REJECTS)},
            "rows": {"bitext": rows},
            "languages": {"source": list(source_languages(self.source_language)), "target": languages.ENGLISH},
            "rejects": rejects,
            # read apart, by any worker: every shard of a plain file or of a gzip file's plain copy
            "work_elements_this_run": len(plan.tasks),
        }


class ReadsBitext:
    """The parameters of a stage downstream of IngestBitext that name its input, passed on as given."""

    inputs = IngestBitext.inputs
    source_language = IngestBitext.source_language

    def input_params(self) -> dict:
        return {"inputs": self.inputs, "source_language": self.source_language}
