"""ImportTranslations: translations made elsewhere, aligned with the bitext's foreign files → ``pairs``."""

from __future__ import annotations

import json
import time
from dataclasses import replace
from functools import cached_property
from pathlib import Path

from corpus.outputs import digest_of
from corpus.translation_files import TranslationFile, plain_copy, resolve_translations
from models.nmt.model import NmtModel
from pipelines import io, stages
from pipelines.batches import shard_number
from pipelines.options import LINES_PER_WORKER, SCORED_ROWS_PER_WORKER
from pipelines.progress import Tally
from pipelines.translations import (
    ImportUnit,
    Translations,
    build_import,
    import_units,
    work_elements,
)
from pipelines.translator import pending_units
from workflows.config import CorpusParameter
from workflows.ingest import (
    PLAIN_COPIES,
    IngestBitext,
    checked_rejects,
    remove_plain_copies,
)
from workflows.translator import RunsTranslator

TRANSLATIONS_HELP = ("Translations made elsewhere: comma-separated foreign_file::translation_file items, line i of a "
                     "translation file translating line i of the foreign file (an input's); a glob gives one file per "
                     "system, foreign_file::NAME=file names its system; @FILE: the items FILE lists, one a line. "
                     "Scored by --translator when one is named, else trans_score is empty.")


class ImportTranslations(RunsTranslator):
    """Pair each bitext row with the translations of its foreign line made elsewhere (one pair per
    translation file: ``system``), scored by ``--translator`` when one is named (forced decoding,
    the model run as BackTranslate runs it), else with an empty ``trans_score``. Resumable per
    unit (one bitext shard with one translation file), as BackTranslate per shard."""

    stage = stages.TRANSLATIONS
    engine = "ctranslate2"  # the engine that scores by forced decoding

    @property
    def loads_model(self) -> bool:
        """A scoring model only when ``--translator`` names one: an unscored import leaves the GPU
        (UsesGpu) to the stages that use it."""
        return bool(self.translator)

    @property
    def rows_per_worker(self) -> int:
        """Translations per DirectRunner worker process: a raw-text stage's (reading and
        tokenizing, LINES_PER_WORKER) unscored; scored, SCORED_ROWS_PER_WORKER."""
        return SCORED_ROWS_PER_WORKER if self.loads_model else LINES_PER_WORKER

    translations = CorpusParameter(description=TRANSLATIONS_HELP)

    def requires(self):
        upstream = {"bitext": IngestBitext(**self.input_params())}
        if self.loads_model:
            upstream["model"] = self.model_task(self.engine)
        return upstream

    @cached_property
    def translation_files(self) -> list[TranslationFile]:
        """The translation files, resolved and checked against the inputs (once per task)."""
        return resolve_translations(self.translations, IngestBitext(**self.input_params()).units)

    def input_files(self) -> list[str]:
        return [file.path for file in self.translation_files]

    def identifying_parameters(self) -> dict[str, str]:
        """The base's, with ``translations`` known by what its pairs carry: each file's system,
        its name among the run's files (its rejects' ``source``), the foreign file it translates
        (by the name its bitext rows record) and its bytes. A system renamed, two names swapped or
        a file moved to a folder that names its system is another output, never a silent relabel
        of this one; the same files spelled or placed otherwise, naming the same, are this one."""
        parameters = super().identifying_parameters()
        foreign_names = {unit.path: unit.source for unit in IngestBitext(**self.input_params()).units}
        parameters["translations"] = json.dumps(sorted(
            [foreign_names[file.foreign], file.system, file.name, digest_of(file.path)] for file in self.translation_files))
        return parameters

    def check_inputs(self) -> None:
        super().check_inputs()
        _ = self.translation_files  # InputError, in one line, for a misaligned or missing file

    def build(self, partial_dir: Path) -> dict:
        pairs_dir, rejects_dir = self.pairs_dirs(partial_dir)
        bitext = self.requires()["bitext"]
        bitext_files, bitext_rows = bitext.committed("bitext")
        model = NmtModel.load(self.requires()["model"].output_dir) if self.loads_model else None
        translations = Translations(tuple(self.translation_files), {unit.source: unit.path for unit in bitext.units},
                                    bitext.max_line_bytes)
        units = import_units(bitext_files, translations)
        total = sum(unit.rows for unit in units)
        pending = self.read_plain(pending_units(units, pairs_dir, lambda unit: unit.number), partial_dir / PLAIN_COPIES)
        elements = len(work_elements(pending))
        if model:
            translations = replace(translations, scorer=self.translator_spec(model, elements, rows=total))
        scoring = f", scored by {model.system} (forced decoding)" if model else ", not scored (no --translator)"
        self.progress(f"{len(self.translation_files)} translation file(s) over {len(bitext_files)} bitext shard(s){scoring}")
        started = time.time()
        loaded = self.run_units(partial_dir, elements,
                                lambda p, marks: build_import(p, pending, translations, pairs_dir, rejects_dir, self.chunk_rows, marks),
                                lambda marks, done: Tally(lambda: done + marks.count("pairs"), total, "translations read", "translations"),
                                rows=total)
        remove_plain_copies(partial_dir)
        rows, by_reason = self.finished_pairs(partial_dir, total, "translations of the bitext rows (pairs and rejects)")
        per_file = self.check_each_file(units, pairs_dir, rejects_dir)
        file_of_part = {unit.number: unit.file.name for unit in units}
        figures = self.checked_translations(pairs_dir, lambda part: file_of_part[shard_number(part)])
        rejects = checked_rejects(self.stage, rows, by_reason, "no usable translation", Path(rejects_dir), "every translation file",
                                  self.output_dir / Path(rejects_dir).name)
        self.progress(f"{rows} pairs of {len(self.translation_files)} system(s), {rejects['total']} rejects", 100)
        return {
            **self.pairs_summary(model, rejects, loaded, figures),
            "systems": [file.system for file in self.translation_files],
            "translation_files": per_file,
            "trans_score": f"forced decoding by {model.system}" if model else "none: no --translator named",
            "model": model.system if model else None,
            "rows": {"pairs": rows, "bitext": bitext_rows},
            # units read apart, by any worker: every unit since gzip files are read from a plain copy
            "work_elements_this_run": elements,
            "seconds_this_run": round(time.time() - started, 2),
        }

    def read_plain(self, units: list[ImportUnit], folder: Path) -> list[ImportUnit]:
        """``units`` with each gzip file read from a plain copy of it, decompressed once into
        ``folder`` (corpus.translation_files.plain_copy): a gzip file's units then go to every worker, as a
        plain file's do, instead of all to one (a 1M-line file took 1.8 times as long gzipped)."""
        copies = {}
        for file in dict.fromkeys(unit.file for unit in units if unit.file.index.compressed):
            self.progress(f"decompressing {file.name} once, so that every worker reads it")
            copies[file] = plain_copy(file, str(folder))
        return [replace(unit, file=copies.get(unit.file, unit.file)) for unit in units]

    def check_each_file(self, units: list[ImportUnit], pairs_dir: str, rejects_dir: str) -> dict:
        """Each translation file's system, pairs and rejects (by its name among the run's files).
        A file none of whose lines made a pair is an InputError naming it and its top reasons (a
        CRLF-free rule broken, a wrong file); one with more than REJECTED_SHARE_WARNING rejected
        is a warning."""
        pairs_of_part = {shard_number(path): rows for path, rows in io.rows_of_parts(pairs_dir).items()}
        files: dict[str, dict] = {file.name: {"system": file.system, "pairs": 0, "rejects": {}} for file in self.translation_files}
        for unit in units:
            files[unit.file.name]["pairs"] += pairs_of_part.get(unit.number, 0)
        for (name, reason), count in io.rejects_by_source_and_reason(rejects_dir).items():
            files[name]["rejects"][reason] = count
        for name, counts in files.items():
            checked_rejects(self.stage, counts["pairs"], counts["rejects"], f"no usable translation in {name}", Path(rejects_dir), name,
                            self.output_dir / Path(rejects_dir).name)
        return files
