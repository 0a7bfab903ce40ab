"""Gather ../shared/data/csen-more into line-aligned ``<set>.cs`` / ``<set>.en`` files for IngestBitext.

``scripts/prepare_csen_more.py`` runs :func:`prepare` from the command line, then
``LUIGI_CONFIG_PATH=configs/csen-more.cfg luigi --module workflows BuildParaNMT --local-scheduler``
(the config reads ``work/csen-more/*.cs``); ``python -m benchmarks gpu_run`` calls it too.

newstest2021 is held out for evaluation: any pair whose Czech side is a newstest2021 source
sentence, or whose English side is one of its references, is dropped. Exact duplicate pairs
(the TED sets overlap) are dropped too. ParaCrawl pairs are kept only where the human label is
``V`` (valid translation). Left out: the GNOME help strings (markup), the Kudela CommonCrawl
paragraphs (lowercased and tokenized). The written files live outside the repository (``work/``
is ignored by git); nothing is copied into it.
"""

from __future__ import annotations

import gzip
from collections.abc import Iterator
from pathlib import Path

from corpus.errors import InputError
from corpus.readers import split_lines

Pairs = Iterator[tuple[str, str]]


def lines(path: Path) -> list[str]:
    """A text file's lines (gzip by its suffix), each without its end (corpus.readers.split_lines);
    a line that is not UTF-8 is an InputError naming it, never text altered in silence."""
    data = gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
    text = []
    for number, line in enumerate(split_lines(data), start=1):
        try:
            text.append(line.decode("utf-8"))
        except UnicodeDecodeError as error:
            raise InputError(f"{path}:{number}: not UTF-8 (byte {error.start} of the line)") from None
    return text


def aligned(cs: Path, en: Path) -> Pairs:
    yield from zip(lines(cs), lines(en), strict=True)


def tab_separated(path: Path, en_column: int, cs_column: int, label_column: int | None = None) -> Pairs:
    for line in lines(path):
        fields = line.split("\t")
        if len(fields) <= max(en_column, cs_column, label_column or 0):
            continue
        if label_column is None or fields[label_column].strip() == "V":
            yield fields[cs_column], fields[en_column]


def conllu_texts(path: Path) -> dict[str, str]:
    texts, sent_id = {}, None
    for line in lines(path):
        if line.startswith("# sent_id = "):
            sent_id = line.split("=", 1)[1].strip()
        elif line.startswith("# text = ") and sent_id:
            texts[sent_id] = line.split("=", 1)[1].strip()
    return texts


def ud_pud(folder: Path) -> Pairs:
    cs, en = conllu_texts(folder / "cs_pud-ud-test.conllu.gz"), conllu_texts(folder / "en_pud-ud-test.conllu.gz")
    yield from ((cs[key], en[key]) for key in sorted(cs.keys() & en.keys()))


def sets(more: Path) -> dict[str, Pairs]:
    """Every usable set in csen-more, by output name."""
    opus = more / "OPUS-MT-testsets"
    found: dict[str, Pairs] = {}
    for cs in sorted(opus.glob("*.cs")):
        found[cs.stem] = aligned(cs, cs.with_suffix(".en"))
    found["tatoeba-test"] = aligned(opus / "tatoeba-test-v2021-08-07.ces", opus / "tatoeba-test-v2021-08-07.eng")
    found["flores200-devtest"] = aligned(opus / "ces_Latn.devtest", opus / "eng_Latn.devtest")
    found["ntrex"] = aligned(opus / "ntrex" / "newstest2019-ref.ces.txt", opus / "ntrex" / "newstest2019-src.eng.txt")
    for split in ("train", "val", "test_2016_flickr", "test_2018_flickr"):
        found[f"multi30k-{split}"] = aligned(more / "multi30k" / f"{split}.cs.gz", more / "multi30k" / f"{split}.en.gz")
    for path in sorted((more / "paracrawl-multilingual-ted").glob("*/multi-ted-*.en-cs")):
        found[f"ted-{path.parent.name}-{path.stem}"] = tab_separated(path, 0, 1)
    for path in sorted((more / "paracrawl-human-evaluations").glob("*/sorted.en-cs")):
        label = 7 if "v3" in path.parent.name else 5
        found[f"paracrawl-{path.parent.name}"] = tab_separated(path, 2, 3, label)
    wmt23, wmt24 = more / "wmt23-news-systems", more / "wmt24-news-systems"
    found["wmt23-general"] = aligned(wmt23 / "generaltest2023.en-cs.ref.refA.cs", wmt23 / "generaltest2023.en-cs.src.en")
    found["wmt24-general"] = aligned(wmt24 / "wmttest2024.en-cs.refA.cs.txt", wmt24 / "wmttest2024.en-cs.src.en.txt")
    found["ud-pud"] = ud_pud(more / "ud-pud")
    return found


def held_out(wmt21: Path) -> tuple[set[str], set[str]]:
    """newstest2021's Czech sources and English references."""
    cs = {line.strip() for line in lines(wmt21 / "newstest2021.cs-en.src.cs")}
    en = {line.strip() for ref in ("A", "B") for line in lines(wmt21 / f"newstest2021.cs-en.ref.{ref}.en")}
    return cs, en


def prepare(data: Path, output: Path, report=print) -> dict[str, int]:
    """Write every usable csen-more set of ``data`` (the shared data folder) as ``output/<set>.cs``
    and ``.en``, newstest2021 overlaps and duplicates dropped; ``report`` gets one line per set.
    Returns the counts: ``pairs`` kept, ``newstest2021_overlaps`` and ``duplicates`` dropped."""
    test_cs, test_en = held_out(data / "csen" / "wmt21")
    output.mkdir(parents=True, exist_ok=True)
    seen: set[tuple[str, str]] = set()
    total = dropped_test = dropped_duplicate = 0
    for name, pairs in sets(data / "csen-more").items():
        kept = []
        for cs, en in pairs:
            cs, en = cs.strip(), en.strip()
            if cs in test_cs or en in test_en:
                dropped_test += 1
            elif (cs, en) in seen:
                dropped_duplicate += 1
            else:
                seen.add((cs, en))
                kept.append((cs, en))
        (output / f"{name}.cs").write_text("".join(cs + "\n" for cs, _ in kept), encoding="utf-8")
        (output / f"{name}.en").write_text("".join(en + "\n" for _, en in kept), encoding="utf-8")
        total += len(kept)
        report(f"{name:40s} {len(kept):7d}")
    return {"pairs": total, "newstest2021_overlaps": dropped_test, "duplicates": dropped_duplicate}
