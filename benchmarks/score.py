"""Scoring benchmark: ScorePairs + AssignDeciles on generated pairs, against the authors' per-pair loop.

Rows, in one run on the same generated data (English-like sentences over a Zipfian 20k-word
vocabulary, log-normal lengths of mean about 13 words with a long tail, as CzEng's 13.3 (19.3)
in the paper's Table 2; translations with a share of the words changed; 300-dimensional random
word vectors; no sentence repeats, so the per-batch tokenization cache gains nothing here):
  * the authors' method, 1 process: per pair, Moses tokenization, their list-based trigram
    overlap (``get_overlap``), the mean of the word vectors of each side and their cosine; then
    a Python sort per score to cut deciles (the same tokenizer as ours, so the comparison is
    about everything after it);
  * the same two per-pair loops on already tokenized pairs (overlap + PP only), against the
    vectorized batch core (``TokenBatch`` + ``trigram_overlap`` + ``WordAverager``): the
    vectorization gain without the shared tokenization cost;
  * language identification of both sides, over whole batches (``corpus.language``) and by
    langid.py's own ``rank`` one sentence at a time (on a 25th of the pairs: it is slow);
  * Beam ScorePairs + AssignDeciles (DirectRunner, its workers chosen by the input's size as in
    the workflow: in process below 1M pairs) at growing sizes: time must grow
    linearly; the per-core rate gives the projection for 51.4M pairs on 16 cores. Every row
    loads its word vectors before its clock starts (the Beam row's workers read them from the
    per-machine cache that the load filled, as every run after a machine's first does).
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.common import machine, markdown_table, measure_in_subprocess, peak_rss_mib

VOCABULARY = 20_000
DIM = 300
PARANMT_PAIRS = 51_400_000
ONE_THREAD = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}


def vocabulary() -> list[str]:
    letters = np.array(list("etaoinshrdlucmfwypvbgkjqxz"))
    rng = np.random.default_rng(1)
    words = {"".join(rng.choice(letters, rng.integers(2, 9))) for _ in range(3 * VOCABULARY)}
    return sorted(words)[:VOCABULARY]


def generate_pairs(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """n (reference, translation) sentences; all token draws are vectorized."""
    rng = np.random.default_rng(seed)
    words = np.array(vocabulary() + [",", "."])
    zipf = 1.0 / np.arange(1, VOCABULARY + 1)
    lengths = np.clip(np.rint(rng.lognormal(2.3, 0.6, n)), 2, 120).astype(np.int64)
    tokens = rng.choice(VOCABULARY, lengths.sum(), p=zipf / zipf.sum())
    changed = np.where(rng.random(len(tokens)) < np.repeat(rng.random(n) * 0.6, lengths), rng.choice(VOCABULARY, len(tokens)), tokens)
    commas = rng.random(len(tokens)) < 0.06
    tokens[commas] = changed[commas] = VOCABULARY
    bounds = np.cumsum(lengths)[:-1]
    references = [" ".join(s).capitalize() + " ." for s in np.split(words[tokens], bounds)]
    translations = [" ".join(s).capitalize() + " ." for s in np.split(words[changed], bounds)]
    return references, translations


def write_vectors(path: Path) -> None:
    rng = np.random.default_rng(2)
    words = vocabulary() + [",", "."]
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(f"{len(words)} {DIM}\n")
        for word, vector in zip(words, rng.normal(size=(len(words), DIM)).astype(np.float32), strict=True):
            handle.write(word + " " + " ".join(f"{x:.4f}" for x in vector) + "\n")


def write_pairs_dataset(directory: Path, n: int, shards: int) -> None:
    import pyarrow as pa

    import schemas
    from corpus.ids import id_hashes
    from corpus.tokenbatch import token_columns
    from pipelines.io import write_part

    references, translations = generate_pairs(n)
    reference_tok, translation_tok = generated_tokens(references), generated_tokens(translations)
    ids = [f"news-b{i // 100_000}-00train-f{i // 100:05d}-s{i % 100}" for i in range(n)]
    rng = np.random.default_rng(3)
    table = pa.table({
        "id": ids, "source": ["bench.gz"] * n, "domain": ["news"] * n, "czeng_score": rng.random(n), "pivot": ["cs"] * n, "foreign": [""] * n,
        "reference": references, "translation": translations, "trans_score": -rng.gamma(2.0, 0.3, n),
        "trans_n_tokens": np.full(n, 20, np.int32), "truncated": np.zeros(n, bool),
        **token_columns(reference_tok, translation_tok),
    }).sort_by("id")
    shard = id_hashes(table.column("id").to_pylist()) % np.uint64(shards)
    for s in range(shards):
        write_part(table.filter(pa.array(shard == s)), schemas.PAIRS, str(directory), s)


def generated_tokens(sentences: list[str]) -> list[str]:
    """The ``*_tok`` strings of generated sentences, which upstream stages make with
    ``corpus.text.english_tokens``: the words, commas and final period are already
    space-separated, so lowercasing gives them (checked on the first thousand)."""
    from corpus.text import english_tokens

    tokens = [sentence.lower() for sentence in sentences]
    assert tokens[:1000] == english_tokens(sentences[:1000]), "generated sentences no longer tokenize trivially"
    return tokens


def authors_pp(reference: list[str], translation: list[str], index: dict, vectors: np.ndarray) -> float:
    """Per pair: average the known words' vectors of each side and take the cosine."""
    a = [vectors[index[w]] for w in reference if w in index]
    b = [vectors[index[w]] for w in translation if w in index]
    if not a or not b:
        return 0.0
    u, v = np.mean(a, axis=0), np.mean(b, axis=0)
    norm = float(np.linalg.norm(u) * np.linalg.norm(v))
    return float(u @ v) / norm if norm else 0.0


def python_deciles(scores: list[float]) -> list[int]:
    """Rank by a Python sort and cut into ten equal bins."""
    order = sorted(range(len(scores)), key=scores.__getitem__)
    bins = [0] * len(scores)
    for rank, row in enumerate(order):
        bins[row] = rank * 10 // len(scores)
    return bins


def run_authors(n: int, vectors_path: str, tokenized: bool) -> tuple[float, float]:
    from corpus.overlap import authors_overlap
    from corpus.text import tokenize
    from corpus.wordvec import load_vectors

    def lower_tokens(texts):
        return [tokenize(text, "en", lowercase=True) for text in texts]

    words, vectors = load_vectors(vectors_path)
    index = {w: i for i, w in enumerate(words)}
    references, translations = generate_pairs(n)
    if tokenized:
        references, translations = lower_tokens(references), lower_tokens(translations)
    started = clock()
    overlaps, pps = [], []
    for reference, translation in zip(references, translations, strict=True):
        if not tokenized:
            reference, translation = lower_tokens([reference])[0], lower_tokens([translation])[0]
        overlaps.append(authors_overlap(reference, translation))
        pps.append(authors_pp(reference, translation, index, vectors))
    if not tokenized:
        python_deciles(overlaps)
        python_deciles(pps)
    return started


def run_vectorized_core(n: int, vectors_path: str) -> tuple[float, float]:
    """Overlap and similarity in the pipeline's batches (pipelines.batches.VECTORIZED_BATCH_ROWS)."""
    from corpus.overlap import trigram_overlap
    from corpus.similarity import WordAverager
    from corpus.tokenbatch import TokenBatch
    from corpus.wordvec import load_vectors
    from pipelines.batches import VECTORIZED_BATCH_ROWS as batch_rows

    model = WordAverager(*load_vectors(vectors_path))
    references, translations = (generated_tokens(side) for side in generate_pairs(n))
    started = clock()
    for start in range(0, n, batch_rows):
        batch = TokenBatch.from_joined(references[start : start + batch_rows], translations[start : start + batch_rows])
        trigram_overlap(batch)
        model.similarity(batch)
    return started


def run_language(n: int, vectorized: bool) -> tuple[float, float]:
    """P(English) of both sides: over the pipeline's batches (``corpus.language``), or by langid.py's own
    ``rank`` one sentence at a time."""
    references, translations = generate_pairs(n)
    if vectorized:
        from corpus.language import LanguageModel
        from pipelines.batches import VECTORIZED_BATCH_ROWS as batch_rows

        model = LanguageModel.load()
        started = clock()
        for start in range(0, n, batch_rows):
            model.probability(references[start : start + batch_rows])
            model.probability(translations[start : start + batch_rows])
        return started
    import langid.langid

    identifier = langid.langid.LanguageIdentifier.from_modelstring(langid.langid.model, norm_probs=True)
    started = clock()
    for text in references + translations:
        dict(identifier.rank(text))["en"]
    return started


def run_beam(pairs_dir: str, vectors_path: str, out: Path, workers: int, dask_scheduler: str = "") -> tuple[float, float]:
    """ScorePairs + AssignDeciles on the DirectRunner with ``workers``, or on the Dask cluster at
    ``dask_scheduler`` (benchmarks/dask_cluster.py)."""
    import apache_beam as beam

    from corpus.wordvec import load_vectors_cached
    from pipelines.deciles import write_corpus
    from pipelines.io import dataset_files, file_rows
    from pipelines.options import pipeline_options
    from pipelines.score import build_score

    rows = file_rows(dataset_files(pairs_dir))  # as the workflow's runner_for: the input's size picks the workers
    # the vectors are parsed before the clock, as the baseline's are: the workers then find them in
    # the per-machine cache, as every run after a machine's first does
    load_vectors_cached(vectors_path)

    def run_pipeline(build):
        runner = "DaskRunner" if dask_scheduler else "DirectRunner"
        with beam.Pipeline(options=pipeline_options(runner, workers, rows=rows, dask_scheduler=dask_scheduler)) as pipeline:
            build(pipeline)

    started = clock()
    run_pipeline(lambda p: build_score(p, dataset_files(pairs_dir), str(out / "scored"), vectors_path))
    pp_model = {"kind": "vectors file", "path": vectors_path, "sha256": "not computed"}
    write_corpus(run_pipeline, dataset_files(str(out / "scored")), pairs_dir, str(out / "corpus"), str(out), shown_corpus_dir="corpus",
                 pp_model=pp_model, rejects={}, examples=3)
    return started


def cpu_seconds() -> float:
    """User + system CPU time of this process and the children it waited for (Beam's workers):
    a per-core rate from it does not depend on what else the machine runs."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def clock() -> tuple[float, float]:
    """(wall, CPU) seconds now; the measured span starts after the data is generated."""
    return time.perf_counter(), cpu_seconds()


def measure(args) -> None:
    """Child-process entry: run one mode and print its JSON line (seconds exclude data generation)."""
    with tempfile.TemporaryDirectory() as tmp:
        if args.measure == "write":  # data generation, in its own process (see main)
            write_pairs_dataset(Path(args.source), args.pairs, args.shards)
            print(json.dumps({}))
            return
        if args.measure == "authors":
            started = run_authors(args.pairs, args.vectors, tokenized=False)
        elif args.measure == "authors-tokenized":
            started = run_authors(args.pairs, args.vectors, tokenized=True)
        elif args.measure == "core":
            started = run_vectorized_core(args.pairs, args.vectors)
        elif args.measure in ("langid", "langid-py"):
            started = run_language(args.pairs, vectorized=args.measure == "langid")
        else:
            started = run_beam(args.source, args.vectors, Path(tmp), args.workers)
        wall, cpu = clock()
    print(json.dumps({"rows": args.pairs, "seconds": wall - started[0], "cpu_seconds": cpu - started[1], "peak_rss_mib": peak_rss_mib()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="250000,500000,1000000", help="Comma-separated pair counts for the Beam rows.")
    parser.add_argument("--baseline-pairs", type=int, default=100_000, help="Pairs for the per-pair Python rows (they are slow).")
    parser.add_argument("--workers", type=int, default=0,
                        help="DirectRunner processes (0 = by input size, as the workflow: pipelines.options.direct_workers)")
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--measure", choices=["write", "authors", "authors-tokenized", "core", "langid", "langid-py", "beam"], help=argparse.SUPPRESS)
    parser.add_argument("--pairs", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--source", help=argparse.SUPPRESS)
    parser.add_argument("--vectors", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        measure(args)
        return
    from pipelines.options import direct_workers

    sizes = [int(size) for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory() as tmp:
        vectors = Path(tmp) / "vectors.txt"
        write_vectors(vectors)
        common = ["--vectors", str(vectors), "--workers", str(args.workers)]
        base = str(args.baseline_pairs)
        rows = []
        langid_py_pairs = str(max(1, args.baseline_pairs // 25))  # milliseconds a sentence
        for label, mode, pairs in (("authors' per-pair loop: tokenize, overlap, PP, Python sort (baseline)", "authors", base),
                                   ("authors' per-pair overlap + PP on tokenized pairs", "authors-tokenized", base),
                                   ("vectorized batch core on tokenized pairs", "core", base),
                                   ("langid, both sides, over whole batches (corpus.language)", "langid", base),
                                   ("langid.py's own rank(), one sentence at a time, both sides", "langid-py", langid_py_pairs)):
            # one BLAS thread: langid.py's numpy products would otherwise spread over the cores
            r = measure_in_subprocess("benchmarks.score", "--measure", mode, "--pairs", pairs, *common, env=ONE_THREAD)
            rows.append([label, 1, r["rows"], r["seconds"], r["cpu_seconds"], r["rows"] / r["seconds"], r["rows"] / r["cpu_seconds"],
                         r["peak_rss_mib"]])
        baseline_rate = rows[0][6]
        langid_us = {mode: 1e6 / row[6] for mode, row in zip(("langid", "langid-py"), rows[3:5], strict=True)}
        beam = []
        for size in sizes:
            source = Path(tmp) / f"pairs-{size}"
            # Generated in a child: a measured child forked from a parent that held millions of
            # generated sentences would report the parent's memory as its own peak (Linux keeps
            # ru_maxrss across fork and exec), and the peak would grow with the size for that alone.
            measure_in_subprocess("benchmarks.score", "--measure", "write", "--pairs", str(size), "--source", str(source),
                                  "--shards", str(args.shards))
            r = measure_in_subprocess("benchmarks.score", "--measure", "beam", "--pairs", str(size), "--source", str(source), *common)
            beam.append((size, r["seconds"], r["cpu_seconds"]))
            rows.append([f"Beam ScorePairs + AssignDeciles, {args.shards} shards", direct_workers(args.workers, size), size, r["seconds"],
                         r["cpu_seconds"],
                         r["rows"] / r["seconds"], r["rows"] / r["cpu_seconds"], r["peak_rss_mib"]])
    print(f"Scoring and deciles on generated pairs, {machine()}\n")
    print(markdown_table(["pipeline", "processes", "pairs", "seconds", "CPU seconds", "pairs/s", "pairs per CPU second",
                          "peak RSS MiB (largest process)"], rows))
    print("\nGrowth (seconds per 1k pairs must stay flat for linear time; the fixed start-up cost shows at small sizes):")
    print(markdown_table(["pairs", "seconds", "CPU seconds", "seconds per 1k pairs", "CPU seconds per 1k pairs"],
                         [[n, wall, cpu, 1000 * wall / n, 1000 * cpu / n] for n, wall, cpu in beam]))
    (small, _, cpu_small), (large, _, cpu_large) = beam[0], beam[-1]
    overall = large / cpu_large
    # The slope between the smallest and largest runs leaves out the fixed cost (worker start-up,
    # vector loading, three pipeline launches) that 51.4M pairs would amortize.
    marginal = (large - small) / (cpu_large - cpu_small) if large > small and cpu_large > cpu_small else overall
    hours = PARANMT_PAIRS / (16 * marginal) / 3600
    print(f"\nPer core (pairs per CPU second): {overall:,.0f} overall at {large:,} pairs, {marginal:,.0f} marginal "
          f"(baseline loop: {baseline_rate:,.0f}). 51.4M pairs on 16 busy cores at the marginal rate: "
          f"{hours:.2f} h ({'under' if hours < 1 else 'over'} one hour).")
    print(f"Language id per pair (both sides): {langid_us['langid']:.1f} µs over whole batches, "
          f"{langid_us['langid-py']:,.0f} µs with langid.py one sentence at a time.")

if __name__ == "__main__":
    main()
