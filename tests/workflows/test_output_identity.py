"""What an output is known by: its fingerprint changes exactly when its rows would.

Property, through ImportTranslations (the stage that takes names and roles for its input files):
vary one thing at a time (a system's name, two names swapped, a translation file's bytes, the
folder that tells two files of one name apart; a path's spelling, the whole data folder moved)
and check that two runs' outputs share a fingerprint exactly when their rows are equal. Before
the fix, a name given as ``NAME=dir/file`` was not part of the identity: swapping two names reused
the first run's output, whose pairs carried the old names (issue 61).
"""

import shutil

import luigi
import pandas as pd
import pytest
from test_bad_input_cli import assert_one_line_error, run_luigi  # noqa: F401 - shared helpers
from test_translations_flow import REFERENCE_A, SOURCES, SYSTEM_1, SYSTEM_2

from models.nmt import fairseq_train
from models.nmt.devices import resolve_device
from workflows import (
    BackTranslate,
    EvaluateTranslator,
    ImportTranslations,
    IngestBitext,
    TrainTranslator,
)


def write(folder, files: dict[str, list[str]]) -> None:
    for name, lines in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def data(tmp_path):
    folder = tmp_path / "data"
    write(folder, {"test.cs": SOURCES, "ref.en": REFERENCE_A, "hyp/one.en": SYSTEM_1, "hyp/two.en": SYSTEM_2,
                   "a/out.en": SYSTEM_1, "b/out.en": SYSTEM_2})
    return folder


def task(folder, translations: str) -> ImportTranslations:
    return ImportTranslations(inputs=f"{folder}/test.cs::{folder}/ref.en", translations=translations)


def rows(work, folder, translations: str) -> tuple[str, pd.DataFrame]:
    """The stage's fingerprint and its pairs (what a user reads of them) for one spelling, built
    in a work directory of its own (``work``): rows made, never an earlier output reused."""
    luigi.configuration.get_config().set("paranmt", "workdir", str(work))
    stage = task(folder, translations)
    assert luigi.build([stage], local_scheduler=True, log_level="WARNING")
    pairs = pd.read_parquet(stage.output_dir / "pairs")[["id", "system", "translation", "reference"]]
    return stage.fingerprint(), pairs.sort_values("id").reset_index(drop=True)


def variants(data, moved) -> dict[str, tuple]:
    """Each spelling of the command, with the data folder it reads."""
    named = "{0}/test.cs::Alpha={0}/hyp/one.en,{0}/test.cs::Beta={0}/hyp/two.en"
    return {
        "named": (data, named.format(data)),
        "names swapped": (data, f"{data}/test.cs::Beta={data}/hyp/one.en,{data}/test.cs::Alpha={data}/hyp/two.en"),
        "one renamed": (data, f"{data}/test.cs::Gamma={data}/hyp/one.en,{data}/test.cs::Beta={data}/hyp/two.en"),
        "spelled otherwise": (data, f"{data}/test.cs::Alpha={data}/hyp/../hyp/one.en,{data}/./test.cs::Beta={data}//hyp/two.en"),
        "folder moved": (moved, named.format(moved)),
        "derived names": (data, f"{data}/test.cs::{data}/hyp/*.en"),
        "derived from folders": (data, f"{data}/test.cs::{data}/[ab]/out.en"),
    }


def test_the_fingerprint_changes_exactly_when_the_rows_would(luigi_workdir, data, tmp_path):
    moved = tmp_path / "elsewhere" / "data"
    shutil.copytree(data, moved)
    built = {label: rows(luigi_workdir / str(number), folder, translations)
             for number, (label, (folder, translations)) in enumerate(variants(data, moved).items())}
    # Rows depend on the names and bytes, never on where the files are or how their paths are spelled.
    base_id = lambda frame: frame.assign(id=frame.id.str.replace(str(moved), str(data)))  # noqa: E731 - ids hold no path
    for first, (fingerprint_a, rows_a) in built.items():
        for second, (fingerprint_b, rows_b) in built.items():
            same_rows = base_id(rows_a).equals(base_id(rows_b))
            assert (fingerprint_a == fingerprint_b) == same_rows, (first, second, fingerprint_a, fingerprint_b)
    assert sorted(built["names swapped"][1].system.unique()) == ["Alpha", "Beta"]
    assert built["named"][0] == built["spelled otherwise"][0] == built["folder moved"][0]
    assert built["derived names"][1].system.unique().tolist() != built["named"][1].system.unique().tolist()


def test_swapped_names_through_the_luigi_command_relabel_nothing(tmp_path, data):
    """The user's case: one work directory, the names swapped on the second run."""
    work = tmp_path / "work"
    common = ["--inputs", f"{data}/test.cs::{data}/ref.en"]
    for first, second in (("Alpha", "Beta"), ("Beta", "Alpha")):
        result = run_luigi(work, "ImportTranslations", *common, "--translations",
                           f"{data}/test.cs::{first}={data}/hyp/one.en,{data}/test.cs::{second}={data}/hyp/two.en", cwd=tmp_path)
        assert result.returncode == 0, result.stdout + result.stderr
        pairs = pd.read_parquet(work / "translations" / "latest" / "pairs")
        assert set(pairs[pairs.translation == SYSTEM_1[0]].system) == {first}


@pytest.mark.parametrize("place", ["command line", "listing", "listing with a byte-order mark", "config file"])
def test_an_item_reads_the_same_wherever_it_is_written(luigi_workdir, data, place):
    """One reading of ``foreign::NAME=file``: a name holding ``/`` or ``::`` stays a name in a
    listing (it came out as a path joined to the listing's folder), a byte-order mark does not
    take the first line, and the config file reads as the command line."""
    items = [("Team/A", "hyp/one.en"), ("Sys::v2", "hyp/two.en")]
    spec = ",".join(f"{data}/test.cs::{name}={data}/{path}" for name, path in items)
    if place.startswith("listing"):  # paths relative to the listing's folder
        listing = data / "systems.txt"
        lines = [f"test.cs::{name}={path}\n" for name, path in items]
        listing.write_text(("\ufeff" if "mark" in place else "") + "".join(lines) + "# a comment\n", encoding="utf-8")
        spec = f"@{listing}"
    config = luigi.configuration.get_config()
    if place == "config file":
        config.set("ImportTranslations", "translations", spec)
    try:
        stage = ImportTranslations(inputs=f"{data}/test.cs::{data}/ref.en", **({} if place == "config file" else {"translations": spec}))
        assert luigi.build([stage], local_scheduler=True, log_level="WARNING")
    finally:
        config.remove_option("ImportTranslations", "translations") if place == "config file" else None
    pairs = pd.read_parquet(stage.output_dir / "pairs")
    assert {system: set(group.translation) for system, group in pairs.groupby("system")} == {"Team/A": set(SYSTEM_1), "Sys::v2": set(SYSTEM_2) - {""}}


def built_bitext(work, **params) -> tuple[str, pd.DataFrame]:
    """IngestBitext's fingerprint and bitext rows for one spelling, in a work directory of its own."""
    luigi.configuration.get_config().set("paranmt", "workdir", str(work))
    stage = IngestBitext(**params)
    assert luigi.build([stage], local_scheduler=True, log_level="WARNING")
    return stage.fingerprint(), pd.read_parquet(stage.output_dir / "bitext").sort_values("id").reset_index(drop=True)


def test_the_ingest_is_known_by_its_files_names_roles_and_language(luigi_workdir, data, tmp_path):
    """The same property through IngestBitext: a file's recorded name (its rows' source and ids),
    which text is the foreign side, and its language shape the rows; a path's spelling and a
    folder move do not."""
    (data / "renamed.cs").write_bytes((data / "test.cs").read_bytes())
    (data / "renamed.en").write_bytes((data / "ref.en").read_bytes())
    (data / "ref.cs").write_bytes((data / "ref.en").read_bytes())
    (data / "test.en").write_bytes((data / "test.cs").read_bytes())
    moved = tmp_path / "elsewhere"
    shutil.copytree(data, moved)
    variants = {
        "given": {"inputs": f"{data}/test.cs::{data}/ref.en"},
        "spelled otherwise": {"inputs": f"{data}/./hyp/../test.cs::{data}//ref.en"},
        "folder moved": {"inputs": f"{moved}/test.cs::{moved}/ref.en"},
        "file renamed": {"inputs": f"{data}/renamed.cs::{data}/renamed.en"},
        "sides swapped": {"inputs": f"{data}/ref.cs::{data}/test.en"},  # the same two files' bytes, each in the other's role
        "other language": {"inputs": f"{data}/test.cs::{data}/ref.en", "source_language": "sk"},
    }
    built = {label: built_bitext(luigi_workdir / str(n), **params) for n, (label, params) in enumerate(variants.items())}
    for first, (fingerprint_a, rows_a) in built.items():
        for second, (fingerprint_b, rows_b) in built.items():
            assert (fingerprint_a == fingerprint_b) == rows_a.equals(rows_b), (first, second)
    assert built["given"][0] == built["spelled otherwise"][0] == built["folder moved"][0] != built["file renamed"][0]


def test_a_translator_is_known_by_the_recipe_it_learned_not_the_device(luigi_workdir, monkeypatch):
    """The device is no part of a translator's identity (a model trained on a GPU serves a CPU);
    auto is the preset it resolves to once the bitext's size is known, and where the other
    device's choice is trained already in the work directory, that one."""
    assert len({TrainTranslator(device=device).fingerprint() for device in ("auto", "cpu", "cuda")}) == 1
    assert luigi.build([IngestBitext()], local_scheduler=True, log_level="WARNING")
    assert TrainTranslator().identifying_parameters()["preset"] == "tiny"
    assert TrainTranslator().fingerprint() == TrainTranslator(preset="tiny").fingerprint() != TrainTranslator(preset="compact").fingerprint()

    here = resolve_device("fairseq", "auto")
    monkeypatch.setattr(fairseq_train, "AUTO_PRESETS", {here: ((10**9, "fast"),), "cuda" if here == "cpu" else "cpu": ((10**9, "tiny"),)})
    assert TrainTranslator(max_epoch=1).resolved_preset() == "fast"
    elsewhere = TrainTranslator(preset="tiny", max_epoch=1, accept_collapse=True)  # as the other device's auto trains it
    assert luigi.build([elsewhere], local_scheduler=True, log_level="WARNING")
    assert TrainTranslator(max_epoch=1).resolved_preset() == "tiny" and TrainTranslator(max_epoch=1).complete()


@pytest.mark.parametrize("task", [BackTranslate, EvaluateTranslator], ids=lambda task: task.__name__)
def test_device_auto_is_known_as_the_device_it_means_here(luigi_workdir, task):
    """--device auto trains with fp16 and translates in float16 on a GPU, not on a CPU: an output
    made with auto is the output of the device auto chose, the same as naming that device, and
    never one made on the other."""
    here = resolve_device(task.engine if isinstance(task.engine, str) else "ctranslate2", "auto")
    other = "cuda" if here == "cpu" else "cpu"
    assert task(device="auto").fingerprint() == task(device=here).fingerprint() != task(device=other).fingerprint()


def test_on_a_dask_cluster_with_a_translation_resource_auto_is_chosen_on_the_workers(luigi_workdir):
    config = luigi.configuration.get_config()
    config.set("paranmt", "runner", "DaskRunner")
    config.set("paranmt", "dask_translation_resource", "GPU")
    auto, here = BackTranslate(device="auto"), BackTranslate(device=resolve_device("ctranslate2", "auto"))
    assert auto.identifying_parameters()["device"] == "auto" and auto.fingerprint() != here.fingerprint()
