import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from test_deciles_pipeline import run_in_process, write_shards

import schemas
from corpus.ids import id_hashes
from corpus.language import LanguageModel
from corpus.readers import InputUnit
from corpus.scoring import score_texts
from corpus.similarity import WordAverager
from corpus.text import english_tokens
from corpus.tokenbatch import token_columns
from corpus.wordvec import load_vectors
from pipelines.io import dataset_files, rejects_by_reason
from pipelines.rawshards import build_shard_writes, plan_shards
from pipelines.release import RELEASE_FORMAT
from pipelines.score import build_score

WORDS = "the a cat dog sat on mat . , he said".split()


def write_vectors(path, dim=6, seed=0):
    vectors = np.random.default_rng(seed).normal(size=(len(WORDS), dim))
    path.write_text("".join(f"{w} {' '.join(f'{x:.5f}' for x in v)}\n" for w, v in zip(WORDS, vectors, strict=True)))
    return str(path)


def pairs_table(n, seed=0, references=None, translations=None):
    """n pairs of generated sentences (or the given ones), tokenized as upstream stages do."""
    rng = np.random.default_rng(seed)

    def sentence():
        return " ".join(rng.choice(WORDS + ["zebra", "Cat", "DOG"], rng.integers(0, 12))).capitalize()

    references = references or [sentence() for _ in range(n)]
    translations = translations or [sentence() for _ in range(n)]
    return pa.table({
        "id": [f"news-{i:05d}" for i in range(n)], "source": ["f.gz"] * n, "domain": ["news"] * n,
        "czeng_score": rng.random(n), "pivot": ["cs"] * n, "foreign": ["věta"] * n, "reference": references, "translation": translations,
        "system": ["test"] * n,
        "trans_score": -rng.random(n), "trans_n_tokens": np.full(n, 7, np.int32), "truncated": np.zeros(n, bool),
        **token_columns(english_tokens(references), english_tokens(translations)),
    })


def test_scored_shards_keep_numbers_rows_and_match_the_core(tmp_path):
    pairs = pairs_table(300)
    files = write_shards(pairs, tmp_path / "pairs", 4, schemas.PAIRS)
    vectors = write_vectors(tmp_path / "vec.txt")
    run_in_process(lambda p: build_score(p, files, str(tmp_path / "scored"), vectors, batch_rows=32))
    scored_files = dataset_files(str(tmp_path / "scored"))
    assert [f.rsplit("/", 1)[1] for f in scored_files] == [f.rsplit("/", 1)[1] for f in files]
    for pairs_file, scored_file in zip(files, scored_files, strict=True):  # the same rows, in the same order
        before, after = pd.read_parquet(pairs_file), pd.read_parquet(scored_file)
        pd.testing.assert_frame_equal(after[["id", "trans_score"]], before[["id", "trans_score"]])
    scored = pd.read_parquet(tmp_path / "scored").sort_values("id").reset_index(drop=True)
    assert list(scored.columns) == schemas.SCORED.names and len(scored) == 300
    texts = (pairs.column(name).to_pylist() for name in ("reference", "translation", "reference_tok", "translation_tok"))
    expected = score_texts(*texts, WordAverager(*load_vectors(vectors)), LanguageModel.load())
    for name, values in expected.items():
        np.testing.assert_array_equal(scored[name].to_numpy(), np.asarray(values), err_msg=name)
    assert 0 < (scored.trigram_overlap == 0).mean() < 1 and scored.pp_sim.between(-1, 1).all()
    assert scored.id_hash.tolist() == id_hashes(scored.id).tolist()
    run_in_process(lambda p: build_score(p, files, str(tmp_path / "again"), vectors, batch_rows=32))
    assert all((tmp_path / "again" / Path(f).name).read_bytes() == Path(f).read_bytes() for f in scored_files)


def test_release_file_becomes_pairs_with_rejects(tmp_path):
    release = tmp_path / "para-nmt-mini.txt.gz"
    lines = ["the cat sat .\ta cat sat .\t0.91", "only two\tcolumns", "dog\tthe dog\tnot-a-number", "\tempty\t0.5", "he said .\the said .\t1.0"]
    with gzip.open(release, "wt", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    pairs_dir, rejects_dir = str(tmp_path / "pairs"), str(tmp_path / "rejects")
    plan = plan_shards([InputUnit(str(release))], 2)
    run_in_process(lambda p: build_shard_writes(p, RELEASE_FORMAT, plan, pairs_dir, rejects_dir, 10_000))
    pairs = pd.read_parquet(pairs_dir).sort_values("id")
    assert pairs.id.tolist() == ["para-nmt-mini.txt-000000001", "para-nmt-mini.txt-000000005"]
    assert pairs.trans_score.tolist() == [0.91, 1.0] and (pairs.domain == "para-nmt-mini").all() and (pairs.foreign == "").all()
    assert rejects_by_reason(rejects_dir) == {"bad_score": 1, "column_count": 1, "empty_side": 1}


@pytest.mark.slow
def test_real_wmt21_pairs_with_glove(tmp_path, shared_path):
    wmt = shared_path("csen", "wmt21")
    glove = shared_path("wordvec", "glove50_4k.txt")
    references = (wmt / "newstest2021.cs-en.ref.A.en").read_text(encoding="utf-8").splitlines()
    translations = (wmt / "newstest2021.cs-en.hyp.CUNI-Transformer2018.en").read_text(encoding="utf-8").splitlines()
    assert len(references) == len(translations) == 1000
    n = len(references)
    table = pairs_table(n, references=references, translations=translations)
    files = write_shards(table, tmp_path / "pairs", 4, schemas.PAIRS)
    run_in_process(lambda p: build_score(p, files, str(tmp_path / "scored"), str(glove)))
    scored = pd.read_parquet(tmp_path / "scored")
    assert len(scored) == n
    # translations of the same source are close paraphrases: high PP similarity, some trigram overlap
    assert 0.85 < scored.pp_sim.mean() < 1.0 and 0.1 < scored.trigram_overlap.mean() < 0.6
    # both sides are English; a system translation shares most words, in mostly the same order
    assert (scored.reference_p_en >= 0.5).mean() > 0.95 and (scored.translation_p_en >= 0.5).mean() > 0.95
    assert 0.5 < scored.unigram_f1.mean() < 0.75 and 0.75 < scored.kendall_tau.mean() < 0.95 and scored.kendall_tau.min() < 0
