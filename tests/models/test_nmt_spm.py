"""Sentencepiece vocabularies and the fairseq training settings."""

import pytest
from nmt_fixtures import bitext_table, toy_pairs

import schemas
from models.nmt import fairseq_train, spm


@pytest.fixture
def bitext(tmp_path):
    path = tmp_path / "bitext.parquet"
    pairs = [*toy_pairs(300, seed=2), ("Pes " * 80, "The dog."), ("\u200b", "Nothing.")]
    schemas.write_table(bitext_table(pairs), schemas.BITEXT, str(path))
    return str(path)


def test_vocabulary_size_is_a_soft_limit_on_small_corpora(bitext, tmp_path):
    paths = spm.train_from_bitext([bitext], tmp_path, spm.SpmConfig(vocab_size=32_000), joint=True)
    assert paths["cs"] == paths["en"] == tmp_path / "spm.model"
    size = spm.load(paths["cs"]).get_piece_size()
    assert 50 < size < 32_000
    dictionary = list(spm.fairseq_dictionary(paths["cs"]))
    assert len(dictionary) == size - 1 and all(line.endswith(" 1") for line in dictionary)
    assert "<unk> 1" not in dictionary


def test_per_language_models_and_lossless_round_trip(bitext, tmp_path):
    paths = spm.train_from_bitext([bitext], tmp_path, spm.SpmConfig(vocab_size=80), joint=False)
    assert paths == {"cs": tmp_path / "spm.cs.model", "en": tmp_path / "spm.en.model"}
    codec = spm.Codec(paths["cs"], paths["en"])
    cs = "Pes vidí kočka."
    assert "".join(codec.encode([cs])[0]).replace("▁", " ").strip() == cs
    en_pieces = spm.load(paths["en"]).encode(["The dog sees cat."], out_type=str)
    assert codec.decode(en_pieces) == ["The dog sees cat."]
    assert spm.load(paths["cs"]).get_piece_size() <= 80


def test_training_is_deterministic(bitext, tmp_path):
    config = spm.SpmConfig(vocab_size=100, input_sentence_size=200)
    first = spm.train(spm.bitext_column([bitext], "foreign"), tmp_path / "a.model", config)
    second = spm.train(spm.bitext_column([bitext], "foreign"), tmp_path / "b.model", config)
    assert first == second
    assert (tmp_path / "a.model").read_bytes() == (tmp_path / "b.model").read_bytes()


def test_train_config_uses_preset_values_unless_overridden():
    tiny = fairseq_train.TrainConfig(preset="tiny").arguments(shared_vocabulary=True)
    assert "--share-all-embeddings" in tiny and "--cpu" in tiny
    assert tiny[tiny.index("--max-epoch") + 1] == "30" and tiny[tiny.index("--encoder-embed-dim") + 1] == "64"
    gpu = fairseq_train.TrainConfig(preset="base", max_update=1000, lr=1e-3, dropout=0.0, fp16=True, cpu=False,
                                    extra_args="--update-freq 4").arguments(shared_vocabulary=False)
    assert gpu[gpu.index("--lr") + 1] == "0.001" and gpu[gpu.index("--dropout") + 1] == "0.0"
    assert "--fp16" in gpu and "--cpu" not in gpu and gpu[gpu.index("--max-update") + 1] == "1000"
    assert gpu[-2:] == ["--update-freq", "4"] and "--share-decoder-input-output-embed" in gpu
    for preset in fairseq_train.PRESETS:  # every preset stops
        arguments = fairseq_train.TrainConfig(preset=preset).arguments(shared_vocabulary=True)
        assert int(arguments[arguments.index("--max-epoch") + 1]) > 0
    with pytest.raises(ValueError, match="unknown preset"):
        fairseq_train.TrainConfig(preset="huge")
