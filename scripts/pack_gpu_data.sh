#!/usr/bin/env bash
# Pack what `python -m benchmarks gpu_run` reads of the shared data folder into .data-gpu/data.tar.gz
# (ignored by git), to travel with the working tree to a GPU machine without internet, where
# scripts/gpu_machine.sh unpacks it: csen-more without the two sets corpus/csen_more.py leaves out
# (GNOME strings, Kudela paragraphs) and newstest2021 (held out: the cs-en sources, references A
# and B, the CUNI system's output; the en-cs Czech reference A, test sentences for the speed step).
#   scripts/pack_gpu_data.sh [DATA]        # DATA: ../shared/data by default
set -euo pipefail
data=${1:-${PARANMT_SHARED_DATA:-../shared/data}}
mkdir -p .data-gpu
tar -C "$data" -czf .data-gpu/data.tar.gz \
    --exclude=csen-more/gnome-user-docs --exclude=csen-more/kudela-commoncrawl csen-more \
    csen/wmt21/newstest2021.cs-en.src.cs csen/wmt21/newstest2021.cs-en.ref.A.en csen/wmt21/newstest2021.cs-en.ref.B.en \
    csen/wmt21/newstest2021.cs-en.hyp.CUNI-Transformer2018.en csen/wmt21/newstest2021.en-cs.ref.A.cs
du -h .data-gpu/data.tar.gz
