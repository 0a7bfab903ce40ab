"""Builds the kit: pip resolves this package's dependencies for the target machine (its Python
version and platform, not this one's), what the target already has is left out with everything
only it needs, pip downloads the rest, and install.sh goes beside them."""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections import defaultdict
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from corpus.comma_lists import comma_items
from corpus.errors import InputError

PACKAGE = "paranmt"
# Its C extensions are built against the target's torch, and it publishes no wheels: it travels
# as its sdist, and with --build-with PYTHON also as the wheel that interpreter builds (the
# target's Python version and torch), which install.sh tries first.
BUILT_ON_TARGET = "fairseq-fixed"
INSTALL_SCRIPT = Path(__file__).with_name("install.sh")
# Beside install.sh: the distributions the kit assumes the target has, one a line (install.sh
# checks that each is there and imports before installing anything), and how the carried
# fairseq-fixed wheel was built.
ASSUMED, FAIRSEQ_WHEEL_NOTE = "assumed.txt", "fairseq-wheel.txt"
# fairseq-fixed's wheel is compiled without debug information and linked stripped: its two torch
# extensions are 11 MB each with them (the wheel 22 MB), and the kit travels within 64 MiB.
LEAN_BUILD = {"CFLAGS": "-g0", "LDFLAGS": "-s"}
# pip's message for a requirement without a wheel for the target (only sdists): pip builds
# pure-Python ones here into a wheel that any target installs; more than this many is a mistake.
NO_WHEEL = re.compile(r"No matching distribution found for (\S+)")
MOST_BUILT_HERE = 8
# Where those pure-Python wheels are kept between kits ($XDG_CACHE_HOME, as pip's cache): pip
# names one such requirement per failed resolution, each a resolution of its own (langid and
# antlr4-python3-runtime: three in all, ~30 s each here), so a later kit resolves once.
BUILT_WHEELS = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "paranmt-kit" / "wheels"


@dataclass(frozen=True)
class Target:
    """The machine the kit is for: its Python version (3.12) and its newest platform tag."""

    python: str
    platform: str

    def __post_init__(self):
        if not re.fullmatch(r"3\.\d+", self.python):
            raise InputError(f"--python {self.python}: give the target's Python version as 3.N (3.12)")
        if not re.fullmatch(r"[a-z0-9_]+", self.platform):
            raise InputError(f"--platform {self.platform}: give one platform tag, e.g. manylinux_2_28_x86_64")

    def platforms(self) -> list[str]:
        """pip takes the tags it is given literally, and a manylinux_2_28 machine also runs
        manylinux_2_27 … 2_5 wheels (manylinux2014 = 2_17, manylinux2010 = 2_12, manylinux1 = 2_5)."""
        manylinux = re.fullmatch(r"manylinux_2_(\d+)_(\w+)", self.platform)
        if not manylinux:
            return [self.platform]
        newest, arch = int(manylinux[1]), manylinux[2]
        legacy = {17: "manylinux2014", 12: "manylinux2010", 5: "manylinux1"}
        return ([f"manylinux_2_{glibc}_{arch}" for glibc in range(newest, 4, -1)]
                + [f"{name}_{arch}" for glibc, name in legacy.items() if glibc <= newest])

    def pip_options(self) -> list[str]:
        """Wheels for the target only (pip refuses platform options otherwise)."""
        platforms = [option for tag in self.platforms() for option in ("--platform", tag)]
        return ["--only-binary=:all:", "--python-version", self.python, "--implementation", "cp",
                "--abi", f"cp{self.python.replace('.', '')}", *platforms]

    def markers(self, extra: str = "") -> dict[str, str]:
        """Environment markers as the target evaluates them (its Python; this machine's OS)."""
        return {"python_version": self.python, "python_full_version": f"{self.python}.0", "extra": extra}


def parse_have(text: str) -> dict[str, Version | None]:
    """`torch,numpy==2.5.2`: what the target has, by name, with its version where known; `@FILE`
    reads them from a file, one a line (`pip list --format=freeze` run there; # comments)."""
    if text.startswith("@"):
        try:
            text = ",".join(line.split("#")[0] for line in Path(text[1:]).read_text().splitlines())
        except OSError as error:
            raise InputError(f"--have {text}: {error.strerror}") from None
    have = {}
    for entry in comma_items(text):
        name, _, version = entry.partition("==")
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name) or (_ and not re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", version)):
            raise InputError(f"--have {entry}: give a distribution name, or name==version")
        have[canonicalize_name(name)] = Version(version) if version else None
    return have


def carried_despite_have(roots: list[Requirement], have: dict[str, Version | None]) -> dict[str, str]:
    """What the target has at another version than the package pins exactly: an exact pin is a
    decision (sentencepiece 0.2.3: pyproject.toml says why), so the kit carries it, and the
    target's version stays beneath it. A range (numpy<2.5) is left to the target (assumptions)."""
    return {canonicalize_name(requirement.name): f"{PACKAGE} pins {requirement.specifier}, the target has {have[name]}"
            for requirement in roots
            if (name := canonicalize_name(requirement.name)) in have and have[name] is not None
            and any(spec.operator == "==" for spec in requirement.specifier) and not requirement.specifier.contains(have[name], prereleases=True)}


def parse_names(option: str, text: str) -> set[str]:
    names = {canonicalize_name(part) for part in comma_items(text)}
    if bad := sorted(name for name in names if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", name)):
        raise InputError(f"{option} {','.join(bad)}: give distribution names separated by commas")
    return names


@dataclass
class Kit:
    """What went into the folder, and what it assumes of the target."""

    folder: Path
    carried: dict[str, str] = field(default_factory=dict)  # name → version
    pinned_here: dict[str, str] = field(default_factory=dict)  # carried although the target has it: why
    assumptions: list[tuple[str, bool, str]] = field(default_factory=list)  # (name, fits, line)
    fairseq_wheel: str = ""  # how the carried fairseq-fixed wheel was built ("" without one)

    def files(self) -> list[Path]:
        return sorted((path for path in self.folder.iterdir() if path.is_file()), key=lambda path: -path.stat().st_size)

    def size(self) -> int:
        return sum(path.stat().st_size for path in self.files())


@dataclass(frozen=True)
class WheelBuilder:
    """An interpreter that builds fairseq-fixed's wheel for the target: the target's Python
    version, and the torch its C++ extensions link against."""

    python: str
    python_version: str
    torch: str

    @classmethod
    def of(cls, python: str, target: Target, have: dict[str, Version | None]) -> WheelBuilder:
        try:
            done = subprocess.run([python, "-c", "import sys, torch; print(f'{sys.version_info.major}.{sys.version_info.minor}', torch.__version__)"],
                                  capture_output=True, text=True)
        except OSError as error:
            raise InputError(f"--build-with {python}: it must run and import torch ({error.strerror})") from None
        if done.returncode:
            reason = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            raise InputError(f"--build-with {python}: it must run and import torch ({reason})")
        version, torch = done.stdout.split()
        if version != target.python:
            raise InputError(f"--build-with {python}: it is Python {version}, the target's is {target.python}")
        if (wanted := have.get("torch")) is not None and Version(torch).public != wanted.public:
            raise InputError(f"--build-with {python}: it has torch {torch}, the target {wanted}: "
                             f"{BUILT_ON_TARGET}'s extensions built against it would not load there")
        return cls(python, version, torch)

    def wheel(self, requirement: str, stage: Path) -> Path:
        """The wheel of ``requirement``, built once per Python version and torch and kept in
        ``stage`` (pip's own cache does not tell the torch apart: no build isolation)."""
        folder = stage / f"{canonicalize_name(requirement.split('==')[0])}-{requirement.split('==')[1]}-py{self.python_version}-torch{self.torch}"
        if not (built := sorted(folder.glob("*.whl"))):
            with tempfile.TemporaryDirectory(prefix="paranmt-kit-wheel-") as scratch:
                # --no-binary: PyPI has a cp312 wheel of fairseq-fixed 0.12.3.1 (2024), whose libbase
                # does not load beside torch 2.11 (undefined symbol c10::Error::Error).
                # One extension at a time: torch's extension builder writes one build.ninja for all
                # of them, and setuptools' parallel build_ext races on it where ninja is installed.
                _pip(f"building {requirement} with {self.python} (torch {self.torch})", "wheel", "--no-deps", "--no-build-isolation",
                     "--no-binary", BUILT_ON_TARGET, "--no-cache-dir", "-q", "-w", scratch, requirement, unset_cuda_home=True,
                     python=self.python, env=LEAN_BUILD)
                [wheel] = Path(scratch).glob("*.whl")
                without_example_data(wheel)
                folder.mkdir(parents=True, exist_ok=True)
                partial = folder / f".{wheel.name}.partial"  # whole or not at all, for kits built at the same time
                shutil.copyfile(wheel, partial)
                os.replace(partial, folder / wheel.name)
            built = [folder / wheel.name]
        return built[-1]


# fairseq-fixed's distributions hold its examples' data files (sample arrays, audio, images,
# notebooks: 9 MB of its 10 MB sdist) that no import reads; the kit carries both without them,
# and the kit travels within 64 MiB with the data. The examples' code stays.
EXAMPLE_DATA = re.compile(r"(?:[^/]+/)?fairseq/examples/.*\.(?!py$)[^./]+")


def without_example_data(distribution: Path) -> None:
    """Rewrites fairseq-fixed's wheel (and its RECORD) or sdist without EXAMPLE_DATA."""
    lean = distribution.with_name(f".{distribution.name}.lean")
    if distribution.name.endswith(".whl"):
        with zipfile.ZipFile(distribution) as source, zipfile.ZipFile(lean, "w", zipfile.ZIP_DEFLATED) as target:
            for item in source.infolist():
                if EXAMPLE_DATA.fullmatch(item.filename):
                    continue
                data = source.read(item)
                if item.filename.endswith(".dist-info/RECORD"):
                    data = "".join(line for line in data.decode().splitlines(keepends=True)
                                   if not EXAMPLE_DATA.fullmatch(line.split(",")[0])).encode()
                target.writestr(item, data)
    else:
        with tarfile.open(distribution) as source, tarfile.open(lean, "w:gz") as target:
            for member in source:
                if not EXAMPLE_DATA.fullmatch(member.name):
                    target.addfile(member, source.extractfile(member) if member.isfile() else None)
    os.replace(lean, distribution)


def build(source: Path, target: Target, have: dict[str, Version | None], out: Path, *, without: set[str] = frozenset(),
          extras: set[str] = frozenset(), build_with: str | None = None) -> Kit:
    """The kit for `target` in `out` (a new or empty folder)."""
    if not (source / "pyproject.toml").is_file():
        raise InputError(f"--source {source}: no pyproject.toml there (the kit builds {PACKAGE}'s wheel from its checkout)")
    if out.exists() and any(out.iterdir()):
        raise InputError(f"--out {out}: not empty (a kit is built into a new folder)")
    if clash := sorted(set(have) & set(without)):
        raise InputError(f"--have and --without both name {', '.join(clash)}")
    builder = WheelBuilder.of(build_with, target, have) if build_with else None
    out.mkdir(parents=True, exist_ok=True)
    try:
        return _fill(Kit(out), source, target, have, without, extras, builder)
    except BaseException:
        shutil.rmtree(out)  # it was empty: a rerun starts afresh
        raise


def _fill(kit: Kit, source: Path, target: Target, have: dict[str, Version | None], without: set[str], extras: set[str],
          builder: WheelBuilder | None) -> Kit:
    out = kit.folder
    with tempfile.TemporaryDirectory(prefix="paranmt-kit-") as scratch:
        _pip("building the package's wheel", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(source))
        wheel = next(out.glob(f"{PACKAGE}-*.whl"))
        roots = package_requirements(wheel, target, extras)
        if missing := sorted(without - {canonicalize_name(requirement.name) for requirement in roots}):
            raise InputError(f"--without {','.join(missing)}: {PACKAGE} does not need it")
        roots = [requirement for requirement in roots if canonicalize_name(requirement.name) not in without]
        built_on_target = _installed_here(BUILT_ON_TARGET, roots, target)
        report = _resolve(roots, built_on_target, target, BUILT_WHEELS, Path(scratch))
        report[BUILT_ON_TARGET] = built_on_target
        kit.pinned_here = carried_despite_have(roots, have)
        have = {name: version for name, version in have.items() if name not in kit.pinned_here}
        needed = closure(roots, report, have, target)
        kit.assumptions = assumptions(needed, have)
        downloads = {name: entry.version for name, entry in needed.items() if name not in have and name != BUILT_ON_TARGET}
        kit.carried = {name: f"{entry.version} (for {', '.join(sorted(entry.needed_by))})" for name, entry in needed.items() if name not in have}
        if downloads:
            _pip("downloading the wheels", "download", "--no-deps", "-q", "-d", str(out), "--find-links", str(BUILT_WHEELS), *target.pip_options(),
                 *(f"{name}=={version}" for name, version in sorted(downloads.items())))
        fairseq = f"{BUILT_ON_TARGET}=={built_on_target['metadata']['version']}"
        _pip(f"downloading {fairseq}'s sdist", "download", "--no-deps", "--no-build-isolation", "--no-binary", BUILT_ON_TARGET, "-q",
             "-d", str(out), fairseq, unset_cuda_home=True)
        for sdist in out.glob(f"{canonicalize_name(BUILT_ON_TARGET).replace('-', '_')}-*.tar.gz"):
            without_example_data(sdist)
        if builder:
            built = builder.wheel(fairseq, BUILT_WHEELS)
            shutil.copyfile(built, out / built.name)
            kit.fairseq_wheel = f"built for Python {builder.python_version} against torch {builder.torch}"
            (out / FAIRSEQ_WHEEL_NOTE).write_text(kit.fairseq_wheel + "\n")
            kit.carried[BUILT_ON_TARGET] += f"; and its wheel, {kit.fairseq_wheel}"
    kit.carried[PACKAGE] = _wheel_version(wheel)
    (out / ASSUMED).write_text("".join(f"{name}\n" for name, _, _ in kit.assumptions))
    script = out / INSTALL_SCRIPT.name
    shutil.copyfile(INSTALL_SCRIPT, script)
    script.chmod(0o755)
    return kit


def package_requirements(wheel: Path, target: Target, extras: set[str]) -> list[Requirement]:
    """The package's own requirements on the target, with the extras asked for (and the extras
    those name of the package itself, as `dev` names `paranmt[interop]`)."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = Parser().parsestr(archive.read(next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))).decode())
    declared = [Requirement(line) for line in metadata.get_all("Requires-Dist", [])]
    offered = set(metadata.get_all("Provides-Extra", []))
    if unknown := sorted(extras - offered):
        raise InputError(f"--extras {','.join(unknown)}: {PACKAGE} offers {', '.join(sorted(offered))}")
    wanted, todo, requirements = set(), ["", *extras], []
    while todo:
        extra = todo.pop()
        if extra in wanted:
            continue
        wanted.add(extra)
        for requirement in declared:
            if requirement.marker is None and extra or requirement.marker is not None and not requirement.marker.evaluate(target.markers(extra)):
                continue
            if canonicalize_name(requirement.name) == PACKAGE:
                todo.extend(requirement.extras)
            else:
                requirements.append(_without_marker(requirement))
    return requirements


def _installed_here(name: str, roots: list[Requirement], target: Target) -> dict:
    """The sdist's own requirements, as its installed distribution here declares them (pip would
    have to build it to read them): a report entry like pip's."""
    pinned = next(requirement for requirement in roots if canonicalize_name(requirement.name) == name)
    try:
        installed = importlib.metadata.distribution(name)
    except importlib.metadata.PackageNotFoundError:
        raise InputError(f"{name} is not installed here: paranmt-kit reads its requirements from the installed distribution") from None
    if not pinned.specifier.contains(installed.version, prereleases=True):
        raise InputError(f"{name} {installed.version} is installed here, but {PACKAGE} needs {pinned}")
    requires = [line for line in installed.requires or [] if (marker := Requirement(line).marker) is None or marker.evaluate(target.markers())]
    return {"metadata": {"name": name, "version": installed.version, "requires_dist": requires}}


def _resolve(roots: list[Requirement], built_on_target: dict, target: Target, stage: Path, scratch: Path) -> dict[str, dict]:
    """pip's resolution for the target (its report, by name), with the sdist built on the target
    replaced by its requirements, and pure-Python distributions that publish only sdists built
    into wheels here first (kept in `stage`)."""
    wanted = [str(requirement) for requirement in roots if canonicalize_name(requirement.name) != BUILT_ON_TARGET]
    wanted += built_on_target["metadata"]["requires_dist"]
    (scratch / "requirements.txt").write_text("\n".join(wanted) + "\n")
    stage.mkdir(parents=True, exist_ok=True)
    for _ in range(MOST_BUILT_HERE + 1):
        done = _run_pip("install", "--dry-run", "--ignore-installed", "-q", "--report", str(scratch / "report.json"),
                        "--target", str(scratch / "unused"),
                        "--find-links", str(stage), *target.pip_options(), "-r", str(scratch / "requirements.txt"))
        if done.returncode == 0:
            report = json.loads((scratch / "report.json").read_text())
            return {canonicalize_name(item["metadata"]["name"]): item for item in report["install"]}
        if not (no_wheel := NO_WHEEL.search(done.stderr)):
            raise InputError(f"resolving the dependencies for Python {target.python} on {target.platform}: {_pip_error(done)}")
        _build_pure_wheel(no_wheel[1], stage, target, scratch / "built")
    raise InputError(f"more than {MOST_BUILT_HERE} dependencies publish no wheel for Python {target.python} on {target.platform}")


def _build_pure_wheel(requirement: str, stage: Path, target: Target, scratch: Path) -> None:
    """The wheel of ``requirement``, built in ``scratch`` and kept in ``stage`` if it is pure Python."""
    if wheels_for(requirement, stage):  # pip had it and still found nothing
        raise InputError(f"{requirement}: no wheel for Python {target.python} on {target.platform}")
    _pip(f"{requirement} publishes no wheel for Python {target.python} on {target.platform}; building it",
         "wheel", "--no-deps", "-q", "-w", str(scratch), requirement)
    [built] = wheels_for(requirement, scratch)
    if not built.name.endswith("-none-any.whl"):
        raise InputError(f"{requirement}: no wheel for Python {target.python} on {target.platform}, and it has compiled code ({built.name})")
    partial = stage / f".{built.name}.partial"  # whole or not at all, for kits built at the same time
    shutil.copyfile(built, partial)
    os.replace(partial, stage / built.name)


def wheels_for(requirement: str, folder: Path) -> list[Path]:
    """The wheels in ``folder`` that satisfy ``requirement``."""
    wanted = Requirement(requirement)
    return [path for path in folder.glob("*.whl") if canonicalize_name(path.name.split("-")[0]) == canonicalize_name(wanted.name)
            and wanted.specifier.contains(_wheel_version(path), prereleases=True)]


@dataclass
class Needed:
    """A distribution of the closure: the version pip chose, and what asked for it (name → specifiers)."""

    version: str
    needed_by: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))


def closure(roots: list[Requirement], report: dict[str, dict], have: dict, target: Target) -> dict[str, Needed]:
    """Every distribution reachable from the roots, stopping at what the target has: what only
    torch needs (triton, the nvidia-* wheels, sympy …) stays out with torch."""
    needed: dict[str, Needed] = {}
    visited = set()
    todo = [(PACKAGE, requirement) for requirement in roots]
    while todo:
        asker, requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        if name not in report:  # pip evaluates its transitive markers for the Python it runs on
            raise InputError(f"{asker} needs {requirement} on Python {target.python}, which pip (on Python "
                             f"{sys.version_info.major}.{sys.version_info.minor}) left out: run paranmt-kit with a Python {target.python}")
        needed.setdefault(name, Needed(report[name]["metadata"]["version"])).needed_by[asker].append(str(requirement.specifier))
        if name in have:
            continue
        for extra in {"", *requirement.extras} - {extra for seen, extra in visited if seen == name}:
            visited.add((name, extra))
            for line in report[name]["metadata"].get("requires_dist", []):
                dependency = Requirement(line)
                if (dependency.marker is None and not extra) or (dependency.marker is not None and dependency.marker.evaluate(target.markers(extra))):
                    todo.append((name, _without_marker(dependency)))
    return needed


def assumptions(needed: dict[str, Needed], have: dict[str, Version | None]) -> list[tuple[str, bool, str]]:
    """Per package the kit leaves to the target: its name, whether its version (where given)
    admits what asks for it, and a line that says so. The kit installs with --no-deps, so a
    version outside a range stays (and may well work)."""
    lines = []
    for name, version in sorted(have.items()):
        if name not in needed:
            continue
        asks = "; ".join(f"{asker} {','.join(filter(None, specifiers)) or 'any'}" for asker, specifiers in sorted(needed[name].needed_by.items()))
        if version is None:
            lines.append((name, True, f"the target's {name} (version not given) serves {asks}"))
        elif all(_admits(specifier, version) for specifiers in needed[name].needed_by.values() for specifier in specifiers):
            lines.append((name, True, f"the target's {name} {version} serves {asks}"))
        else:
            lines.append((name, False, f"the target's {name} {version} is OUTSIDE what is asked ({asks}): kept (the kit installs with --no-deps); "
                                       f"leave {name} out of --have to carry the one asked for instead"))
    return lines


def _admits(specifier: str, version: Version) -> bool:
    return Requirement(f"x{specifier}").specifier.contains(version, prereleases=True)


def _without_marker(requirement: Requirement) -> Requirement:
    """The requirement itself, its marker already evaluated for the target (pip would evaluate it
    for this machine's Python)."""
    bare = Requirement(str(requirement))
    bare.marker = None
    return bare


def _wheel_version(wheel: Path) -> str:
    return wheel.name.split("-")[1]


def _run_pip(*args: str, unset_cuda_home: bool = False, python: str = sys.executable,
             env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environment = {**os.environ, **(env or {})}
    if unset_cuda_home:  # fairseq-fixed's setup.py builds CUDA extensions (sources it lacks) when CUDA_HOME is set
        environment.pop("CUDA_HOME", None)
    return subprocess.run([python, "-m", "pip", *args], capture_output=True, text=True, env=environment)


def _pip(what: str, *args: str, unset_cuda_home: bool = False, python: str = sys.executable, env: dict[str, str] | None = None) -> None:
    done = _run_pip(*args, unset_cuda_home=unset_cuda_home, python=python, env=env)
    if done.returncode:
        raise InputError(f"{what}: {_pip_error(done)}")


def _pip_error(done: subprocess.CompletedProcess) -> str:
    """pip's own one-line reason (its last ERROR line), not its whole output."""
    lines = [line.strip() for line in (done.stderr + done.stdout).splitlines() if line.strip()]
    errors = [line.removeprefix("ERROR: ") for line in lines if line.startswith("ERROR:")]
    return (errors or lines or [f"pip exited with {done.returncode}"])[-1]
