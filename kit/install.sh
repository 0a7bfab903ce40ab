#!/usr/bin/env bash
# Installs the paranmt kit in this folder without a network (paranmt-kit wrote both), then checks
# that the package imports. Usage: install.sh --venv PATH | --target PATH
#   --venv PATH    a new venv that also sees the packages of $PYTHON (default python3): torch etc.
#   --target PATH  a folder for PYTHONPATH, used with $PYTHON itself
# Every distribution goes in with --no-deps: paranmt-kit resolved the closure for this machine,
# and the packages it has keep their versions (kit.txt says what the kit assumes of them). Before
# anything is installed, every package the kit assumes (assumed.txt) must be there and import.
# fairseq-fixed goes in as the wheel the kit carries where it loads here (built for this Python
# against the target's torch), else it is compiled from its sdist (minutes), which is said.
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

# What the kit assumes this machine has: each installed, and each importable (a package whose
# compiled library does not load counts as missing), named in one line before any work.
if [[ -f $kit/assumed.txt ]]; then
  "$python" - "$kit/assumed.txt" >"$log" 2>&1 <<'PYTHON' || fail "$(tail -n 1 "$log")"
import importlib, importlib.metadata as metadata, re, sys, warnings
warnings.simplefilter("ignore")
canonical = lambda name: re.sub(r"[-_.]+", "-", name).lower()
names = [line.split("#")[0].strip() for line in open(sys.argv[1])]
modules = {}
for module, distributions in metadata.packages_distributions().items():
    for distribution in distributions:
        modules.setdefault(canonical(distribution), set()).add(module)
missing, broken = [], []
for name in filter(None, names):
    try:
        metadata.distribution(name)
    except metadata.PackageNotFoundError:
        missing.append(name)
        continue
    for module in sorted(module for module in modules.get(canonical(name), ()) if not module.startswith("_")):
        try:
            importlib.import_module(module)
        except Exception as error:
            broken.append(f"{name} ({module}: {str(error).splitlines()[0] if str(error) else type(error).__name__})")
            break
if missing or broken:
    print("this machine lacks what the kit assumes it has (kit.txt): "
          + "; ".join(filter(None, [", ".join(missing) and "not installed: " + ", ".join(missing), ", ".join(broken) and "does not import: " + ", ".join(broken)])))
    sys.exit(1)
PYTHON
fi

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

install() {
  # CUDA_HOME unset: fairseq-fixed's setup.py would build CUDA extensions it has no sources for;
  # no build isolation: its sdist compiles against this machine's torch, numpy, cython, setuptools.
  env -u CUDA_HOME "$python" -m pip install --no-index --find-links "$kit" --no-deps --ignore-installed --no-build-isolation \
    --disable-pip-version-check "${pip_target[@]}" "$@" >"$log" 2>&1
}
pip_error() { grep '^ERROR' "$log" | tail -n 1 || tail -n 1 "$log"; }
distributions=()
for file in "$kit"/*.whl; do
  [[ $(basename "$file") == fairseq_fixed-* ]] || distributions+=("$file")
done
install "${distributions[@]}" || fail "pip install: $(pip_error)"

# fairseq's compiled parts: the Cython ones (numpy) and the C++ ones linked to torch, which a
# wheel built against another torch fails to load.
fairseq_loads() {
  "$python" -c "import fairseq, fairseq.libbleu, fairseq.libbase, fairseq.libnat, fairseq.data.data_utils_fast, fairseq.data.token_block_utils_fast" >"$log" 2>&1
}
wheels=("$kit"/fairseq_fixed-*.whl)
sdists=("$kit"/fairseq_fixed-*.tar.gz "$kit"/fairseq-fixed-*.tar.gz)
fairseq=""
if ((${#wheels[@]})) && install "${wheels[@]}" && fairseq_loads; then
  fairseq="fairseq-fixed from its wheel, $(cat "$kit/fairseq-wheel.txt" 2>/dev/null || echo "built by paranmt-kit")"
else
  why=$( ((${#wheels[@]})) && echo "its wheel does not load here: $(tail -n 1 "$log")" || echo "the kit has no wheel of it")
  ((${#sdists[@]})) || fail "fairseq-fixed: $why, and the kit has no sdist to compile"
  echo "install.sh: fairseq-fixed: $why; compiling its sdist (minutes)"
  # Without debug information (faster; the extensions are 11 MB each with it).
  CFLAGS="-g0 ${CFLAGS:-}" install --upgrade "${sdists[@]}" || fail "pip install of fairseq-fixed's sdist: $(pip_error)"
  fairseq="fairseq-fixed compiled here from its sdist"
fi

modules=apache_beam,luigi,fairseq,sentencepiece,sacremoses,langid,workflows
[[ -z $(echo "$kit"/ctranslate2-*.whl) ]] || modules+=,ctranslate2
"$python" -c "import $modules" >"$log" 2>&1 \
  || fail "installed, but it does not import ($modules): $(tail -n 1 "$log")"

echo "installed the kit in $((SECONDS - start)) s ($fairseq); $modules import"
if [[ $mode == venv ]]; then
  echo "use it: . $where/bin/activate"
else
  echo "use it: export PYTHONPATH=$PYTHONPATH"
fi
