"""Translate Czech sentences with a trained cs→en model: CTranslate2 (default) or fairseq's generator.

Both engines share everything but the decoder call: sentencepiece encoding, the truncation
rule, sorting by length, batching by a token budget, the length limit, detokenization and the
score. The score of a hypothesis is the mean log-probability per target token (natural log),
end-of-sentence included, over ``n_tokens`` tokens (end-of-sentence included); it is what
fairseq reports with ``lenpen=1`` and what CTranslate2 reports with ``length_penalty=1``, and
both rank finished hypotheses by it, so the two engines pick the same best hypothesis.

Length limit: a hypothesis has at most ``int(max_len_a * source_len + max_len_b)`` tokens before
its end-of-sentence (``source_len`` = the batch's longest source, end-of-sentence included),
capped by the model's target positions. fairseq then forces end-of-sentence; CTranslate2 cannot,
so a CTranslate2 hypothesis still unfinished there is cut to the limit and rescored with
end-of-sentence appended: the limit and the score mean the same in both engines, but the
engines may pick different hypotheses for sentences that reach the limit (a model looping).

Truncation rule: a source of more sentencepiece pieces than ``max_source_tokens`` (by default the
model's source positions minus one for end-of-sentence) is cut to that many pieces and flagged
``truncated``. A source with no piece at all (empty or only whitespace) is not translated:
the result is None and the caller rejects it.
"""

from __future__ import annotations

import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from tqdm.auto import tqdm

from corpus.settings import setting
from models.nmt.devices import import_ctranslate2, resolve_device
from models.nmt.model import NmtModel
from models.nmt.published import HfCodec
from models.nmt.spm import Codec

EOS = "</s>"
# Decoder batch token budgets when DecodeOptions.batch_tokens is 0. On the CPU the budget is for
# the beam's hypotheses (sources × beam): a decoding step's output layer and softmax allocate
# vocabulary-sized buffers per hypothesis, which glibc maps fresh each step, so a large batch spends
# its time in the kernel zeroing pages; 6,144 hypothesis tokens (512 source tokens at beam 12) was
# the fastest, 2.2 times 4,096 source tokens, for the project's `fast` model and OPUS-MT
# (docs/2026-11-27-published-translators-cpu.md).
CPU_HYPOTHESIS_TOKENS, GPU_BATCH_TOKENS = 6144, 16384


def default_batch_tokens(device: str, beam_size: int) -> int:
    """The decoder batch token budget (sentences × longest source) for ``device`` and the beam."""
    return GPU_BATCH_TOKENS if device == "cuda" else max(1, CPU_HYPOTHESIS_TOKENS // beam_size)


ENGINES = ("ctranslate2", "fairseq")


@dataclass(frozen=True)
class Hypothesis:
    text: str
    score: float
    n_tokens: int
    truncated: bool


@dataclass(frozen=True)
class DecodeOptions:
    """Decoding settings; the defaults are the paper's beam 12 and a generous length limit."""

    beam_size: int = setting(12, "Beam size (the paper: 12); the best hypothesis is kept.", minimum=1)
    max_source_tokens: int = setting(0, "Sources with more sentencepiece pieces are truncated and flagged (0: the model's limit).", minimum=0)
    max_len_a: float = setting(1.5, "Hypotheses have at most a × source length + b pieces.", minimum=0)
    max_len_b: int = setting(10, "See max_len_a.", minimum=0)
    batch_tokens: int = setting(0, f"Token budget of one decoder batch (sentences × longest source); 0: {CPU_HYPOTHESIS_TOKENS} ÷ beam on the "
                                   f"CPU ({CPU_HYPOTHESIS_TOKENS // 12} at beam 12), {GPU_BATCH_TOKENS} on a GPU.", minimum=0)


def token_batches(lengths: list[int], budget: int) -> Iterator[slice]:
    """Cut ascending ``lengths`` into runs whose padded size (count × longest) fits ``budget``.

    A single item longer than the budget still gets a batch of its own.
    """
    start = 0
    for end in range(1, len(lengths) + 1):
        if end == len(lengths) or (end + 1 - start) * lengths[end] > budget:
            yield slice(start, end)
            start = end


class Translator(ABC):
    """One loaded model: ``translate`` turns Czech sentences into best hypotheses."""

    engine: str

    def __init__(self, model: NmtModel, options: DecodeOptions):
        self.model, self.options = model, options
        self.codec = codec_for(model)
        # Positions left for the source's own pieces: one for end-of-sentence (added by the model,
        # or among the tokens a published model's tokenizer puts around them).
        specials = max((len(prefix) for prefix in model.source_prefixes.values()), default=0) + len(model.source_suffix)
        limit = model.max_source_positions - max(1, specials)
        self.max_source_tokens = min(options.max_source_tokens or limit, limit)
        self.max_target_tokens = model.max_target_positions - 1

    def max_len(self, longest_source: int) -> int:
        """Most tokens before end-of-sentence for a batch whose longest source has this many pieces."""
        return min(int(self.options.max_len_a * (longest_source + 1) + self.options.max_len_b), self.max_target_tokens)

    @property
    def batch_tokens(self) -> int:
        """The token budget of a decoder batch: a GPU needs larger batches than a CPU to stay busy."""
        return self.options.batch_tokens or default_batch_tokens(self.device, self.options.beam_size)

    def translate(self, texts: list[str], pivots: list[str] | None = None) -> list[Hypothesis | None]:
        """Best beam hypothesis of each sentence (None for a sentence without any piece);
        ``pivots``: each sentence's language, for a multilingual model (its first language if None).

        Every batch is handed to the engine before the first result is read, so an engine that
        decodes in the background (CTranslate2) has the next batch queued while Python detokenizes."""
        pieces = self.codec.encode(texts)
        truncated = [len(p) > self.max_source_tokens for p in pieces]
        model = self.model
        first = next(iter(model.source_prefixes), "")
        pieces = [
            [*model.source_prefix(pivot), *p[: self.max_source_tokens], *model.source_suffix] if p else []
            for p, pivot in zip(pieces, pivots or [first] * len(pieces), strict=True)
        ]
        order = sorted((i for i, p in enumerate(pieces) if p), key=lambda i: (len(pieces[i]), i))
        results: list[Hypothesis | None] = [None] * len(texts)
        lengths = [len(pieces[i]) for i in order]
        submitted = [
            (order[batch], self.submit([pieces[i] for i in order[batch]], self.max_len(lengths[batch][-1])))
            for batch in token_batches(lengths, self.batch_tokens)
        ]
        for indices, finish in submitted:
            decoded = finish()
            texts_out = self.codec.decode([tokens for tokens, _ in decoded])
            for i, text, (tokens, score) in zip(indices, texts_out, decoded, strict=True):
                results[i] = Hypothesis(text, score, len(tokens) + 1, truncated[i])
        return results

    def translate_many(self, texts: Sequence[str], chunk_size: int = 4096, progress: bool = True) -> list[Hypothesis | None]:
        """``translate`` in chunks, with a tqdm bar for interactive use."""
        results: list[Hypothesis | None] = []
        with tqdm(total=len(texts), unit="sent", disable=not progress, desc=f"translating ({self.engine})") as bar:
            for start in range(0, len(texts), chunk_size):
                results += self.translate(list(texts[start : start + chunk_size]))
                bar.update(min(chunk_size, len(texts) - start))
        return results

    def score(self, texts: list[str], translations: list[str], pivots: list[str] | None = None) -> list[Hypothesis | None]:
        """Each translation made elsewhere scored by forced decoding, as the model's own would be:
        the mean log-probability of its pieces and end-of-sentence given the source (None where the
        source or the translation has no piece). Sources and translations longer than the model's
        positions are truncated and flagged."""
        model = self.model
        first = next(iter(model.source_prefixes), "")
        pieces, targets = self.codec.encode(texts), self.codec.encode_target(translations)
        truncated = [len(p) > self.max_source_tokens or len(t) > self.max_target_tokens for p, t in zip(pieces, targets, strict=True)]
        sources = [[*model.source_prefix(pivot), *p[: self.max_source_tokens], *model.source_suffix] if p else []
                   for p, pivot in zip(pieces, pivots or [first] * len(texts), strict=True)]
        targets = [t[: self.max_target_tokens] for t in targets]
        order = sorted((i for i in range(len(texts)) if sources[i] and targets[i]),
                       key=lambda i: (max(len(sources[i]), len(targets[i])), i))
        results: list[Hypothesis | None] = [None] * len(texts)
        lengths = [max(len(sources[i]), len(targets[i])) for i in order]
        # No beam here: a batch may hold as many tokens as a beam search's batch times its beam.
        for batch in token_batches(lengths, self.batch_tokens * self.options.beam_size):
            indices = order[batch]
            scores = self.force([sources[i] for i in indices], [targets[i] for i in indices])
            for i, score in zip(indices, scores, strict=True):
                results[i] = Hypothesis(translations[i], score, len(targets[i]) + 1, truncated[i])
        return results

    @abstractmethod
    def force(self, sources: list[list[str]], targets: list[list[str]]) -> list[float]:
        """Forced decoding of a batch: each target's mean log-probability per piece,
        end-of-sentence included (the target prefix of a published model left out)."""

    @abstractmethod
    def submit(self, batch: list[list[str]], max_len: int) -> Callable[[], list[tuple[list[str], float]]]:
        """Start beam-searching a batch of sources (pieces, with the special tokens a published
        model wants around them); the returned call waits for it and gives, per source, the best
        hypothesis's pieces (no end-of-sentence, no target prefix) and score."""


def codec_for(model: NmtModel) -> Codec | HfCodec:
    """The project's sentencepiece codec, or a published model's own tokenizer."""
    if model.tokenizer_dir:
        return HfCodec(model.tokenizer_dir)
    return Codec(model.spm_source, model.spm_target)


class Ct2Translator(Translator):
    engine = "ctranslate2"

    def __init__(self, model: NmtModel, options: DecodeOptions, device: str = "auto",
                 compute_type: str = "auto", threads: int = 0):
        ctranslate2 = import_ctranslate2()
        super().__init__(model, options)
        device = resolve_device(self.engine, device)
        if compute_type == "auto":
            compute_type = "float16" if device == "cuda" else "default"
        self.device, self.compute_type = device, compute_type
        # On GPUs one translator holds a replica on each and spreads the queued batches over them.
        gpus = list(range(ctranslate2.get_cuda_device_count())) if device == "cuda" else [0]
        self.translator = ctranslate2.Translator(
            model.ct2_dir, device=device, device_index=gpus, compute_type=compute_type, intra_threads=threads
        )

    def submit(self, batch, max_len):
        model = self.model
        prefix = [list(model.target_prefix)] * len(batch) if model.target_prefix else None
        pending = self.translator.translate_batch(
            batch, target_prefix=prefix, beam_size=self.options.beam_size, length_penalty=1.0, return_scores=True,
            return_end_token=True, max_input_length=0, max_decoding_length=len(model.target_prefix) + max_len + 1, asynchronous=True,
        )
        return lambda: self._best(batch, [result.result() for result in pending], max_len)

    def force(self, sources, targets):
        skip = len(self.model.target_prefix)
        scored = self.translator.score_batch(sources, [[*self.model.target_prefix, *target] for target in targets])
        return [float(np.mean(result.log_probs[skip:])) for result in scored]

    def _best(self, sources, results, max_len):
        """Each source's best hypothesis (the target prefix, a published model's language token,
        left out: its tokens and its score are the sentence's own). One cut at the length limit is
        rescored with end-of-sentence; so is every hypothesis of a published model, whose beam
        scores CTranslate2 normalises with the forced prefix and over a vocabulary without the
        tokens it never generates: the rescoring is the model's own forced-decoding
        log-probability, as the project's fairseq model's beam score is."""
        decoded = []
        rescore = []
        skip = len(self.model.target_prefix)
        for index, result in enumerate(results):
            tokens = result.hypotheses[0][skip:]
            if tokens and tokens[-1] == EOS:
                decoded.append((tokens[:-1], result.scores[0]))
                if self.model.tokenizer_dir:
                    rescore.append(index)
            else:
                decoded.append((tokens[:max_len], 0.0))
                rescore.append(index)
        if rescore:
            targets = [[*self.model.target_prefix, *decoded[i][0]] for i in rescore]
            rescored = self.translator.score_batch([sources[i] for i in rescore], targets)
            for index, scored in zip(rescore, rescored, strict=True):
                decoded[index] = (decoded[index][0], float(np.mean(scored.log_probs[skip:])))
        return decoded


class FairseqTranslator(Translator):
    engine = "fairseq"

    def __init__(self, model: NmtModel, options: DecodeOptions, device: str = "auto",
                 compute_type: str = "auto", threads: int = 0):
        os.environ.setdefault("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", "1")
        import torch
        from fairseq import checkpoint_utils
        from fairseq.hub_utils import GeneratorHubInterface

        super().__init__(model, options)
        if threads:
            torch.set_num_threads(threads)
        device = resolve_device(self.engine, device)
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task(
            [model.checkpoint], arg_overrides={"data": model.data_dir}
        )
        self.hub = GeneratorHubInterface(cfg, task, models).eval()
        self.hub.cfg.dataset.max_tokens = None
        half = device == "cuda" and compute_type in ("auto", "float16")
        if device == "cuda":
            self.hub.cuda()
        if half:
            self.hub.half()
        self.device, self.compute_type = device, "float16" if half else "float32"
        self.source_dictionary, self.target_dictionary = task.source_dictionary, task.target_dictionary
        # A model shared by a machine's worker processes (on a GPU) serves each of them from a
        # thread of its own (Beam's multi_process_shared).
        self._generating = threading.Lock()

    def submit(self, batch, max_len):
        with self._generating:  # one generation at a time: the hub's batch size is set per call
            decoded = self._generate(batch, max_len)
        return lambda: decoded

    def force(self, sources, targets):
        import torch
        from fairseq.data import data_utils

        model = self.hub.models[0]
        pad, eos = self.target_dictionary.pad(), self.target_dictionary.eos()
        encode = lambda dictionary, pieces: dictionary.encode_line(" ".join(pieces), add_if_not_exist=False, append_eos=True).long()  # noqa: E731
        source = [encode(self.source_dictionary, pieces) for pieces in sources]
        target = [encode(self.target_dictionary, pieces) for pieces in targets]
        device = next(model.parameters()).device
        with self._generating, torch.no_grad():
            output = model(data_utils.collate_tokens(source, pad, eos, left_pad=True).to(device),
                           torch.tensor([len(tokens) for tokens in source], device=device),
                           data_utils.collate_tokens(target, pad, eos, left_pad=False, move_eos_to_beginning=True).to(device))
            log_probs = model.get_normalized_probs(output, log_probs=True).float()
            gold = data_utils.collate_tokens(target, pad, eos, left_pad=False).to(device)
            picked = log_probs.gather(-1, gold.unsqueeze(-1)).squeeze(-1).masked_fill(gold == pad, 0.0)
            return (picked.sum(-1) / (gold != pad).sum(-1)).tolist()

    def _generate(self, batch, max_len):
        tokens = [
            self.source_dictionary.encode_line(" ".join(p), add_if_not_exist=False, append_eos=True).long()
            for p in batch
        ]
        self.hub.cfg.dataset.batch_size = len(batch)
        hypotheses = self.hub.generate(
            tokens, beam=self.options.beam_size, lenpen=1.0, max_len_a=0, max_len_b=max_len
        )
        decoded = []
        for best in (h[0] for h in hypotheses):
            ids = best["tokens"].tolist()
            if ids and ids[-1] == self.target_dictionary.eos():
                ids = ids[:-1]
            decoded.append(([self.target_dictionary[i] for i in ids], float(best["score"])))
        return decoded


def load_translator(model: NmtModel, engine: str = "ctranslate2", options: DecodeOptions | None = None,
                    device: str = "auto", compute_type: str = "auto", threads: int = 0) -> Translator:
    """Load ``model`` for ``engine`` (``ctranslate2`` needs the converted model, ``fairseq`` the checkpoint)."""
    engines = {"ctranslate2": Ct2Translator, "fairseq": FairseqTranslator}
    if engine not in engines:
        raise ValueError(f"unknown engine {engine!r}; choose one of {ENGINES}")
    if engine == "ctranslate2" and not model.ct2_dir:
        raise ValueError("the ctranslate2 engine needs a converted model (ConvertTranslator)")
    return engines[engine](model, options or DecodeOptions(), device, compute_type, threads)
