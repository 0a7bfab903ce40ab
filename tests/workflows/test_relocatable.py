"""Paths a stage records inside the work directory are relative to it, and an input is known by
its name and its bytes: another spelling, another mount or another machine's copy of the same
files rebuilds nothing; one changed byte rebuilds what depends on it. (A moved, copied or linked
demo work directory, through the ``luigi`` command: test_console.)"""

import contextlib
import shutil

import luigi

from corpus.outputs import read_manifest
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
    assert (TrainEncoder(train_data=str(tmp_path / "data" / "pairs.tsv")).fingerprint()
            != TrainEncoder(train_data=str(tmp_path / "other.tsv")).fingerprint())


def stage_manifests(workdir):
    return {path: path.stat().st_mtime_ns for path in workdir.rglob("_SUCCESS")}


def test_the_same_bytes_at_another_path_build_nothing_and_one_changed_byte_rebuilds(luigi_workdir, tmp_path):
    first, second = tmp_path / "node-a" / "czeng", tmp_path / "mnt" / "node-b" / "data" / "czeng"
    first.mkdir(parents=True)
    (first / "w.cs").write_text("".join(f"věta {n}\n" for n in range(40)))
    (first / "w.en").write_text("".join(f"sentence {n}\n" for n in range(40)))
    assert luigi.build([TrainSentencePiece(inputs=str(first / "w.cs"), vocab_size=40)], local_scheduler=True, log_level="WARNING")
    built = stage_manifests(luigi_workdir)
    shutil.copytree(first, second)  # the same files under another mount (or copied to another machine)
    shutil.rmtree(first)
    moved = TrainSentencePiece(inputs=str(second / "w.cs"), vocab_size=40)
    assert moved.complete()
    assert luigi.build([moved], local_scheduler=True, log_level="WARNING")
    assert stage_manifests(luigi_workdir) == built
    (second / "w.en").write_text((second / "w.en").read_text().replace("sentence 7", "sentence 8"))
    assert not TrainSentencePiece(inputs=str(second / "w.cs"), vocab_size=40).complete()
    assert luigi.build([TrainSentencePiece(inputs=str(second / "w.cs"), vocab_size=40)], local_scheduler=True, log_level="WARNING")
    assert len(stage_manifests(luigi_workdir)) == 4  # ingest and sentencepiece built again, beside the first build
