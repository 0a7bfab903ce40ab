"""The collapse watch: at each validation, a fixed sample of held-out sources translated by the
model in training, and whether its translations still depend on the source.

The first GPU-trained translator said one sentence ("A man in a blue shirt and blue jeans is
standing in front of a building.") for every source, and its validation loss (7.36) did not say
so: it was seen only after the corpus was built. Here every validation also translates
WATCH_SENTENCES pairs of the validation set (the same ones each time: every k-th pair), greedily,
and records the translation check's figures (corpus.translation_check: ``distinct``, ``copies``,
``loops``...) and BLEU/chrF against the pairs' English sides. Each record is a line of
``watch.jsonl`` beside the checkpoints and a ``watch`` line in fairseq's log, which the training
stage's progress shows. Runs inside ``fairseq-train`` (models.nmt.resumable_train installs it).
"""

from __future__ import annotations

import argparse
import json
import logging
from pathlib import Path

from corpus import translation_check
from corpus.translation_check import translation_figures
from models.nmt.evaluate import corpus_scores

WATCH_SENTENCES = 100
WATCH_FILE = "watch.jsonl"
# Greedy decoding, as long as a translation may reasonably be: enough to tell one sentence from many.
_DECODING = argparse.Namespace(beam=1, max_len_a=1.5, max_len_b=10)
# How many of the watch's translations each record keeps, to be read.
SHOWN = 3

logger = logging.getLogger("watch")


def watch_indices(pairs: int, count: int = WATCH_SENTENCES) -> list[int]:
    """The validation pairs the watch translates: ``count`` evenly spaced ones, the same at every
    validation (and after a resume) of the same data."""
    step = max(1, pairs // count)
    return list(range(0, pairs, step))[:count]


def translate_sample(trainer, task, subset: str = "valid") -> tuple[list[str], list[str], list[str]]:
    """(sources, references, translations) of the watch's pairs of ``subset``, as text (torch is
    imported here: the module's other functions read records where no model runs)."""
    import torch

    dataset = task.dataset(subset)
    sample = dataset.collater([dataset[i] for i in watch_indices(len(dataset))])
    model = trainer.model
    if next(model.parameters()).is_cuda:
        from fairseq import utils

        sample = utils.move_to_cuda(sample)
    generator = task.build_generator([model], _DECODING)
    was_training = model.training
    model.eval()
    with torch.no_grad():
        hypotheses = task.inference_step(generator, [model], sample)
    model.train(was_training)
    source_dict, target_dict = task.source_dictionary, task.target_dictionary

    def text(dictionary, tokens) -> str:  # a batch's rows are padded (sources on the left)
        return dictionary.string(tokens[tokens.ne(dictionary.pad())], "sentencepiece")

    by_id = {}
    for row, sample_id in enumerate(sample["id"].tolist()):
        by_id[sample_id] = (text(source_dict, sample["net_input"]["src_tokens"][row]),
                            text(target_dict, sample["target"][row]), text(target_dict, hypotheses[row][0]["tokens"]))
    ordered = [by_id[key] for key in sorted(by_id)]
    return [s for s, _, _ in ordered], [r for _, r, _ in ordered], [t for _, _, t in ordered]


def record(updates: int, epoch: int, sources: list[str], references: list[str], translations: list[str]) -> dict:
    """One watch record: the translation check's figures, BLEU and chrF, and a few translations."""
    scores = corpus_scores(translations, references)
    return {"updates": updates, "epoch": epoch, "sentences": len(sources),
            **translation_figures(sources, translations), "bleu": scores["bleu"], "chrf": scores["chrf"],
            "examples": [{"source": s, "translation": t} for s, t in zip(sources[:SHOWN], translations[:SHOWN], strict=True)]}


def out_of_bounds(entry: dict) -> list[str]:
    """The translation check's figures of a record outside their working range, as ``name value``."""
    return [f"{bound.name} {entry[bound.name]}" for bound in translation_check.out_of_bounds(entry)]


def record_of(history_records: list[dict], updates: int) -> dict | None:
    """The record of the validation at ``updates`` (a checkpoint's update count), else the last
    one before it; None when none was made by then."""
    before = [entry for entry in history_records if entry["updates"] <= updates]
    return before[-1] if before else None


def message(entry: dict) -> str:
    """The watch's log line for a record."""
    line = (f"epoch {entry['epoch']:03d} | num_updates {entry['updates']} | distinct {entry['distinct']} | "
            f"copies {entry['copies']} | loops {entry['loops']} | bleu {entry['bleu']} | chrf {entry['chrf']} | "
            f"e.g. {entry['examples'][0]['translation']!r}")
    faults = out_of_bounds(entry)
    return line + (f" | WARNING: the translations are not a translator's ({', '.join(faults)})" if faults else "")


def observe(trainer, task, epoch: int, save_dir: Path) -> dict:
    """Translate the watch's sample now, log it and append it to ``save_dir``/WATCH_FILE."""
    sources, references, translations = translate_sample(trainer, task)
    entry = record(trainer.get_num_updates(), epoch, sources, references, translations)
    logger.info(message(entry))
    with open(save_dir / WATCH_FILE, "a", encoding="utf-8") as out:
        out.write(json.dumps(entry, ensure_ascii=False) + "\n")
    return entry


def history(save_dir: Path) -> list[dict]:
    """The watch's records of a training, one per validation (the last one written for an update
    count, when a resumed run validated at it again), in update order."""
    path = save_dir / WATCH_FILE
    if not path.exists():
        return []
    by_updates = {entry["updates"]: entry for entry in map(json.loads, path.read_text(encoding="utf-8").splitlines())}
    return [by_updates[key] for key in sorted(by_updates)]
