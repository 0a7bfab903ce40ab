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

import json
import os
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from corpus.settings import setting
from models.nmt.devices import import_ctranslate2, resolve_device
from models.nmt.model import NmtModel
from models.nmt.paraphrase import DiversityOptions, Paraphrases, paraphrase
from models.nmt.published import HfCodec
from models.nmt.search import BEST, Hypothesis, Search
from models.nmt.spm import Codec

EOS = "</s>"
# Decoder batch token budgets when DecodeOptions.batch_tokens is 0. On the CPU the budget is for
# the beam's hypotheses (sources × beam): a decoding step's output layer and softmax allocate
# vocabulary-sized buffers per hypothesis, which glibc maps fresh each step, so a large batch spends
# its time in the kernel zeroing pages; 6,144 hypothesis tokens (512 source tokens at beam 12) was
# the fastest, 2.2 times 4,096 source tokens, for the project's `fast` model and OPUS-MT
# (docs/2026-11-27-published-translators-cpu.md).
CPU_HYPOTHESIS_TOKENS, GPU_BATCH_TOKENS = 6144, 16384
# Forced decoding (``Translator.score``) computes the output layer for every target token of a batch
# at once, so on the CPU its budget is far smaller: 384 tokens scored 2,500 samples of the compact
# model in 2.6 s, 6,144 (a beam search's) in 5.6–8.6 s (docs/2026-12-07-cpu-decoding.md).
CPU_FORCED_TOKENS = 384


def default_batch_tokens(device: str, beam_size: int) -> int:
    """The decoder batch token budget (sentences × longest source) for ``device`` and the beam."""
    return GPU_BATCH_TOKENS if device == "cuda" else max(1, CPU_HYPOTHESIS_TOKENS // beam_size)


def forced_batch_tokens(device: str, batch_tokens: int, beam_size: int) -> int:
    """The forced-decoding batch token budget (sentences × longest source or target): with no beam,
    a batch may hold a beam search's tokens times its beam, except on the CPU by default."""
    if batch_tokens:
        return batch_tokens * beam_size
    return GPU_BATCH_TOKENS * beam_size if device == "cuda" else CPU_FORCED_TOKENS


ENGINES = ("ctranslate2", "fairseq")


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
    """One loaded model: ``translate`` turns Czech sentences into best hypotheses, ``search``
    into several (the beam's K best, samples, with banned words) where the engine ``searches``."""

    engine: str
    searches: bool = False

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
        return self.batch_budget(BEST)

    @property
    def forced_tokens(self) -> int:
        """The token budget of a forced-decoding (scoring) batch."""
        return forced_batch_tokens(self.device, self.options.batch_tokens, self.options.beam_size)

    def batch_budget(self, search: Search) -> int:
        """The token budget of a decoder batch of ``search`` (the CPU's is for its hypotheses)."""
        return self.options.batch_tokens or default_batch_tokens(self.device, search.width(self.options.beam_size))

    def translate(self, texts: list[str], pivots: list[str] | None = None) -> list[Hypothesis | None]:
        """Best beam hypothesis of each sentence (None for a sentence without any piece);
        ``pivots``: each sentence's language, for a multilingual model (its first language if None)."""
        return [found[0] if found else None for found in self.search(texts, pivots)]

    def search(self, texts: list[str], pivots: list[str] | None = None, search: Search = BEST,
               suppressed: Sequence[list[str]] = ()) -> list[list[Hypothesis] | None]:
        """Each sentence's hypotheses as ``search`` asks, best first (None for a sentence without
        any piece), none of them generating a target piece sequence of ``suppressed``. An engine
        that gives only the beam's best (``searches`` false) refuses any other search in a ValueError.

        Every batch is handed to the engine before the first result is read, so an engine that
        decodes in the background (CTranslate2) has the next batch queued while Python detokenizes."""
        if not self.searches and (search != BEST or suppressed):
            raise ValueError(f"the {self.engine} engine gives the beam's best hypothesis only: several hypotheses, sampling and "
                             "banned words need the ctranslate2 engine")
        pieces = self.codec.encode(texts)
        truncated = [len(p) > self.max_source_tokens for p in pieces]
        model = self.model
        first = next(iter(model.source_prefixes), "")
        pieces = [
            [*model.source_prefix(pivot), *p[: self.max_source_tokens], *model.source_suffix] if p else []
            for p, pivot in zip(pieces, pivots or [first] * len(pieces), strict=True)
        ]
        order = sorted((i for i, p in enumerate(pieces) if p), key=lambda i: (len(pieces[i]), i))
        results: list[list[Hypothesis] | None] = [None] * len(texts)
        lengths = [len(pieces[i]) for i in order]
        with self.searching(search) as submit:
            submitted = [
                (order[batch], submit([pieces[i] for i in order[batch]], self.max_len(lengths[batch][-1]), list(suppressed)))
                for batch in token_batches(lengths, self.batch_budget(search))
            ]
            for indices, finish in submitted:
                decoded = finish()
                texts_out = iter(self.codec.decode([tokens for found in decoded for tokens, _ in found]))
                for i, found in zip(indices, decoded, strict=True):
                    results[i] = [Hypothesis(next(texts_out), score, len(tokens) + 1, truncated[i]) for tokens, score in found]
        return results

    @contextmanager
    def searching(self, search: Search) -> Iterator[Callable]:
        """The engine's ``submit(batch, max_len, suppressed)`` for one ``search`` call (an engine
        that only gives the beam's best submits as ``submit`` does)."""
        yield lambda batch, max_len, suppressed: self.submit(batch, max_len)

    def paraphrase(self, texts: list[str], pivots: list[str], references_tok: list[str], options: DiversityOptions,
                   seed: int) -> list[Paraphrases | None]:
        """``models.nmt.paraphrase.paraphrase`` by this translator: a method, so that a model shared
        by a machine's worker processes (served through a proxy that passes calls, not attributes)
        runs it where it is loaded."""
        return paraphrase(self, texts, pivots, references_tok, options, seed)

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
        for batch in token_batches(lengths, self.forced_tokens):
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
    def submit(self, batch: list[list[str]], max_len: int) -> Callable[[], list[list[tuple[list[str], float]]]]:
        """Start beam-searching a batch of sources (pieces, with the special tokens a published
        model wants around them); the returned call waits for it and gives, per source, a list
        with the best hypothesis's pieces (no end-of-sentence, no target prefix) and score."""


def codec_for(model: NmtModel) -> Codec | HfCodec:
    """The project's sentencepiece codec, or a published model's own tokenizer."""
    if model.tokenizer_dir:
        return HfCodec(model.tokenizer_dir)
    return Codec(model.spm_source, model.spm_target)


def ct2_threads(device: str, cores: int) -> dict[str, int]:
    """CTranslate2's threads for ``cores`` on the CPU: a replica of the model on each, each
    decoding its own batches on one thread, so a score is the same for any number of cores (a
    matrix product split over threads sums in another order) and the cores stay busy (a small
    model's batch gains little from a second thread: 59 sentences/s on two against 80 on one, 135
    on two replicas; docs/2026-12-07-cpu-decoding.md). A GPU's replicas are its devices."""
    return {"inter_threads": cores, "intra_threads": 1} if device == "cpu" else {}


class Ct2Translator(Translator):
    engine = "ctranslate2"
    searches = True

    def __init__(self, model: NmtModel, options: DecodeOptions, device: str = "auto",
                 compute_type: str = "auto", threads: int = 0):
        ctranslate2 = import_ctranslate2()
        super().__init__(model, options)
        device = resolve_device(self.engine, device)
        if compute_type == "auto":
            compute_type = "float16" if device == "cuda" else "default"
        self.device, self.compute_type, self.threads = device, compute_type, threads
        # On GPUs one translator holds a replica on each and spreads the queued batches over them.
        self.gpus = list(range(ctranslate2.get_cuda_device_count())) if device == "cuda" else [0]
        self.translator = ctranslate2.Translator(model.ct2_dir, device=device, device_index=self.gpus, compute_type=compute_type,
                                                 **ct2_threads(device, threads or os.cpu_count() or 1))
        self.target_vocabulary = target_vocabulary(model.ct2_dir)

    def submit(self, batch, max_len):
        return self._submit(self.translator, batch, max_len, BEST, [])

    @contextmanager
    def searching(self, search):
        """A sampling search runs on a translator of its own, loaded with the seed set: CTranslate2
        draws from a generator per decoding thread, seeded once when the thread first samples
        (``set_random_seed`` reaches no thread that has sampled), so only a new translator's
        thread makes the same draws for the same call on every run, in every worker process (one
        replica, one thread: with several, which draws for which batch would vary)."""
        translator = self.translator
        if search.sampling is not None:
            ctranslate2 = import_ctranslate2()
            ctranslate2.set_random_seed(search.sampling.seed)
            translator = ctranslate2.Translator(self.model.ct2_dir, device=self.device, device_index=self.gpus[0],
                                                compute_type=self.compute_type, **ct2_threads(self.device, 1))
        yield lambda batch, max_len, suppressed: self._submit(translator, batch, max_len, search, suppressed)

    def _submit(self, translator, batch, max_len, search: Search, suppressed: list[list[str]]):
        model, sampling = self.model, search.sampling
        prefix = [list(model.target_prefix)] * len(batch) if model.target_prefix else None
        random = {"sampling_topk": sampling.topk, "sampling_topp": sampling.topp, "sampling_temperature": sampling.temperature} if sampling else {}
        # A sequence with a piece the model lacks is one it cannot say (CTranslate2 refuses it).
        suppressed = [sequence for sequence in suppressed if all(piece in self.target_vocabulary for piece in sequence)]
        pending = translator.translate_batch(
            batch, target_prefix=prefix, beam_size=1 if sampling else search.beam or self.options.beam_size, num_hypotheses=search.hypotheses,
            suppress_sequences=suppressed or None, length_penalty=1.0, return_scores=True, return_end_token=True, max_input_length=0,
            max_decoding_length=len(model.target_prefix) + max_len + 1, asynchronous=True, **random,
        )
        return lambda: self._finished(batch, [result.result() for result in pending], max_len, search.rescored or bool(suppressed))

    def force(self, sources, targets):
        skip = len(self.model.target_prefix)
        scored = self.translator.score_batch(sources, [[*self.model.target_prefix, *target] for target in targets])
        return [float(np.mean(result.log_probs[skip:])) for result in scored]

    def _finished(self, sources, results, max_len, rescore_all: bool):
        """Each source's hypotheses (the target prefix, a published model's language token, left
        out: its tokens and its score are the sentence's own). One cut at the length limit is
        rescored with end-of-sentence; so is every hypothesis of a published model, whose beam
        scores CTranslate2 normalises with the forced prefix and over a vocabulary without the
        tokens it never generates, and with ``rescore_all`` every one (a sample, a search that
        banned pieces): the rescoring is the model's own forced-decoding log-probability, as the
        project's fairseq model's beam score is."""
        decoded: list[list[tuple[list[str], float]]] = []
        rescore = []
        skip = len(self.model.target_prefix)
        for index, result in enumerate(results):
            found = []
            for rank, (hypothesis, score) in enumerate(zip(result.hypotheses, result.scores, strict=True)):
                tokens = hypothesis[skip:]
                finished = bool(tokens) and tokens[-1] == EOS
                found.append((tokens[:-1] if finished else tokens[:max_len], score if finished else 0.0))
                if not finished or rescore_all or self.model.tokenizer_dir:
                    rescore.append((index, rank))
            decoded.append(found)
        if rescore:
            targets = [[*self.model.target_prefix, *decoded[i][rank][0]] for i, rank in rescore]
            rescored = self.translator.score_batch([sources[i] for i, _ in rescore], targets, max_batch_size=self.forced_tokens, batch_type="tokens")
            for (index, rank), scored in zip(rescore, rescored, strict=True):
                decoded[index][rank] = (decoded[index][rank][0], float(np.mean(scored.log_probs[skip:])))
        return decoded


def target_vocabulary(ct2_dir: str) -> frozenset[str]:
    """The pieces a converted model can generate: its target vocabulary file (or the shared one),
    JSON or one piece a line as the converter wrote it."""
    for name in ("target_vocabulary", "shared_vocabulary"):
        if (path := Path(ct2_dir) / f"{name}.json").exists():
            return frozenset(json.loads(path.read_text(encoding="utf-8")))
        if (path := Path(ct2_dir) / f"{name}.txt").exists():
            return frozenset(path.read_text(encoding="utf-8").split("\n"))
    raise FileNotFoundError(f"{ct2_dir}: no target_vocabulary or shared_vocabulary file")


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
            decoded.append([([self.target_dictionary[i] for i in ids], float(best["score"]))])
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
