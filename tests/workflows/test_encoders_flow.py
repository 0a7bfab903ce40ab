"""TrainEncoder and EvaluateSTS through Luigi, on a tiny TSV and tiny STS files made here."""

import json
import shutil

import luigi
import numpy as np
import pytest
from conftest import squeezed

from corpus.errors import InputError
from corpus.sts import STS2017_SET, STS_TEST_SETS, MissingStsFiles
from models.encode import load_encoder
from workflows.encoders import EvaluateSTS, TrainEncoder

WORDS = "man woman dog cat plays runs eats guitar piano ball food field park".split()
TINY = dict(model="word_avg", embed_dim=8, epochs=2, batch_size=8, megabatch=2)


@pytest.fixture
def sts_dir(tmp_path):
    """Point [sts] dir at a folder the test fills (or leaves empty)."""
    config = luigi.configuration.get_config()
    saved = config.get("sts", "dir", None)
    folder = tmp_path / "sts"
    config.set("sts", "dir", str(folder))
    yield folder
    if saved is None:
        config.remove_option("sts", "dir")
    else:
        config.set("sts", "dir", saved)


def sentences(rng, n):
    return [" ".join(rng.choice(WORDS, 5)) for _ in range(n)]


def write_pairs_tsv(path, n=40):
    rng = np.random.default_rng(0)
    first = sentences(rng, n)
    path.write_text("".join(f"{s}\t{' '.join(reversed(s.split()))}\t0.9\n" for s in first))
    return path


def write_semeval(folder, prefix, name, rng, pairs=6):
    folder.mkdir(parents=True, exist_ok=True)
    a, b = sentences(rng, pairs), sentences(rng, pairs)
    (folder / f"{prefix}.input.{name}.txt").write_text("".join(f"{x}\t{y}\n" for x, y in zip(a, b, strict=True)))
    (folder / f"{prefix}.gs.{name}.txt").write_text("".join(f"{g:.1f}\n" for g in rng.uniform(0, 5, pairs)))


def fill_sts(folder):
    rng = np.random.default_rng(1)
    for year, names in STS_TEST_SETS.items():
        for name in names:
            write_semeval(folder / f"STS{year}-test", "STS2016" if year == "2016" else "STS", name, rng)
    write_semeval(folder / "STS2017", "STS", STS2017_SET, rng)
    a, b = sentences(rng, 8), sentences(rng, 8)  # STS-B dev: the default development set
    (folder / "stsbenchmark").mkdir(parents=True, exist_ok=True)
    (folder / "stsbenchmark" / "sts-dev.csv").write_text("".join(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{g:.1f}\t{x}\t{y}\n"
                                                                 for i, (x, y, g) in enumerate(zip(a, b, rng.uniform(0, 5, 8), strict=True))))


def test_train_encoder_without_sts_warns_and_keeps_the_last_weights(luigi_workdir, sts_dir, tmp_path, caplog):
    task = TrainEncoder(train_data=str(write_pairs_tsv(tmp_path / "pairs.tsv")), **TINY)
    assert luigi.build([task], local_scheduler=True)
    (warning,) = [r.getMessage() for r in caplog.records if "development set" in r.getMessage()]
    assert warning.startswith("encoders: no stsb-dev development set, keeping the last weights") and "\n" not in warning
    assert str(sts_dir) in warning  # names what is missing
    manifest = json.loads((task.output_dir / "_SUCCESS").read_text())
    assert manifest["pairs"] == 40 and manifest["steps"] == 2 * 5 and manifest["dev"]["set"] is None
    assert not (task.output_dir / "checkpoint.pt").exists()
    assert (luigi_workdir / "encoders" / "latest").resolve() == task.output_dir
    encoder = load_encoder(task.output_dir, "cpu")
    assert encoder.encode(["a man plays guitar"]).shape == (1, 8)


def test_evaluate_sts_writes_json_and_markdown_reports(luigi_workdir, sts_dir, tmp_path):
    fill_sts(sts_dir)
    task = EvaluateSTS(train_data=str(write_pairs_tsv(tmp_path / "pairs.tsv")), **TINY)
    assert luigi.build([task], local_scheduler=True)
    training = json.loads((task.requires().output_dir / "_SUCCESS").read_text())
    assert training["dev"]["set"] == "stsb-dev" and [s for s, _ in training["dev"]["history"]] == [5, 10]
    report = json.loads((task.output_dir / "report.json").read_text())
    assert {d["year"] for d in report["datasets"]} == {*STS_TEST_SETS, "2017", "STS-B"}
    assert len(report["datasets"]) == sum(map(len, STS_TEST_SETS.values())) + 2
    assert any("sts-test.csv" in path for path in report["meta"]["absent"])
    markdown = squeezed((task.output_dir / "report.md").read_text())
    assert markdown.startswith("| model |") and "| word_avg | 8 |" in markdown and "2012–2016" in markdown
    assert "–: that set is absent from the STS folder" in task.result_summary()  # the STS-B test cell
    shutil.copy(sts_dir / "stsbenchmark" / "sts-dev.csv", sts_dir / "stsbenchmark" / "sts-test.csv")
    task = EvaluateSTS(train_data=str(tmp_path / "pairs.tsv"), **TINY)  # the STS files are part of its fingerprint
    assert luigi.build([task], local_scheduler=True)
    assert "that set is absent" not in task.result_summary()


def test_evaluate_sts_names_the_missing_files(luigi_workdir, sts_dir, tmp_path):
    task = EvaluateSTS(train_data=str(write_pairs_tsv(tmp_path / "pairs.tsv")), **TINY)
    assert luigi.build([task.requires()], local_scheduler=True)
    with pytest.raises(MissingStsFiles, match=str(sts_dir)) as missing:  # no STS folder at all
        task.build(tmp_path / "out")
    assert "get them with `paranmt-data fetch sts --to DIR`, then set [sts] dir = DIR in luigi.cfg" in str(missing.value)
    assert "\n" not in str(missing.value)
    fill_sts(sts_dir)
    (sts_dir / "STS2014-test" / "STS.gs.images.txt").unlink()
    with pytest.raises(MissingStsFiles, match="STS2014-test/STS.gs.images.txt"):
        task.build(tmp_path / "out")


def test_train_data_is_required(luigi_workdir):
    with pytest.raises(InputError, match="--train-data"):
        TrainEncoder().training_data()


def test_training_on_cuda_holds_the_gpu_resource():
    assert TrainEncoder(train_data="x.tsv", device="cuda").resources == {"gpu": 1}
    assert TrainEncoder(train_data="x.tsv", device="cpu").resources == {}


def test_several_training_sources_with_shares_are_one_training_set_named_in_the_manifest(luigi_workdir, sts_dir, tmp_path):
    """--train-data takes a TSV and a second source with a share: the manifest says what the set
    was made of; a share is part of what the output is known by, a path's spelling is not."""
    one, two = write_pairs_tsv(tmp_path / "one.tsv", 40), write_pairs_tsv(tmp_path / "two.tsv", 60)
    task = TrainEncoder(train_data=f"{one},0.5={two}", **TINY)
    assert luigi.build([task], local_scheduler=True)
    manifest = json.loads((task.output_dir / "_SUCCESS").read_text())
    taken = manifest["sources"][1]["pairs"]
    assert manifest["sources"] == [{"source": str(one), "share": 1.0, "pairs": 40}, {"source": str(two), "share": 0.5, "pairs": taken}]
    assert manifest["pairs"] == 40 + taken and 15 < taken < 45
    other_share = TrainEncoder(train_data=f"{one},0.25={two}", **TINY)
    spelled_otherwise = TrainEncoder(train_data=f"{tmp_path}/./one.tsv, 0.5={tmp_path}/../{tmp_path.name}/two.tsv", **TINY)
    assert other_share.fingerprint() != task.fingerprint() == spelled_otherwise.fingerprint()
