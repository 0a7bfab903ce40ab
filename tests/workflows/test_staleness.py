"""Outputs are never reused for other inputs, and ``latest`` is always this run's output."""

import os

import luigi
from hypothesis import given, settings
from hypothesis import strategies as st

from workflows import IngestBitext
from workflows.fingerprints import file_fingerprint


def aligned(folder, czech, english):
    folder.mkdir(exist_ok=True)
    (folder / "w.cs").write_text(czech)
    (folder / "w.en").write_text(english)
    return str(folder / "w.cs")


def put_back(path, stat):
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))


@settings(max_examples=25, deadline=None)
@given(content=st.binary(min_size=1, max_size=200), position=st.integers(0, 199), new_byte=st.integers(0, 255))
def test_a_same_size_edit_with_the_modification_time_put_back_is_a_new_identity(tmp_path_factory, content, position, new_byte):
    path = tmp_path_factory.mktemp("edit") / "input.txt"
    path.write_bytes(content)
    stat, before = os.stat(path), file_fingerprint(str(path))
    edited = bytearray(content)
    edited[position % len(content)] = new_byte
    path.write_bytes(bytes(edited))
    put_back(path, stat)
    assert os.stat(path).st_mtime_ns == stat.st_mtime_ns and os.stat(path).st_size == stat.st_size
    assert (file_fingerprint(str(path)) == before) == (bytes(edited) == content)


def test_an_edit_put_back_as_cp_p_does_is_ingested_again(luigi_workdir, tmp_path):
    inputs = aligned(tmp_path / "data", "Ahoj.\nPes.\n", "Hello.\nDog.\n")
    first = IngestBitext(inputs=inputs)
    assert luigi.build([first], local_scheduler=True, log_level="WARNING")
    first_output = first.output_dir
    english = tmp_path / "data" / "w.en"
    stat = os.stat(english)
    english.write_text("Howdy\nCat.\n")  # same size
    put_back(english, stat)
    again = IngestBitext(inputs=inputs)
    assert not again.complete()
    assert luigi.build([again], local_scheduler=True, log_level="WARNING")
    assert again.output_dir != first_output and (again.output_dir / "_SUCCESS").exists()


def test_latest_follows_the_run_back_to_an_earlier_input_whose_output_exists(luigi_workdir, tmp_path):
    one = IngestBitext(inputs=aligned(tmp_path / "one", "Ahoj.\n", "Hello.\n"))
    two = IngestBitext(inputs=aligned(tmp_path / "two", "Pes.\n", "Dog.\n"))
    latest = luigi_workdir / "ingest" / "latest"
    for task in (one, two, one):
        assert luigi.build([task], local_scheduler=True, log_level="WARNING")
        assert latest.resolve() == task.output_dir.resolve()
