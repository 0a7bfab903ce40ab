#!/usr/bin/env python3
"""Match WMT21 cs→en direct-assessment segment numbers to lines of newstest2021 (the derivation of
corpus.judgments.WMT21_DOCUMENTS; docs/2026-11-27-scores-vs-judgments.md).

    scripts/wmt21_segment_mapping.py HITS TS_REF_A [WMT21_DIR]

HITS: humaneval/newstest2021-toen/ad-csen-good-stnd.csv and TS_REF_A:
txt-ts/references/newstest2021.cs-en.ref.A.en, both from the public wmt-conference/wmt21-news-systems
repository; WMT21_DIR: ../shared/data/csen/wmt21. Every step uses the texts and the annotation's
layout only, never the scores, until the check at the end:

1. the documents in segment-number order: an annotator saw a whole document of one system in a
   row, so each run of consecutive segment numbers of one system in a HIT is a document (62);
2. the documents in line order: the test set's lines stand in the test-suite file in runs broken by
   test-suite documents, and each run is cut into documents whose lengths are those of step 1,
   at headline-like lines (a Czech line without a final full stop, quote or colon) where possible;
3. a document whose length no other document has is matched to the one of that length.
Then the evidence: chrF of each output against reference A correlates with the z-scores on the
matched documents, not when segment numbers are taken for line numbers.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
from sacrebleu.metrics import CHRF

HEADLINE = re.compile(r'[."“”…:)]\s*$')  # a line ending so is not a headline


def read(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def documents_by_segment_number(hits: Path) -> list[int]:
    """Lengths of the documents in segment-number order (step 1)."""
    runs, previous = set(), None
    for line in read(hits)[1:]:
        fields = line.split("\t")
        if fields[8] != "SYSTEM":
            continue
        key, sid = (fields[0], fields[1], fields[6]), int(fields[9])
        if previous and previous[0] == key and sid == previous[2] + 1:
            previous = (key, previous[1], sid)
            continue
        if previous:
            runs.add((previous[1], previous[2]))
        previous = (key, sid, sid)
    runs.add((previous[1], previous[2]))
    starts = sorted({first for first, _ in runs})
    return [b - a for a, b in zip(starts, [*starts[1:], 1001], strict=True)]


def documents_by_line(reference: list[str], suite_reference: list[str], source: list[str], lengths: list[int]) -> list[tuple[int, int]]:
    """(first line, length) of the documents in line order (step 2): each run cut into documents
    of the wanted lengths, with as few cuts at lines that are not headline-like as possible."""
    position = {text: index for index, text in enumerate(suite_reference)}
    where = [position[text] for text in reference]
    starts = [0, *(i for i in range(1, len(where)) if where[i] != where[i - 1] + 1)]
    blocks = list(zip(starts, [*starts[1:], len(reference)], strict=True))
    headline = {i for i, text in enumerate(source) if not HEADLINE.search(text)}
    good = headline | {i - 1 for i in headline}
    wanted = Counter(lengths)

    def cuts(first: int, end: int) -> list[tuple[int, tuple[int, ...]]]:
        found = []

        def walk(at: int, taken: tuple[int, ...], cost: int) -> None:
            if at == end:
                found.append((cost, taken))
                return
            for length in wanted:
                step = at + length
                extra = cost + (step != end and step not in good)
                if step <= end and extra <= 2:
                    walk(step, (*taken, length), extra)

        walk(first, (), 0)
        best = min((cost for cost, _ in found), default=0)
        return sorted((cost, taken) for cost, taken in found if cost <= best + 1)  # the cheapest first: the search below prunes the rest

    options = [cuts(first, end) for first, end in blocks]
    order = sorted(range(len(blocks)), key=lambda i: len(options[i]))
    best: list = [None, float("inf")]

    def choose(k: int, left: Counter, cost: int, chosen: dict) -> None:
        if cost >= best[1]:
            return
        if k == len(order):
            best[:] = [dict(chosen), cost]
            return
        for extra, taken in options[order[k]]:
            need = Counter(taken)
            if all(left[length] >= count for length, count in need.items()):
                chosen[order[k]] = taken
                choose(k + 1, left - need, cost + extra, chosen)
                del chosen[order[k]]

    choose(0, wanted, 0, {})
    documents = []
    for index, (first, _) in enumerate(blocks):
        for length in best[0][index]:
            documents.append((first, length))
            first += length
    return documents


def main(hits: Path, suite_reference: Path, wmt21: Path) -> None:
    lengths = documents_by_segment_number(hits)
    reference, source = read(wmt21 / "newstest2021.cs-en.ref.A.en"), read(wmt21 / "newstest2021.cs-en.src.cs")
    by_line = documents_by_line(reference, read(suite_reference), source, lengths)
    assert sorted(length for _, length in by_line) == sorted(lengths), "the line-order documents do not have the segment-order lengths"
    counts = Counter(lengths)
    first_sids = np.cumsum([1, *lengths[:-1]])
    matched = [(int(sid), int(sid) + length - 1, next(line for line, n in by_line if n == length))
               for sid, length in zip(first_sids, lengths, strict=True) if counts[length] == 1]
    print(f"{len(lengths)} documents; matched by a length no other document has: {tuple(matched)}")

    chrf, outputs = CHRF(), {}
    rows = [line.split() for line in read(wmt21 / "ad-seg-scores-cs-en.csv")[1:]]
    for system in {row[0].rsplit(".", 1)[0] for row in rows}:
        outputs[system] = read(wmt21 / ("newstest2021.cs-en.ref.B.en" if system == "HUMAN" else f"newstest2021.cs-en.hyp.{system}.en"))
    line_of = {sid: line + sid - first for first, last, line in matched for sid in range(first, last + 1)}
    for name, mapping in (("segment number - 1 as the line", {sid: sid - 1 for sid in range(1, 1001)}), ("the matched documents", line_of)):
        kept = [row for row in rows if int(row[1]) in mapping]
        quality = [chrf.sentence_score(outputs[row[0].rsplit(".", 1)[0]][mapping[int(row[1])]], [reference[mapping[int(row[1])]]]).score for row in kept]
        print(f"{name}: {len(kept)} judgments, Pearson of chrF with the z-score {np.corrcoef(quality, [float(row[3]) for row in kept])[0, 1]:.3f}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3] if len(sys.argv) > 3 else "../shared/data/csen/wmt21"))
