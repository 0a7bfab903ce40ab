"""What a translating pipeline knows without running the translator: how its workers load it, the
units still to do and what its output says. Free of Beam's RunInference, which imports torch (250
MB of memory, 1.3 s) wherever torch is installed: the Luigi layer names these in every command,
translating or not (``pipelines.translator_inference`` runs the translator, imported by the
pipelines that load one, when they do).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from apache_beam.io.filesystems import FileSystems

from corpus.outputs import reading, streamed_parquet
from models.nmt.model import NmtModel
from models.nmt.translate import DecodeOptions, Translator, load_translator
from pipelines import io
from pipelines.batches import shard_number
from pipelines.io import dataset_files
from pipelines.pairs import BITEXT_COLUMNS
from pipelines.progress import Marks, Tally

# Sentences a worker translates or scores together (sorted by length inside, batched by tokens):
# the stages' --chunk-rows.
CHUNK_ROWS = 4096

Unit = TypeVar("Unit")


def pending_units(units: Iterable[Unit], pairs_dir: str, number_of: Callable[[Unit], int] = shard_number) -> list[Unit]:
    """The units (bitext shard files unless ``number_of`` says how else a unit is numbered) whose
    pairs part is not written yet: the pairs part marks a unit done, so a resumed run does only
    these."""
    done = {shard_number(path) for path in dataset_files(pairs_dir)}
    return [unit for unit in units if number_of(unit) not in done]


def read_chunks(path: str, chunk_rows: int) -> Iterator[pa.RecordBatch]:
    """A bitext shard as record batches of at most ``chunk_rows`` rows."""
    with reading(path), FileSystems.open(path) as handle:
        yield from streamed_parquet(handle).iter_batches(batch_size=chunk_rows, columns=BITEXT_COLUMNS)


@dataclass(frozen=True)
class TranslatorSpec:
    """Everything a worker needs to load the translator (the model's files must be readable there)."""

    model: NmtModel
    engine: str = "ctranslate2"
    device: str = "auto"
    compute_type: str = "auto"
    threads: int = 0
    options: DecodeOptions = field(default_factory=DecodeOptions)
    # The Dask worker resource a unit of translation needs (empty: none): see translation_hints.
    worker_resource: str = ""
    # One model per machine asked for on the CPU too (--share-model): see shares_model.
    share_requested: bool = False

    def load(self) -> Translator:
        return load_translator(self.model, self.engine, self.options, self.device, self.compute_type, self.threads)

    @property
    def shares_model(self) -> bool:
        """One model per machine, shared by its worker processes, when asked or on a GPU: a model
        per worker process would fill the GPU's memory and contend for it (the other workers only
        read chunks, send them to the one model and write the pairs). Not on workers that declare
        a resource for translation: each of those is one GPU, and holds its own model."""
        return not self.worker_resource and (self.share_requested or self.device == "cuda")


def translation_hints(spec: TranslatorSpec) -> dict[str, str]:
    """Beam resource hints of the transforms that run the translator: an accelerator of type
    ``worker_resource``, which the project's DaskRunner turns into that Dask worker resource
    (pipelines.dask_runner.worker_resources); none without one. Other runners read the
    accelerator hint their own way, or not at all (the DirectRunner)."""
    return {"accelerator": f"type:{spec.worker_resource};count:1"} if spec.worker_resource else {}


def translation_tally(marks: Marks, total: int, already: int) -> Tally:
    """Sentences translated out of ``total``: ``already`` (finished by an earlier, interrupted
    run) and the chunks marked since."""
    return Tally(lambda: already + marks.count("translated"), total, "sentences translated", "sentences")


def translation_sample(pairs_dir: str, label_of: Callable[[str], str], per_label: int) -> dict[str, tuple[list[str], list[str]]]:
    """About ``per_label`` (source, translation) pairs of each translator of a pairs dataset
    (``label_of(part)``: the translator that wrote a part), and of each other way it made
    paraphrases (``made_label``), spread over its parts (each gives its first rows, a fair share
    of its translator's), in memory."""
    files = dataset_files(pairs_dir)
    parts_of: dict[str, int] = {}
    for path in files:
        parts_of[label_of(path)] = parts_of.get(label_of(path), 0) + 1
    sample: dict[str, tuple[list[str], list[str]]] = {}
    for path in files:
        label = label_of(path)
        with reading(path), FileSystems.open(path) as handle:
            batch = next(streamed_parquet(handle).iter_batches(batch_size=max(100, -(-per_label // parts_of[label])),
                                                               columns=["foreign", "translation", "diversity"]), None)
        if batch is None:
            sample.setdefault(label, ([], []))
            continue
        for source, translation, made in zip(*(batch.column(name).to_pylist() for name in ("foreign", "translation", "diversity")), strict=True):
            sources, translations = sample.setdefault(made_label(label, made), ([], []))
            if len(sources) < per_label:
                sources.append(source)
                translations.append(translation)
    return sample


def made_label(system: str, made: str) -> str:
    """What the translation check calls a translator's paraphrases made other than by the beam's
    best (``made``: the ``diversity`` column), so that a method that writes garbage or copies is
    judged on its own: the system's name, with the method after it."""
    return system if not made or made.startswith("beam ") else f"{system} ({made})"


def best_labels(labels: Iterable[str]) -> dict[str, str]:
    """Each variant set's label (``made_label``) → its system's label, where that is among ``labels``."""
    labels = set(labels)
    return {label: label.rsplit(" (", 1)[0] for label in labels if label.endswith(")") and label.rsplit(" (", 1)[0] in labels}


def truncated_rows(pairs_dir: str) -> int:
    """Pairs whose source was cut to the model's length limit."""
    return int(sum(pq.read_table(path, columns=["truncated"]).column(0).to_numpy().sum() for path in dataset_files(pairs_dir)))


def translated_sources(pairs_dir: str, rejects_dir: str) -> int:
    """Bitext rows a back-translation has done: its variant-0 pairs and its sources without any
    piece (the other variants, and the candidates it dropped, are more rows of the same sources)."""
    firsts = sum(pc.sum(pc.equal(pq.read_table(path, columns=["variant"]).column(0), 0)).as_py() or 0 for path in dataset_files(pairs_dir))
    return firsts + io.rejects_by_reason(rejects_dir).get("empty_source", 0)


def variant_figures(pairs_dir: str) -> dict:
    """What a back-translation's paraphrases are, part by part (the siblings of a source are in
    one part): sources by their number of paraphrases, pairs and mean trans_score by how they were
    made, and the mean of the siblings' highest unigram F1 with each other."""
    per_source: Counter[int] = Counter()
    made: dict[str, list[float]] = {}
    f1_sum, f1_count = 0.0, 0
    for path in dataset_files(pairs_dir):
        table = pq.read_table(path, columns=["bitext_id", "diversity", "trans_score", "sibling_f1"])
        per_source.update(Counter(table.group_by("bitext_id").aggregate([("bitext_id", "count")]).column("bitext_id_count").to_pylist()))
        for row in table.group_by("diversity").aggregate([("trans_score", "sum"), ("trans_score", "count")]).to_pylist():
            totals = made.setdefault(row["diversity"], [0.0, 0])
            totals[0] += row["trans_score_sum"] or 0.0
            totals[1] += row["trans_score_count"]
        f1 = table.column("sibling_f1").drop_null()
        f1_sum, f1_count = f1_sum + (pc.sum(f1).as_py() or 0.0), f1_count + len(f1)
    return {
        "sources_by_paraphrases": {str(k): per_source[k] for k in sorted(per_source)},
        "pairs_by_method": {name: {"pairs": count, "mean_trans_score": round(total / count, 4) if count else None}
                            for name, (total, count) in sorted(made.items())},
        "mean_sibling_f1": round(f1_sum / f1_count, 4) if f1_count else None,
    }
