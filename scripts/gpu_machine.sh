#!/usr/bin/env bash
# The one command for a GPU machine without internet, run from the repository root:
#   scripts/gpu_machine.sh OUT [MINUTES [gpu_run options …]]
# MINUTES (9.5 by default) is the whole call's budget, counted from this script's start, install
# and unpacking included: the machine kills a command at 10 minutes, and what it finished must be
# in OUT by then.
# 1. installs the offline kit (.kit-gpu/, made by paranmt-kit; KIT=none skips it where the
#    packages are installed already) into $SCRATCH/site with `.kit-gpu/install.sh --target`;
# 2. unpacks .data-gpu/data.tar.gz (made by scripts/pack_gpu_data.sh; DATA_PACK names another)
#    into $SCRATCH/data;
# 3. runs python -m benchmarks gpu_run --data $SCRATCH/data with what is left of the budget
#    (its steps' shares scale to it), under `timeout` as a last resort.
# OUT then holds what comes back: report.md, written as each step starts and ends, with each
# step's status (done, failed and why, stopped at the budget's end, not started), the model and
# the corpus as far as the run got (benchmarks/gpu_run.py). SCRATCH is /tmp by default.
set -euo pipefail
started=$(date +%s)
out=${1:?usage: scripts/gpu_machine.sh OUT [MINUTES [gpu_run options ...]]}
minutes=${2:-9.5}
shift $(( $# < 2 ? $# : 2 ))
kit=${KIT:-.kit-gpu}
data_pack=${DATA_PACK:-.data-gpu/data.tar.gz}
scratch=${SCRATCH:-/tmp}
site=$scratch/site
data=$scratch/data
budget=$(python3 -c "import sys; print(int(float(sys.argv[1]) * 60))" "$minutes")

# A failure before gpu_run's first step still leaves a report.md that says where and why.
stopped_early() {
    mkdir -p "$out"
    printf '# GPU run\n\nstopped %s, %s s after the start: %s\n' "$1" "$(( $(date +%s) - started ))" "$2" >>"$out/report.md"
    echo "gpu_machine: $2" >&2
}

if [ "$kit" != none ]; then
    installed=$(bash "$kit/install.sh" --target "$site" 2>&1) || { stopped_early "before gpu_run" "$(tail -n 1 <<<"$installed")"; exit 1; }
    echo "$installed"
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}" PATH="$site/bin:$PATH"
fi
mkdir -p "$data"
tar -xzf "$data_pack" -C "$data" || { stopped_early "before gpu_run" "could not unpack $data_pack"; exit 1; }
echo "gpu_machine: kit installed and data unpacked in $(( $(date +%s) - started )) s"
left=$(( started + budget - $(date +%s) ))
status=0
errors=$scratch/gpu_run.stderr
timeout -k 5 "$(( left > 3 ? left - 3 : 1 ))" \
    python3 -m benchmarks gpu_run --data "$data" --minutes "$minutes" --budget-from "$started" --out "$out" "$@" \
    2> >(tee "$errors" >&2) || status=$?
if [ "$status" -ne 0 ] && [ ! -f "$out/report.md" ]; then
    stopped_early "before gpu_run's first step (exit $status)" "$(grep -v '^\s*$' "$errors" | tail -n 1)"
fi
if [ "$status" -eq 124 ] || [ "$status" -eq 137 ]; then
    printf '\n**gpu_machine.sh stopped gpu_run at the budget'"'"'s end (%s s; exit %s): the steps marked running did not finish.**\n' \
        "$budget" "$status" >>"$out/report.md"
fi
echo "gpu_machine: $(( $(date +%s) - started )) s in all (budget $budget s), exit $status"
exit "$status"
