#!/usr/bin/env python3
"""Match WMT21's to-English direct-assessment segment numbers to lines of newstest2021, per
direction (the derivation of corpus/wmt21_documents.tsv; docs/2026-12-01-real-mt-judgments.md).

    scripts/wmt21_segment_mapping.py REPO [WMT21_DIR] [--write corpus/wmt21_documents.tsv]

REPO: files of the public wmt-conference/wmt21-news-systems repository, in its layout:
humaneval/newstest2021-toen/ad-<xx>en-good-stnd.csv (the judgments by HIT),
txt-ts/references/newstest2021.<xx>-en.ref.A.en (the test set with the test suites), and where
the repository's history has them (commit d59c8c5: is, ja, ru) xml/newstest2021.<xx>-en.all.xml.
WMT21_DIR: ../shared/data/translations/wmt21. Every step uses the texts and the annotation's layout
only, never the scores, until the check at the end:

1. the documents in segment-number order: an annotator saw a whole document of one system in a
   row, so each run of consecutive segment numbers of one system in a HIT is a document;
2. with the XML (document ids): the segment numbers count the documents sorted by id when the
   lengths of step 1 are, in order, those of the id-sorted documents; then every document is matched;
3. without it, the documents in line order: the test set's lines stand in the test-suite file in
   runs broken by test-suite documents, each run cut into documents whose lengths are those of
   step 1, at headline-like lines (no final full stop, quote or colon) where possible; a document
   whose length no other document has is matched to the one of that length.
Then the evidence: chrF of each output against reference A correlates with the z-scores on the
matched documents, not when they are moved by a line or segment numbers are taken for line numbers.
"""

from __future__ import annotations

import argparse
import re
import xml.etree.ElementTree as ElementTree
from collections import Counter
from pathlib import Path

import numpy as np
from sacrebleu.metrics import CHRF

from corpus.csen_more import lines
from corpus.judgments import WMT21_DIRECTIONS, wmt21_adequacy

HEADLINE = re.compile(r'[."“”…:)]\s*$')  # a line ending so is not a headline
SEARCH_STEPS = 2_000_000  # choices tried at most in cutting the runs (cs-en needs 113,318, de-en 62)


def documents_by_segment_number(hits: Path, total: int) -> list[int]:
    """Lengths of the documents in segment-number order (step 1)."""
    runs, previous = set(), None
    for line in lines(hits)[1:]:
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
    return [b - a for a, b in zip(starts, [*starts[1:], total + 1], strict=True)]


def documents_by_id(xml: Path, source: list[str]) -> list[tuple[str, int, int]]:
    """(document id, first line, length) of the test set's documents in line order (the XML also
    holds the test suites: a document is the test set's when its segments are the next lines)."""
    found, at = [], 0
    for document in ElementTree.parse(xml).getroot().iter("doc"):
        segments = [segment.text or "" for segment in document.find("src").iter("seg")]
        if source[at : at + len(segments)] == segments:
            found.append((document.get("id"), at, len(segments)))
            at += len(segments)
    if at != len(source):
        raise SystemExit(f"{xml}: its documents cover {at} of the {len(source)} source lines")
    return found


def matched_by_id(lengths: list[int], by_id: list[tuple[str, int, int]]) -> list[tuple[int, int, int]]:
    """Every document (step 2) when the segment numbers count the id-sorted documents, else none."""
    ordered = sorted(by_id)
    if [length for _, _, length in ordered] != lengths:
        print("  the segment-number documents are not the id-sorted ones: none matched this way")
        return []
    print(f"  the {len(lengths)} segment-number documents have, in order, the lengths of the id-sorted documents")
    matched, sid = [], 1
    for _, first_line, length in ordered:
        matched.append((sid, sid + length - 1, first_line))
        sid += length
    return matched


def documents_by_line(reference: list[str], suite_reference: list[str], source: list[str], lengths: list[int]) -> list[tuple[int, int]]:
    """(first line, length) of the documents in line order (step 3): each run cut into at most
    the wanted lengths, with as few cuts at lines that are not headline-like as possible; [] when
    no cut gives the wanted lengths within SEARCH_STEPS."""
    position = {text: index for index, text in enumerate(suite_reference)}
    where = [position[text] for text in reference]
    starts = [0, *(i for i in range(1, len(where)) if where[i] != where[i - 1] + 1)]
    blocks = list(zip(starts, [*starts[1:], len(reference)], strict=True))
    headline = {i for i, text in enumerate(source) if not HEADLINE.search(text)}
    good = headline | {i - 1 for i in headline}
    wanted = Counter(lengths)
    spare = len(lengths) - len(blocks)  # cuts inside runs, in all
    print(f"  {len(blocks)} runs in the test-suite file, {spare} cuts to place, {len(headline)} headline-like lines")

    def cuts(first: int, end: int) -> list[tuple[int, tuple[int, ...]]]:
        found = []

        def walk(at: int, taken: tuple[int, ...], cost: int) -> None:
            if at == end:
                found.append((cost, taken))
                return
            if len(taken) > spare:
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
    steps = [0]

    def choose(k: int, left: Counter, cost: int, chosen: dict) -> None:
        steps[0] += 1
        if cost >= best[1] or steps[0] > SEARCH_STEPS:
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
    print(f"  {steps[0]:,} choices tried")
    if best[0] is None or steps[0] > SEARCH_STEPS:
        return []
    documents = []
    for index, (first, _) in enumerate(blocks):
        for length in best[0][index]:
            documents.append((first, length))
            first += length
    return documents


def matched_by_length(lengths: list[int], by_line: list[tuple[int, int]]) -> list[tuple[int, int, int]]:
    """The documents whose length no other document has (step 3)."""
    if sorted(length for _, length in by_line) != sorted(lengths):
        print("  the runs were not cut into the segment-number documents' lengths: none matched")
        return []
    counts = Counter(lengths)
    first_sids = np.cumsum([1, *lengths[:-1]])
    matched = [(int(sid), int(sid) + length - 1, next(line for line, n in by_line if n == length))
               for sid, length in zip(first_sids, lengths, strict=True) if counts[length] == 1]
    print(f"  {len(lengths)} documents cut in line order; {len(matched)} have a length no other has")
    return matched


def evidence(wmt21: Path, direction: str, matched: list[tuple[int, int, int]], total: int) -> None:
    """Pearson of chrF (output against reference A) with the z-score: on the matched documents,
    on them moved by a line either way, and with segment numbers taken for line numbers."""
    chrf = CHRF()
    candidates = {
        "matched": matched,
        "moved a line down": [(a, b, line + 1) for a, b, line in matched if line + 1 + b - a < total],
        "moved a line up": [(a, b, line - 1) for a, b, line in matched if line > 0],
        "segment number - 1 as the line": [(1, total, 0)],
    }
    for name, documents in candidates.items():
        (judged,) = wmt21_adequacy(wmt21, direction, tuple(documents))
        quality = [chrf.sentence_score(output, [reference]).score for output, reference in zip(judged.translation, judged.reference, strict=True)]
        print(f"  {name}: {len(judged)} judgments, Pearson of chrF with the z-score {np.corrcoef(quality, judged.judgment)[0, 1]:.3f}")


def main(repo: Path, wmt21: Path, table: Path | None) -> None:
    rows = ["direction\tfirst_segment\tlast_segment\tfirst_line\tmatched_by"]
    for direction in WMT21_DIRECTIONS:
        stem = f"newstest2021.{direction}-en"
        hits = repo / "humaneval" / "newstest2021-toen" / f"ad-{direction}en-good-stnd.csv"
        print(f"{direction}-en:")
        if not hits.is_file():
            print(f"  no {hits.name}: the documents in segment-number order are not known; nothing matched")
            continue
        source = lines(next(wmt21.glob(f"sources/{stem}.src.{direction}*")))
        reference = lines(next(wmt21.glob(f"references/{stem}.ref.A.en*")))
        lengths = documents_by_segment_number(hits, len(source))
        print(f"  {len(lengths)} documents in segment-number order")
        xml = repo / "xml" / f"{stem}.all.xml"
        how = "document ids"
        matched = matched_by_id(lengths, documents_by_id(xml, source)) if xml.is_file() else []
        if not matched:
            how = "unique length"
            suite = lines(repo / "txt-ts" / "references" / f"{stem}.ref.A.en")
            matched = matched_by_length(lengths, documents_by_line(reference, suite, source, lengths))
        if matched:
            print(f"  matched by {how}: {len(matched)} documents, {sum(b - a + 1 for a, b, _ in matched)} of {len(source)} lines")
            evidence(wmt21, direction, matched, len(source))
            rows += [f"{direction}\t{a}\t{b}\t{line}\t{how}" for a, b, line in sorted(matched)]
    if table:
        table.write_text("\n".join(rows) + "\n", encoding="utf-8")
        print(f"wrote {table}: {len(rows) - 1} documents")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("repo", type=Path, help="files of wmt-conference/wmt21-news-systems, in its layout")
    parser.add_argument("wmt21", type=Path, nargs="?", default=Path("../shared/data/translations/wmt21"), help="the test sets and judgments")
    parser.add_argument("--write", type=Path, help="write the matched documents to this table (corpus/wmt21_documents.tsv)")
    options = parser.parse_args()
    main(options.repo, options.wmt21, options.write)
