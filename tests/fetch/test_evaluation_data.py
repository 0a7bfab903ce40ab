"""paranmt-data fetch against a local HTTP server on 127.0.0.1 that serves archives this test
builds in the published layouts (the packaged source table's URLs, members and paths, with
made-up content and its checksums): the layout the STS readers read, reruns, resumed downloads,
a checksum mismatch, a server that is down, and nothing leaving the machine."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import REPO, require_shared
from test_installed_wheel import NO_NETWORK

from corpus.sts import STS_TEST_SETS, sts_suite
from fetch import evaluation_data as fetcher


class Mirror(ThreadingHTTPServer):
    """Files by URL path; honours `Range: bytes=N-`; can cut chosen responses short or ignore
    Range; records every request as (path, Range header)."""

    def __init__(self):
        super().__init__(("127.0.0.1", 0), MirrorHandler)
        self.files: dict[str, bytes] = {}
        self.requests: list[tuple[str, str | None]] = []
        self.cut_once: set[str] = set()  # paths whose next response stops halfway
        self.ranges = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class MirrorHandler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        mirror: Mirror = self.server
        mirror.requests.append((self.path, self.headers.get("Range")))
        body = mirror.files.get(self.path)
        if body is None:
            self.send_error(404)
            return
        start = int(self.headers["Range"].removeprefix("bytes=").rstrip("-")) if self.headers.get("Range") and mirror.ranges else 0
        if start >= len(body) > 0:
            self.send_error(416)  # Range Not Satisfiable
            return
        self.send_response(206 if start else 200)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        self.send_header("Content-Length", str(len(body) - start))
        self.end_headers()
        if self.path in mirror.cut_once:
            mirror.cut_once.discard(self.path)
            self.wfile.write(body[start: start + (len(body) - start) // 2])
            self.close_connection = True
            return
        self.wfile.write(body[start:])

    def log_message(self, *args):
        pass


@pytest.fixture
def mirror():
    server = Mirror()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def made_up(path: str, number: int) -> bytes:
    """Small content in the format the project's readers expect for `path`."""
    name = Path(path).name
    if ".input." in name:
        return "".join(f"a man plays {number} guitars\ta man is playing guitar {k}\n" for k in range(3)).encode()
    if ".gs." in name:
        return b"4.0\n1.5\n3.2\n"
    if name.startswith("sts-"):
        return "".join(f"main-captions\tMSRvid\t2012test\t{k:04d}\t{k}.000\tA dog runs {number}.\tA dog is running.\n" for k in range(3)).encode()
    if name.startswith("SICK_"):
        return b"pair_ID\tsentence_A\tsentence_B\trelatedness_score\tentailment_judgment\n1\tA boy sings\tA boy is singing\t4.5\tENTAILMENT\n"
    return f"made-up {path} {number}\n".encode("latin-1")


def build_mirror(mirror: Mirror, kind: str, folder: Path, content=made_up) -> tuple[Path, dict[str, bytes]]:
    """Serve `kind`'s downloads of the packaged table, built with `content(path, number)` in their
    published layouts (tar.gz, zip, plain files); a copy of the table with those checksums, without
    the files `content` has none for (None)."""
    table = json.loads(fetcher.SOURCES.read_text())
    laid_out: dict[str, bytes] = {}
    for dataset in table[kind]:
        for download in dataset["downloads"]:
            for file in download["files"]:
                if (body := content(file["path"], len(laid_out))) is not None:
                    laid_out[file["path"]] = body
                    file["sha256"] = hashlib.sha256(body).hexdigest()
            download["files"] = [file for file in download["files"] if file["path"] in laid_out]
            if download["files"]:
                mirror.files[urlsplit(fetcher.mirrored(download["url"], mirror.url)).path] = packed(download, laid_out)
        dataset["downloads"] = [download for download in dataset["downloads"] if download["files"]]
    sources = folder / "sources.json"
    sources.write_text(json.dumps({kind: table[kind]}))
    return sources, laid_out


def packed(download: dict, laid_out: dict[str, bytes]) -> bytes:
    """The download's bytes: its one file, or an archive of its members."""
    members = {file.get("member"): laid_out[file["path"]] for file in download["files"]}
    if download["archive"] is None:
        return members[None]
    buffer = io.BytesIO()
    if download["archive"] == "zip":
        with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as bundle:
            for name, body in members.items():
                bundle.writestr(name, body)
    else:
        with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
            for number, (name, body) in enumerate(members.items()):
                info = tarfile.TarInfo(f"./{name}" if number % 2 else name)  # both ways tar writes names
                info.size = len(body)
                bundle.addfile(info, io.BytesIO(body))
    return buffer.getvalue()


def run(capsys, *args) -> tuple[int, str, str]:
    code = fetcher.main(["fetch", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_fetch_lays_out_the_files_the_sts_readers_read(mirror, tmp_path, capsys):
    sources, laid_out = build_mirror(mirror, "sts", tmp_path)
    target = tmp_path / "sts"
    code, out, err = run(capsys, "sts", "--to", target, "--mirror", mirror.url, "--sources", sources)
    assert code == 0, err
    assert {str(path.relative_to(target)) for path in target.rglob("*") if path.is_file()} == set(laid_out)
    assert all((target / path).read_bytes() == body for path, body in laid_out.items())
    assert f"{len(laid_out)} file(s) laid out, 0 already in place" in out and "[sts] dir" in out
    datasets, absent = sts_suite(target)  # the project's readers, on what was laid out
    assert len(datasets) == sum(map(len, STS_TEST_SETS.values())) + 5 and absent == []  # and 2017, STS-B dev/test, SICK trial/test
    assert {dataset.year for dataset in datasets} == {"2012", "2013", "2014", "2015", "2016", "2017", "STS-B", "SICK"}


def test_a_mirror_folder_on_disk_serves_as_a_file_url(mirror, tmp_path, capsys):
    """A folder of files saved by hand with `wget -x` (host/path) is a mirror: --mirror file://…"""
    sources, laid_out = build_mirror(mirror, "transfer", tmp_path)
    for url_path, body in mirror.files.items():
        (tmp_path / "saved" / url_path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "saved" / url_path.lstrip("/")).write_bytes(body)
    code, _, err = run(capsys, "transfer", "--to", tmp_path / "t", "--mirror", (tmp_path / "saved").as_uri(), "--sources", sources)
    assert code == 0 and not mirror.requests, err
    assert all((tmp_path / "t" / path).read_bytes() == body for path, body in laid_out.items())


def test_a_rerun_skips_the_files_in_place_and_fetches_only_what_is_missing(mirror, tmp_path, capsys):
    sources, laid_out = build_mirror(mirror, "transfer", tmp_path)
    target = tmp_path / "transfer"
    assert run(capsys, "transfer", "--to", target, "--mirror", mirror.url, "--sources", sources)[0] == 0
    assert (target / "msrp" / "msr_paraphrase_train.txt").exists()  # where the transfer evaluation looks for MRPC
    first = len(mirror.requests)
    code, out, _ = run(capsys, "transfer", "--to", target, "--mirror", mirror.url, "--sources", sources)
    assert code == 0 and len(mirror.requests) == first
    assert f"0 file(s) laid out, {len(laid_out)} already in place" in out
    (target / "TREC.test").unlink()
    code, out, _ = run(capsys, "transfer", "--to", target, "--mirror", mirror.url, "--sources", sources)
    assert code == 0 and [path for path, _ in mirror.requests[first:]] == [path for path in mirror.files if path.endswith("/TREC.test")]
    assert f"1 file(s) laid out, {len(laid_out) - 1} already in place" in out


def test_an_interrupted_download_resumes_with_a_range_request(mirror, tmp_path, capsys):
    sources, laid_out = build_mirror(mirror, "sts", tmp_path)
    archive = next(path for path in mirror.files if path.endswith("Stsbenchmark.tar.gz"))
    plain = next(path for path in mirror.files if path.endswith("STS2016.input.headlines.txt"))
    mirror.cut_once |= {archive, plain}
    target = tmp_path / "sts"
    code, _, err = run(capsys, "sts", "--to", target, "--mirror", mirror.url, "--sources", sources)
    assert code == 0, err
    for path in (archive, plain):
        asked = [byte_range for requested, byte_range in mirror.requests if requested == path]
        assert asked == [None, f"bytes={len(mirror.files[path]) // 2}-"]  # the second asks for the rest only
    assert (target / "stsbenchmark" / "sts-dev.csv").read_bytes() == laid_out["stsbenchmark/sts-dev.csv"]
    assert (target / "STS2016-test" / "STS2016.input.headlines.txt").read_bytes() == laid_out["STS2016-test/STS2016.input.headlines.txt"]
    assert not list(target.rglob("*.part")) and not (target / fetcher.DOWNLOADS).exists()


def test_a_partial_file_from_a_killed_run_resumes_or_restarts(mirror, tmp_path, capsys):
    sources, laid_out = build_mirror(mirror, "transfer", tmp_path)
    target = tmp_path / "transfer"
    url_path = next(path for path in mirror.files if path.endswith("/rt-polarity.pos"))
    partial = target / "rt-polarity.pos.part"
    partial.parent.mkdir()
    partial.write_bytes(mirror.files[url_path][:7])
    assert run(capsys, "transfer", "--to", target, "--mirror", mirror.url, "--sources", sources)[0] == 0
    assert (url_path, "bytes=7-") in mirror.requests
    assert (target / "rt-polarity.pos").read_bytes() == laid_out["rt-polarity.pos"] and not partial.exists()

    (target / "rt-polarity.pos").unlink()
    partial.write_bytes(mirror.files[url_path] + b"more")  # longer than the file: 416, then all of it again
    assert run(capsys, "transfer", "--to", target, "--mirror", mirror.url, "--sources", sources)[0] == 0
    assert mirror.requests[-2:] == [(url_path, f"bytes={len(mirror.files[url_path]) + 4}-"), (url_path, None)]
    assert (target / "rt-polarity.pos").read_bytes() == laid_out["rt-polarity.pos"]

    (target / "rt-polarity.pos").unlink()
    partial.write_bytes(b"stale bytes of another version")
    mirror.ranges = False  # answers 200 with the whole file: the partial is not appended to
    assert run(capsys, "transfer", "--to", target, "--mirror", mirror.url, "--sources", sources)[0] == 0
    assert (target / "rt-polarity.pos").read_bytes() == laid_out["rt-polarity.pos"]


def test_a_checksum_mismatch_stops_with_one_line_naming_the_url(mirror, tmp_path, capsys):
    sources, _ = build_mirror(mirror, "sts", tmp_path)
    table = json.loads(sources.read_text())
    sick = next(dataset for dataset in table["sts"] if dataset["name"].startswith("SICK"))
    sick["downloads"][0]["files"][0]["sha256"] = "0" * 64  # the published file would have changed
    sources.write_text(json.dumps(table))
    target = tmp_path / "sts"
    code, _, err = run(capsys, "sts", "--to", target, "--mirror", mirror.url, "--sources", sources)
    assert code == 2 and err.count("\n") == 1, err
    url = fetcher.mirrored(sick["downloads"][0]["url"], mirror.url)
    assert url in err and f"not the published {'0' * 64}" in err and "by hand" in err
    assert not (target / sick["downloads"][0]["files"][0]["path"]).exists()
    assert not [path for path in target.rglob("*") if path.name.endswith((".part", ".tmp"))]


def test_a_damaged_archive_is_removed_and_named(mirror, tmp_path, capsys):
    sources, _ = build_mirror(mirror, "sts", tmp_path)
    archive = next(path for path in mirror.files if path.endswith("Sts2017.gs.zip"))
    mirror.files[archive] = b"PK not a zip"
    code, _, err = run(capsys, "sts", "--to", tmp_path / "sts", "--mirror", mirror.url, "--sources", sources)
    assert code == 2 and err.count("\n") == 1 and f"{mirror.url}{archive}: not a zip archive" in err, err
    assert not (tmp_path / "sts" / fetcher.DOWNLOADS / "Sts2017.gs.zip").exists()


def test_a_file_with_other_bytes_in_the_target_is_never_overwritten(mirror, tmp_path, capsys):
    sources, _ = build_mirror(mirror, "transfer", tmp_path)
    mine = tmp_path / "transfer" / "mpqa.neg"
    mine.parent.mkdir()
    mine.write_text("my own edits\n")
    code, _, err = run(capsys, "transfer", "--to", mine.parent, "--mirror", mirror.url, "--sources", sources)
    assert code == 2 and f"{mine} exists with sha256" in err and "move it away" in err
    assert mine.read_text() == "my own edits\n"


def test_a_server_that_is_down_is_one_line_naming_the_url(mirror, tmp_path, capsys):
    sources, _ = build_mirror(mirror, "sts", tmp_path)
    down = mirror.url
    mirror.shutdown()
    mirror.server_close()
    code, _, err = run(capsys, "sts", "--to", tmp_path / "sts", "--mirror", down, "--sources", sources)
    assert code == 2 and err.count("\n") == 1, err
    first = json.loads(sources.read_text())["sts"][0]["downloads"][0]["url"]
    assert f"{fetcher.mirrored(first, down)}:" in err and "by hand" in err and "rerun" in err


def test_a_404_and_a_bad_source_table_are_one_line(mirror, tmp_path, capsys):
    sources, _ = build_mirror(mirror, "transfer", tmp_path)
    mirror.files.pop(next(path for path in mirror.files if path.endswith("/custrev.neg")))
    code, _, err = run(capsys, "transfer", "--to", tmp_path / "t", "--mirror", mirror.url, "--sources", sources)
    assert code == 2 and "custrev.neg: HTTP 404" in err and err.count("\n") == 1
    table = json.loads(sources.read_text())
    table["transfer"][0]["downloads"][0]["files"][0]["path"] = "../outside.txt"
    sources.write_text(json.dumps(table))
    code, _, err = run(capsys, "transfer", "--to", tmp_path / "t", "--sources", sources)
    assert code == 2 and "'../outside.txt' is not a relative path inside the target folder" in err


def test_nothing_leaves_the_machine_and_offline_names_the_real_url(mirror, tmp_path):
    """The command as a process, with every non-local connection refused and written down: from
    the local mirror it completes without one; without a mirror the packaged table's first URL
    is refused, and the one line says what to do."""
    sources, _ = build_mirror(mirror, "transfer", tmp_path)
    guard = tmp_path / "guard"
    guard.mkdir()
    (guard / "sitecustomize.py").write_text(NO_NETWORK)
    log = tmp_path / "network.log"
    environment = {**os.environ, "PYTHONPATH": f"{guard}:{REPO}", "PARANMT_TEST_NETWORK_LOG": str(log)}

    def paranmt_data(*args):
        return subprocess.run([sys.executable, "-m", "fetch.evaluation_data", "fetch", *map(str, args)], env=environment, capture_output=True,
                              text=True, timeout=60)

    done = paranmt_data("transfer", "--to", tmp_path / "transfer", "--mirror", mirror.url, "--sources", sources)
    assert done.returncode == 0 and not log.exists(), done.stderr
    done = paranmt_data("sts", "--to", tmp_path / "sts")
    first = json.loads(fetcher.SOURCES.read_text())["sts"][0]["downloads"][0]["url"]
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and f"{first}: network access refused" in done.stderr, done.stderr
    assert set(log.read_text().split()) == {"raw.githubusercontent.com"}


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sts", "transfer"])
def test_the_packaged_checksums_are_those_of_the_real_files(mirror, tmp_path, capsys, kind):
    """A mirror built from ../shared/data (the published files, MANIFEST.tsv) in the packaged
    table's layouts: every checksum agrees and every file is laid out. STS-B test and SICK test are
    not in ../shared/data (docs/2026-11-26-datafetch.md: their checksums, from the pinned commits)."""
    shared = require_shared(kind).parent

    def real(path: str, _number: int) -> bytes | None:
        copy = shared / "en-paraphrase" / path if path.startswith("msrp/") else shared / kind / path
        if copy.exists() or Path(f"{copy}.gz").exists():
            return copy.read_bytes() if copy.exists() else gzip.decompress(Path(f"{copy}.gz").read_bytes())
        return None

    sources, _ = build_mirror(mirror, kind, tmp_path, content=real)
    packaged, found = ({file["path"]: file["sha256"] for dataset in json.loads(table.read_text())[kind] for download in dataset["downloads"]
                        for file in download["files"]} for table in (fetcher.SOURCES, sources))
    assert set(packaged) - set(found) == ({"stsbenchmark/sts-test.csv", "SICK/SICK_test_annotated.txt"} if kind == "sts" else set())
    assert found == {path: packaged[path] for path in found}
    code, _, err = run(capsys, kind, "--to", tmp_path / kind, "--mirror", mirror.url, "--sources", sources)
    assert code == 0, err


def test_the_docs_cite_every_dataset_of_the_source_table_with_its_licence():
    page = (REPO / "docs" / "README-sts.md").read_text()
    for kind, datasets in json.loads(fetcher.SOURCES.read_text()).items():
        assert f"paranmt-data fetch {kind} --to" in page
        for dataset in datasets:
            assert f"| {dataset['name']} | {dataset['citation']} | {dataset['official']} |" in page, dataset["name"]
            assert f"| {dataset['licence']} |" in page, dataset["name"]
