"""The scoring stage through Beam's portable job service, as a Flink or Spark cluster runs it."""

from pathlib import Path

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.options.pipeline_options import PipelineOptions
from conftest import in_fresh_process
from test_deciles_pipeline import write_shards
from test_score import pairs_table, write_vectors

import schemas
from pipelines.io import dataset_files
from pipelines.score import build_score


def run_score(files, vectors, scored_dir, options):
    with beam.Pipeline(options=PipelineOptions(list(options))) as pipeline:
        build_score(pipeline, files, str(scored_dir), vectors, batch_rows=32)
    return {Path(path).name: Path(path).read_bytes() for path in dataset_files(str(scored_dir))}


def test_score_runs_on_the_portable_runner(tmp_path, portable_options):
    files = write_shards(pairs_table(300), tmp_path / "pairs", 4, schemas.PAIRS)
    vectors = write_vectors(tmp_path / "vec.txt")
    direct = run_score(files, vectors, tmp_path / "direct", ("--runner=DirectRunner",))
    portable = in_fresh_process(run_score, files, vectors, tmp_path / "portable", portable_options)
    assert sorted(direct) == [Path(f).name for f in files]
    assert sum(pq.read_metadata(tmp_path / "portable" / name).num_rows for name in portable) == 300
    assert portable == direct, "the portable runner wrote different bytes"
