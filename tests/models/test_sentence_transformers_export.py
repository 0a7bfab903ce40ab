"""``paranmt-encode export``: an encoder trained here, saved as a sentence-transformers model,
gives the project's own vectors through ``SentenceTransformer(DIR).encode``."""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # loading an export must never reach for the Hub

import numpy as np
import pytest

from models.cli import main
from models.configs import EncoderConfig, TrainConfig
from models.encode import load_encoder
from models.sentence_transformers_export import SentenceTransformer
from models.trainer import train_encoder

FIRST = [
    "A man is playing a guitar on the street.",
    "Two dogs are running through a snowy field.",
    "The stock market fell sharply on Tuesday, analysts said.",
    "She didn't want to go to the meeting, so she stayed home.",
    "A woman is slicing an onion in the kitchen.",
    "The committee approved the budget for 2018 after a long debate.",
]
SECOND = [
    "Someone plays guitar outside.",
    "Dogs run across the snow.",
    "Shares dropped steeply on Tuesday.",
    "She skipped the meeting and stayed at home.",
    "A woman cuts an onion.",
    "After hours of debate the committee passed the 2018 budget.",
]
# Unseen words, accents, a lone symbol, an empty line and a long sentence: the cases where a
# featurizer or the batching could differ.
UNSEEN = [
    "Zoë's café reopened in São Paulo!",
    "?",
    "",
    " ".join(FIRST + SECOND),
    "a man is playing a flute",
]
KINDS = {
    "word_avg": EncoderConfig(model="word_avg", embed_dim=12, tokens="words"),
    "trigram_word": EncoderConfig(model="trigram_word", embed_dim=10),
    "bilstm_avg": EncoderConfig(model="bilstm_avg", embed_dim=8, dim=6),
}


def row_cosines(a, b):
    return (a * b).sum(1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    directories = {}
    for name, config in KINDS.items():
        directories[name] = tmp_path_factory.mktemp(name)
        train_encoder((FIRST * 4, SECOND * 4), directories[name], config, TrainConfig(epochs=2, batch_size=4, megabatch=2))
    return directories


@pytest.mark.parametrize("kind", KINDS)
def test_sentence_transformers_gives_the_projects_vectors(kind, trained, tmp_path):
    out = tmp_path / "exported"
    assert main(["export", "--model", str(trained[kind]), "--sentence-transformers", str(out)]) == 0
    model = SentenceTransformer(str(out), trust_remote_code=True, device="cpu")
    own = load_encoder(trained[kind], "cpu")
    sentences = FIRST + SECOND + UNSEEN
    theirs = model.encode(sentences, batch_size=3)  # small batches: ST's length sorting is exercised
    mine = own.encode(sentences)
    assert theirs.shape == mine.shape == (len(sentences), own.dim) == (len(sentences), model.get_embedding_dimension())
    assert row_cosines(theirs, mine).min() >= 0.9999
    np.testing.assert_allclose(theirs, mine, rtol=1e-5, atol=1e-6)
    pairwise = model.similarity_pairwise(model.encode(FIRST), model.encode(SECOND)).numpy()
    np.testing.assert_allclose(pairwise, own.score(FIRST, SECOND), atol=1e-5)
    # The export is also a model directory of this project.
    np.testing.assert_allclose(load_encoder(out, "cpu").encode(sentences), mine, rtol=1e-6)
    assert "trust_remote_code=True" in (out / "README.md").read_text()


def test_loading_without_trust_remote_code_says_what_is_needed(trained, tmp_path):
    main(["export", "--model", str(trained["word_avg"]), "--sentence-transformers", str(tmp_path / "out")])
    with pytest.raises(ValueError, match="trust_remote_code=True"):
        SentenceTransformer(str(tmp_path / "out"), device="cpu")


def test_export_errors_are_one_line_and_a_previous_export_is_replaced(trained, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["export", "--model", str(tmp_path / "no-model"), "--sentence-transformers", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "config.json is missing" in error and not out.exists()

    other = tmp_path / "notes"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    assert main(["export", "--model", str(trained["word_avg"]), "--sentence-transformers", str(other)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "holds files this project did not write" in error
    assert sorted(p.name for p in other.iterdir()) == ["keep.txt"]

    for kind in ("word_avg", "bilstm_avg"):  # words, then pieces: nothing of the first is left
        assert main(["export", "--model", str(trained[kind]), "--sentence-transformers", str(out)]) == 0
    replaced = SentenceTransformer(str(out), trust_remote_code=True, device="cpu")
    assert replaced.get_embedding_dimension() == 6
    assert [p.name for p in (out / "features" / "tokens").iterdir()] == ["pieces.model"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes", "out"]  # no temporaries left
    assert main(["export", "--model", str(tmp_path / "no-model"), "--sentence-transformers", str(out)]) == 2
    assert (out / "modules.json").exists()  # a failed export leaves the previous one in place


@pytest.mark.slow
def test_export_matches_on_real_sts_sentences(shared_path, tmp_path):
    """Models trained on 2,000 real STS-B train pairs; every STS 2017 and STS-B dev sentence."""
    from corpus.sts import load_sts2017, load_stsb

    sts = shared_path("sts")
    train = load_stsb(sts, "train")
    sentences = [s for data in (load_sts2017(sts), load_stsb(sts, "dev")) for s in (*data.sent1, *data.sent2)]
    for kind, config in KINDS.items():
        model_dir, out = tmp_path / kind, tmp_path / f"{kind}-st"
        train_encoder((train.sent1[:2000], train.sent2[:2000]), model_dir, config, TrainConfig(epochs=1, device="cpu"))
        assert main(["export", "--model", str(model_dir), "--sentence-transformers", str(out)]) == 0
        theirs = SentenceTransformer(str(out), trust_remote_code=True, device="cpu").encode(sentences)
        mine = load_encoder(model_dir, "cpu").encode(sentences)
        assert row_cosines(theirs, mine).min() >= 0.9999, kind


@pytest.mark.parametrize("change", ["own file added", "export file edited", "record removed", "someone else's model"])
def test_an_export_folder_with_anything_not_as_written_is_never_deleted(trained, tmp_path, capsys, change):
    out = tmp_path / "out"
    assert main(["export", "--model", str(trained["word_avg"]), "--sentence-transformers", str(out)]) == 0
    if change == "own file added":
        (out / "my-notes.txt").write_text("mine")
    elif change == "export file edited":
        (out / "README.md").write_text("my own model card")
    elif change == "record removed":  # a sentence-transformers folder as any other tool writes it
        (out / "paranmt-export.json").unlink()
    else:
        (out / "1_Pooling").mkdir()
        (out / "1_Pooling" / "config.json").write_text("{}")
    before = {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert main(["export", "--model", str(trained["bilstm_avg"]), "--sentence-transformers", str(out)]) == 2
    assert "holds files this project did not write" in capsys.readouterr().err
    assert {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
