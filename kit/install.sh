#!/usr/bin/env bash
# Installs the paranmt kit in this folder without a network (paranmt-kit wrote both), then checks
# that the package imports. Usage: install.sh --venv PATH | --target PATH
#   --venv PATH    a new venv that also sees the packages of $PYTHON (default python3): torch etc.
#   --target PATH  a folder for PYTHONPATH, used with $PYTHON itself
# Every distribution goes in with --no-deps: paranmt-kit resolved the closure for this machine,
# and the packages it has keep their versions (kit.txt says what the kit assumes of them).
set -euo pipefail
shopt -s nullglob

usage="usage: install.sh --venv PATH | --target PATH   (PYTHON=python3: the interpreter that has torch)"
fail() { echo "install.sh: $*" >&2; exit 1; }
kit=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=${PYTHON:-python3}
mode=""
where=""
while (($#)); do
  case $1 in
    --venv|--target) [[ $# -ge 2 ]] || fail "$usage"; mode=${1#--}; where=$2; shift 2 ;;
    *) fail "$usage" ;;
  esac
done
[[ -n $mode ]] || fail "$usage"
command -v "$python" >/dev/null || fail "no $python here (set PYTHON to the interpreter that has torch)"
"$python" -m pip --version >/dev/null 2>&1 || fail "$python has no pip (set PYTHON to the interpreter that has torch and pip)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
start=$SECONDS

pip_target=()
if [[ $mode == venv ]]; then
  [[ ! -e $where ]] || fail "--venv $where exists already (a new venv is made there)"
  "$python" -m venv --without-pip "$where" >"$log" 2>&1 || fail "$python -m venv $where: $(tail -n 1 "$log")"
  # Like --system-site-packages, but also when $python is itself a venv (/opt/torch/.venv): the
  # new venv sees $python's packages after its own, so the kit's sentencepiece wins over theirs;
  # $python's pip among them installs into the new venv (no ensurepip needed).
  parent=$("$python" -c 'import site; print(site.getsitepackages())')
  own=$("$where/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  echo "import site; list(map(site.addsitedir, $parent))" >"$own/_paranmt_kit_parent.pth"
  python=$where/bin/python
else
  pip_target=(--target "$where")
  export PYTHONPATH="$where${PYTHONPATH:+:$PYTHONPATH}"
fi

distributions=("$kit"/*.whl "$kit"/*.tar.gz)
# fairseq-fixed's sdist compiles its C extensions against this machine's torch: CUDA_HOME unset
# (its setup.py would build CUDA extensions it has no sources for), no build isolation (torch,
# numpy, cython and setuptools are this machine's).
env -u CUDA_HOME "$python" -m pip install --no-index --find-links "$kit" --no-deps --ignore-installed --no-build-isolation \
  --disable-pip-version-check "${pip_target[@]}" "${distributions[@]}" >"$log" 2>&1 \
  || fail "pip install: $(grep '^ERROR' "$log" | tail -n 1 || tail -n 1 "$log")"

modules=apache_beam,luigi,fairseq,sentencepiece,sacremoses,langid,workflows
[[ -z $(echo "$kit"/ctranslate2-*.whl) ]] || modules+=,ctranslate2
"$python" -c "import $modules" >"$log" 2>&1 \
  || fail "installed, but it does not import ($modules): $(tail -n 1 "$log")"

echo "installed the kit in $((SECONDS - start)) s; $modules import"
if [[ $mode == venv ]]; then
  echo "use it: . $where/bin/activate"
else
  echo "use it: export PYTHONPATH=$PYTHONPATH"
fi
