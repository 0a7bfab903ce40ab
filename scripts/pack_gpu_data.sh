#!/usr/bin/env bash
# Pack what `python -m benchmarks gpu_run` reads of the shared data folder into .data-gpu/data.tar.gz
# (ignored by git), to travel with the working tree to a GPU machine without internet, where
# scripts/gpu_machine.sh unpacks it: csen-more without the two sets corpus/csen_more.py leaves out
# (GNOME strings, Kudela paragraphs) and the newstest2021 files that benchmarks/gpu_run.py names
# (NEWSTEST2021: the test set, its baseline system, its en-cs half).
#   scripts/pack_gpu_data.sh [DATA [ARCHIVE]]   # DATA: ../shared/data, ARCHIVE: .data-gpu/data.tar.gz
set -euo pipefail
data=$(realpath "${1:-${PARANMT_SHARED_DATA:-../shared/data}}")
archive=$(realpath -m "${2:-.data-gpu/data.tar.gz}")
cd "$(dirname "${BASH_SOURCE[0]}")/.."
mkdir -p "$(dirname "$archive")"
# newstest2021's files as benchmarks/gpu_run.py names them (it reads no others of csen/)
mapfile -t newstest2021 < <(python3 -c 'from benchmarks.gpu_run import NEWSTEST2021; print(*NEWSTEST2021.values(), sep="\n")')
((${#newstest2021[@]})) || { echo "pack_gpu_data: could not read benchmarks/gpu_run.py's NEWSTEST2021" >&2; exit 1; }
tar -C "$data" -czf "$archive" \
    --exclude=csen-more/gnome-user-docs --exclude=csen-more/kudela-commoncrawl csen-more "${newstest2021[@]}"
du -h "$archive"
