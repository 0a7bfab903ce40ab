"""WMT21 judgments in the layout of ../shared/data/translations/wmt21, made small for a test."""

import gzip


def wmt21_layout(root, direction, systems, references=("A",), lines=1000):
    """../shared/data/translations/wmt21's layout, gzipped: line n of every file says which file and line it is."""
    files = {"sources": [f"src.{direction}"], "references": [f"ref.{r}.en" for r in references], "system-outputs": [f"hyp.{s}.en" for s in systems]}
    for folder, names in files.items():
        (root / folder).mkdir(parents=True, exist_ok=True)
        for name in names:
            with gzip.open(root / folder / f"newstest2021.{direction}-en.{name}.gz", "wt", encoding="utf-8") as handle:
                handle.write("".join(f"{name} {n}\n" for n in range(lines)))
    (root / "humaneval" / "newstest2021-toen").mkdir(parents=True, exist_ok=True)
    return root / "humaneval" / "newstest2021-toen" / f"ad-seg-scores-{direction}-en.csv"
