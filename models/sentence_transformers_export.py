"""A trained encoder as a sentence-transformers model, so tools built on that library use it.

    paranmt-encode export --model work/encoders/latest --sentence-transformers my-model
    SentenceTransformer("my-model", trust_remote_code=True).encode(["a man plays guitar ."])

:class:`ParaNMTEncoderModule` is a sentence-transformers input module that runs the project's
own featurizers and encoder, so every model kind (word_avg, trigram_avg, trigram_word, the
LSTM and convolutional ones …) gives exactly the vectors of :func:`models.encode.load_encoder`.
It saves itself in the root of the exported directory in this project's model format
(``config.json``, ``features/``, ``model.pt``), beside sentence-transformers' ``modules.json``;
the same directory therefore also loads with ``load_encoder``. Loading needs this package
installed and ``trust_remote_code=True``: sentence-transformers 6 asks for that before it
imports any module class that is not its own.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import torch

from corpus.errors import InputError
from corpus.files import write_atomically
from models.configs import EncoderConfig
from models.encoder_io import Featurizers, load_model, save_setup, save_weights
from models.encoders import Encoder
from models.featurizers import featurize, hide_broken_torchaudio

hide_broken_torchaudio()

from sentence_transformers import SentenceTransformer  # noqa: E402
from sentence_transformers.base.modules.input_module import InputModule  # noqa: E402


class ParaNMTEncoderModule(InputModule):
    """Sentences → the project's featurizers → the trained encoder → ``sentence_embedding``."""

    def __init__(self, config: EncoderConfig, featurizers: Featurizers, encoder: Encoder):
        super().__init__()
        self.encoder_config, self.featurizers, self.encoder = config, featurizers, encoder

    def preprocess(self, inputs: list[str], prompt: str | None = None, **kwargs) -> dict[str, Any]:
        """Id rows per feature (``tokens``, ``trigrams``); the encoder moves them to its device."""
        return featurize(self.featurizers, self._prepend_prompt(inputs, prompt) if prompt else list(inputs))

    def forward(self, features: dict[str, Any], **kwargs) -> dict[str, Any]:
        features["sentence_embedding"] = self.encoder({name: features[name] for name in self.encoder.features})
        return features

    def get_embedding_dimension(self) -> int:
        return self.encoder.out_dim

    def get_config_dict(self) -> dict[str, Any]:
        return {"model": self.encoder_config.model, "tokens": self.encoder_config.tokens}

    def save(self, output_path: str, *args, **kwargs) -> None:
        save_setup(Path(output_path), self.encoder_config, self.featurizers)
        save_weights(Path(output_path), self.encoder)

    @classmethod
    def load(cls, model_name_or_path: str, subfolder: str = "", token: bool | str | None = None,
             cache_folder: str | None = None, revision: str | None = None, local_files_only: bool = False,
             **kwargs) -> ParaNMTEncoderModule:
        directory = cls.load_dir_path(model_name_or_path, subfolder=subfolder, token=token, cache_folder=cache_folder,
                                      revision=revision, local_files_only=local_files_only)
        return cls.from_model_dir(directory)

    @classmethod
    def from_model_dir(cls, directory: str | Path) -> ParaNMTEncoderModule:
        """A trained encoder directory (the trainer's output), on the CPU."""
        return cls(*load_model(Path(directory), torch.device("cpu")))


# Written into every export: each file it wrote and its hash. Only a folder that holds exactly
# those files, unchanged, is ever replaced; anything else in it may be the user's.
EXPORT_RECORD = "paranmt-export.json"


def _file_hashes(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*")) if path.is_file() and path.name != EXPORT_RECORD
    }


def check_replaceable(output: Path) -> None:
    """InputError unless ``output`` is absent, an empty folder, or an earlier export of this
    project that nobody changed since (the same files, the same bytes, nothing added)."""
    if not output.exists() or (output.is_dir() and not output.is_symlink() and not any(output.iterdir())):
        return
    record = output / EXPORT_RECORD
    if output.is_dir() and not output.is_symlink() and record.is_file():
        with contextlib.suppress(ValueError):
            if json.loads(record.read_text()) == _file_hashes(output):
                return
    raise InputError(f"{output} exists and holds files this project did not write (or changed since); "
                     "choose a new directory")


def export_sentence_transformer(model_dir: str | Path, output_dir: str | Path) -> SentenceTransformer:
    """Write the encoder in ``model_dir`` as a sentence-transformers model in ``output_dir``, with
    a model card that says how to load it. An earlier export there is replaced whole when it is
    exactly as this project wrote it; any other non-empty path is refused (never deleted)."""
    output = Path(output_dir)
    check_replaceable(output)
    module = ParaNMTEncoderModule.from_model_dir(model_dir)  # a bad model fails before anything is removed
    model = SentenceTransformer(modules=[module], device="cpu", similarity_fn_name="cosine")

    def save(directory: Path) -> None:
        model.save(str(directory), create_model_card=False)
        (directory / "README.md").write_text(model_card(module, output.name), encoding="utf-8")
        (directory / EXPORT_RECORD).write_text(json.dumps(_file_hashes(directory), indent=1, sort_keys=True) + "\n")

    if output.exists():
        shutil.rmtree(output)
    write_atomically(output, save)
    return model


def model_card(module: ParaNMTEncoderModule, name: str) -> str:
    config = module.encoder_config
    return f"""---
library_name: sentence-transformers
pipeline_tag: sentence-similarity
tags: [sentence-transformers, sentence-similarity, paranmt]
---

# {name}

A paraphrastic sentence encoder trained with the `paranmt` project: model `{config.model}` over
{config.tokens}, {module.get_embedding_dimension()}-dimensional vectors compared by cosine.

```python
from sentence_transformers import SentenceTransformer

model = SentenceTransformer("{name}", trust_remote_code=True)
vectors = model.encode(["a man is playing a guitar .", "someone plays guitar"])
```

Loading needs the `paranmt` package installed: the module class named in `modules.json`,
`{type(module).__module__}.{type(module).__name__}`, runs its featurizers and encoder. The same
directory loads with `models.encode.load_encoder("{name}")` and gives the same vectors.
"""
