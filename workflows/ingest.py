"""IngestBitext: raw CzEng / line-aligned files → ``bitext`` and ``rejects`` datasets."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import luigi

import schemas
from corpus.readers import DEFAULT_MAX_LINE_BYTES
from pipelines import io
from pipelines.ingest import build_ingest, expand_inputs
from workflows.base import StageTask


def demo_corpus() -> str:
    """The embedded Czech–English demo corpus (CzEng 1.6 format), used when no input is given."""
    return str(resources.files("corpus") / "demo" / "czeng_demo.train.gz")


class IngestBitext(StageTask):
    """Read CzEng 1.6 / line-aligned Czech–English files into sharded, validated Parquet."""

    stage = "ingest"

    inputs = luigi.Parameter(
        default="",
        description="Comma-separated inputs: CzEng files or globs (gzip or plain), x.cs files "
        "(x.en beside them), or czech_file::english_file pairs. Empty: the embedded demo corpus.",
    )
    num_shards = luigi.IntParameter(default=8, description="Number of Parquet shards (rows go to hash(id) mod shards).")
    max_line_bytes = luigi.IntParameter(default=DEFAULT_MAX_LINE_BYTES, description="Longer input lines are rejected as too_long.")

    def resolved_inputs(self) -> str:
        return self.inputs or demo_corpus()

    def input_files(self) -> list[str]:
        return [path for unit in expand_inputs(self.resolved_inputs()) for path in (unit.path, unit.partner) if path]

    def bitext_dir(self, root: Path | None = None) -> Path:
        return (root or self.output_dir) / "bitext"

    def build(self, partial_dir: Path) -> dict:
        units = expand_inputs(self.resolved_inputs())
        bitext_dir, rejects_dir = self.bitext_dir(partial_dir), partial_dir / "rejects"
        self.progress(f"ingesting {len(units)} input file(s) into {self.num_shards} shards")
        self.run_pipeline(lambda p: build_ingest(p, units, str(bitext_dir), str(rejects_dir), self.num_shards, self.max_line_bytes))
        io.ensure_nonempty(str(rejects_dir), schemas.REJECTS)
        io.ensure_nonempty(str(bitext_dir), schemas.BITEXT)
        rows, rejects = io.dataset_rows(str(bitext_dir)), io.rejects_by_reason(str(rejects_dir))
        self.progress(f"{rows} pairs, {sum(rejects.values())} rejects", 100)
        return {
            "schema": {"bitext": schemas.version_of(schemas.BITEXT), "rejects": schemas.version_of(schemas.REJECTS)},
            "rows": {"bitext": rows},
            "rejects": {"total": sum(rejects.values()), "by_reason": rejects},
        }
