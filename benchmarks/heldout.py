"""The project's own translator on the four test sets its training never saw: BLEU and chrF, and
translations to read.

The sets (corpus.csen_more holds them out of csen-more's training pairs): newstest2021 cs→en
(news; the eight WMT21 systems' outputs beside it, CUNI-Transformer2018 among them), Multi30k test
2016 and 2018 (image captions, csen-more's largest domain) and FLORES-200 devtest (general text).
Each is an ``EvaluateTranslator`` run (sacrebleu's defaults, reference A on newstest2021), once per
``--compute-types`` (CTranslate2's stored float32 and int8 on the CPU by default: the back-translation
may use int8 where it keeps BLEU within 0.5). The model is whatever the luigi configuration gives
EvaluateTranslator: run it with the configuration that trained it, e.g.

    LUIGI_CONFIG_PATH=configs/csen-more.cfg python -m benchmarks heldout

(which trains the translator first if it is not trained; ``--translator FOLDER`` evaluates a
model folder instead, e.g. a TrainTranslator output). Prints a Markdown table, then
``--shown`` translations of each set (source, reference, this model), chosen with a fixed seed.
"""

from __future__ import annotations

import argparse
import os
import random
from pathlib import Path

import luigi

from benchmarks.common import machine, markdown_table
from corpus.csen_more import HELD_OUT, HELD_OUT_FOLDER
from corpus.outputs import read_manifest
from models.nmt import evaluate

SHARED = Path(os.environ.get("PARANMT_SHARED_DATA", "../shared/data"))
WMT21 = SHARED / "csen" / "wmt21"
NEWSTEST2021 = "newstest2021"


def test_sets(prepared: Path) -> dict[str, tuple[Path, Path]]:
    """(Czech source, English reference) of each held-out set, newstest2021 first."""
    sets = {NEWSTEST2021: (WMT21 / "newstest2021.cs-en.src.cs", WMT21 / "newstest2021.cs-en.ref.A.en")}
    for name in HELD_OUT:
        sets[name] = (prepared / HELD_OUT_FOLDER / f"{name}.cs", prepared / HELD_OUT_FOLDER / f"{name}.en")
    return sets


def wmt21_systems() -> dict[str, dict]:
    """The scores of WMT21's cs→en primary systems on newstest2021 against reference A."""
    reference = evaluate.read_lines(WMT21 / "newstest2021.cs-en.ref.A.en")
    return {path.name.split(".hyp.")[1].removesuffix(".en"): evaluate.corpus_scores(evaluate.read_lines(path), reference)
            for path in sorted(WMT21.glob("newstest2021.cs-en.hyp.*.en"))}


def evaluated(source: Path, reference: Path, compute_type: str, beam: int, translator: str) -> tuple[dict, list[str]]:
    """EvaluateTranslator's scores and hypotheses for one set (built if missing)."""
    from workflows.nmt import EvaluateTranslator

    task = EvaluateTranslator(source=str(source.resolve()), reference=str(reference.resolve()), baseline="",
                              compute_type=compute_type, beam_size=beam, translator=translator)
    if not luigi.build([task], local_scheduler=True, log_level="WARNING"):
        raise SystemExit(f"EvaluateTranslator failed on {source}")
    scores = next(iter(read_manifest(task.output_dir)["scores"].values()))
    return scores, evaluate.read_lines(task.output_dir / "hypotheses.en")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepared", type=Path, default=Path("work/csen-more"), help="scripts/prepare_csen_more.py's output folder")
    parser.add_argument("--compute-types", default="default,int8", help="CTranslate2 compute types, comma-separated (default: the stored float32)")
    parser.add_argument("--beam", type=int, default=12)
    parser.add_argument("--shown", type=int, default=20, help="translations of each set to print")
    parser.add_argument("--translator", default="",
                        help="a translator's folder (e.g. a TrainTranslator output); default: the configuration's own model")
    args = parser.parse_args()
    sets = test_sets(args.prepared)
    missing = [str(path) for pair in sets.values() for path in pair if not path.exists()]
    if missing:
        raise SystemExit(f"heldout: missing {missing[0]} (run scripts/prepare_csen_more.py; newstest2021 is in ../shared/data)")
    compute_types = args.compute_types.split(",")
    rows, hypotheses = [], {}
    for name, (source, reference) in sets.items():
        row = [name, len(evaluate.read_lines(source))]
        for compute_type in compute_types:
            scores, hypotheses[name, compute_type] = evaluated(source, reference, compute_type, args.beam,
                                                               str(Path(args.translator).resolve()) if args.translator else "")
            row += [scores["bleu"], scores["chrf"]]
        rows.append(row)
    headers = ["test set", "sentences", *(f"{what} ({kind})" for kind in compute_types for what in ("BLEU", "chrF"))]
    print(f"# The translator on the held-out sets, beam {args.beam} ({machine()})\n")
    print(markdown_table(headers, rows))
    print(f"\n## WMT21's systems on {NEWSTEST2021} (reference A)\n")
    print(markdown_table(["system", "BLEU", "chrF"], [[name, s["bleu"], s["chrf"]] for name, s in wmt21_systems().items()]))
    for name, (source, reference) in sets.items():
        sources, references = evaluate.read_lines(source), evaluate.read_lines(reference)
        shown = sorted(random.Random(0).sample(range(len(sources)), min(args.shown, len(sources))))
        print(f"\n## {name}: {len(shown)} translations ({compute_types[0]})\n")
        for line in shown:
            print(f"- line {line + 1}\n  - cs: {sources[line]}\n  - ref: {references[line]}\n  - mt: {hypotheses[name, compute_types[0]][line]}")


if __name__ == "__main__":
    main()
