"""What the project keeps of a translator: ``nmt.json``, the paths of a model's files and the
tokens a published model wants around a sentence. Every stage that makes a model writes one;
every stage that translates reads one."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from corpus.errors import InputError
from corpus.outputs import damaged, outputs_damage, read_json

MODEL_FILE = "nmt.json"
PATH_FIELDS = ("checkpoint", "data_dir", "spm_source", "spm_target", "ct2_dir", "tokenizer_dir")
TOKEN_FIELDS = ("source_suffix", "target_prefix")


@dataclass(frozen=True)
class NmtModel:
    """Where a model's files are: written by TrainTranslator / ConvertTranslator / ImportTranslator
    as ``nmt.json``. The project's own model is a fairseq checkpoint with sentencepiece models; a
    published one (``family`` marian, m2m_100, nllb) is a CTranslate2 model with its Hugging Face
    tokenizer, the tokens it wants before a source (per pivot language: a multilingual model's
    language token), after it and before a target, and its ``name``."""

    checkpoint: str
    data_dir: str
    spm_source: str
    spm_target: str
    max_source_positions: int
    max_target_positions: int
    ct2_dir: str = ""
    family: str = "fairseq"
    tokenizer_dir: str = ""
    source_prefixes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    source_suffix: tuple[str, ...] = ()
    target_prefix: tuple[str, ...] = ()
    name: str = ""

    @property
    def system(self) -> str:
        """What the ``system`` column of its translations says: a published model's name."""
        return self.name or "own model"

    def source_prefix(self, pivot: str) -> tuple[str, ...]:
        """The tokens before a source in ``pivot``; an InputError for a language the model was not
        imported for (ImportTranslator --source-language)."""
        if not self.source_prefixes:
            return ()
        if pivot not in self.source_prefixes:
            raise InputError(f"the translator {self.name} was imported for {', '.join(self.source_prefixes)}, not {pivot!r}")
        return self.source_prefixes[pivot]

    def save(self, directory: Path, relative_within: Path | None = None) -> Path:
        """Write ``nmt.json``; relative paths are relative to ``directory`` (so it can be renamed),
        and so is every path inside ``relative_within`` (the work directory, which can then move
        or be copied elsewhere); other paths (a user's checkpoint) are kept as they are."""
        fields = asdict(self)
        if relative_within is not None:
            within, here = Path(relative_within).resolve(), Path(directory).resolve()
            for name in PATH_FIELDS:
                if os.path.isabs(fields[name]) and Path(fields[name]).resolve().is_relative_to(within):
                    fields[name] = os.path.relpath(Path(fields[name]).resolve(), here)
        path = Path(directory) / MODEL_FILE
        path.write_text(json.dumps(fields, indent=2, sort_keys=True) + "\n")
        return path

    @classmethod
    def load(cls, directory: str | Path) -> NmtModel:
        """Read ``nmt.json`` with every path made absolute. The stages' outputs that hold the
        model's files (its own directory, the checkpoint's, the sentencepiece models') must
        still be exactly what their stages wrote: DamagedOutput, naming the file, otherwise."""
        directory = Path(directory).resolve()
        if problem := outputs_damage([directory / MODEL_FILE]):
            raise damaged(problem)
        fields = read_json(directory / MODEL_FILE)
        for name in PATH_FIELDS:
            if fields.get(name):
                fields[name] = os.path.normpath(directory / fields[name])
        for name in TOKEN_FIELDS:
            fields[name] = tuple(fields.get(name, ()))
        fields["source_prefixes"] = {code: tuple(tokens) for code, tokens in fields.get("source_prefixes", {}).items()}
        if problem := outputs_damage([fields[name] for name in PATH_FIELDS if fields.get(name)]):
            raise damaged(problem)
        return cls(**fields)

    def fingerprint(self, engine: str) -> str:
        """Hash of the contents of the files ``engine`` reads: the identity of the model."""
        if engine == "ctranslate2":
            weights = sorted(path for path in Path(self.ct2_dir).iterdir() if path.is_file())
        else:
            weights = [Path(self.checkpoint), *sorted(Path(self.data_dir).glob("dict.*.txt"))]
        tokenizer = sorted(path for path in Path(self.tokenizer_dir).iterdir() if path.is_file()) if self.tokenizer_dir else []
        spm_models = [Path(path) for path in (self.spm_source, self.spm_target) if path]
        digest = hashlib.blake2b(digest_size=16)
        digest.update(json.dumps([self.source_prefixes, self.source_suffix, self.target_prefix], sort_keys=True).encode())
        for path in [*weights, *tokenizer, *spm_models]:
            digest.update(path.name.encode())
            with open(path, "rb") as handle:
                while block := handle.read(1 << 22):
                    digest.update(block)
        return digest.hexdigest()
