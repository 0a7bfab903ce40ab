"""CPU back-translation speed of the published translators' architectures: CTranslate2 int8.

Can a published translator back-translate on this project's CPU machines, and how long would
100,000 sentences take? Rows, in one run, each at every ``--beams`` width (default 5 and the
paper's 12), CTranslate2 int8 on the CPU with ``--threads`` threads:
  * the project's own ``fast`` preset (the baseline): its shape (6+3 layers, width 256, feed-forward
    1024, 4 heads, the 16k joint vocabulary of csen-more, ReLU) as a Marian model;
  * OPUS-MT (Marian base, as Helsinki-NLP/opus-mt-de-en): 6+6 layers, width 512, feed-forward
    2048, 8 heads, 58,101 tokens, swish;
  * NLLB-200 distilled 600M (facebook/nllb-200-distilled-600M): 12+12 layers, width 1024,
    feed-forward 4096, 16 heads, 256,206 tokens, pre-norm; on ``--nllb-sentences`` sentences
    (fewer: it is the slow one).
Each model is built from its configuration with random weights (``torch.manual_seed(0)``) and
converted once by CTranslate2's own loader for its family, with int8 weights, into
``--cache`` (outside the repository); speed depends on the shapes and on how many tokens go in
and come out, not on the weights. Parameters: the trainable ones (the sinusoidal position tables
of Marian models are fixed).

Sources: the first ``--sentences`` lines of newstest2013's German side. The random models have
no tokenizer, so each sentence becomes a deterministic stand-in with a sentencepiece model's
piece count: round(1.3 × its whitespace words) vocabulary tokens drawn by hash, with the
family's special tokens (Marian: ``</s>`` after; NLLB-200: ``deu_Latn`` before and ``</s>``
after, and ``eng_Latn`` as the target prefix).

Decoding is the project's (models.nmt.translate.Ct2Translator): sources sorted by length, cut
into batches by the CPU token budget (``--batch-tokens``, by default the project's), every batch submitted before the first is read, length
penalty 1, a length limit per batch of int(1.5 × (longest source + 1) + 10) tokens before
end-of-sentence, capped by the target positions. Random weights never end a sentence, so every
hypothesis runs to the limit of its batch: sentences/s and the first hours column are those of
sentences that long, far longer than a real model's (whose sentences end, and leave their batch,
at their own length); target tokens/s depends far less on where sentences end, so the last column
projects the hours from it for outputs as long as newstest2013's English references (the same
stand-in count, end-of-sentence included). Target tokens: each hypothesis's tokens,
end-of-sentence included (counted once, as the project counts a hypothesis cut at the limit),
the target prefix excluded.
Seconds: the translation's wall time; model loading and a warm-up call on 8 sentences are
excluded, and so is the scoring pass Ct2Translator adds for published models.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import SHARED, machine, markdown_table

NEWSTEST = SHARED / "multi-parallel" / "newstest2013" / "newstest2013"
PIECES_PER_WORD = 1.3
PROJECTED_SENTENCES = 100_000
WARM_UP = 8


@dataclass(frozen=True)
class Architecture:
    """A translator's shape as a transformers configuration, and what its vocabulary holds:
    the special tokens at their ids, and those it wants around a source and before a target."""

    label: str
    model_type: str  # marian or m2m_100
    config: dict
    specials: dict[int, str]  # id → token; the other ids are ordinary pieces
    source_prefix: tuple[str, ...] = ()
    target_prefix: tuple[str, ...] = ()

    def tokens(self) -> list[str]:
        return [self.specials.get(i, f"▁w{i}") for i in range(self.config["vocab_size"])]

    def build(self, device: str = "cpu"):
        import torch
        import transformers

        config_class, model_class = {
            "marian": (transformers.MarianConfig, transformers.MarianMTModel),
            "m2m_100": (transformers.M2M100Config, transformers.M2M100ForConditionalGeneration),
        }[self.model_type]
        torch.manual_seed(0)
        with torch.device(device):
            return model_class(config_class(**self.config))

    def parameters(self) -> int:
        """Trainable weights, counted on an empty (meta) copy."""
        return sum(p.numel() for p in self.build("meta").parameters() if p.requires_grad)


def marian(vocab_size: int, width: int, layers: tuple[int, int], heads: int, ffn: int, activation: str) -> dict:
    """A Marian configuration: ``</s>`` is 0, ``<unk>`` 1, and ``<pad>`` (the decoder's start) the last id."""
    return {"vocab_size": vocab_size, "d_model": width, "encoder_layers": layers[0], "decoder_layers": layers[1],
            "encoder_attention_heads": heads, "decoder_attention_heads": heads, "encoder_ffn_dim": ffn,
            "decoder_ffn_dim": ffn, "max_position_embeddings": 512, "activation_function": activation,
            "scale_embedding": True, "eos_token_id": 0, "pad_token_id": vocab_size - 1,
            "decoder_start_token_id": vocab_size - 1}


NLLB_VOCABULARY = 256_206
ARCHITECTURES = {
    "fast": Architecture("project `fast` preset shape (6+3 layers, width 256)", "marian",
                         marian(16_000, 256, (6, 3), 4, 1024, "relu"), {0: "</s>", 1: "<unk>", 15_999: "<pad>"}),
    "marian": Architecture("OPUS-MT Marian base (opus-mt-de-en shape)", "marian",
                           marian(58_101, 512, (6, 6), 8, 2048, "swish"), {0: "</s>", 1: "<unk>", 58_100: "<pad>"}),
    "nllb": Architecture(
        "NLLB-200 distilled 600M shape", "m2m_100",
        {"vocab_size": NLLB_VOCABULARY, "d_model": 1024, "encoder_layers": 12, "decoder_layers": 12,
         "encoder_attention_heads": 16, "decoder_attention_heads": 16, "encoder_ffn_dim": 4096, "decoder_ffn_dim": 4096,
         "max_position_embeddings": 1024, "scale_embedding": True, "activation_function": "relu",
         "bos_token_id": 0, "pad_token_id": 1, "eos_token_id": 2, "decoder_start_token_id": 2},
        {0: "<s>", 1: "<pad>", 2: "</s>", 3: "<unk>", NLLB_VOCABULARY - 3: "deu_Latn", NLLB_VOCABULARY - 2: "eng_Latn",
         NLLB_VOCABULARY - 1: "<mask>"},
        source_prefix=("deu_Latn",), target_prefix=("eng_Latn",)),
}


class StandInTokenizer:
    """What CTranslate2's Marian and M2M-100 loaders read from a tokenizer: its vocabulary and
    special tokens."""

    def __init__(self, architecture: Architecture):
        self.vocabulary = architecture.tokens()
        self.bos_token, self.eos_token, self.unk_token = "<s>", "</s>", "<unk>"
        self.special_tokens_map: dict[str, list[str]] = {}

    def get_vocab(self) -> dict[str, int]:
        return {token: index for index, token in enumerate(self.vocabulary)}

    def convert_ids_to_tokens(self, index: int) -> str:
        return self.vocabulary[index]


def converted(name: str, cache: Path) -> Path:
    """The architecture's CTranslate2 int8 model with random weights, converted now if not cached."""
    import ctranslate2
    from ctranslate2.converters import transformers as loaders

    architecture = ARCHITECTURES[name]
    key = hashlib.blake2b(json.dumps([architecture.config, architecture.specials, ctranslate2.__version__],
                                     sort_keys=True).encode(), digest_size=8).hexdigest()
    folder = cache / f"{name}-{key}"
    if (folder / "model.bin").exists():
        return folder
    loader = {"marian": loaders.MarianMTLoader, "m2m_100": loaders.M2M100Loader}[architecture.model_type]()

    class RandomModelConverter(ctranslate2.converters.Converter):
        def _load(self):
            return loader(architecture.build(), StandInTokenizer(architecture))

    partial = folder.with_name(folder.name + ".partial")
    RandomModelConverter().convert(str(partial), quantization="int8", force=True)
    shutil.rmtree(folder, ignore_errors=True)
    partial.rename(folder)
    return folder


def piece_count(text: str) -> int:
    """The stand-in for a sentencepiece model's piece count of a sentence."""
    return max(1, round(PIECES_PER_WORD * len(text.split())))


def stand_in_pieces(texts: list[str], architecture: Architecture) -> list[list[str]]:
    """Each sentence as ``piece_count`` ordinary vocabulary tokens drawn by hash, with the
    family's special tokens."""
    ordinary = [token for index, token in enumerate(architecture.tokens()) if index not in architecture.specials]
    sources = []
    for text in texts:
        pieces = []
        for position in range(piece_count(text)):
            digest = hashlib.blake2b(f"{position}\t{text}".encode(), digest_size=8).digest()
            pieces.append(ordinary[int.from_bytes(digest, "big") % len(ordinary)])
        sources.append([*architecture.source_prefix, *pieces, "</s>"])
    return sources


def translate(translator, architecture: Architecture, sources: list[list[str]], options) -> int:
    """Beam-search every source as Ct2Translator does with ``options`` (DecodeOptions); returns
    the target tokens produced."""
    from models.nmt.translate import default_batch_tokens, token_batches

    max_target = architecture.config["max_position_embeddings"] - 1
    ordered = sorted(sources, key=len)
    prefix = list(architecture.target_prefix)
    pending = []
    for batch in token_batches([len(source) for source in ordered], options.batch_tokens or default_batch_tokens("cpu", options.beam_size)):
        sources_batch = ordered[batch]
        max_len = min(int(options.max_len_a * (len(sources_batch[-1]) + 1) + options.max_len_b), max_target)
        pending += translator.translate_batch(
            sources_batch, target_prefix=[prefix] * len(sources_batch) if prefix else None, beam_size=options.beam_size,
            length_penalty=1.0, return_scores=True, return_end_token=True, max_input_length=0,
            max_decoding_length=len(prefix) + max_len + 1, asynchronous=True)
    tokens = 0
    for result in pending:
        hypothesis = result.result().hypotheses[0][len(prefix):]
        tokens += len(hypothesis) if hypothesis[-1:] == ["</s>"] else len(hypothesis) + 1
    return tokens


def measure(name: str, folder: Path, pairs: list[tuple[str, str]], beams: list[int], threads: int, batch_tokens: int) -> list[list]:
    """One row per beam width on the (German, English reference) ``pairs``: the model loaded
    once, a warm-up call, then every German sentence timed."""
    import ctranslate2

    from models.nmt.translate import DecodeOptions, ct2_threads

    architecture = ARCHITECTURES[name]
    sources = stand_in_pieces([german for german, _ in pairs], architecture)
    reference_tokens = sum(piece_count(english) + 1 for _, english in pairs)
    translator = ctranslate2.Translator(str(folder), device="cpu", compute_type="int8", **ct2_threads("cpu", threads))
    parameters = architecture.parameters() / 1e6
    rows = []
    for beam in beams:
        options = DecodeOptions(beam_size=beam, batch_tokens=batch_tokens)
        translate(translator, architecture, sources[:WARM_UP], options)
        started = time.perf_counter()
        target_tokens = translate(translator, architecture, sources, options)
        seconds = time.perf_counter() - started
        rate, token_rate = len(sources) / seconds, target_tokens / seconds
        rows.append([architecture.label, parameters, beam, len(sources), sum(map(len, sources)), target_tokens, seconds,
                     token_rate, rate, PROJECTED_SENTENCES / rate / 3600,
                     PROJECTED_SENTENCES * reference_tokens / len(sources) / token_rate / 3600])
        print(f"  {name} beam {beam}: {seconds:.1f} s", flush=True)
    return rows


def main() -> None:
    import ctranslate2

    from models.nmt.translate import CPU_HYPOTHESIS_TOKENS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sentences", type=int, default=200, help="newstest2013 German sentences per model")
    parser.add_argument("--nllb-sentences", type=int, default=50, help="sentences for NLLB-200 (slow on a CPU)")
    parser.add_argument("--beams", default="5,12", help="comma-separated beam widths")
    parser.add_argument("--threads", type=int, default=2, help="CPU cores: a replica of one thread on each, as the project decodes")
    parser.add_argument("--batch-tokens", type=int, default=0,
                        help=f"decoder batch token budget, sentences × longest source (0: the project's CPU default, {CPU_HYPOTHESIS_TOKENS} ÷ beam)")
    parser.add_argument("--models", default=",".join(ARCHITECTURES), help=f"comma-separated subset of {','.join(ARCHITECTURES)}")
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "paranmt-bench",
                        help="where the converted random-weight models are kept")
    args = parser.parse_args()
    beams = [int(beam) for beam in args.beams.split(",")]
    names = args.models.split(",")
    if unknown := set(names) - set(ARCHITECTURES):
        parser.error(f"unknown models {sorted(unknown)}; choose from {','.join(ARCHITECTURES)}")
    german, english = (NEWSTEST.with_suffix(suffix).read_text(encoding="utf-8").splitlines() for suffix in (".deu", ".eng"))
    pairs = [(de, en) for de, en in zip(german, english, strict=True) if de.strip()]
    args.cache.mkdir(parents=True, exist_ok=True)
    folders = {name: converted(name, args.cache) for name in names}
    load_before = os.getloadavg()[0]
    rows = []
    for name in names:
        rows += measure(name, folders[name], pairs[: args.nllb_sentences if name == "nllb" else args.sentences], beams, args.threads,
                        args.batch_tokens)
    load_after = os.getloadavg()[0]
    print(f"\nCTranslate2 {ctranslate2.__version__} int8 on the CPU, {args.threads} threads, batches of "
          f"{args.batch_tokens or f'the default ({CPU_HYPOTHESIS_TOKENS} ÷ beam)'} tokens, random weights, "
          f"sources from {NEWSTEST.name}.deu; on {machine()}; load average {load_before:.1f} before, {load_after:.1f} after\n")
    print(markdown_table(["model", "parameters (M)", "beam", "sentences", "source tokens", "target tokens", "seconds",
                          "target tokens/s", "sentences/s", f"hours for {PROJECTED_SENTENCES:,} sentences",
                          f"hours for {PROJECTED_SENTENCES:,}, reference-length outputs"], rows))


if __name__ == "__main__":
    main()
