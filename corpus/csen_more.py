"""Gather ../shared/data/csen-more into line-aligned ``<set>.cs`` / ``<set>.en`` files for IngestBitext.

``scripts/prepare_csen_more.py`` runs :func:`prepare` from the command line, then
``LUIGI_CONFIG_PATH=configs/csen-more.cfg luigi --module workflows BuildParaNMT --local-scheduler``
(the config reads ``work/csen-more/*.cs``); ``python -m benchmarks gpu_run`` calls it too.

Four test sets are held out for evaluating the translator trained on the rest (HELD_OUT): newstest2021
(news), Multi30k test 2016 and 2018 (captions, the corpus's largest domain) and FLORES-200 devtest
(general text). The last three are written to ``<output>/held-out/`` (newstest2021 stays in the
shared data); any pair whose Czech side is a held-out source sentence, or whose English side one of
their references, is dropped from the training sets. Exact duplicate pairs
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


# The sets of csen-more held out of training and written to <output>/held-out/ (newstest2021,
# the fourth held-out set, is not part of csen-more).
HELD_OUT = ("multi30k-test_2016_flickr", "multi30k-test_2018_flickr", "flores200-devtest")
HELD_OUT_FOLDER = "held-out"


def held_out(wmt21: Path) -> tuple[set[str], set[str]]:
    """newstest2021's Czech sources and English references."""
    cs = {line.strip() for line in lines(wmt21 / "newstest2021.cs-en.src.cs")}
    en = {line.strip() for ref in ("A", "B") for line in lines(wmt21 / f"newstest2021.cs-en.ref.{ref}.en")}
    return cs, en


def write_pairs(pairs: list[tuple[str, str]], output: Path, name: str) -> None:
    (output / f"{name}.cs").write_text("".join(cs + "\n" for cs, _ in pairs), encoding="utf-8")
    (output / f"{name}.en").write_text("".join(en + "\n" for _, en in pairs), encoding="utf-8")


def prepare(data: Path, output: Path, report=print) -> dict[str, int]:
    """Write every usable csen-more set of ``data`` (the shared data folder) as ``output/<set>.cs``
    and ``.en``, held-out overlaps and duplicates dropped, and the held-out sets (HELD_OUT) whole as
    ``output/held-out/<set>.cs`` and ``.en``; ``report`` gets one line per set. Returns the counts:
    ``pairs`` kept, ``held_out_overlaps`` and ``duplicates`` dropped, ``held_out`` pairs written."""
    test_cs, test_en = held_out(data / "csen" / "wmt21")
    every_set = sets(data / "csen-more")
    (output / HELD_OUT_FOLDER).mkdir(parents=True, exist_ok=True)
    held_out_pairs = 0
    for name in HELD_OUT:
        pairs = [(cs.strip(), en.strip()) for cs, en in every_set.pop(name)]
        write_pairs(pairs, output / HELD_OUT_FOLDER, name)
        test_cs.update(cs for cs, _ in pairs)
        test_en.update(en for _, en in pairs)
        held_out_pairs += len(pairs)
        report(f"{HELD_OUT_FOLDER + '/' + name:40s} {len(pairs):7d}  (held out)")
    seen: set[tuple[str, str]] = set()
    total = dropped_test = dropped_duplicate = 0
    for name, pairs in every_set.items():
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
        write_pairs(kept, output, name)
        total += len(kept)
        report(f"{name:40s} {len(kept):7d}")
    return {"pairs": total, "held_out_overlaps": dropped_test, "duplicates": dropped_duplicate, "held_out": held_out_pairs}
