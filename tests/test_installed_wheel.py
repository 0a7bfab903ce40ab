"""The package as users get it: built into a wheel, installed (not editable), run from an empty
folder without the repository or its luigi.cfg, with every network connection refused."""

import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# Loaded first by every Python process started with this folder on its path (the driver and
# Beam's workers): a connection anywhere but this machine is written down and refused.
NO_NETWORK = '''
import os, socket
_LOCAL = ("127.0.0.1", "::1", "localhost", "0.0.0.0", None, "")

def _refuse(host):
    with open(os.environ["PARANMT_TEST_NETWORK_LOG"], "a") as log:
        log.write(f"{host}\\n")
    raise OSError(f"network access refused in a test: {host}")

_getaddrinfo, _connect = socket.getaddrinfo, socket.socket.connect

def getaddrinfo(host, *args, **kwargs):
    if host not in _LOCAL:
        _refuse(host)
    return _getaddrinfo(host, *args, **kwargs)

def connect(self, address):
    if isinstance(address, tuple) and address[0] not in _LOCAL:
        _refuse(address[0])
    return _connect(self, address)

socket.getaddrinfo, socket.socket.connect = getaddrinfo, connect
'''


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The wheel built from this checkout, installed into its own folder (its dependencies are
    this environment's)."""
    root = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(root / "dist"), str(REPO)],
                   check=True, capture_output=True, timeout=300)
    wheel = next((root / "dist").glob("paranmt-*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(root / "site"), str(wheel)],
                   check=True, capture_output=True, timeout=300)
    network_guard(root / "guard")
    return root


def network_guard(folder):
    """A folder whose sitecustomize refuses the network to every Python that has it on its path."""
    folder.mkdir()
    (folder / "sitecustomize.py").write_text(NO_NETWORK)
    return folder


def offline(folder, path):
    """The environment of a process run offline in `folder` with `path` (the guard first) as its
    PYTHONPATH, and the file where it writes the hosts it tried to reach."""
    network_log = folder / "network.log"
    environment = {**os.environ, "PYTHONPATH": ":".join(map(str, path)), "PARANMT_TEST_NETWORK_LOG": str(network_log)}
    environment.pop("LUIGI_CONFIG_PATH", None)
    return environment, network_log


def run_luigi_offline(python, path, folder, *args):
    """`luigi --module workflows …` as the user runs it, with `python`, offline, in `folder`."""
    environment, network_log = offline(folder, path)
    done = subprocess.run([str(python), "-m", "luigi", "--module", "workflows", *args, "--local-scheduler"], cwd=folder,
                          env=environment, capture_output=True, text=True, timeout=600)
    return done, (network_log.read_text().split() if network_log.exists() else [])


def run_installed(installed, folder, *args):
    return run_luigi_offline(sys.executable, [installed / "guard", installed / "site"], folder, *args)


def assert_demo_built(done, reached, folder):
    """The README's first command (BuildParaNMT on the demo) succeeded offline in `folder`."""
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert reached == [], reached
    assert len(output.splitlines()) <= 60, output
    assert "pairs per decile of pp_sim (0 … 9): 40 40 40 40 40 40 40 40 40 40" in output
    assert (folder / "work" / "corpus" / "latest" / "_SUCCESS").exists()


def test_the_installed_wheel_is_what_runs_not_this_checkout(installed, tmp_path):
    """(The README's main command and quick tour run on an installed wheel, offline, from an empty
    folder, in tests/test_kit.py: the kit installs the wheel built from this checkout.)"""
    where = subprocess.run([sys.executable, "-c", "import workflows; print(workflows.__file__)"], cwd=tmp_path, capture_output=True, text=True,
                           env={**os.environ, "PYTHONPATH": str(installed / "site")}, check=True).stdout
    assert where.startswith(str(installed / "site"))


def run_quick_tour(python, folder):
    """The README's quick tour, its own lines, reads what the demo build in ``folder`` wrote."""
    tour = re.findall(r"^```python\n(.*?)^```", (REPO / "README.md").read_text(), flags=re.S | re.M)[0]
    read = subprocess.run([str(python), "-c", f"{tour}\nprint(len(corpus), len(top), len(pairs), len(rejects))"], cwd=folder,
                          capture_output=True, text=True, timeout=120)
    assert read.returncode == 0 and read.stdout.split() == ["400", "40", "400", "0"], read.stdout + read.stderr


def test_a_failure_from_an_empty_folder_is_one_line_and_non_zero(installed, tmp_path):
    done, reached = run_installed(installed, tmp_path, "IngestBitext", "--inputs", "absent.gz")
    assert done.returncode == 30 and reached == []
    assert (done.stdout + done.stderr).strip().count("\n") == 0, done.stdout + done.stderr


def test_paranmt_data_is_installed_with_its_source_table(installed, tmp_path):
    """The console script from the wheel reads its packaged source table: with a mirror that is
    down, one line names the table's first transfer URL on that mirror; nothing leaves the machine."""
    network_log = tmp_path / "network.log"
    environment = {**os.environ, "PYTHONPATH": f"{installed / 'guard'}:{installed / 'site'}", "PARANMT_TEST_NETWORK_LOG": str(network_log)}
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        mirror = f"http://127.0.0.1:{closed.getsockname()[1]}"
    done = subprocess.run([str(installed / "site" / "bin" / "paranmt-data"), "fetch", "transfer", "--to", "transfer", "--mirror", mirror],
                          cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=60)
    first = f"{mirror}/raw.githubusercontent.com/harvardnlp/sent-conv-torch/d61ded09c99c0199d8c5bca946cd65864de2b296/data/raw/rt-polarity.neg"
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and first in done.stderr, done.stderr
    assert not network_log.exists()
