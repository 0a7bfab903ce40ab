"""Encode API and the ``paranmt-encode`` CLI on a small model trained here."""

import subprocess
import sys

import numpy as np
import pytest

from corpus.wordvec import load_vectors
from models.cli import main
from models.configs import EncoderConfig, TrainConfig
from models.encode import load_encoder
from models.featurizers import words
from models.trainer import train_encoder

FIRST = ["A man plays the guitar.", "Two dogs run in a field.", "The market fell sharply today.", "a woman is cooking"]
SECOND = ["Someone is playing a guitar.", "Dogs are running on the grass.", "Stocks dropped a lot today.", "a man is slicing onions"]


@pytest.fixture(scope="module")
def word_avg(tmp_path_factory):
    directory = tmp_path_factory.mktemp("word_avg")
    train_encoder((FIRST * 5, SECOND * 5), directory, EncoderConfig(model="word_avg", embed_dim=12, tokens="words"),
                  TrainConfig(epochs=2, batch_size=4, megabatch=2))
    return directory


def test_embed_and_score_commands_match_the_api(word_avg, tmp_path):
    encoder = load_encoder(word_avg, "cpu")
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("\n".join(FIRST + ["", "tab\tinside"]) + "\n", encoding="utf-8")
    assert main(["embed", "--model", str(word_avg), "--input", str(sentences), "--output", str(tmp_path / "emb.npy"), "--device", "cpu"]) == 0
    embedded = np.load(tmp_path / "emb.npy")
    assert embedded.shape == (6, 12) and embedded.dtype == np.float32
    np.testing.assert_allclose(embedded, encoder.encode([*FIRST, "", "tab\tinside"]), rtol=1e-6)

    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("".join(f"{a}\t{b}\n" for a, b in zip(FIRST, SECOND, strict=True)), encoding="utf-8")
    main(["score", "--model", str(word_avg), "--input", str(pairs), "--output", str(tmp_path / "scores.txt"), "--batch-size", "3"])
    scores = np.loadtxt(tmp_path / "scores.txt")
    expected = encoder.score(FIRST, SECOND)
    np.testing.assert_allclose(scores, expected, atol=2e-6)
    a, b = encoder.encode(FIRST), encoder.encode(SECOND)
    np.testing.assert_allclose(expected, (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1), rtol=1e-5)


def test_a_pair_with_an_empty_side_is_scored_nan_and_counted_as_training_leaves_it_out(word_avg, tmp_path, capsys):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(f"{FIRST[0]}\t{SECOND[0]}\n\t{SECOND[1]}\n{FIRST[2]}\t  \n{FIRST[3]}\t{SECOND[3]}\n", encoding="utf-8")
    assert main(["score", "--model", str(word_avg), "--input", str(pairs), "--output", str(tmp_path / "scores.txt")]) == 0
    scores = np.loadtxt(tmp_path / "scores.txt")
    assert len(scores) == 4 and np.isnan(scores[1:3]).all() and np.isfinite(scores[[0, 3]]).all()  # one line per pair, aligned
    assert "2 of 4 pairs have an empty side and are scored nan (lines 2, 3)" in capsys.readouterr().err


def test_exported_word_vectors_reproduce_the_word_avg_embedding(word_avg, tmp_path):
    """The contract PP similarity relies on: the mean of the exported vectors of a sentence's
    lowercased Moses tokens is the model's embedding."""
    main(["vectors", "--model", str(word_avg), "--output", str(tmp_path / "vectors.txt")])
    vocabulary, vectors = load_vectors(tmp_path / "vectors.txt")
    assert "<pad>" not in vocabulary and "guitar" in vocabulary
    index = {word: i for i, word in enumerate(vocabulary)}
    sentence = "Two dogs run in the field."
    mean = vectors[[index[w] for w in words(sentence)]].mean(axis=0)
    np.testing.assert_allclose(load_encoder(word_avg, "cpu").encode([sentence])[0], mean, rtol=1e-5, atol=1e-6)


def test_vectors_need_a_word_avg_model_and_load_needs_a_model(word_avg, tmp_path, capsys):
    directory = tmp_path / "trigram"
    train_encoder((FIRST, SECOND), directory, EncoderConfig(model="trigram_avg", embed_dim=4), TrainConfig(epochs=1))
    with pytest.raises(ValueError, match="word_avg"):
        load_encoder(directory, "cpu").word_vectors()
    with pytest.raises(FileNotFoundError, match="config.json"):
        load_encoder(tmp_path, "cpu")
    # The command line says the same in one line.
    not_utf8, sentences = tmp_path / "latin1.txt", tmp_path / "ok.txt"
    not_utf8.write_bytes("Žluťoučký kůň\n".encode("cp1250"))
    sentences.write_text("a dog runs\n")
    for argv, message in (
        (["vectors", "--model", str(directory), "--output", str(tmp_path / "v.txt")], "word_avg"),
        (["embed", "--model", str(tmp_path / "nothing"), "--input", "x", "--output", "y"], "config.json is missing"),
        (["embed", "--model", str(word_avg), "--input", str(tmp_path / "absent.txt"), "--output", "y"], "absent.txt"),
        (["embed", "--model", str(word_avg), "--input", str(tmp_path), "--output", "y"], "Is a directory"),
        (["embed", "--model", str(word_avg), "--input", str(not_utf8), "--output", "y"], "not UTF-8"),
        (["embed", "--model", str(word_avg), "--input", str(sentences), "--output", str(tmp_path)], "Is a directory"),
        (["score", "--model", str(word_avg), "--input", str(tmp_path / "trigram"), "--output", "y"], "no Parquet files"),
    ):
        assert main(argv) == 2
        error = capsys.readouterr().err
        assert error.startswith(f"paranmt-encode {argv[0]}: error:") and error.count("\n") == 1 and message in error


def test_console_script_is_wired():
    done = subprocess.run([sys.executable, "-m", "models.cli", "score", "--help"], capture_output=True, text=True, check=True)
    assert "--model" in done.stdout and "--input" in done.stdout


@pytest.mark.parametrize("size", ["0", "-5", "many"])
def test_a_batch_size_below_one_is_refused_in_one_line(word_avg, tmp_path, capsys, size):
    sentences = tmp_path / "s.txt"
    sentences.write_text("a dog runs\n")
    with pytest.raises(SystemExit) as exit_:
        main(["embed", "--model", str(word_avg), "--input", str(sentences), "--output", str(tmp_path / "e.npy"), "--batch-size", size])
    assert exit_.value.code == 2 and not (tmp_path / "e.npy").exists()
    assert "--batch-size: must be a whole number of at least 1" in capsys.readouterr().err


def test_a_damaged_encoder_is_one_line_naming_its_file(word_avg, tmp_path, capsys):
    import json
    import shutil

    from corpus.outputs import MANIFEST, committed_files

    committed = tmp_path / "committed"  # as TrainEncoder commits it: with a manifest of its files
    shutil.copytree(word_avg, committed)
    (committed / MANIFEST).write_text(json.dumps({"files": committed_files(committed)}))
    weights = bytearray((committed / "model.pt").read_bytes())
    weights[len(weights) // 2] ^= 0xFF
    (committed / "model.pt").write_bytes(bytes(weights))
    sentences = tmp_path / "sentences.txt"
    sentences.write_text("A man plays the guitar.\n", encoding="utf-8")
    embed = ["embed", "--input", str(sentences), "--output", str(tmp_path / "emb.npy"), "--device", "cpu"]
    assert main([*embed, "--model", str(committed)]) == 2
    assert capsys.readouterr().err == (f"paranmt-encode embed: error: {committed / 'model.pt'} was changed after the stage wrote it "
                                       "(its SHA-256 differs); run the command again: a damaged output is rebuilt\n")
    loose = tmp_path / "loose"  # no manifest: the damage is met where the weights are read
    shutil.copytree(word_avg, loose)
    with open(loose / "model.pt", "r+b") as handle:
        handle.truncate(100)
    assert main([*embed, "--model", str(loose)]) == 2
    assert capsys.readouterr().err.startswith(f"paranmt-encode embed: error: {loose / 'model.pt'} cannot be read (")
