"""pipelines.translations as functions, on a hand-made bitext and translation files: the units and
their numbers, the elements of work, a unit's pairs and rejects (unscored, and scored by a stand-in
model) and the import transform (Beam's TestPipeline); the stage end to end is in
tests/workflows/test_translations_flow.py."""

import gzip

import pyarrow as pa
import pytest
from apache_beam.testing import test_pipeline
from apache_beam.testing.util import assert_that, equal_to

import schemas
from corpus.lines import index_lines
from corpus.translation_files import TRANSLATION_RUN_LINES, TranslationFile, TranslationReader
from models.nmt.translate import Hypothesis
from pipelines import io
from pipelines.progress import UNWATCHED
from pipelines.translations import (
    Translations,
    build_import,
    import_units,
    unit_tables,
    work_elements,
)
from pipelines.translator import pending_units

# source (the bitext's name of a foreign file) → its lines; the shard each (source, line) is in
FOREIGN = {"a.cs": ["Muž hraje.", "Pes běží.", "Kočka jí."], "b.cs": ["Ahoj."]}
SHARD_OF = {("a.cs", 1): 0, ("a.cs", 3): 0, ("b.cs", 1): 0, ("a.cs", 2): 1}
ONE = ["a man plays", "", "a cat eats"]  # a.cs's, its line 2 empty
TWO = ["man plays", "dog runs", "cat eats"]  # a.cs's, gzip
HELLO = ["hello"]  # b.cs's


@pytest.fixture
def stage(tmp_path):
    """(bitext shard files, Translations) of FOREIGN: one.en (plain) and two.en.gz translate a.cs,
    hello.en translates b.cs."""
    rows = [(source, line, text) for source, lines in FOREIGN.items() for line, text in enumerate(lines, 1)]
    for shard in (0, 1):
        mine = [(source, line, text) for source, line, text in rows if SHARD_OF[source, line] == shard]
        table = pa.table({
            "id": [f"{source}-{line}" for source, line, _ in mine], "source": [source for source, _, _ in mine],
            "line": [line for _, line, _ in mine], "domain": ["test"] * len(mine), "czeng_score": pa.nulls(len(mine), pa.float64()),
            "pivot": ["cs"] * len(mine), "foreign": [text for _, _, text in mine], "en": ["ref"] * len(mine), "en_tok": ["ref"] * len(mine),
            "en_n_tokens": [1] * len(mine)})
        io.write_part(schemas.conform(table, schemas.BITEXT), schemas.BITEXT, str(tmp_path / "bitext"), shard)
    foreign_of = {}
    for source, lines in FOREIGN.items():
        (tmp_path / source).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        foreign_of[source] = str(tmp_path / source)
    (tmp_path / "one.en").write_text("".join(line + "\n" for line in ONE), encoding="utf-8")
    with gzip.open(tmp_path / "two.en.gz", "wt", encoding="utf-8") as handle:
        handle.writelines(line + "\n" for line in TWO)
    (tmp_path / "hello.en").write_text("hello\n", encoding="utf-8")
    files = tuple(TranslationFile(str(tmp_path / name), foreign_of[source], system, name, index_lines(str(tmp_path / name), TRANSLATION_RUN_LINES))
                  for name, source, system in (("one.en", "a.cs", "one"), ("two.en.gz", "a.cs", "two"), ("hello.en", "b.cs", "hello")))
    return io.dataset_files(str(tmp_path / "bitext")), Translations(files, foreign_of, max_line_bytes=1000)


def described(units):
    return [(unit.number, unit.shard.rsplit("/", 1)[-1], unit.source, unit.file.name, unit.rows) for unit in units]


def test_translation_files_are_those_of_the_sources_foreign_file(stage):
    _, translations = stage
    assert [file.name for file in translations.files_of("a.cs")] == ["one.en", "two.en.gz"]
    assert [file.name for file in translations.files_of("b.cs")] == ["hello.en"]
    assert translations.files_of("c.cs") == []


def test_units_are_numbered_by_shard_source_and_translation_file(stage):
    bitext_files, translations = stage
    assert described(import_units(bitext_files, translations)) == [
        (0, "part-00000.parquet", "a.cs", "one.en", 2),
        (1, "part-00000.parquet", "a.cs", "two.en.gz", 2),
        (2, "part-00000.parquet", "b.cs", "hello.en", 1),
        (3, "part-00001.parquet", "a.cs", "one.en", 1),
        (4, "part-00001.parquet", "a.cs", "two.en.gz", 1),
    ]


def test_a_plain_files_units_are_elements_alone_a_gzip_files_one_element(stage):
    units = import_units(*stage)
    elements = work_elements(units)
    assert [(key, [unit.number for unit in group]) for key, group in elements] == [(0, [0]), (1, [1, 4]), (2, [2]), (3, [3])]


def test_a_units_pairs_carry_the_system_and_its_empty_lines_are_rejects(stage):
    bitext_files, translations = stage
    units = import_units(bitext_files, translations)
    pairs, rejects = unit_tables(units[0], translations, None, 1, TranslationReader(units[0].file))
    assert pairs.column("id").to_pylist() == ["a.cs-1~one", "a.cs-3~one"]
    assert pairs.column("translation").to_pylist() == ["a man plays", "a cat eats"]
    assert pairs.column("system").to_pylist() == ["one", "one"]
    assert pairs.column("trans_score").null_count == 2 and pairs.column("trans_n_tokens").null_count == 2
    assert rejects.num_rows == 0 and rejects.schema == schemas.REJECTS
    pairs, rejects = unit_tables(units[3], translations, None, 1, TranslationReader(units[3].file))
    assert pairs.num_rows == 0
    assert rejects.to_pylist() == [{"stage": "translations", "source": "one.en", "line": 2, "reason": "empty_translation",
                                    "detail": "the translation file's line is empty", "raw": ""}]


class LengthScorer:
    """A stand-in scoring model: minus the translation's length, None (unscorable) for a cat."""

    def score(self, foreign, translations, pivots):
        return [None if "cat" in text else Hypothesis(text, -float(len(text)), len(text.split()), False) for text in translations]


def test_a_scored_units_pairs_have_the_models_scores_and_unscorable_ones_are_rejects(stage):
    bitext_files, translations = stage
    unit = import_units(bitext_files, translations)[0]
    pairs, rejects = unit_tables(unit, translations, LengthScorer(), 2, TranslationReader(unit.file))
    assert pairs.select(["id", "translation", "trans_score", "trans_n_tokens"]).to_pylist() == [
        {"id": "a.cs-1~one", "translation": "a man plays", "trans_score": -11.0, "trans_n_tokens": 3}]
    assert rejects.select(["source", "line", "reason", "raw"]).to_pylist() == [
        {"source": "one.en", "line": 3, "reason": "unscorable", "raw": "a cat eats"}]


def test_the_import_transform_writes_each_unit_and_yields_its_pairs(stage, tmp_path):
    units = import_units(*stage)
    pairs_dir, rejects_dir = str(tmp_path / "pairs"), str(tmp_path / "rejects")
    with test_pipeline.TestPipeline() as pipeline:  # by its module: pytest would collect a class named Test…
        written = build_import(pipeline, units, stage[1], pairs_dir, rejects_dir, chunk_rows=2, marks=UNWATCHED)
        assert_that(written, equal_to([(0, 2), (1, 2), (2, 1), (3, 0), (4, 1)]))
    assert io.dataset_rows(pairs_dir) == 6 and io.dataset_rows(rejects_dir) == 1
    assert pending_units(units, pairs_dir, lambda unit: unit.number) == []
    assert pending_units(units, str(tmp_path / "none yet"), lambda unit: unit.number) == units

