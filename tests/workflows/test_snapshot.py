"""Readers get a snapshot (``corpus.files.snapshot``): one build, however often ``latest`` moves
while they read; ``latest`` is put right by any run that finds the stage complete."""

import os
import re
import threading
from pathlib import Path

import luigi
import pandas as pd
import pytest

from corpus.files import snapshot
from workflows.ingest import IngestBitext
from workflows.nmt import TrainSentencePiece

WORDS = "the a man woman dog cat plays runs eats guitar piano ball food in park field".split()


def bitext(folder: Path, name: str, lines: int) -> str:
    """``name.cs`` / ``name.en`` of ``lines`` pairs: the ids (``name-…``) tell the builds apart."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.cs").write_text("".join(f"věta {WORDS[n % 16]} {n}\n" for n in range(lines)))
    (folder / f"{name}.en").write_text("".join(f"the {WORDS[n % 16]} sentence {n}\n" for n in range(lines)))
    return str(folder / f"{name}.cs")


def build(*tasks):
    assert luigi.build(list(tasks), local_scheduler=True, log_level="WARNING")


def latest(stage_dir: Path, name: str = "latest") -> str:
    return os.readlink(stage_dir / name)


def test_a_snapshot_reads_one_build_while_builds_of_other_inputs_finish(luigi_workdir, tmp_path):
    sizes = {"alpha": 30, "beta": 50, "gamma": 70}
    inputs = {name: bitext(tmp_path / "in", name, lines) for name, lines in sizes.items()}
    build(IngestBitext(inputs=inputs["alpha"]))
    before = snapshot(luigi_workdir / "ingest" / "latest" / "bitext")
    assert before.parent.name == IngestBitext(inputs=inputs["alpha"]).output_dir.name  # the fingerprint directory
    seen, failures, done = [], [], threading.Event()

    def read_repeatedly():
        while not done.is_set():
            try:
                ids = pd.read_parquet(snapshot(luigi_workdir / "ingest" / "latest" / "bitext"), columns=["id"]).id
            except Exception as error:  # noqa: BLE001 - any failure is what the test looks for
                failures.append(repr(error))
                continue
            seen.append((len(ids), {pair_id.rsplit("-", 1)[0].removesuffix(".cs") for pair_id in ids}))

    reader = threading.Thread(target=read_repeatedly)
    reader.start()
    try:
        for name in ("beta", "gamma", "alpha", "beta"):  # two new builds, two found complete: latest moves each time
            build(IngestBitext(inputs=inputs[name]))
            assert latest(luigi_workdir / "ingest") == IngestBitext(inputs=inputs[name]).output_dir.name
    finally:
        done.set()
        reader.join()
    assert not failures, failures[:3]
    assert seen and all(len(stems) == 1 and rows == sizes[next(iter(stems))] for rows, stems in seen), seen
    # The snapshot taken first still reads the first build, after latest moved to others.
    assert len(pd.read_parquet(before)) == sizes["alpha"]


def test_every_build_names_its_files_so_a_reader_through_latest_fails_instead_of_mixing(luigi_workdir, tmp_path):
    """A reader that lists a dataset through ``latest`` and opens its files after ``latest``
    moved to another build asks for names that build does not have: FileNotFoundError, never the
    other build's rows under the names it listed."""
    first, second = (IngestBitext(inputs=bitext(tmp_path / "in", name, lines)) for name, lines in (("first", 30), ("second", 50)))
    build(first)
    listed = sorted((luigi_workdir / "ingest" / "latest" / "bitext").glob("*.parquet"))
    assert listed and all(re.fullmatch(rf"part-\d{{5}}-{first.output_dir.name}\.parquet", path.name) for path in listed), listed
    build(second)
    names = {path.name for path in (second.output_dir / "bitext").glob("*.parquet")}
    assert names and not names & {path.name for path in listed}  # no file name in common
    with pytest.raises(FileNotFoundError):
        pd.read_parquet(listed[0])  # the path as listed, through latest, which has moved


def test_a_snapshot_of_nothing_names_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="latest/corpus: no such file or dataset"):
        snapshot(tmp_path / "work" / "corpus" / "latest" / "corpus")


def test_latest_is_restored_by_a_run_that_finds_every_stage_complete(luigi_workdir, tmp_path):
    first, other = bitext(tmp_path / "in", "first", 40), bitext(tmp_path / "in", "other", 60)
    tasks = {name: TrainSentencePiece(inputs=path, vocab_size=60) for name, path in (("first", first), ("other", other))}
    build(tasks["other"])
    build(tasks["first"])
    ingest, spm = luigi_workdir / "ingest", luigi_workdir / "nmt-spm"
    expected = {ingest: tasks["first"].requires().output_dir.name, spm: tasks["first"].output_dir.name}
    damage = {
        "removed": lambda link: link.unlink(),
        "pointing at the other build": lambda link: (link.unlink(), link.symlink_to(tasks["other"].output_dir.name if link.parent == spm
                                                                                    else tasks["other"].requires().output_dir.name)),
        "broken": lambda link: (link.unlink(), link.symlink_to("gone")),
        "a regular file": lambda link: (link.unlink(), link.write_text("mine\n")),
        "a directory": lambda link: (link.unlink(), link.mkdir(), (link / "notes.txt").write_text("mine\n")),
    }
    for how, damage_it in damage.items():
        for stage_dir in (ingest, spm):
            damage_it(stage_dir / "latest")
        manifests = {path: path.stat().st_mtime_ns for path in luigi_workdir.rglob("_SUCCESS")}
        build(tasks["first"])  # the root task and its requirement are both found complete
        for stage_dir, fingerprint in expected.items():
            assert latest(stage_dir) == fingerprint, how
        assert {path: path.stat().st_mtime_ns for path in luigi_workdir.rglob("_SUCCESS")} == manifests, how  # nothing rebuilt
    for stage_dir in (ingest, spm):  # what was put where latest belongs is kept beside it
        kept = sorted(path.name for path in stage_dir.glob("latest.moved-*"))
        assert len(kept) == 2, kept
        assert {(path / "notes.txt").read_text() if path.is_dir() else path.read_text() for path in stage_dir.glob("latest.moved-*")} == {"mine\n"}
