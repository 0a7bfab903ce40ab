"""The BackTranslate Beam pipeline: one pairs row per input (or several paraphrases), the source rules, shard-level resume."""

import filecmp
import shutil

import apache_beam as beam
import pandas as pd
import pyarrow as pa
import pytest
from nmt_fixtures import bitext_table, tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture

import schemas
from corpus.ids import shard_of
from models.nmt.paraphrase import DiversityOptions
from models.nmt.translate import DecodeOptions
from pipelines import io
from pipelines.backtranslate import build_backtranslate
from pipelines.options import pipeline_options
from pipelines.progress import marking
from pipelines.translator import TranslatorSpec, pending_units, translated_sources, translation_tally

SHARDS = 3


@pytest.fixture
def bitext_dir(tmp_path):
    """A sharded bitext dataset with one over-long and one empty Czech side (ingest never writes empty ones)."""
    pairs = [*toy_pairs(40, seed=3), ("Pes vidí " + "kočka " * 30 + ".", "The dog sees many cats."), ("", "Empty.")]
    table = bitext_table(pairs)
    shards = [shard_of(pair_id, SHARDS) for pair_id in table.column("id").to_pylist()]
    for shard in range(SHARDS):
        rows = table.filter(pa.array([s == shard for s in shards]))
        io.write_part(rows, schemas.BITEXT, str(tmp_path / "bitext"), shard)
    return tmp_path / "bitext"


def run(bitext_dir, out, model, workers=1, share_model=False, **kwargs):
    pairs_dir, rejects_dir = str(out / "pairs"), str(out / "rejects")
    spec = TranslatorSpec(model, options=DecodeOptions(max_source_tokens=20), threads=1, share_requested=share_model)
    with beam.Pipeline(options=pipeline_options(num_workers=workers)) as p:
        build_backtranslate(p, pending_units(io.dataset_files(str(bitext_dir)), pairs_dir), pairs_dir, rejects_dir, spec, chunk_rows=16, **kwargs)
    return pairs_dir, rejects_dir


def parts(directory):
    return {path.rsplit("/", 1)[-1]: pd.read_parquet(path) for path in io.dataset_files(str(directory))}


def test_pairs_have_one_row_per_translatable_input_and_rejects_the_rest(bitext_dir, tmp_path, tiny_nmt):
    pairs_dir, rejects_dir = run(bitext_dir, tmp_path / "out", tiny_nmt.model)
    bitext = pd.read_parquet(bitext_dir)
    pairs = pd.read_parquet(pairs_dir)
    assert list(pairs.columns) == schemas.PAIRS.names
    assert sorted(pairs.id) == sorted(bitext.id[bitext.foreign != ""])
    assert (pairs.reference.values == bitext.set_index("id").loc[pairs.id, "en"].values).all()
    assert pairs.translation.str.startswith("The").mean() > 0.8
    assert (pairs.trans_score < 0).all() and (pairs.trans_n_tokens >= 2).all()
    assert pairs.truncated.sum() == 1 and pairs[pairs.truncated].reference.item() == "The dog sees many cats."
    rejects = pd.read_parquet(rejects_dir)
    assert list(rejects.columns) == schemas.REJECTS.names
    assert rejects[["stage", "reason", "raw"]].values.tolist() == [["backtranslate", "empty_source", "\tEmpty."]]
    for name, part in parts(pairs_dir).items():
        assert list(part.id) == sorted(part.id)
        assert {shard_of(pair_id, SHARDS) for pair_id in part.id} == {int(name[5:10])}
    assert io.dataset_rows(pairs_dir) + io.dataset_rows(rejects_dir) == len(bitext)


def test_a_resumed_run_translates_only_missing_shards_and_gives_the_same_rows(bitext_dir, tmp_path, tiny_nmt):
    first_pairs, _ = run(bitext_dir, tmp_path / "first", tiny_nmt.model)
    first = parts(first_pairs)
    resumed_dir = tmp_path / "resumed"
    done = io.part_path(str(resumed_dir / "pairs"), 1)
    (resumed_dir / "pairs").mkdir(parents=True)
    with open(done, "wb") as handle, open(io.part_path(first_pairs, 1), "rb") as source:
        handle.write(source.read())
    (resumed_dir / "pairs" / ".tmp-deadbeef-part-00002").write_bytes(b"half a file")
    io.remove_temporaries(str(resumed_dir / "pairs"))
    assert [p.rsplit("/", 1)[-1] for p in pending_units(io.dataset_files(str(bitext_dir)), str(resumed_dir / "pairs"))] == [
        "part-00000.parquet", "part-00002.parquet"]
    run(bitext_dir, resumed_dir, tiny_nmt.model)
    resumed = parts(resumed_dir / "pairs")
    assert sorted(resumed) == sorted(first) and not list((resumed_dir / "pairs").glob(".tmp-*"))
    for name in first:
        pd.testing.assert_frame_equal(resumed[name], first[name])
    assert pending_units(io.dataset_files(str(bitext_dir)), str(resumed_dir / "pairs")) == []


def test_model_shared_across_processes_gives_the_same_rows_from_one_load(bitext_dir, tmp_path, tiny_nmt):
    """The GPU rule: two worker processes, one model (Beam serves it from one process)."""
    own, _ = run(bitext_dir, tmp_path / "own", tiny_nmt.model)
    with marking(str(tmp_path / "marks")) as marks:
        shared, _ = run(bitext_dir, tmp_path / "shared", tiny_nmt.model, workers=2, share_model=True, marks=marks)
        assert marks.count("loaded") == 1
        assert marks.count("translated") == len(pd.read_parquet(bitext_dir))
    pd.testing.assert_frame_equal(pd.read_parquet(shared), pd.read_parquet(own))


def test_unshared_worker_processes_load_a_model_each(bitext_dir, tmp_path, tiny_nmt):
    with marking(str(tmp_path / "marks")) as marks:
        run(bitext_dir, tmp_path / "own", tiny_nmt.model, workers=2, marks=marks)
        assert marks.count("loaded") == 2


def test_translation_tally_counts_marked_chunks_after_the_earlier_runs_rows(tmp_path):
    with marking(str(tmp_path / "marks")) as marks:
        tally = translation_tally(marks, total=100, already=30)
        marks.add("translated", 16)
        marks.add("translated", 4)
        assert tally.count() == 50 and tally.total_now() == 100


def test_several_paraphrases_are_pairs_of_their_own_known_as_siblings(bitext_dir, tmp_path, tiny_nmt):
    one_pairs, _ = run(bitext_dir, tmp_path / "one", tiny_nmt.model)
    diverse = DiversityOptions(paraphrases=4, diversity="parabank", meaning_floor=0.5)
    pairs_dir, rejects_dir = run(bitext_dir, tmp_path / "four", tiny_nmt.model, diversity=diverse)
    one, pairs = pd.read_parquet(one_pairs), pd.read_parquet(pairs_dir)
    assert list(pairs.columns) == schemas.PAIRS.names
    firsts = pairs[pairs.variant == 0].reset_index(drop=True)
    # variant 0 is the pair --paraphrases 1 makes, with its siblings now
    pd.testing.assert_frame_equal(firsts.drop(columns="sibling_f1"), one.drop(columns="sibling_f1"))
    others = pairs[pairs.variant > 0]
    assert len(others) >= len(firsts) // 2 and pairs.groupby("bitext_id").size().max() <= 4
    assert (others.id == others.bitext_id + "#" + others.variant.astype(str)).all() and (firsts.id == firsts.bitext_id).all()
    assert others.diversity.str.startswith("parabank: ").all() and (firsts.diversity == "beam 12").all()
    assert others.banned.notna().any() and others.sibling_f1.notna().all()
    by_source = pairs.groupby("bitext_id")
    assert (by_source.reference.nunique() == 1).all() and (by_source.translation.nunique() == by_source.size()).all()
    assert (pairs.groupby("bitext_id").trans_score.transform("first") - pairs.trans_score <= 0.5 + 1e-9).all()
    rejects = pd.read_parquet(rejects_dir)
    assert set(rejects.reason) == {"empty_source", "below_meaning_floor"}
    assert translated_sources(pairs_dir, rejects_dir) == len(pd.read_parquet(bitext_dir))


def test_sampled_paraphrases_are_the_same_bytes_on_a_rerun_and_a_resumed_run(bitext_dir, tmp_path, tiny_nmt):
    sampled = DiversityOptions(paraphrases=3, diversity="sampling", seed=5)
    first, _ = run(bitext_dir, tmp_path / "first", tiny_nmt.model, diversity=sampled)
    resumed_dir = tmp_path / "resumed"
    (resumed_dir / "pairs").mkdir(parents=True)
    shutil.copy(io.part_path(first, 1), io.part_path(str(resumed_dir / "pairs"), 1))
    again, _ = run(bitext_dir, resumed_dir, tiny_nmt.model, workers=2, diversity=sampled)
    for name in ("part-00000.parquet", "part-00001.parquet", "part-00002.parquet"):
        assert filecmp.cmp(f"{first}/{name}", f"{again}/{name}", shallow=False)
    other, _ = run(bitext_dir, tmp_path / "other", tiny_nmt.model, diversity=DiversityOptions(paraphrases=3, diversity="sampling", seed=6))
    assert not pd.read_parquet(other).translation.equals(pd.read_parquet(first).translation)


def test_each_way_of_making_paraphrases_is_checked_on_its_own(tmp_path):
    """A constrained decoder that copies its source is out of bounds by itself, however well the
    beam's best translations do beside it."""
    from corpus import translation_check
    from pipelines.pairs import pairs_table
    from pipelines.translator import translation_sample

    bitext = bitext_table(toy_pairs(60, seed=8))
    rows = bitext.take(pa.array([i // 2 for i in range(120)]))
    foreign, english = rows.column("foreign").to_pylist(), rows.column("en").to_pylist()
    copies = [cs if i % 2 else en for i, (cs, en) in enumerate(zip(foreign, english, strict=True))]
    made = {"variant": [i % 2 for i in range(120)], "diversity": ["constrained beam 4, 2 banned" if i % 2 else "beam 12" for i in range(120)],
            "banned": [None] * 120, "sibling_f1": [None] * 120}
    ids = [f"{pair_id}#1" if i % 2 else pair_id for i, pair_id in enumerate(rows.column("id").to_pylist())]
    pairs = pairs_table(rows, copies, ["own model"] * 120, [-1.0] * 120, [5] * 120, [False] * 120, ids, made)
    io.write_part(pairs, schemas.PAIRS, str(tmp_path / "pairs"), 0)
    sample = translation_sample(str(tmp_path / "pairs"), lambda _: "own model", 1000)
    assert sorted(sample) == ["own model", "own model (constrained beam 4, 2 banned)"]
    figures = {label: translation_check.translation_figures(*pairs) for label, pairs in sample.items()}
    assert figures["own model"]["copies"] == 0 and figures["own model (constrained beam 4, 2 banned)"]["copies"] == 1
    assert translation_check.broken_translator(figures, set())[0] == "copies"
