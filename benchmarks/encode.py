"""Encoding throughput of the averaging encoders: sentences/s on one CPU core, tokenization included.

Word Avg (sentencepiece pieces), Trigram Avg and Trigram-Word (trigrams and pieces,
concatenated), 300-d, fitted on real reference pairs (../shared/tools/build_refpairs.py),
encode a sample of other pairs' sentences through ``SentenceEncoder.encode`` with torch and
sentencepiece on one thread. The weights are random: the speed does not depend on them.

The baseline, measured in the same run and checked to give the same ids and vectors, is the
per-sentence featurization the project used before, kept here (not in the package): a Python
string per trigram and a dict lookup each, pieces as Python lists, the rows chained into
arrays, every sentence featurized before any is embedded, then embedded longest first. Each
figure is the best of ``--repeats`` runs, old and new alternating. Per core is sentences over
the process's CPU time (other jobs on a shared machine stretch the wall clock, printed beside
it with the load average).
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from benchmarks.common import BUILD_REFPAIRS, machine, markdown_table, write_reference_pairs

MODELS = (("Word Avg (pieces)", "word_avg"), ("Trigram Avg", "trigram_avg"), ("Trigram-Word (trigrams + pieces)", "trigram_word"))


def old_trigram_rows(featurizer, sentences: Sequence[str]):
    """Trigram ids one sentence at a time, as before: every 3-character window of the padded,
    lowercased, whitespace-collapsed sentence as a string, looked up in the vocabulary's dict."""
    from models.ragged import Ragged
    from models.vocabulary import UNK

    get = featurizer.vocabulary.index.get
    rows = []
    for sentence in sentences:
        text = f" {' '.join(sentence.lower().split())} "
        rows.append([get(text[i : i + 3], UNK) for i in range(len(text) - 2)] or [UNK])
    return Ragged.from_rows(rows)


def old_piece_rows(featurizer, sentences: Sequence[str]):
    """Piece ids as Python lists chained into an array, as before (on one thread here)."""
    from models.ragged import Ragged
    from models.vocabulary import UNK

    rows = featurizer.processor.encode([s.lower() for s in sentences], num_threads=1)
    return Ragged.from_rows([row or [UNK] for row in rows])


OLD_ROWS = {"trigrams": old_trigram_rows, "pieces": old_piece_rows}


def old_encode(encoder, sentences: list[str]) -> np.ndarray:
    """The previous ``SentenceEncoder.encode``: all sentences featurized, then embedded in
    batches of 256, longest first."""
    from models.encode import embed_inputs

    inputs = {feature: OLD_ROWS[featurizer.kind](featurizer, sentences) for feature, featurizer in encoder.featurizers.items()}
    return embed_inputs(encoder.encoder, inputs, 256).float().cpu().numpy()


def seconds(run: Callable[[], object]) -> tuple[float, float]:
    """(CPU seconds of this process, wall seconds) of one call."""
    cpu, wall = time.process_time(), time.perf_counter()
    run()
    return time.process_time() - cpu, time.perf_counter() - wall


def best_of(repeats: int, runs: dict[str, Callable[[], object]]) -> dict[str, tuple[float, float]]:
    """The fastest (CPU, wall) seconds of each run over ``repeats`` rounds, the runs alternating."""
    best = {name: (np.inf, np.inf) for name in runs}
    for _ in range(repeats):
        for name, run in runs.items():
            cpu, wall = seconds(run)
            best[name] = (min(best[name][0], cpu), min(best[name][1], wall))
    return best


def same_rows(a, b) -> bool:
    return np.array_equal(a.values, b.values) and np.array_equal(a.offsets, b.offsets)


def sample(pairs_tsv: Path, fit_pairs: int, sentences: int) -> tuple[list[str], list[str]]:
    """(fitting sentences: both sides of ``fit_pairs`` pairs, encoding sentences from other pairs),
    a seeded sample of the file (it is grouped by source)."""
    lines = pairs_tsv.read_text(encoding="utf-8").splitlines()
    order = np.random.default_rng(0).permutation(len(lines))
    fields = [line.split("\t") for line in lines]
    fit = [side for i in order[:fit_pairs] for side in fields[i][:2]]
    encode = [side for i in order[fit_pairs:] for side in fields[i][:2]][:sentences]
    return fit, encode


def encoders(fit: list[str], spm_vocab_size: int | None = None) -> dict[str, object]:
    """The three averaging models over one fit of each featurizer (pieces: the default size
    unless given), random weights."""
    from models.configs import EncoderConfig
    from models.encode import SentenceEncoder
    from models.encoder_io import build_encoder_features
    from models.encoders import build_encoder, resolve_embed_dim
    from models.featurizers import PieceFeaturizer, TrigramFeaturizer

    pieces = PieceFeaturizer.fit_transform(fit, spm_vocab_size or EncoderConfig().spm_vocab_size)[0]
    fitted = {"tokens": pieces, "trigrams": TrigramFeaturizer.fit_transform(fit)[0]}
    models = {}
    for label, model in MODELS:
        config = resolve_embed_dim(EncoderConfig(model=model), None)
        featurizers = {feature: fitted[feature] for feature in sorted(build_encoder_features(config))}
        torch.manual_seed(0)
        encoder = build_encoder(config, {feature: len(f) for feature, f in featurizers.items()}).eval()
        models[label] = SentenceEncoder(config, featurizers, encoder)
    return models


def load() -> str:
    return "{:.1f}, {:.1f}, {:.1f}".format(*os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--fit-pairs", type=int, default=50_000, help="reference pairs the featurizers are fitted on (both sides)")
    parser.add_argument("--sentences", type=int, default=20_000, help="sentences encoded (from other pairs)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each measurement; the fastest is kept")
    args = parser.parse_args()
    if not BUILD_REFPAIRS.exists():
        print(f"encoding throughput: skipped ({BUILD_REFPAIRS} absent: the reference pairs are built from ../shared/data)")
        return
    torch.set_num_threads(1)
    from models.featurizers import featurize

    with tempfile.TemporaryDirectory() as tmp:
        write_reference_pairs(Path(tmp) / "pairs.tsv")
        fit, sentences = sample(Path(tmp) / "pairs.tsv", args.fit_pairs, args.sentences)
    print(f"machine: {machine()}; torch and sentencepiece threads: 1; load average before: {load()}")
    print(f"featurizers fitted on {len(fit):,} reference-pair sentences; {len(sentences):,} other sentences encoded "
          f"({np.mean([len(s) for s in sentences]):.0f} characters on average)\n")
    models = encoders(fit)

    rows = []
    for label, encoder in models.items():
        encoder.encode(sentences[:16])  # warm-up (lazy initialisation, first-call allocations)
        for feature, featurizer in encoder.featurizers.items():
            if not same_rows(OLD_ROWS[featurizer.kind](featurizer, sentences), featurize({feature: featurizer}, sentences)[feature]):
                raise SystemExit(f"{label}: the {featurizer.kind} ids differ from the per-sentence featurization's")
        same = np.array_equal(old_encode(encoder, sentences), encoder.encode(sentences))
        best = best_of(args.repeats, {"old": lambda e=encoder: old_encode(e, sentences), "new": lambda e=encoder: e.encode(sentences)})
        (old_cpu, old_wall), (new_cpu, new_wall) = best["old"], best["new"]
        n = len(sentences)
        rows.append([label, n / old_cpu, n / new_cpu, old_cpu / new_cpu, n / old_wall, n / new_wall, "yes" if same else "no"])
    print("SentenceEncoder.encode, 1 thread, tokenization included (ids identical to the baseline's, checked):\n")
    print(markdown_table(["encoder", "per-sentence (baseline) sentences/s per core", "vectorized sentences/s per core", "speed-up",
                          "baseline sentences/s wall", "vectorized sentences/s wall", "same vectors"], rows) + "\n")

    featurizers = models[MODELS[-1][0]].featurizers
    rows = []
    for feature, featurizer in featurizers.items():
        best = best_of(args.repeats, {"old": lambda f=featurizer: OLD_ROWS[f.kind](f, sentences),
                                      "new": lambda f=featurizer, k=feature: featurize({k: f}, sentences)})
        rows.append([featurizer.kind, len(sentences) / best["old"][0], len(sentences) / best["new"][0], best["old"][0] / best["new"][0]])
    print("Featurization alone (all sentences in one call), sentences/s per core:\n")
    print(markdown_table(["featurizer", "per-sentence (baseline)", "vectorized", "speed-up"], rows) + "\n")
    print(f"load average after: {load()}")


if __name__ == "__main__":
    main()
