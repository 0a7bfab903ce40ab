#!/usr/bin/env bash
# The one command for a GPU machine without internet, run from the repository root:
#   scripts/gpu_machine.sh OUT [MINUTES [gpu_run options …]]
# 1. installs the offline kit (.kit-gpu/, made by paranmt-kit; KIT=none skips it where the
#    packages are installed already) into /tmp/site with `.kit-gpu/install.sh --target /tmp/site`;
# 2. unpacks .data-gpu/data.tar.gz (made by scripts/pack_gpu_data.sh) into /tmp/data;
# 3. runs python -m benchmarks gpu_run --data /tmp/data --minutes MINUTES (7) --out OUT.
# OUT then holds what comes back: report.md, the model, the corpus (benchmarks/gpu_run.py).
set -euo pipefail
out=${1:?usage: scripts/gpu_machine.sh OUT [MINUTES [gpu_run options ...]]}
minutes=${2:-7}
shift $(( $# < 2 ? $# : 2 ))
kit=${KIT:-.kit-gpu}
site=/tmp/site
data=/tmp/data
started=$SECONDS
if [ "$kit" != none ]; then
    "$kit/install.sh" --target "$site"
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"
fi
mkdir -p "$data"
tar -xzf .data-gpu/data.tar.gz -C "$data"
echo "gpu_machine: kit installed and data unpacked in $(( SECONDS - started )) s"
python -m benchmarks gpu_run --data "$data" --minutes "$minutes" --out "$out" "$@"
echo "gpu_machine: $(( SECONDS - started )) s in all"
