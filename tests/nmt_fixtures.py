"""A tiny cs→en model trained once per test session on a synthetic, learnable "Czech".

The toy language maps each Czech word to one English word ("Pes vidí kočka ryba." → "The dog
sees cat fish."), so a 2-layer Transformer learns it in seconds on CPU.
The model is trained in two fairseq-train calls on the same save directory, so the second call
must resume from checkpoint_last.pt: the session fixture records both logs for the tests.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import pyarrow as pa
import pytest

import schemas
from corpus.text import english_tokens
from corpus.translation_check import NAMES
from models.nmt import binarize, convert, fairseq_train, spm
from models.nmt.model import NmtModel

# A model trained for seconds, or with random weights, says one sentence for many sources, which
# the translation check stops (corpus.translation_check): tests of the plumbing accept its figures.
ACCEPT_ALL = ",".join(NAMES)

NOUNS = dict(zip(
    "pes kočka dům strom voda chléb auto město řeka hora slunce kniha stůl okno ryba pták".split(),
    "dog cat house tree water bread car city river mountain sun book table window fish bird".split(),
    strict=True,
))
VERBS = dict(zip("vidí má jí kreslí hledá".split(), "sees has eats draws seeks".split(), strict=True))
EPOCHS_FIRST, EPOCHS_TOTAL = 2, 8


def toy_pairs(count: int, seed: int) -> list[tuple[str, str]]:
    """Random toy sentences: subject, verb, one to three objects."""
    rng = random.Random(seed)
    nouns, verbs = sorted(NOUNS), sorted(VERBS)
    pairs = []
    for _ in range(count):
        subject, verb = rng.choice(nouns), rng.choice(verbs)
        objects = [rng.choice(nouns) for _ in range(rng.randint(1, 3))]
        cs = " ".join([subject.capitalize(), verb, *objects]) + "."
        en = " ".join(["The", NOUNS[subject], VERBS[verb], *(NOUNS[o] for o in objects)]) + "."
        pairs.append((cs, en))
    return pairs


def bitext_table(pairs: list[tuple[str, str]], source: str = "toy") -> pa.Table:
    """Pairs as rows of the ``bitext`` schema, English tokenized as ingest does it."""
    count = len(pairs)
    en_tok = english_tokens(en for _, en in pairs)
    return schemas.conform(pa.table({
        "id": [f"{source}-{i:09d}" for i in range(1, count + 1)],
        "source": [source] * count,
        "line": list(range(1, count + 1)),
        "domain": [source] * count,
        "czeng_score": [None] * count,
        "pivot": ["cs"] * count,
        "foreign": [cs for cs, _ in pairs],
        "en": [en for _, en in pairs],
        "en_tok": en_tok,
        "en_n_tokens": [len(tokens.split()) for tokens in en_tok],
    }), schemas.BITEXT)


@dataclass(frozen=True)
class TinyNmt:
    root: Path
    model: NmtModel
    first_log: list[str]
    resumed_log: list[str]


@lru_cache(maxsize=1)
def build_tiny_nmt(root: Path) -> TinyNmt:
    """Train, resume and convert the toy model under ``root`` (once per process)."""
    root.mkdir(parents=True, exist_ok=True)
    bitext = root / "bitext.parquet"
    schemas.write_table(bitext_table(toy_pairs(2000, seed=1)), schemas.BITEXT, str(bitext))
    spm_path = root / "spm.model"
    spm.train((s for column in ("foreign", "en") for s in spm.bitext_column([str(bitext)], column)), spm_path,
              spm.SpmConfig(vocab_size=200))
    binarize.binarize_bitext([str(bitext)], {"cs": spm_path, "en": spm_path}, root / "data-bin", valid_size=100, max_pieces=255)
    logs: list[list[str]] = []
    for epochs in (EPOCHS_FIRST, EPOCHS_TOTAL):
        logs.append([])
        config = fairseq_train.TrainConfig(preset="tiny", max_epoch=epochs, lr=3e-3, warmup_updates=30,
                                           save_interval_updates=0)
        checkpoint = fairseq_train.train(root / "data-bin", root / "checkpoints", config, True, logs[-1].append)
    positions = fairseq_train.model_positions(str(checkpoint))
    convert.convert(str(checkpoint), str(root / "data-bin"), root / "ct2")
    model = NmtModel(str(checkpoint), str(root / "data-bin"), str(spm_path), str(spm_path), *positions, str(root / "ct2"))
    return TinyNmt(root, model, *logs)


@pytest.fixture(scope="session", name="tiny_nmt")
def tiny_nmt_fixture(tmp_path_factory) -> TinyNmt:
    """Import this into a test module to use the ``tiny_nmt`` fixture (trained once per session)."""
    return build_tiny_nmt(tmp_path_factory.getbasetemp() / "tiny_nmt")
