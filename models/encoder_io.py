"""A trained encoder on disk: ``config.json`` + featurizer vocabularies + ``model.pt``.

Layout of a model directory::

    config.json          {"format": 1, "encoder": EncoderConfig fields}
    features/tokens.*    words.vocab (one word a line) or pieces.model (sentencepiece)
    features/trigrams.*  trigrams.vocab, for models that read trigrams
    model.pt             the weights (state_dict) of the best (or last) checkpoint

The vocabularies are part of the model: ids mean nothing without them. Files are written
under a temporary name and renamed, so a reader never sees a half-written model.
"""

from __future__ import annotations

import json
import os
import pickle
from collections.abc import Iterable
from pathlib import Path

import torch

from corpus.files import write_atomically
from corpus.outputs import is_output, read_json, reading, verified_manifest
from models.configs import EncoderConfig
from models.encoders import Encoder, build_encoder, feature_kind
from models.featurizers import FEATURIZERS, PieceFeaturizer, SentenceBatches
from models.ragged import IdRows

FORMAT = 1
CONFIG, WEIGHTS, FEATURES = "config.json", "model.pt", "features"

Featurizers = dict[str, object]


def fit_featurizers(
    config: EncoderConfig, sentences: SentenceBatches, extra_words: Iterable[str] = (), seed: int = 1, store: Path | None = None
) -> tuple[Featurizers, dict[str, IdRows]]:
    """One featurizer per feature the model reads, fitted on the training sentences, and
    those sentences featurized (int32 ids; with ``store``, in files there, one per feature:
    ``models.ragged.RaggedFile``). ``extra_words`` (the pretrained vectors' words) join
    the word vocabulary after the training words, so words seen only in the vectors keep their
    vector. A batch's words are its sentences' ``*_tok`` strings, when the corpus has them
    (``models.featurizers``)."""
    featurizers: Featurizers = {}
    inputs: dict[str, IdRows] = {}
    for feature in sorted(build_encoder_features(config)):
        kind, path = feature_kind(config, feature), None if store is None else store / feature
        if kind == "pieces":
            fitted = PieceFeaturizer.fit_batches(sentences, config.spm_vocab_size, seed, path)
        elif kind == "words":
            fitted = FEATURIZERS[kind].fit_batches(sentences, config.min_count, config.max_vocab or None, extra_words, path)
        else:
            fitted = FEATURIZERS[kind].fit_batches(sentences, config.trigram_min_count, config.max_trigrams or None, (), path)
        featurizers[feature], inputs[feature] = fitted
    return featurizers, inputs


def build_encoder_features(config: EncoderConfig) -> set[str]:
    """Features the named model reads (from a throw-away tiny instance of it)."""
    sizes = {"tokens": 2, "trigrams": 2}
    probe = EncoderConfig.from_dict({**config.to_dict(), "dim": 2, "embed_dim": 2, "cnn_maps": 1})
    return build_encoder(probe, sizes).features


def sizes_of(featurizers: Featurizers) -> dict[str, int]:
    return {feature: len(featurizer) for feature, featurizer in featurizers.items()}


def save_setup(directory: Path, config: EncoderConfig, featurizers: Featurizers) -> None:
    """Write the config and vocabularies (everything but the weights)."""
    features = Path(directory) / FEATURES
    for feature, featurizer in featurizers.items():
        (features / feature).mkdir(parents=True, exist_ok=True)
        featurizer.save(features / feature)
    text = json.dumps({"format": FORMAT, "encoder": config.to_dict()}, indent=2, sort_keys=True) + "\n"
    write_atomically(Path(directory) / CONFIG, lambda p: p.write_text(text))


def load_config(directory: Path) -> EncoderConfig:
    path = Path(directory) / CONFIG
    if not path.exists():
        raise FileNotFoundError(f"{directory} is not a trained encoder: {CONFIG} is missing")
    if is_output(Path(directory)):  # written by TrainEncoder: still exactly what it wrote
        verified_manifest(Path(directory))
    saved = read_json(path)
    if saved.get("format") != FORMAT:
        raise ValueError(f"{path}: model format {saved.get('format')} is not {FORMAT}")
    return EncoderConfig.from_dict(saved["encoder"])


def load_setup(directory: Path) -> tuple[EncoderConfig, Featurizers]:
    config = load_config(directory)
    features = Path(directory) / FEATURES
    featurizers = {
        feature: FEATURIZERS[feature_kind(config, feature)].load(features / feature)
        for feature in sorted(build_encoder_features(config))
    }
    return config, featurizers


def save_torch(value: object, path: Path) -> None:
    """``torch.save`` written atomically, with the same bytes every time: given a file name,
    torch names the archive's inner folder after it, and the temporary's name is random; given
    an open file, the folder is always ``archive``."""

    def write(temporary: Path) -> None:
        with open(temporary, "wb") as handle:
            torch.save(value, handle)

    write_atomically(path, write)


def save_weights(directory: Path, encoder: Encoder, name: str = WEIGHTS) -> None:
    state = {key: value.detach().cpu() for key, value in encoder.state_dict().items()}
    save_torch(state, Path(directory) / name)


def load_model(directory: Path, device: str | torch.device = "cpu") -> tuple[EncoderConfig, Featurizers, Encoder]:
    """Config, featurizers and the encoder with its trained weights, in eval mode. A link in the
    path (``work/encoders/latest``) is resolved once, so all three come from one model even if
    the link moves to another while they load."""
    directory = Path(os.path.realpath(directory))
    config, featurizers = load_setup(directory)
    weights = Path(directory) / WEIGHTS
    if not weights.exists():
        raise FileNotFoundError(f"{directory}: no weights ({WEIGHTS}); training has not saved a model yet")
    encoder = build_encoder(config, sizes_of(featurizers))
    with reading(weights, also=(RuntimeError, pickle.UnpicklingError, EOFError)):  # torch's errors for a damaged archive
        state = torch.load(weights, map_location="cpu", weights_only=True)
    encoder.load_state_dict(state)
    return config, featurizers, encoder.to(device).eval()

