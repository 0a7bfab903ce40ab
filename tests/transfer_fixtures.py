"""Tiny copies of the Table 8 data layouts (transfer sets, MSRP, SICK), written by the tests."""

from __future__ import annotations

import gzip
from pathlib import Path

from corpus.transfer import CV_FILES, SST2_FILES, TREC_FILES

SICK_HEADER = b"pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n"
MRPC_HEADER = "\ufeffQuality\t#1 ID\t#2 ID\t#1 String\t#2 String\n".encode()


def write_transfer_data(root: Path, sentences_per_class: int = 3) -> tuple[Path, Path, Path]:
    """A complete, tiny copy of the three layouts: (transfer dir, MSRP dir, SICK dir)."""
    transfer, msrp, sick = root / "transfer", root / "msrp", root / "SICK"
    for folder in (transfer, msrp, sick):
        folder.mkdir(parents=True, exist_ok=True)
    for files in CV_FILES.values():
        for index, (file, label) in enumerate(files):
            (transfer / file).write_bytes(b"".join(f"{label} sentence {n} number {index}\n".encode() for n in range(sentences_per_class)))
    for split, file in SST2_FILES.items():
        (transfer / file).write_bytes(b"".join(f"{n % 2} a {split} review {n}\n".encode() for n in range(2 * sentences_per_class)))
    for split, file in TREC_FILES.items():
        (transfer / file).write_bytes(b"".join(f"{coarse}:other what {split} question {n} ?\n".encode()
                                               for n in range(sentences_per_class) for coarse in ("HUM", "LOC", "NUM")))
    rows = b"".join(f"{n % 2}\t{n}\t{n + 1}\tfirst {n}\tsecond {n}\n".encode() for n in range(2 * sentences_per_class))
    (msrp / "msr_paraphrase_train.txt.gz").write_bytes(gzip.compress(MRPC_HEADER + rows))
    (msrp / "msr_paraphrase_test.txt").write_bytes(MRPC_HEADER + rows)
    judgments = ("NEUTRAL", "ENTAILMENT", "CONTRADICTION")
    sick_rows = b"".join(f"{n}\tA man {n}\tA woman {n}\t{1 + n % 4}.{n % 10}\t{judgments[n % 3]}\n".encode() for n in range(4 * sentences_per_class))
    (sick / "SICK_train.txt").write_bytes(SICK_HEADER + sick_rows)
    (sick / "SICK_trial.txt").write_bytes(SICK_HEADER + sick_rows)
    return transfer, msrp, sick
