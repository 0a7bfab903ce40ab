"""paranmt-kit: the offline install kit. The kit for this machine's Python is built (pip needs the
registry for that), installed by its install.sh into a new venv with the network refused, beside
a 'target' interpreter that has only the GPU machine's packages of the issue (torch, numpy, …), and
runs the README's first command from an empty folder."""

import os
import shutil
import subprocess
import sys
import zipfile

import pytest
from packaging.requirements import Requirement
from packaging.version import Version
from test_installed_wheel import (
    assert_demo_built,
    run_quick_tour,
)

from corpus.errors import InputError
from kit.build import (
    INSTALL_SCRIPT,
    Target,
    assumptions,
    carried_despite_have,
    closure,
    package_requirements,
    parse_have,
    parse_names,
    wheels_for,
)
from kit.cli import main


def test_a_kit_installs_offline_and_builds_the_demo_from_an_empty_folder(kit_demo):
    assert kit_demo.built == 0
    names = {path.name.split("-")[0].lower() for path in kit_demo.kit.iterdir()}
    assert {"apache_beam", "luigi", "fairseq_fixed", "ctranslate2", "sentencepiece", "paranmt"} <= names
    assert not names & {"torch", "numpy", "pandas", "grpcio", "triton", "sympy"}  # the target's, and what only they need
    assert kit_demo.installed.returncode == 0, kit_demo.installed.stdout + kit_demo.installed.stderr
    assert kit_demo.network_tried == [], kit_demo.network_tried
    assert_demo_built(kit_demo.demo, kit_demo.demo_network_tried, kit_demo.folder)  # the README's main command
    run_quick_tour(kit_demo.python, kit_demo.folder)


def test_the_kit_carries_fairseq_as_a_wheel_that_installs_and_its_sdist_beside_it(kit_demo):
    names = [path.name for path in kit_demo.kit.glob("fairseq_fixed-*")]
    assert sorted(name.rsplit(".", 1)[-1] for name in names) == ["gz", "whl"], names
    built = f"built for Python {sys.version_info.major}.{sys.version_info.minor} against torch "
    assert (kit_demo.kit / "fairseq-wheel.txt").read_text().startswith(built)
    assert f"(fairseq-fixed from its wheel, {built}" in kit_demo.installed.stdout, kit_demo.installed.stdout
    assert "torch" in (kit_demo.kit / "assumed.txt").read_text().split()


def test_install_sh_names_what_the_machine_lacks_in_one_line_before_installing_anything(tmp_path):
    """A package the kit assumes that is missing, or installed but failing to import (a compiled
    library that does not load), stops install.sh at once, all named in one line."""
    kit, broken = tmp_path / "kit", tmp_path / "broken-site"
    kit.mkdir()
    shutil.copy(INSTALL_SCRIPT, kit / "install.sh")
    (kit / "assumed.txt").write_text("packaging\nno-such-distribution\nbrokenlib\n")
    (broken / "brokenlib").mkdir(parents=True)
    (broken / "brokenlib" / "__init__.py").write_text("raise ImportError('libbroken.so: cannot open shared object file')\n")
    (broken / "brokenlib-1.0.dist-info").mkdir()
    (broken / "brokenlib-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: brokenlib\nVersion: 1.0\n")
    (broken / "brokenlib-1.0.dist-info" / "top_level.txt").write_text("brokenlib\n")
    done = subprocess.run(["bash", str(kit / "install.sh"), "--target", str(tmp_path / "site")], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHON": sys.executable, "PYTHONPATH": str(broken)})
    assert done.returncode == 1 and done.stdout == "", done.stdout + done.stderr
    assert done.stderr == ("install.sh: this machine lacks what the kit assumes it has (kit.txt): not installed: no-such-distribution; "
                           "does not import: brokenlib (brokenlib: libbroken.so: cannot open shared object file)\n")
    assert not (tmp_path / "site").exists()


def test_install_sh_says_what_is_wrong_in_one_line(tmp_path):
    for args in ([], ["--venv"], ["--elsewhere", "x"], ["--venv", str(tmp_path)]):
        done = subprocess.run(["bash", str(INSTALL_SCRIPT), *args], capture_output=True, text=True, timeout=60)
        assert done.returncode == 1 and done.stderr.count("\n") == 1 and done.stderr.startswith("install.sh: "), (args, done.stderr)


def test_what_the_target_has_is_read_by_name_with_its_version_where_given():
    assert parse_have(" torch, NumPy==2.5.2,scikit_learn ,") == {"torch": None, "numpy": Version("2.5.2"), "scikit-learn": None}
    for wrong in ["torch==", "num py", "torch>=2"]:
        with pytest.raises(InputError, match="--have"):
            parse_have(wrong)
    with pytest.raises(InputError, match="--without"):
        parse_names("--without", "ctranslate2,c t")


def test_a_manylinux_target_also_takes_the_older_manylinux_wheels():
    platforms = Target("3.12", "manylinux_2_28_x86_64").platforms()
    assert platforms[0] == "manylinux_2_28_x86_64" and platforms[-4:] == ["manylinux_2_5_x86_64", "manylinux2014_x86_64",
                                                                          "manylinux2010_x86_64", "manylinux1_x86_64"]
    assert Target("3.12", "manylinux_2_12_aarch64").platforms()[-2:] == ["manylinux2010_aarch64", "manylinux1_aarch64"]
    assert Target("3.12", "macosx_11_0_arm64").platforms() == ["macosx_11_0_arm64"]
    for python in ["3", "3.x", "2.7.1"]:
        with pytest.raises(InputError, match="--python"):
            Target(python, "manylinux_2_28_x86_64")


def test_what_only_the_targets_packages_need_stays_out_and_versions_outside_a_pin_are_said():
    report = {name: {"metadata": {"version": version, "requires_dist": requires}} for name, version, requires in [
        ("apache-beam", "2.77.0", ["numpy<2.5,>=1.14.3", "fastavro<2", "pytest; extra == 'test'", "typing-extensions; python_version < '3.12'"]),
        ("torch", "2.11.0", ["sympy>=1.13", "filelock"]),
        ("numpy", "2.4.6", []), ("fastavro", "1.13.1", []), ("sympy", "1.14.0", ["mpmath"]), ("filelock", "3.2", []),
        ("typing-extensions", "4.16.0", [])]}
    roots = [Requirement("apache-beam==2.77.*"), Requirement("torch>=2.4"), Requirement("numpy<2.5,>=1.26")]
    have = parse_have("torch,numpy==2.5.2")
    needed = closure(roots, report, have, Target("3.12", "manylinux_2_28_x86_64"))
    assert set(needed) == {"apache-beam", "torch", "numpy", "fastavro"}  # no sympy, filelock; typing-extensions is for Python < 3.12
    assert set(closure(roots, report, have, Target("3.11", "manylinux_2_28_x86_64"))) == set(needed) | {"typing-extensions"}
    del report["typing-extensions"]  # as pip on Python 3.12 resolves it, asked about 3.11
    with pytest.raises(InputError, match="apache-beam needs typing-extensions on Python 3.11, which pip .* left out"):
        closure(roots, report, have, Target("3.11", "manylinux_2_28_x86_64"))
    (numpy, fits, line), torch = assumptions(needed, have)
    assert numpy == "numpy" and not fits and line.startswith("the target's numpy 2.5.2 is OUTSIDE what is asked "
                                                             "(apache-beam <2.5,>=1.14.3; paranmt <2.5,>=1.26)")
    assert torch == ("torch", True, "the target's torch (version not given) serves paranmt >=2.4")


def test_an_exact_pin_is_carried_even_where_the_target_has_another_version_and_a_range_is_not():
    roots = [Requirement("sentencepiece==0.2.3"), Requirement("numpy<2.5,>=1.26"), Requirement("torch>=2.4")]
    have = parse_have("sentencepiece==0.2.2,numpy==2.5.2,torch")
    assert carried_despite_have(roots, have) == {"sentencepiece": "paranmt pins ==0.2.3, the target has 0.2.2"}
    assert carried_despite_have(roots, parse_have("sentencepiece==0.2.3")) == {}


def test_what_the_target_has_can_come_from_a_file(tmp_path):
    (tmp_path / "have.txt").write_text("# pip list --format=freeze, run there\ntorch==2.11.0\nnumpy  # the version unknown\n\n")
    assert parse_have(f"@{tmp_path / 'have.txt'}") == {"torch": Version("2.11.0"), "numpy": None}
    with pytest.raises(InputError, match="--have @absent.txt: No such file or directory"):
        parse_have("@absent.txt")


def test_the_package_requirements_for_the_target_with_extras(tmp_path):
    wheel = tmp_path / "paranmt-0.2.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("paranmt-0.2.0.dist-info/METADATA", "\n".join([
            "Metadata-Version: 2.1", "Name: paranmt", "Version: 0.2.0", "Provides-Extra: dev", "Provides-Extra: dask",
            "Requires-Dist: luigi==3.8.*", "Requires-Dist: tomli; python_version < '3.11'", "Requires-Dist: pytest; extra == 'dev'",
            "Requires-Dist: paranmt[dask]; extra == 'dev'", "Requires-Dist: dask[distributed]==2026.8.0; extra == 'dask'", ""]))
    target = Target("3.12", "manylinux_2_28_x86_64")
    assert list(map(str, package_requirements(wheel, target, set()))) == ["luigi==3.8.*"]
    assert sorted(map(str, package_requirements(wheel, target, {"dev"}))) == ["dask[distributed]==2026.8.0", "luigi==3.8.*", "pytest"]
    with pytest.raises(InputError, match="--extras gpu: paranmt offers dask, dev"):
        package_requirements(wheel, target, {"gpu"})


@pytest.mark.parametrize("args, says", [
    (["--python", "3.x"], "--python 3.x: give the target's Python version as 3.N"),
    (["--python", "3.12", "--build-with", sys.executable],
     f"--build-with {sys.executable}: it is Python {sys.version_info.major}.{sys.version_info.minor}, the target's is 3.12"),
    (["--have", "torch==2.4.0", "--build-with", sys.executable], f"--build-with {sys.executable}: it has torch "),
    (["--build-with", "/no/such/python"], "--build-with /no/such/python: it must run and import torch"),
    (["--have", "torch", "--without", "torch"], "--have and --without both name torch"),
])
def test_a_wrong_argument_is_one_line_and_exit_status_2(tmp_path, capsys, args, says):
    assert main([*args, "--out", str(tmp_path / "kit")]) == 2
    error = capsys.readouterr().err
    assert error.startswith(f"paranmt-kit: error: {says}") and error.count("\n") == 1, error


def test_an_out_folder_that_holds_files_is_refused(tmp_path, capsys):
    (tmp_path / "old.whl").write_text("")
    assert main(["--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"paranmt-kit: error: --out {tmp_path}: not empty (a kit is built into a new folder)\n"


def test_the_package_imports_without_ctranslate2():
    """A CUDA 13 GPU machine's kit leaves CTranslate2 out (--without ctranslate2): everything but
    the CTranslate2 engine still imports (its import is where it is used), and using that engine
    says in one line what to do."""
    blocked = ("import sys; sys.modules['ctranslate2'] = None; import workflows, models.nmt.translate, models.nmt.convert\n"
               "from models.nmt.devices import import_ctranslate2\nimport_ctranslate2()")
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, timeout=300)
    assert done.stderr.splitlines()[-1] == ("corpus.errors.InputError: CTranslate2 is not installed here: use --BackTranslate-engine fairseq "
                                            "(and --EvaluateTranslator-engine fairseq), or pip install 'ctranslate2==4.8.*'"), done.stderr


def test_a_requirement_the_package_lacks_cannot_be_left_out_and_the_folder_is_not_left_half_made(tmp_path, capsys):
    assert main(["--without", "no-such-dist", "--out", str(tmp_path / "kit")]) == 2
    assert capsys.readouterr().err == "paranmt-kit: error: --without no-such-dist: paranmt does not need it\n"
    assert not (tmp_path / "kit").exists()


def test_a_kept_wheel_serves_the_requirements_its_version_meets(tmp_path):
    for name in ["antlr4_python3_runtime-4.9.3-py3-none-any.whl", "antlr4_python3_runtime-4.11.1-py3-none-any.whl", "langid-1.1.6-py3-none-any.whl"]:
        (tmp_path / name).write_bytes(b"")
    assert [path.name for path in wheels_for("antlr4-python3-runtime==4.9.*", tmp_path)] == ["antlr4_python3_runtime-4.9.3-py3-none-any.whl"]
    assert wheels_for("langid>1.1.6", tmp_path) == [] and len(wheels_for("Langid", tmp_path)) == 1
