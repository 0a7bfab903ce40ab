"""The paper's Table 8: frozen sentence embeddings on SentEval's transfer tasks (pure: no torch).

An encoder is any ``embed(sentences) -> (n, dim) array`` (as in :mod:`models.evaluation`). Every
task trains scikit-learn's L2 logistic regression (lbfgs, multinomial) on the embeddings,
standardized with the training part's mean and deviation, as SentEval does with its
scikit-learn back end:

* MR, CR, SUBJ, MPQA: 10-fold stratified cross-validation; in each outer fold the L2 strength
  C is chosen by an inner stratified k-fold (``inner_folds``) on the outer training part;
* SST-2: C chosen on the dev split, the model trained on train scored on test;
* TREC, MRPC, SICK-E, SICK-R: C chosen by an inner k-fold on train (no dev split), scored on test
  (SICK: on trial when the test file is absent, see corpus.transfer);
* MRPC, SICK-E and SICK-R classify the pair features [u, v, |u − v|, u ∗ v];
* SICK-R as SentEval: the relatedness score y ∈ [1, 5] becomes the distribution over the five
  integer scores that puts 1 − (y − ⌊y⌋) on ⌊y⌋ and y − ⌊y⌋ on ⌊y⌋ + 1; the classifier fits it
  (each pair is two rows weighted by those probabilities: cross-entropy against the
  distribution, SentEval's KL objective up to a constant) and predicts the expected score;
  reported: Pearson's r × 100 of the predicted against the gold relatedness. SentEval trains
  that classifier with Adam and early stopping on dev; here lbfgs with L2 strength chosen by
  inner folds on Pearson's r.

C's grid is ``C_GRID`` (2^-2 … 2^4, SentEval's scikit-learn grid), fitted along the path with
warm starts; the folds are seeded, lbfgs is deterministic, and the fits run in ``n_jobs``
processes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from joblib import Parallel, delayed
from scipy import stats
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import f1_score
from sklearn.model_selection import KFold, StratifiedKFold
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

from corpus.transfer import TransferSet

Embed = Callable[[list[str]], np.ndarray]

C_GRID = tuple(2.0**power for power in range(-2, 5))
# Tasks smaller than this are fit in this process: starting worker processes costs more than the fits.
PARALLEL_FROM_ROWS = 1000
# The paper's Table 8 (Wieting & Gimpel 2018) rows for the models this project trains: MR, CR,
# SUBJ, MPQA, SST, TREC accuracy, MRPC accuracy and F1, SICK-R Pearson × 100, SICK-E accuracy.
PAPER_TABLE8 = {
    "word_avg": ("Word Avg. (300d)", (75.8, 80.5, 89.2, 87.1, 80.0, 80.1, (68.6, 80.9), 83.6, 80.6)),
    "trigram_avg": ("Trigram Avg. (300d)", (68.8, 75.5, 83.6, 82.3, 73.6, 73.0, (71.4, 82.0), 79.3, 78.0)),
    "lstm_avg": ("LSTM Avg. (300d)", (73.8, 78.4, 88.5, 86.5, 80.6, 76.8, (73.6, 82.3), 83.9, 81.9)),
    "bilstm_avg": ("BiLSTM (600d)", (75.4, 80.8, 89.9, 87.2, 79.1, 84.4, (73.7, 81.9), 85.4, 84.3)),
    "trigram_word": ("Trigram-Word (600d, concatenation)", (75.8, 80.5, 89.9, 87.8, 79.7, 82.4, (70.7, 81.7), 84.6, 82.0)),
    "trigram_word_add": ("Trigram-Word (300d, addition)", (74.8, 78.8, 88.5, 87.4, 78.7, 79.0, (71.4, 81.4), 83.2, 80.6)),
    "trigram_word_lstm": ("Trigram-Word-LSTM (900d, concatenation)", (77.6, 81.4, 91.4, 88.2, 82.0, 85.4, (74.0, 81.5), 85.4, 83.8)),
}
TABLE8_COLUMNS = ("MR", "CR", "SUBJ", "MPQA", "SST2", "TREC", "MRPC", "SICK-R", "SICK-E")


def paper_scores(model: str, combine: str = "concat") -> tuple[str, dict[str, float | tuple[float, float]]] | None:
    """(the paper's row name, {task: its number}) for a model name, or None when the paper has no row."""
    key = f"{model}_add" if model == "trigram_word" and combine == "add" else model
    if key not in PAPER_TABLE8:
        return None
    name, numbers = PAPER_TABLE8[key]
    return name, dict(zip(TABLE8_COLUMNS, numbers, strict=True))


@dataclass(frozen=True)
class TransferConfig:
    """How the classifiers are trained and chosen (module docstring)."""

    folds: int = 10
    inner_folds: int = 5
    c_grid: tuple[float, ...] = C_GRID
    seed: int = 1
    n_jobs: int = -1
    max_iter: int = 1000


def _training_rows(x: np.ndarray, y: np.ndarray, relatedness: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """The rows a classifier fits: as given, or for relatedness scores the two weighted rows per pair."""
    if not relatedness:
        return x, y, None
    low = np.clip(np.floor(y), 1, 4).astype(int)
    upper = y - low
    rows, labels, weights = np.vstack([x, x]), np.concatenate([low, low + 1]), np.concatenate([1 - upper, upper])
    keep = weights > 0
    return rows[keep], labels[keep], weights[keep]


def _predict(model: LogisticRegression, x: np.ndarray, relatedness: bool) -> np.ndarray:
    return model.predict_proba(x) @ model.classes_.astype(float) if relatedness else model.predict(x)


def _pearson(predicted: np.ndarray, gold: np.ndarray) -> float:
    return 100.0 * float(stats.pearsonr(predicted, gold).statistic) if np.ptp(predicted) > 0 else math.nan


def _selection_score(predicted: np.ndarray, gold: np.ndarray, relatedness: bool) -> float:
    return _pearson(predicted, gold) if relatedness else float(np.mean(predicted == gold))


def _path_job(x, y, relatedness, scale_rows, train, validation, c_grid, max_iter) -> list[float]:
    """Validation scores along C's grid (ascending, warm-started) of classifiers fit on ``train``."""
    with threadpool_limits(1):  # one BLAS thread per job: 10x faster than two on a loaded 2-core machine
        return _path_scores(x, y, relatedness, scale_rows, train, validation, c_grid, max_iter)


def _path_scores(x, y, relatedness, scale_rows, train, validation, c_grid, max_iter) -> list[float]:
    scaler = StandardScaler().fit(x[scale_rows])
    rows, labels, weights = _training_rows(scaler.transform(x[train]), y[train], relatedness)
    held_out = scaler.transform(x[validation])
    model = LogisticRegression(warm_start=True, max_iter=max_iter)
    scores = []
    for c in c_grid:
        model.set_params(C=c).fit(rows, labels, sample_weight=weights)
        scores.append(_selection_score(_predict(model, held_out, relatedness), y[validation], relatedness))
    return scores


def _final_job(x, y, relatedness, train, test, c, max_iter) -> np.ndarray:
    """Predictions on ``test`` of the classifier at C = ``c`` fit on ``train``."""
    scaler = StandardScaler().fit(x[train])
    rows, labels, weights = _training_rows(scaler.transform(x[train]), y[train], relatedness)
    with threadpool_limits(1):
        model = LogisticRegression(C=c, max_iter=max_iter).fit(rows, labels, sample_weight=weights)
    return _predict(model, scaler.transform(x[test]), relatedness)


def _folds(count: int, y: np.ndarray, relatedness: bool, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    splitter = KFold(count, shuffle=True, random_state=seed) if relatedness else StratifiedKFold(count, shuffle=True, random_state=seed)
    return list(splitter.split(np.zeros((len(y), 1)), y))


def _classify(x: np.ndarray, y: np.ndarray, outer: list[tuple[np.ndarray, np.ndarray, np.ndarray | None]], relatedness: bool,
              config: TransferConfig, parallel: Parallel) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """For each outer (train, test, dev or None): C chosen on dev or on inner folds of train,
    then test predictions. Returns (test rows, their predictions, the chosen C per outer split)."""
    inner = []
    for index, (train, _, dev) in enumerate(outer):
        splits = ([(train, dev)] if dev is not None
                  else [(train[a], train[b]) for a, b in _folds(config.inner_folds, y[train], relatedness, config.seed + index)])
        inner.append(splits)
    jobs = [(index, train_part, validation) for index, splits in enumerate(inner) for train_part, validation in splits]
    paths = parallel(delayed(_path_job)(x, y, relatedness, outer[index][0], part, validation, config.c_grid, config.max_iter)
                     for index, part, validation in jobs)
    totals = np.zeros((len(outer), len(config.c_grid)))
    for (index, _, _), scores in zip(jobs, paths, strict=True):
        totals[index] += np.nan_to_num(scores, nan=-np.inf)
    chosen = [config.c_grid[int(np.argmax(row))] for row in totals]  # the first (smallest) C of the best
    predictions = parallel(delayed(_final_job)(x, y, relatedness, train, test, c, config.max_iter)
                           for (train, test, _), c in zip(outer, chosen, strict=True))
    return np.concatenate([test for _, test, _ in outer]), np.concatenate(predictions), chosen


def _features(embed: Embed, data_sets: list) -> list[np.ndarray]:
    """Each split's features: the embedding, or for pairs [u, v, |u − v|, u ∗ v]; every
    distinct sentence is embedded once."""
    sentences = list(dict.fromkeys(s for data in data_sets for s in (*data.first, *(data.second or []))))
    vectors = np.asarray(embed(sentences), dtype=np.float64)
    if vectors.ndim != 2 or vectors.shape[0] != len(sentences):
        raise ValueError(f"embed returned shape {vectors.shape} for {len(sentences)} sentences; expected one row per sentence")
    row = {sentence: index for index, sentence in enumerate(sentences)}
    features = []
    for data in data_sets:
        u = vectors[[row[s] for s in data.first]]
        if data.second is None:
            features.append(u)
        else:
            v = vectors[[row[s] for s in data.second]]
            features.append(np.hstack([u, v, np.abs(u - v), u * v]))
    return features


def evaluate_set(embed: Embed, task: TransferSet, config: TransferConfig = TransferConfig(), parallel: Parallel | None = None) -> dict:
    """One task's scores (× 100): accuracy, also F1 of the positive class for MRPC, Pearson's r
    for SICK-R; with the chosen C, the split sizes, what it was scored on, rejected lines, seconds."""
    started = time.perf_counter()
    parallel = parallel or Parallel(n_jobs=config.n_jobs)
    names = list(task.splits)
    parts = _features(embed, [task.splits[name] for name in names])
    x = np.vstack(parts)
    y = np.concatenate([task.splits[name].labels for name in names])
    relatedness = not task.classes
    offsets = dict(zip(names, np.cumsum([0, *map(len, parts)])[:-1].tolist(), strict=True))
    rows = {name: np.arange(offsets[name], offsets[name] + len(part)) for name, part in zip(names, parts, strict=True)}
    if "all" in rows:
        outer = [(rows["all"][a], rows["all"][b], None) for a, b in _folds(config.folds, y, relatedness, config.seed)]
    else:
        outer = [(rows["train"], rows["test"], rows.get("dev"))]
    test_rows, predicted, chosen = _classify(x, y, outer, relatedness, config, parallel if len(y) >= PARALLEL_FROM_ROWS else Parallel(n_jobs=1))
    gold = y[test_rows]
    result: dict = {"pearson": _pearson(predicted, gold)} if relatedness else {"accuracy": 100.0 * float(np.mean(predicted == gold))}
    if task.name == "MRPC":
        result["f1"] = 100.0 * float(f1_score(gold, predicted))
    result.update({
        "evaluated_on": task.evaluated_on, "C": chosen, "train": int(sum(len(t) for t, _, _ in outer) / len(outer)),
        "test": len(test_rows), "dim": int(parts[0].shape[1]), "rejects": dict(task.rejects), "seconds": round(time.perf_counter() - started, 2),
    })
    return result


def evaluate_transfer(embed: Embed, tasks: list[TransferSet], config: TransferConfig = TransferConfig(),
                      progress: Callable[[str], None] = lambda _: None) -> dict[str, dict]:
    """:func:`evaluate_set` of every task, by the task's name, in the given order."""
    results = {}
    with Parallel(n_jobs=config.n_jobs) as parallel:
        for task in tasks:
            progress(f"transfer task {task.name}")
            results[task.name] = evaluate_set(embed, task, config, parallel)
    return results


def headline(result: dict) -> float:
    """A task's main number: Pearson's r for SICK-R, else accuracy."""
    return result["pearson"] if "pearson" in result else result["accuracy"]
