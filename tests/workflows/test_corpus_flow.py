"""The corpus stages through Luigi on a small pairs dataset made here (the back-translation
stage is exercised in test_build_flow; here the pairs are given with --pairs)."""

import gzip
import json

import luigi
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import squeezed
from luigi.cmdline_parser import CmdlineParser
from nmt_fixtures import tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture
from test_encoders_flow import TINY, fill_sts, sts_dir  # noqa: F401 - sts_dir is a fixture

import schemas
from corpus.ids import shard_of
from corpus.outputs import read_manifest
from corpus.selection import Rules, Sample
from corpus.text import english_tokens
from corpus.tokenbatch import token_columns
from pipelines.io import write_part
from workflows import BuildParaNMT, SelectTopHalf
from workflows.config import config_from
from workflows.corpus import (
    AssignDeciles,
    CorpusStats,
    ImportParaphrases,
    ScorePairs,
    SelectTrainingSet,
)
from workflows.experiments import TrainOnFiltered

WORDS = "the a man woman dog cat plays runs eats guitar piano ball food in park field . ,".split()


def czeng_file(path, pairs):
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        handle.writelines(f"toy-b1-00train-f00001-s{n}\t0.9\t{cs}\t{en}\n" for n, (cs, en) in enumerate(pairs))
    return str(path)


def build(*tasks):
    assert luigi.build(list(tasks), local_scheduler=True, log_level="WARNING")


def toy_pairs_table() -> pa.Table:
    """400 pairs: translations are the reference with some words replaced."""
    rng = np.random.default_rng(0)
    n = 400
    references = [" ".join(rng.choice(WORDS, rng.integers(2, 40))) for _ in range(n)]
    translations = []
    for reference in references:
        words = reference.split()
        swap = rng.random(len(words)) < rng.random()
        translations.append(" ".join(str(rng.choice(WORDS)) if s else w for w, s in zip(words, swap, strict=True)))
    return pairs_table(references, translations, -rng.random(n), rng)


def pairs_table(references: list[str], translations: list[str], trans_score, rng) -> pa.Table:
    """A ``pairs`` dataset's rows of these texts and translation scores (each its bitext row's one pair)."""
    n = len(references)
    return schemas.upgraded(pa.table({
        "id": [f"{'news' if i % 3 else 'subtitlesM'}-b1-{i:05d}" for i in range(n)], "source": ["demo.gz"] * n,
        "domain": ["news" if i % 3 else "subtitlesM" for i in range(n)], "czeng_score": rng.random(n),
        "pivot": ["cs"] * n, "foreign": [f"věta {i}" for i in range(n)], "reference": references, "translation": translations, "system": ["test"] * n,
        "trans_score": trans_score, "trans_n_tokens": np.full(n, 9, np.int32), "truncated": np.zeros(n, bool),
        **token_columns(english_tokens(references), english_tokens(translations)),
    }))


def shards_of(table: pa.Table, count: int) -> list[pa.Table]:
    shards = np.array([shard_of(i, count) for i in table.column("id").to_pylist()])
    return [table.filter(pa.array(shards == shard)) for shard in range(count)]


@pytest.fixture
def pairs_dir(tmp_path):
    """The toy pairs in 3 shards."""
    for shard, part in enumerate(shards_of(toy_pairs_table(), 3)):
        write_part(part, schemas.PAIRS, str(tmp_path / "pairs"), shard)
    return str(tmp_path / "pairs")


# The columns pairs/5 added: how a pair was decoded and its siblings.
PAIRS_5_COLUMNS = ("bitext_id", "variant", "diversity", "banned", "sibling_f1")
# A pairs dataset as paranmt 0.3 wrote it (pairs/2): the foreign side named ``cs``, no ``pivot``.
PAIRS_0_3 = pa.schema([pa.field("cs", pa.string(), nullable=False) if field.name == "foreign" else field
                       for field in schemas.PAIRS if field.name not in ("pivot", *PAIRS_5_COLUMNS)], metadata={schemas.VERSION_KEY: b"pairs/2"})


@pytest.fixture
def pairs_dir_0_3(tmp_path):
    """The toy pairs as 0.3 wrote them, in its files (part-NNNNN-<build>.parquet) and its schema."""
    folder = tmp_path / "pairs-0.3"
    folder.mkdir()
    for shard, part in enumerate(shards_of(toy_pairs_table(), 3)):
        old = part.rename_columns(["cs" if name == "foreign" else name for name in part.column_names]).select(PAIRS_0_3.names)
        pq.write_table(old.cast(PAIRS_0_3), folder / f"part-{shard:05d}-0c3e5a7f.parquet")
    return str(folder)


@pytest.fixture
def vectors(tmp_path):
    rng = np.random.default_rng(1)
    path = tmp_path / "vectors.txt"
    path.write_text("".join(f"{w} {' '.join(f'{x:.4f}' for x in rng.normal(size=8))}\n" for w in WORDS))
    return str(path)


def test_score_rank_summarize_select_and_stats(luigi_workdir, pairs_dir, vectors, tmp_path):
    corpus_task = AssignDeciles(pairs=pairs_dir, pp_vectors=vectors, examples=2)
    build(corpus_task)
    scored = read_manifest(ScorePairs(pairs=pairs_dir, pp_vectors=vectors).output_dir)
    assert scored["rows"] == {"scored": 400} and scored["pp_model"]["kind"] == "vectors file"
    assert len(scored["pp_model"]["sha256"]) == 64
    corpus = pd.read_parquet(corpus_task.corpus_dir())
    assert len(corpus) == 400 and set(corpus.columns) == set(schemas.CORPUS.names)
    for scorer in ("pp", "trigram", "trans", "unigram"):
        assert (corpus[f"decile_{scorer}"].astype(int).value_counts() == 40).all()
    # Kendall τ ranks the pairs of two shared words or more (the others: null τ, null decile), in equal deciles
    unranked = corpus.kendall_tau.isna()
    assert unranked.any() and corpus.decile_tau[unranked].isna().all() and corpus.kendall_tau[~unranked].between(-1, 1).all()
    sizes = corpus.decile_tau[~unranked].astype(int).value_counts()
    assert len(sizes) == 10 and sizes.max() - sizes.min() <= 1
    # the toy sentences are made of English words only
    assert (corpus.reference_p_en > 0.5).mean() > 0.9 and corpus.unigram_f1.between(0, 1).all()
    summary = json.loads((corpus_task.output_dir / "summary.json").read_text())
    assert summary["rows"] == 400 and summary["deciles"]["pp"]["9"]["rows"] == 40
    assert summary["unranked_rows"] == {"tau": int(unranked.sum())}
    assert len(summary["deciles"]["trigram"]["0"]["examples"]) == 2
    markdown = (corpus_task.output_dir / "summary.md").read_text()
    assert "## Deciles of pp_sim" in markdown

    select = SelectTrainingSet(pairs=pairs_dir, pp_vectors=vectors, examples=2, decile="9", n_pairs=25, max_tokens=30)
    build(select)
    selected = pd.read_parquet(select.output_dir / "pairs")
    assert len(selected) == 25 and (selected.decile_pp == 9).all()
    assert (selected[["reference_n_tokens", "translation_n_tokens"]] <= 30).all().all()
    assert read_manifest(select.output_dir)["passed_rules"] == int(((corpus.decile_pp.astype(int) == 9) & (corpus.reference_n_tokens <= 30)
                                                                    & (corpus.translation_n_tokens <= 30)).sum())

    diverse = SelectTrainingSet(pairs=pairs_dir, pp_vectors=vectors, examples=2, decile="", max_unigram_f1=0.6, n_pairs=0, max_tokens=0)
    build(diverse)
    expected = corpus[corpus.unigram_f1 <= 0.6]
    assert 0 < len(expected) == len(pd.read_parquet(diverse.output_dir / "pairs")) < 400

    counts = tmp_path / "counts.txt"
    counts.write_text("".join(f"{w} {10 * (i + 1)}\n" for i, w in enumerate(WORDS)))
    stats = CorpusStats(pairs=pairs_dir, pp_vectors=vectors, examples=2, word_counts=str(counts))
    build(stats)
    table2 = json.loads((stats.output_dir / "stats.json").read_text())
    assert list(table2) == ["news", "subtitlesM", "(all)"] and table2["(all)"]["sentences"] == 400
    assert table2["news"]["sentences"] + table2["subtitlesM"]["sentences"] == 400
    assert table2["(all)"]["length"]["mean"] == pytest.approx(corpus.reference_n_tokens.mean())
    assert "| Avg. IDF |" in squeezed((stats.output_dir / "stats.md").read_text())


def test_a_pairs_dataset_written_by_0_3_is_read_as_today(luigi_workdir, pairs_dir, pairs_dir_0_3, vectors):
    """--pairs naming a dataset 0.3 wrote, on disk: the stages that read it (the PP model's top
    half, the scores, the corpus) read its ``cs`` as today's ``foreign`` of a Czech pivot, and
    write what the same pairs written today give."""
    outputs = {}
    for name, pairs in (("0.3", pairs_dir_0_3), ("today", pairs_dir)):
        top_half, corpus = SelectTopHalf(pairs=pairs), AssignDeciles(pairs=pairs, pp_vectors=vectors)
        build(top_half, corpus)
        outputs[name] = [pd.read_parquet(path).sort_values("id", ignore_index=True) for path in (top_half.output_dir / "pairs", corpus.corpus_dir())]
    for old, today in zip(outputs["0.3"], outputs["today"], strict=True):
        assert set(old["pivot"]) == {"cs"} and old["foreign"].str.startswith("věta ").all()
        pd.testing.assert_frame_equal(old, today)  # the foreign sentences too, each with its pair


def test_selection_parameters_keep_their_command_line_names():
    args = ["SelectTrainingSet", "--scorer", "trigram", "--decile", "0,1", "--max-tokens", "20", "--release-filter",
            "--n-pairs", "10", "--sample-seed", "3", "--max-unigram-f1", "0.6", "--max-kendall-tau", "0.2", "--english-only"]
    with CmdlineParser.global_instance(args) as parser:
        task = parser.get_task_obj()
    rules, sample = config_from(task, Rules), config_from(task, Sample)
    assert rules == Rules("trigram", "0,1", 20, True, True, 0.5, 0.6, 0.2) and sample == Sample(10, 3)
    assert task.param_kwargs["release_filter"] is True and TrainOnFiltered.get_param_names().count("max_unigram_f1") == 1


@pytest.fixture
def tiny_pp_model():
    """A few-second bootstrapped PP model: [TrainPPModel] options in the Luigi config."""
    config = luigi.configuration.get_config()
    for key, value in {"embed_dim": "8", "epochs": "1", "batch_size": "8", "megabatch": "2"}.items():
        config.set("TrainPPModel", key, value)
    yield
    config.remove_section("TrainPPModel")


def test_bootstrapped_pp_model_then_train_on_decile_9(luigi_workdir, pairs_dir, sts_dir, tiny_pp_model):  # noqa: F811
    fill_sts(sts_dir)
    task = TrainOnFiltered(pairs=pairs_dir, decile="9", **TINY)
    build(task)
    scored = read_manifest(ScorePairs(pairs=pairs_dir).output_dir)
    assert scored["pp_model"]["kind"].startswith("word_avg encoder bootstrapped") and len(scored["pp_model"]["sha256"]) == 64
    top_half = read_manifest(luigi_workdir / "pp_train" / "latest")
    assert top_half["pairs"] == 400 and top_half["selected"] == 200
    selection = read_manifest(luigi_workdir / "train" / "latest")
    # decile 9 holds 40 pairs; the default 5M-pair sample degrades to all that pass the length rule
    assert 0 < selection["selected"] == selection["passed_rules"] <= 40
    assert read_manifest(task.requires().output_dir)["pairs"] == selection["selected"]
    report = json.loads((task.output_dir / "report.json").read_text())
    assert report["meta"]["model"] == "word_avg" and "sts_2012_2016_mean" in read_manifest(task.output_dir)

    # the selection with a TSV of other pairs beside it: one training set, its make-up in the manifest
    (luigi_workdir.parent / "more.tsv").write_text("".join(f"the {w} plays .\ta {w} plays .\n" for w in WORDS))
    mixed = TrainOnFiltered(pairs=pairs_dir, decile="9", train_data=str(luigi_workdir.parent / "more.tsv"), **TINY)
    build(mixed)
    sources = read_manifest(mixed.requires().output_dir)["sources"]
    assert [entry["pairs"] for entry in sources] == [selection["selected"], len(WORDS)]
    assert sources[0]["source"] == str(task.requires().requires().output_dir / "pairs")


def test_release_file_input_is_imported_scored_and_its_rejects_summarized(luigi_workdir, vectors, tmp_path):
    release = tmp_path / "para-nmt-tiny.txt"
    good = [f"the man plays {w} .\ta man plays {w} .\t0.{i + 10}" for i, w in enumerate(WORDS * 2)]
    release.write_text("\n".join([*good, "no score here\tat all"]) + "\n")
    task = AssignDeciles(pairs=str(release), pp_vectors=vectors)
    build(task)
    summary = json.loads((task.output_dir / "summary.json").read_text())
    assert summary["rows"] == len(good) and summary["rejects"]["import"]["by_reason"] == {"column_count": 1}
    corpus = pd.read_parquet(task.corpus_dir())
    assert sorted(corpus.trans_score) == sorted(float(line.rsplit("\t", 1)[1]) for line in good)


@pytest.mark.parametrize("names", [("a/rel.tsv", "b/rel.tsv"), ("train.tsv", "train.txt")], ids=["two-folders", "two-extensions"])
def test_release_files_with_one_stem_keep_all_their_pairs(luigi_workdir, tmp_path, names):
    paths = []
    for number, name in enumerate(names):
        path = tmp_path / name
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(f"file {number} line {i} .\tfile {number} row {i} .\t0.5\n" for i in range(5)))
        paths.append(str(path))
    task = ImportParaphrases(files=",".join(paths))
    build(task)
    pairs = pd.read_parquet(task.output_dir / "pairs")
    assert len(pairs) == 10 and pairs.id.is_unique
    assert read_manifest(task.output_dir)["rejects"]["total"] == 0


def test_build_paranmt_then_train_on_decile_9(luigi_workdir, tmp_path, tiny_nmt, sts_dir, tiny_pp_model):  # noqa: F811
    """The whole flow on 200 toy pairs: a given tiny cs→en model, back-translation, the
    bootstrapped PP model, scores, deciles and summary; then selection, training, STS."""
    fill_sts(sts_dir)
    inputs = czeng_file(tmp_path / "toy.train.gz", toy_pairs(200, seed=3))
    nmt = {"checkpoint": tiny_nmt.model.checkpoint, "dict_dir": tiny_nmt.model.data_dir, "spm_model": tiny_nmt.model.spm_source}
    build(BuildParaNMT(inputs=inputs, **nmt))
    corpus_task = AssignDeciles(inputs=inputs, nmt=nmt)
    assert "# ParaNMT corpus: 200 pairs" in (corpus_task.output_dir / "summary.md").read_text()
    summary = json.loads((corpus_task.output_dir / "summary.json").read_text())
    assert summary["rows"] == 200 and set(summary["rejects"]) >= {"ingest", "backtranslate"}
    assert summary["pp_model"]["kind"].startswith("word_avg encoder bootstrapped")
    nine = pd.read_parquet(corpus_task.corpus_dir(), filters=[("decile_pp", "==", 9)])
    assert len(nine) == 20 and nine.translation.str.len().gt(0).all()

    train = TrainOnFiltered(inputs=inputs, nmt=nmt, decile="9", **TINY)
    build(train)
    assert read_manifest(train.requires().output_dir)["pairs"] == 20
    assert (train.output_dir / "report.md").exists()
