#!/usr/bin/env bash
# The GPU machine's one call, played on this CPU machine first (docs/README-backtranslation.md,
# "On a GPU machine without internet"), from the repository root:
#   scripts/rehearse_gpu_machine.sh [OUT [MINUTES [gpu_run options …]]]
# (default: work/rehearsal-DATE 7 --tiny --preset compact: the real call's recipe, at toy length)
# 1. the image: a Python 3.12 venv with what the kit assumes the GPU machine has, at the versions
#    configs/gpu-machine-have.txt gives (torch 2.11.0+cu130, numpy 2.5.2, sentencepiece 0.2.2 …),
#    made once and kept in $XDG_CACHE_HOME/paranmt-kit (~/.cache), remade when that list changes;
# 2. the kit (.kit-gpu, fairseq-fixed's wheel built by the image's Python) and the data
#    (.data-gpu, scripts/pack_gpu_data.sh), as the real call carries them; checks they fit;
# 3. scripts/gpu_machine.sh OUT MINUTES OPTIONS in a copy of what travels (the working tree as git
#    sees it, .kit-gpu, .data-gpu), offline (a network namespace with loopback only), with
#    CUDA_HOME set and the image's python3 first on PATH, as there;
# then prints the install's seconds, the whole call's seconds and the steps of report.md.
# Needs: root (unshare -n), a Python 3.12 ($PYTHON312, python3.12 or pyenv's), this checkout
# installed (paranmt-kit on PATH), the registry (steps 1 and 2), ../shared/data (step 2).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
fail() { echo "rehearse_gpu_machine: $*" >&2; exit 1; }
out=$(realpath -m "${1:-work/rehearsal-$(date +%Y%m%d-%H%M%S)}")
minutes=${2:-7}
shift $(( $# < 2 ? $# : 2 ))
options=("$@")
((${#options[@]})) || options=(--tiny --preset compact)
[[ ! -e $out ]] || [[ -z $(ls -A "$out") ]] || fail "$out is not empty"
[[ $(id -u) -eq 0 ]] || fail "needs root for the network namespace (unshare -n)"
command -v paranmt-kit >/dev/null || fail "paranmt-kit is not on PATH: install this checkout first (README)"
python312=""
for candidate in ${PYTHON312:-} "$(pyenv root 2>/dev/null || echo ~/.pyenv)"/versions/3.12*/bin/python3.12 "$(command -v python3.12 || true)"; do
  # (pyenv's shim is on PATH even where it has no 3.12 to run: try each)
  if [[ -x $candidate ]] && [[ $("$candidate" -c 'import sys; print(sys.version_info[:2] == (3, 12))' 2>/dev/null) == True ]]; then
    python312=$candidate
    break
  fi
done
[[ -n $python312 ]] || fail "no Python 3.12 here: set PYTHON312"
max_mib=62
cache=${XDG_CACHE_HOME:-$HOME/.cache}/paranmt-kit
image=$cache/gpu-image-py3.12
kit_options=(--python 3.12 --have @configs/gpu-machine-have.txt --without ctranslate2)

# The image's requirements: each assumed distribution at the version the list gives, the build
# tools the image has (fairseq-fixed's sdist compiles with them where its wheel fails), and psutil,
# which benchmarks/gpu_run.py imports (it stops what it started) and the GPU machine has.
image_requirements() {
  local name version
  for name in $(cat "$1") setuptools wheel cython psutil; do
    version=$(grep -i -m 1 -E "^${name//[-_.]/[-_.]}==" configs/gpu-machine-have.txt | cut -d= -f3 || true)
    echo "$name${version:+==$version}"
  done | sort -u
}

make_image() {
  echo "rehearse_gpu_machine: making the image's Python 3.12 environment in $image (once; GBs of CUDA wheels)"
  rm -rf "$image"
  "$python312" -m venv "$image"
  "$image/bin/python" -m pip install -q --disable-pip-version-check -r "$1" || fail "could not make the image environment"
  cp "$1" "$image/requirements.txt"
}

started=$SECONDS
kit=.kit-gpu
rm -rf "$kit" "$kit.first"
if [[ ! -f $image/requirements.txt ]]; then
  # What the kit assumes decides the image, and the image builds the kit's wheel: a kit without
  # the wheel first, to read its assumptions.
  paranmt-kit "${kit_options[@]}" --out "$kit.first" >/dev/null || fail "paranmt-kit failed"
  image_requirements "$kit.first/assumed.txt" >"$cache/image-requirements.txt"
  rm -rf "$kit.first"
  make_image "$cache/image-requirements.txt"
fi
paranmt-kit "${kit_options[@]}" --build-with "$image/bin/python" --out "$kit" || fail "paranmt-kit failed"
image_requirements "$kit/assumed.txt" >"$cache/image-requirements.txt"
if ! cmp -s "$cache/image-requirements.txt" "$image/requirements.txt"; then
  make_image "$cache/image-requirements.txt"
  rm -rf "$kit"
  paranmt-kit "${kit_options[@]}" --build-with "$image/bin/python" --out "$kit" || fail "paranmt-kit failed"
fi
scripts/pack_gpu_data.sh >/dev/null
kit_bytes=$(du -sb "$kit" | cut -f1)
data_bytes=$(stat -c %s .data-gpu/data.tar.gz)
mib() { awk -v bytes="$1" 'BEGIN { printf "%.1f", bytes / 1048576 }'; }
echo "rehearse_gpu_machine: kit $(mib "$kit_bytes") MiB + data $(mib "$data_bytes") MiB = $(mib $((kit_bytes + data_bytes))) MiB (at most $max_mib MiB together); prepared in $((SECONDS - started)) s"
(( kit_bytes + data_bytes <= max_mib * 1048576 )) || fail "kit and data exceed $max_mib MiB: they would not travel with the working tree"

# What travels: the files git sees (tracked, and untracked but not ignored), the kit and the data.
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -xf - -C "$tree"
cp -r "$kit" .data-gpu "$tree"
mkdir -p "$out"
cuda_home=${CUDA_HOME:-$(ls -d /usr/local/cuda 2>/dev/null || echo /usr/local/cuda)}
log=$tree/.gpu_machine.log
echo "rehearse_gpu_machine: scripts/gpu_machine.sh $out $minutes ${options[*]} (offline, CUDA_HOME=$cuda_home)"
call_started=$SECONDS
status=0
unshare -n env -i HOME="$HOME" PATH="$image/bin:/usr/local/bin:/usr/bin:/bin" CUDA_HOME="$cuda_home" SCRATCH="$tree/.scratch" \
  bash -c 'ip link set lo up && cd "$1" && shift && scripts/gpu_machine.sh "$@"' _ "$tree" "$out" "$minutes" "${options[@]}" \
  2>&1 | tee "$log" || status=$?
call_seconds=$((SECONDS - call_started))
echo
echo "rehearse_gpu_machine: $(grep -m 1 -o 'installed the kit in [0-9]* s ([^)]*)' "$log" || echo 'the install did not finish')"
echo "rehearse_gpu_machine: the call took $call_seconds s in all (the machine allows 600), exit $status"
echo "rehearse_gpu_machine: the steps of $out/report.md:"
sed -n '/^## Steps/,/^## /p' "$out/report.md" | grep '^|' || echo "(no steps table)"
exit "$status"
