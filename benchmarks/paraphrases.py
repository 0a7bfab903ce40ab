"""What several paraphrases a source cost: sentences per second per core of each --diversity method
against the one-best translation (the baseline, measured first and again last in the same run).

Rows, one model, one thread (a core), the same sources and references:
  * 1-best: ``Translator.translate``, beam 12, the paper's corpus;
  * nbest, sampling, constrained, parabank: ``Translator.paraphrase`` with ``--paraphrases K``
    (models.nmt.paraphrase), the time of every search and rescoring it makes, and the pairs it
    keeps per source;
  * 1-best again: the baseline's drift over the run (another process on the machine shows here).
The goals (issue 67): nbest at K = 5 at most 1.3 × the 1-best's time, parabank at most 3 ×.

``--stage-sizes N1,N2`` measures the stage instead: the BackTranslate ``luigi`` command on N1,
then N2 sources of a seeded shuffle of them all (the smaller within the larger), the 1-best first (the
baseline) and then each method, with the peak resident memory of the command's whole process
tree: memory that does not grow with the input is the same at both sizes.

``--forced-budgets B1,B2,…`` times the rescoring instead: ``Translator.score`` of K samples of each
source (what sampling and parabank rescore) in forced-decoding batches of each budget (tokens),
with the default budget's row first (the baseline).

Sources: ``--pairs FOREIGN::ENGLISH`` (line-aligned files), else newstest2021 (cs, its reference A)
when ../shared/data is there, else the demo corpus. Model: ``--model`` (a folder with ``nmt.json``
from ConvertTranslator or ImportTranslator), by default the newest ``<workdir>/nmt-ct2/latest``,
built from the demo corpus if missing.
"""

from __future__ import annotations

import argparse
import gzip
import os
import random
import time
from pathlib import Path

from benchmarks.backtranslate import default_model
from benchmarks.common import machine, markdown_table

SHARED = Path(os.environ.get("PARANMT_SHARED_DATA", "../shared/data"))
WMT21 = (SHARED / "csen" / "wmt21" / "newstest2021.cs-en.src.cs", SHARED / "csen" / "wmt21" / "newstest2021.cs-en.ref.A.en")


def source_pairs(pairs: str, count: int | None = None) -> tuple[list[str], list[str], str]:
    """(foreign sentences, their English references, where they come from): the first ``count``
    (None: all)."""
    if pairs or WMT21[0].exists():
        foreign, english = (Path(p) for p in pairs.split("::")) if pairs else WMT21
        rows = list(zip(foreign.read_text(encoding="utf-8").splitlines(), english.read_text(encoding="utf-8").splitlines(), strict=True))
        where = f"{foreign.name} / {english.name}"
    else:
        from workflows.ingest import demo_corpus

        with gzip.open(demo_corpus(), "rt", encoding="utf-8") as handle:
            rows = [tuple(line.rstrip("\n").split("\t")[2:4]) for line in handle]
        where = "the demo corpus"
    rows = [(cs, en) for cs, en in rows if cs.strip() and en.strip()][:count]
    return [cs for cs, _ in rows], [en for _, en in rows], where


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, help="a translator folder with nmt.json (default: <workdir>/nmt-ct2/latest)")
    parser.add_argument("--workdir", type=Path, default=Path("work"))
    parser.add_argument("--pairs", default="", help="FOREIGN_FILE::ENGLISH_FILE, line-aligned")
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--paraphrases", type=int, default=5)
    parser.add_argument("--methods", default="nbest,sampling,constrained,parabank")
    parser.add_argument("--parabank-samples", default="0", help="parabank's sampled candidates, comma-separated: one row each (0: K)")
    parser.add_argument("--compute-type", default="int8", help="CTranslate2 compute type (int8: what configs/csen-more.cfg uses)")
    parser.add_argument("--threads", type=int, default=1, help="CPU threads of the translator (1: the rate per core)")
    parser.add_argument("--stage-sizes", default="", help="comma-separated numbers of sources: the BackTranslate command's time and "
                                                           "peak memory at each, instead of the in-process rows")
    parser.add_argument("--rows-per-shard", type=int, default=0, help="--stage-sizes: the bitext ingested in shards of about this many rows "
                                                                      "(0: IngestBitext's default, 100,000 lines a shard)")
    parser.add_argument("--forced-budgets", default="", help="comma-separated token budgets: the time of rescoring K samples of each "
                                                             "source in forced-decoding batches of each, instead of the in-process rows")
    args = parser.parse_args()
    if args.stage_sizes:
        stage_rows(args)
        return
    if args.forced_budgets:
        forced_rows(args)
        return

    from corpus.text import english_tokens
    from models.nmt.model import NmtModel
    from models.nmt.paraphrase import DiversityOptions
    from models.nmt.translate import load_translator

    model = NmtModel.load(args.model or default_model(args.workdir))
    texts, references, where = source_pairs(args.pairs, args.sentences)
    references_tok = english_tokens(references)
    translator = load_translator(model, compute_type=args.compute_type, threads=args.threads)
    translator.translate(texts[:8])  # first-call set-up (allocators, kernels) is not throughput

    def one_best() -> list:
        started = time.perf_counter()
        translator.translate(texts)
        return ["1-best (baseline)", time.perf_counter() - started, len(texts), 1.0]

    rows = [one_best()]
    ways = [(method, int(samples)) for method in args.methods.split(",")
            for samples in (args.parabank_samples.split(",") if method == "parabank" else ["0"])]
    for method, samples in ways:
        options = DiversityOptions(paraphrases=args.paraphrases, diversity=method, parabank_samples=samples)
        started = time.perf_counter()
        made = translator.paraphrase(texts, ["cs"] * len(texts), references_tok, options, seed=1)
        seconds = time.perf_counter() - started
        kept = sum(len(found.variants) for found in made if found)
        rows.append([f"{method}, K = {args.paraphrases}" + (f", {samples} samples" if samples else ""), seconds, kept, kept / len(texts)])
    rows.append(one_best())
    rows[-1][0] = "1-best again (drift)"
    baseline = rows[0][1]
    table = [[name, seconds, len(texts) / seconds / args.threads, seconds / baseline, pairs, per_source]
             for name, seconds, pairs, per_source in rows]
    print(f"# Paraphrases: cost per method ({machine()})\n")
    print(f"{len(texts)} sources of {where}; model {model.name or 'the project'}'s {model.ct2_dir}; CTranslate2 {args.compute_type}, "
          f"{args.threads} thread(s), beam {translator.options.beam_size}\n")
    print(markdown_table(["method", "seconds", "sources/s per core", "× 1-best", "pairs", "pairs per source"], table))


def forced_rows(args: argparse.Namespace) -> None:
    """Seconds to rescore K seeded samples of each source (top-k 50, top-p 0.9) by forced decoding,
    at the default budget and at each of ``--forced-budgets`` (a budget B: batch_tokens B ÷ beam)."""
    from dataclasses import replace

    from models.nmt.model import NmtModel
    from models.nmt.search import Sampling, Search
    from models.nmt.translate import load_translator

    model = NmtModel.load(args.model or default_model(args.workdir))
    texts, _, where = source_pairs(args.pairs, args.sentences)
    translator = load_translator(model, compute_type=args.compute_type, threads=args.threads)
    found = translator.search(texts, None, Search(args.paraphrases, Sampling(50, 0.9, 1.0, 1)))
    sources, samples = zip(*[(text, h.text) for text, hypotheses in zip(texts, found, strict=True) for h in hypotheses or []], strict=True)
    default, beam = translator.options, translator.options.beam_size
    rows = []
    for budget in [0, *map(int, args.forced_budgets.split(","))]:
        translator.options = replace(default, batch_tokens=budget // beam if budget else default.batch_tokens)
        started = time.perf_counter()
        translator.score(list(sources), list(samples))
        rows.append([f"default ({translator.forced_tokens})" if not budget else translator.forced_tokens, time.perf_counter() - started])
    print(f"# Paraphrases: rescoring {len(samples)} samples by forced decoding ({machine()})\n")
    print(f"{len(texts)} sources of {where}, {args.paraphrases} samples each; model {model.ct2_dir}; CTranslate2 {args.compute_type}, "
          f"{args.threads} thread(s)\n")
    print(markdown_table(["batch budget (tokens)", "seconds", "× default"], [[name, seconds, seconds / rows[0][1]] for name, seconds in rows]))


def stage_rows(args: argparse.Namespace) -> None:
    """The BackTranslate command at each of ``--stage-sizes``: the 1-best (baseline), then each
    method with ``--paraphrases``; seconds, sources per second and the process tree's peak memory."""
    from benchmarks.backtranslate import stage_run
    from models.nmt.translate import DecodeOptions

    model = args.model or default_model(args.workdir)
    sizes = [int(size) for size in args.stage_sizes.split(",")]
    texts, references, where = source_pairs(args.pairs)
    order = list(range(len(texts)))
    random.Random(1).shuffle(order)  # every size drawn alike (a file's first lines may all be of one kind), the smaller within the larger
    texts, references = [texts[i] for i in order[:max(sizes)]], [references[i] for i in order[:max(sizes)]]
    ways = [("1-best (baseline)", ())] + [(f"{method}, K = {args.paraphrases}", ("--paraphrases", str(args.paraphrases), "--diversity", method))
                                          for method in args.methods.split(",")]
    rows = []
    for size in sizes:
        for name, extra in ways:
            shards = -(-size // args.rows_per_shard) if args.rows_per_shard else 0
            run = stage_run(model, texts[:size], references[:size], "cpu", DecodeOptions(), shards, args.compute_type, extra)
            rows.append([name, size, run.pairs, run.seconds, size / run.seconds, run.peak_bytes / 2**20])
    print(f"# Paraphrases: the BackTranslate command at {', '.join(map(str, sizes))} sources ({machine()})\n")
    print(f"Sources of {where}; model {model}; CTranslate2 {args.compute_type}; DirectRunner workers: the project's default; "
          f"shards of {args.rows_per_shard or 'at most 100,000'} rows\n")
    print(markdown_table(["run", "sources", "pairs", "stage seconds", "sources/s", "peak MiB (process tree)"], rows))


if __name__ == "__main__":
    main()
