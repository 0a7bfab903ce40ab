"""What the encoder trainer reads, a batch at a time: a TSV or a Parquet dataset; bad data is one line or left out and said."""

import json
import logging
from collections import Counter
from itertools import chain

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from corpus.errors import InputError
from models import featurizers, training_pairs
from models.configs import EncoderConfig, TrainConfig
from models.encode import load_encoder
from models.featurizers import TrigramFeaturizer, WordFeaturizer
from models.ragged import RaggedFile
from models.trainer import Trainer, train_encoder
from models.training_pairs import TrainingPairs, negative_groups, read_pairs
from models.vocabulary import UNK

PAIRS = [("a dog runs .", "a dog is running ."), ("a cat sleeps .", "a cat is asleep ."),
         ("two men talk .", "two people are talking ."), ("the sun is up .", "it is morning .")]


def test_a_parquet_dataset_without_the_pair_columns_is_one_line_naming_them(tmp_path):
    (tmp_path / "data").mkdir()
    pq.write_table(pa.table({"sentence1": ["a"], "sentence2": ["b"]}), tmp_path / "data" / "part-0.parquet")
    with pytest.raises(InputError) as error:
        read_pairs(tmp_path / "data")
    message = str(error.value)
    assert "\n" not in message and "no column reference, translation" in message and "sentence1" in message and "--columns" in message
    assert read_pairs(tmp_path / "data", ("sentence1", "sentence2")) == (["a"], ["b"])


def test_a_tsv_line_that_is_not_utf8_is_one_line_naming_it(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_bytes(b"a dog runs .\ta dog is running .\n" + "kůň\tkoně\n".encode("cp1250"))
    with pytest.raises(InputError, match=r"pairs.tsv:2: not UTF-8"):
        read_pairs(path)


def test_pairs_with_an_empty_side_are_left_out_counted_and_said(tmp_path, caplog):
    rows = [*PAIRS, ("a bird sings .", ""), ("   ", "a horse runs .")]
    first, second = ([pair[i] for pair in rows] for i in (0, 1))
    with caplog.at_level(logging.WARNING, logger="paranmt.trainer"):
        train_encoder((first, second), tmp_path / "model", EncoderConfig(model="word_avg", tokens="words", dim=8, embed_dim=8),
                      TrainConfig(epochs=1, batch_size=2, megabatch=1))
    summary = json.loads((tmp_path / "model" / "training.json").read_text())
    assert summary["pairs"] == len(PAIRS) and summary["pairs_with_an_empty_side_left_out"] == 2
    assert "2 of 6 pairs have an empty side and are left out of training" in caplog.text


def test_read_pairs_from_parquet_and_tsv(tmp_path):
    table = pa.table({"reference": ["a b", "c d", "e"], "translation": ["b a", "d c", "f"], "score": [1.0, 2.0, 3.0]})
    (tmp_path / "pairs").mkdir()
    pq.write_table(table.slice(0, 2), tmp_path / "pairs" / "part-00000.parquet")
    pq.write_table(table.slice(2), tmp_path / "pairs" / "part-00001.parquet")
    assert read_pairs(tmp_path / "pairs") == (["a b", "c d", "e"], ["b a", "d c", "f"])
    assert read_pairs(tmp_path / "pairs", ("translation", "reference"))[0] == ["b a", "d c", "f"]
    (tmp_path / "pairs.tsv").write_text("one\ttwo\t0.9\nthree\tfour\n")
    assert read_pairs(tmp_path / "pairs.tsv") == (["one", "three"], ["two", "four"])
    (tmp_path / "bad.tsv").write_text("one\ttwo\nno tab here\n")
    with pytest.raises(ValueError, match="bad.tsv:2"):
        read_pairs(tmp_path / "bad.tsv")


def words_of(path) -> tuple[list[str], list[str]] | None:
    batches = list(TrainingPairs.from_path(path).batches())
    if batches[0].words is None:
        return None
    return [w for batch in batches for w in batch.words[0]], [w for batch in batches for w in batch.words[1]]


def test_a_corpus_words_come_from_its_token_columns(tmp_path):
    table = pa.table({"reference": ["A b.", "C"], "translation": ["B a.", "D"], "reference_tok": ["a b .", "c"], "translation_tok": ["b a .", "d"]})
    pq.write_table(table, tmp_path / "corpus.parquet")
    assert words_of(tmp_path / "corpus.parquet") == (["a b .", "c"], ["b a .", "d"])
    pq.write_table(table.drop_columns(["translation_tok"]), tmp_path / "no_tokens.parquet")
    assert words_of(tmp_path / "no_tokens.parquet") is None
    (tmp_path / "pairs.tsv").write_text("one\ttwo\n")
    assert words_of(tmp_path / "pairs.tsv") is None
    # the trainer's word vocabulary is the token columns' words, not a new tokenization
    doctored = table.set_column(2, "reference_tok", pa.array(["zebra b .", "c"]))
    pq.write_table(doctored, tmp_path / "doctored.parquet")
    result = train_encoder(tmp_path / "doctored.parquet", tmp_path / "model", EncoderConfig(dim=4, tokens="words"),
                           TrainConfig(epochs=1, batch_size=2, device="cpu"))
    assert "zebra" in load_encoder(result.output_dir, "cpu").featurizers["tokens"].vocabulary.symbols


def corpus_of(rows: int, seed: int = 0) -> pa.Table:
    """A corpus with token columns whose words repeat at many frequencies (ties included);
    some sides are blank."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(60)] + ["<unk>", "<pad>", "Ünï", "😀"]
    weights = 1.0 / np.arange(1, len(words) + 1)

    def sentence() -> str:
        return " ".join(rng.choice(words, rng.integers(0, 9), p=weights / weights.sum()))

    first, second = [sentence() for _ in range(rows)], [sentence() for _ in range(rows)]
    first[3] = "   "
    return pa.table({"reference": first, "translation": second,
                     "reference_tok": [s.lower() for s in first], "translation_tok": [s.lower() for s in second]})


@pytest.mark.parametrize("model, tokens", [("word_avg", "words"), ("trigram_avg", "words"), ("word_avg", "pieces")])
def test_training_read_in_small_batches_is_training_read_whole(tmp_path, monkeypatch, model, tokens):
    """Fitted a batch at a time (several Parquet parts, batches of 7 rows), the featurizers, the
    featurized training set and every update are those of one batch of everything in memory."""
    table = corpus_of(150)
    (tmp_path / "corpus").mkdir()
    for part, start in enumerate(range(0, 150, 40)):
        pq.write_table(table.slice(start, 40), tmp_path / "corpus" / f"part-{part:05d}.parquet")
    config = EncoderConfig(model=model, tokens=tokens, dim=8, embed_dim=8, spm_vocab_size=40, min_count=2)
    train = TrainConfig(epochs=2, batch_size=10, megabatch=2, device="cpu")
    columns = [table.column(name).to_pylist() for name in table.column_names]
    whole = Trainer(TrainingPairs.from_sentences((columns[0], columns[1]), (columns[2], columns[3])), tmp_path / "whole", config, train)
    monkeypatch.setattr(training_pairs, "READ_BATCH_ROWS", 7)
    batched = Trainer(TrainingPairs.from_path(tmp_path / "corpus"), tmp_path / "batched", config, train)
    two_sided = sum(1 for one, other in zip(columns[0], columns[1], strict=True) if one.strip() and other.strip())
    assert batched.pairs == whole.pairs == two_sided and batched.empty_side_pairs == 150 - two_sided >= 2
    for feature, on_disk in whole.data.items():
        rows, other = on_disk.between(0, len(on_disk)), batched.data[feature].between(0, len(on_disk))
        assert rows.values.dtype == np.int32 and rows.values.tolist() == other.values.tolist()
        assert rows.offsets.tolist() == other.offsets.tolist()
    saved = {path.relative_to(tmp_path / "whole"): path.read_bytes() for path in (tmp_path / "whole" / "features").rglob("*.*")}
    assert saved and saved == {path.relative_to(tmp_path / "batched"): path.read_bytes() for path in (tmp_path / "batched" / "features").rglob("*.*")}
    assert whole.run().losses == batched.run().losses


def test_word_fit_in_batches_is_the_definition():
    """The vocabulary of words seen min_count times, most frequent first, ties by word, then the
    extra words; every row's ids looked up in it (an empty row: one UNK; "<pad>" and "<unk>"
    written in a sentence are the specials' ids, as a lookup gives)."""
    table = corpus_of(90, seed=3)
    sentences = table.column("reference_tok").to_pylist()
    asked = []

    def batches(with_words: bool):
        asked.append(with_words)
        return [(sentences[i : i + 11], sentences[i : i + 11] if with_words else None) for i in range(0, 90, 11)]

    fitted, rows = WordFeaturizer.fit_batches(batches, min_count=2, max_size=30, extra=["zebra", "w1"])
    TrigramFeaturizer.fit_batches(batches)
    assert asked == [True, False]  # one pass each; only words read the corpus's words
    counts = Counter(w for s in sentences for w in (s.split(" ") if s else []))
    ranked = sorted((w for w, c in counts.items() if c >= 2 and w not in ("<pad>", "<unk>")), key=lambda w: (-counts[w], w))[:30]
    assert fitted.vocabulary.symbols == ["<pad>", "<unk>", *ranked, "zebra"]
    index = fitted.vocabulary.index
    expected = [[index.get(w, UNK) for w in (s.split(" ") if s else [])] or [UNK] for s in sentences]
    assert [rows.row(i).tolist() for i in range(len(rows))] == expected


@pytest.mark.parametrize("kind", ["words", "trigrams", "pieces"])
def test_a_training_set_spooled_to_files_has_the_ids_it_has_in_memory(tmp_path, monkeypatch, kind):
    """Featurized into files and read back from them, a training set has the ids it has in
    memory (words and trigrams remapped from their provisional ids in chunks of 7 rows, empty
    sentences included), whole, a range, or any selection of rows in any order."""
    monkeypatch.setattr(featurizers, "REMAP_ROWS", 7)
    table = corpus_of(90, seed=5)
    sentences, words = table.column("reference").to_pylist(), table.column("reference_tok").to_pylist()

    def batches(with_words: bool):
        return [(sentences[i : i + 11], words[i : i + 11] if with_words else None) for i in range(0, 90, 11)]

    _, in_memory = featurizers.FEATURIZERS[kind].fit_batches(batches, store=None)
    _, on_disk = featurizers.FEATURIZERS[kind].fit_batches(batches, store=tmp_path / "ids" / kind)
    assert isinstance(on_disk, RaggedFile) and len(on_disk) == 90
    assert sorted(path.name for path in (tmp_path / "ids").iterdir()) == [f"{kind}.offsets", f"{kind}.values"]  # no provisional rows left
    assert in_memory.values.dtype == np.int32 and UNK in in_memory.values
    whole = on_disk.between(0, 90)
    assert (whole.values.dtype == np.int32 and whole.values.tolist() == in_memory.values.tolist()
            and whole.offsets.tolist() == in_memory.offsets.tolist())
    part = on_disk.between(30, 41)
    assert [part.row(i).tolist() for i in range(11)] == [in_memory.row(i).tolist() for i in range(30, 41)]
    rows = np.random.default_rng(0).choice(90, 40)  # repeats, any order
    taken, expected = on_disk.take(rows), in_memory.take(rows)
    assert (taken.values.dtype == np.int64 and taken.values.tolist() == expected.values.tolist()
            and taken.offsets.tolist() == expected.offsets.tolist())


def test_the_trainer_reads_its_ids_from_files_it_removes_when_done(tmp_path):
    table = corpus_of(60, seed=2)
    pairs = TrainingPairs.from_sentences((table.column("reference").to_pylist(), table.column("translation").to_pylist()))
    trainer = Trainer(pairs, tmp_path / "model", EncoderConfig(dim=8, spm_vocab_size=40),
                      TrainConfig(epochs=1, batch_size=10, megabatch=2, device="cpu"))
    assert isinstance(trainer.data["tokens"], RaggedFile)
    assert sorted(path.name for path in (tmp_path / "model" / "ids").iterdir()) == ["tokens.offsets", "tokens.values"]
    trainer.run()
    assert not (tmp_path / "model" / "ids").exists() and (tmp_path / "model" / "model.pt").exists()


def test_several_sources_with_shares_are_read_in_batches_the_same_at_every_pass(tmp_path, monkeypatch):
    """A Parquet dataset and a TSV at once, the TSV's half taken (the same half at every pass and
    run), read in the same bounded batches as one source; the make-up counts each source's pairs;
    pairs that share a sentence across the two sources are one group (--group-negatives)."""
    monkeypatch.setattr(training_pairs, "READ_BATCH_ROWS", 7)
    (tmp_path / "pairs").mkdir()
    pq.write_table(pa.table({"reference": [f"r{i}" for i in range(20)], "translation": [f"t{i}" for i in range(20)]}),
                   tmp_path / "pairs" / "part-00000.parquet")
    (tmp_path / "ref.tsv").write_text("".join(f"s{i}\tr{i if i < 3 else i + 100}\n" for i in range(200)))
    spec = f"{tmp_path / 'pairs'},0.5={tmp_path / 'ref.tsv'}"
    pairs = TrainingPairs.from_path(spec)
    first, again = [list(chain(*(b.sides[0] for b in pairs.batches(False)))) for _ in range(2)]
    assert first == again == list(chain(*(b.sides[0] for b in TrainingPairs.from_path(spec).batches(False))))
    assert first[:20] == [f"r{i}" for i in range(20)] and 70 < len(first) - 20 < 130
    assert all(len(batch.sides[0]) <= 7 for batch in pairs.every_batch(False))
    assert pairs.make_up() == [{"source": str(tmp_path / "pairs"), "share": 1.0, "pairs": 20},
                               {"source": str(tmp_path / "ref.tsv"), "share": 0.5, "pairs": len(first) - 20}]
    groups = negative_groups(pairs, True).tolist()
    shared = [20 + n for n, sentence in enumerate(first[20:]) if sentence in ("s0", "s1", "s2")]  # r0..r2 on both sides
    assert shared and all(groups[row] == groups[int(first[row][1:])] for row in shared)
    with pytest.raises(InputError, match="a share is in"):
        TrainingPairs.from_path(f"1.5={tmp_path / 'ref.tsv'}")
