"""Paths a stage records inside the work directory are relative to it, and an input is known by
its real path: another spelling of either rebuilds nothing. (A moved, copied or linked demo work
directory, through the ``luigi`` command: test_console.)"""

import contextlib

import luigi

from workflows.base import read_manifest
from workflows.encoders import TrainEncoder
from workflows.nmt import TrainSentencePiece


def test_other_spellings_of_the_inputs_build_nothing_and_upstream_is_relative(luigi_workdir, tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    (data / "w.cs").write_text("".join(f"věta {n}\n" for n in range(40)))
    (data / "w.en").write_text("".join(f"sentence {n}\n" for n in range(40)))
    (tmp_path / "link").symlink_to("data")
    with contextlib.chdir(tmp_path):
        assert luigi.build([TrainSentencePiece(inputs="data/w.cs", vocab_size=40)], local_scheduler=True, log_level="WARNING")
        manifests = {path: path.stat().st_mtime_ns for path in luigi_workdir.rglob("_SUCCESS")}
        assert len(manifests) == 2
        for spelling in ("./data/../data/w.cs", str(data / "w.cs"), "link/w.cs", "link/w.c?"):
            task = TrainSentencePiece(inputs=spelling, vocab_size=40)
            assert luigi.build([task], local_scheduler=True, log_level="WARNING")
            assert {path: path.stat().st_mtime_ns for path in luigi_workdir.rglob("_SUCCESS")} == manifests, spelling
        upstream = read_manifest(task.output_dir)["upstream"]
        assert upstream == {"ingest": f"ingest/{task.requires().output_dir.name}"}
        assert luigi_workdir / upstream["ingest"] == task.requires().output_dir


def test_a_path_parameter_through_a_linked_folder_is_the_same_stage(luigi_workdir, tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "pairs.tsv").write_text("a dog runs\ta dog is running\n")
    (tmp_path / "link").symlink_to("data")
    spellings = [tmp_path / "data" / "pairs.tsv", tmp_path / "link" / "pairs.tsv", tmp_path / "link" / ".." / "data" / "pairs.tsv"]
    assert len({TrainEncoder(train_data=str(path)).fingerprint() for path in spellings}) == 1
    assert TrainEncoder(train_data=str(tmp_path / "data" / "pairs.tsv")).fingerprint() != TrainEncoder(train_data=str(tmp_path / "other.tsv")).fingerprint()
