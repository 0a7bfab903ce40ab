"""Translations made elsewhere (--translations): pairs per system and reference, unscored or
scored by a named model, rejects for bad lines, one-line errors for misaligned files."""

import gzip
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import luigi
import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from conftest import require_shared
from nmt_fixtures import tiny_nmt_fixture, toy_pairs  # noqa: F401 - the tiny_nmt fixture
from test_bad_input_cli import REPO, assert_one_line_error, luigi_command, run_luigi

import schemas
from corpus.outputs import read_manifest
from corpus.readers import INVISIBLE_FORMATTING
from models.nmt import export
from models.nmt.model import NmtModel
from models.nmt.translate import load_translator
from workflows import ImportTranslations

VECTORS = "the a man woman dog cat plays runs eats in park . guitar".split()
SOURCES = ["Muž hraje.", "Pes běží.", "Kočka jí.", "Žena hraje na kytaru.", "Pes je v parku."]
REFERENCE_A = ["A man plays.", "A dog runs.", "A cat eats.", "A woman plays the guitar.", "The dog is in the park."]
REFERENCE_B = ["The man plays.", "The dog runs.", "The cat eats.", "The woman plays guitar.", "A dog is in a park."]
SYSTEM_1 = ["a man plays .", "the dog runs", "a cat eats", "woman plays guitar", "the dog in the park"]
SYSTEM_2 = ["man plays", "", "cat eats .", "a woman plays a guitar", "dog is in park"]


@pytest.fixture
def inputs(tmp_path):
    """A foreign file, two references, two systems' translations (system 2's line 2 empty), and
    word vectors for the PP model."""
    folder = tmp_path / "data"
    folder.mkdir()
    for name, lines in (("test.cs", SOURCES), ("ref.A.en", REFERENCE_A), ("ref.B.en", REFERENCE_B),
                        ("hyp.one.en", SYSTEM_1), ("hyp.two.en", SYSTEM_2)):
        (folder / name).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    rng = np.random.default_rng(0)
    (folder / "vectors.txt").write_text("".join(f"{word} {' '.join(f'{x:.3f}' for x in rng.normal(size=8))}\n" for word in VECTORS))
    return folder


def arguments(folder):
    return ["--inputs", f"{folder}/test.cs::{folder}/ref.A.en,{folder}/test.cs::{folder}/ref.B.en",
            "--translations", f"{folder}/test.cs::{folder}/hyp.*.en"]


def test_build_paranmt_pairs_every_system_with_every_reference_and_rejects_empty_lines(tmp_path, inputs):
    work = tmp_path / "work"
    result = run_luigi(work, "BuildParaNMT", *arguments(inputs), "--pp-vectors", str(inputs / "vectors.txt"), cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "trans_score: empty, not ranked" in output and "rejected at translations: 2 (empty_translation 2)" in output
    corpus = pd.read_parquet(work / "corpus" / "latest" / "corpus")
    assert len(corpus) == 5 * 2 * 2 - 2
    assert corpus.trans_score.isna().all() and corpus.decile_trans.isna().all() and corpus.trans_n_tokens.isna().all()
    assert sorted(corpus.system.unique()) == ["one", "two"]  # what differs between hyp.one.en and hyp.two.en
    for row in corpus.itertuples():  # every pair is its foreign line's: never shifted
        line = int(row.id.split("~")[-2].rsplit("-", 1)[1])
        references = REFERENCE_A if row.source.endswith("ref.A.en") else REFERENCE_B
        translations = SYSTEM_1 if row.system == "one" else SYSTEM_2
        assert (row.foreign, row.reference, row.translation) == (SOURCES[line - 1], references[line - 1], translations[line - 1])
    rejects = pd.read_parquet(work / "translations" / "latest" / "rejects")
    assert rejects[["source", "line", "reason"]].values.tolist() == [["hyp.two.en", 2, "empty_translation"]] * 2
    summary = json.loads((work / "corpus" / "latest" / "summary.json").read_text())
    assert summary["not_ranked"] == {"trans": "trans_score"} and "trans" not in summary["deciles"]
    assert "Not ranked: `trans_score`" in (work / "corpus" / "latest" / "summary.md").read_text()

    refused = run_luigi(work, "SelectTrainingSet", *arguments(inputs), "--pp-vectors", str(inputs / "vectors.txt"), "--scorer", "trans", cwd=tmp_path)
    assert_one_line_error(refused, "--scorer trans: the corpus has no trans_score (no model scored its translations)")


def test_a_file_with_many_rejects_is_named_in_the_warning_and_counted_in_the_manifest(tmp_path, inputs):
    """System two's empty line is a fifth of its lines: the warning names its file and points at
    the rejects where they are once the run has ended; the manifest counts each file's pairs and
    rejects under a key of their own (they were overwritten by the output's list of files)."""
    work = tmp_path / "work"
    result = run_luigi(work, "ImportTranslations", *arguments(inputs), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    warning = next(line for line in (result.stdout + result.stderr).splitlines() if "lines of hyp.two.en rejected" in line)
    committed = (work / "translations" / "latest").resolve() / "rejects"
    assert warning.endswith(f"see {committed}") and committed.is_dir()
    manifest = read_manifest(work / "translations" / "latest")
    assert manifest["translation_files"] == {
        "hyp.one.en": {"system": "one", "pairs": 10, "rejects": {}},
        "hyp.two.en": {"system": "two", "pairs": 8, "rejects": {"empty_translation": 2}}}
    assert all(name.startswith(("pairs/", "rejects/")) for name in manifest["files"])


@pytest.mark.parametrize("change, expected", [
    (lambda folder: (folder / "hyp.two.en").write_text("one line short\n" * 4), "hyp.two.en has 4 lines but its foreign file"),
    (lambda folder: (folder / "hyp.two.en").write_text("one line more\n" * 6), "hyp.two.en has 6 lines but its foreign file"),
], ids=["shorter", "longer"])
def test_a_translation_file_not_aligned_with_its_foreign_file_is_one_line(tmp_path, inputs, change, expected):
    """Said before any work: the ingest it needs has not run (it ran first, an hour at 51.4M pairs)."""
    change(inputs)
    result = run_luigi(tmp_path / "work", "ImportTranslations", *arguments(inputs), cwd=tmp_path)
    assert_one_line_error(result, expected)
    assert not (tmp_path / "work" / "translations").exists() and not (tmp_path / "work" / "ingest").exists()


@pytest.mark.parametrize(("extra", "expected"), [
    (["--ImportTranslations-accept-translations", "distinctness"], "distinctness"),
    (["--translations", "{folder}/test.cs::{folder}/hyp.json"], "hyp.json"),
], ids=["unknown accepted figure", "json lines"])
def test_a_mistake_in_the_command_is_said_before_the_ingest_runs(tmp_path, inputs, extra, expected):
    (inputs / "hyp.json").write_text("".join(f'{{"src": "{s}", "mt": "{t}"}}\n' for s, t in zip(SOURCES, SYSTEM_1, strict=True)))
    args = [*arguments(inputs)[:2], *(["--translations", arguments(inputs)[3]] if extra[0] != "--translations" else []),
            *(part.format(folder=inputs) for part in extra)]
    result = run_luigi(tmp_path / "work", "BuildParaNMT", *args, cwd=tmp_path)
    assert_one_line_error(result, expected)
    assert not (tmp_path / "work" / "ingest").exists()


def test_translations_of_a_file_that_is_not_an_input_are_one_line(tmp_path, inputs):
    (inputs / "other.cs").write_text("Jiná věta.\n")
    result = run_luigi(tmp_path / "work", "ImportTranslations", "--inputs", f"{inputs}/test.cs::{inputs}/ref.A.en",
                       "--translations", f"{inputs}/other.cs::{inputs}/hyp.one.en", cwd=tmp_path)
    assert_one_line_error(result, "other.cs is not the foreign file of any input")


def test_without_a_scoring_model_the_pp_model_cannot_be_bootstrapped(tmp_path, inputs):
    result = run_luigi(tmp_path / "work", "BuildParaNMT", *arguments(inputs), cwd=tmp_path)
    assert_one_line_error(result, "the pairs have no translation score (translations made elsewhere, no --translator named)")


def test_a_named_translator_scores_each_translation_by_forced_decoding(luigi_workdir, tmp_path, tiny_nmt):
    """trans_score is the model's forced-decoding log-probability of the translation made
    elsewhere, as Translator.score gives it; every pair is scored."""
    pairs = toy_pairs(30, seed=11)
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "toy.cs").write_text("".join(cs + "\n" for cs, _ in pairs))
    (folder / "toy.en").write_text("".join(en + "\n" for _, en in pairs))
    translations = [en for _, en in toy_pairs(30, seed=12)]  # another system's output
    (folder / "sys.en").write_text("".join(line + "\n" for line in translations))
    export.export_model(tiny_nmt.model, tmp_path / "model")
    task = ImportTranslations(inputs=str(folder / "toy.cs"), translations=f"{folder}/toy.cs::{folder}/sys.en", translator=str(tmp_path / "model"),
                              share_model=True)  # the model run as BackTranslate runs it (RunsTranslator)
    assert luigi.build([task], local_scheduler=True, log_level="WARNING")
    got = pd.read_parquet(task.output_dir / "pairs").sort_values("id")
    model = NmtModel.load(task.requires()["model"].output_dir)
    expected = load_translator(model, "ctranslate2").score([cs for cs, _ in pairs], translations)
    assert np.allclose(got.trans_score, [h.score for h in expected]) and (got.trans_n_tokens == [h.n_tokens for h in expected]).all()
    manifest = read_manifest(task.output_dir)
    assert manifest["trans_score"].startswith("forced decoding by") and manifest["models_loaded_this_run"] == 1


def test_pairs_written_before_the_system_column_read_with_an_empty_one_and_as_their_rows_only_pair():
    old = pa.table({"id": ["x-1"], "pivot": ["cs"], "foreign": ["Ahoj."], "reference": ["Hi."], "translation": ["Hello."], "trans_score": [-0.5]})
    upgraded = schemas.upgraded(old)
    assert upgraded.column_names == ["id", "pivot", "foreign", "reference", "translation", "system", "bitext_id", "variant", "diversity",
                                     "banned", "sibling_f1", "trans_score"]
    assert upgraded.column("system").to_pylist() == [""] and upgraded.column("bitext_id").to_pylist() == ["x-1"]
    assert upgraded.select(["variant", "diversity", "banned", "sibling_f1"]).to_pylist() == [
        {"variant": 0, "diversity": "", "banned": None, "sibling_f1": None}]


@pytest.mark.slow
def test_the_eight_wmt21_systems_with_both_references_make_16000_pairs(tmp_path):
    """The issue's real data: 8 primary WMT21 cs→en systems × 1,000 sentences × 2 references."""
    wmt21 = require_shared("csen", "wmt21")
    vectors = require_shared("wordvec", "glove50_4k.txt")
    source = wmt21 / "newstest2021.cs-en.src.cs"
    result = run_luigi(tmp_path / "work", "BuildParaNMT",
                       "--inputs", f"{source}::{wmt21}/newstest2021.cs-en.ref.A.en,{source}::{wmt21}/newstest2021.cs-en.ref.B.en",
                       "--translations", f"{source}::{wmt21}/newstest2021.cs-en.hyp.*.en", "--pp-vectors", str(vectors), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    corpus = pd.read_parquet(tmp_path / "work" / "corpus" / "latest" / "corpus")
    assert len(corpus) == 16_000 and corpus.system.nunique() == 8 and corpus.source.nunique() == 2
    assert read_manifest(tmp_path / "work" / "translations" / "latest")["rejects"]["total"] == 0


LINES = 12_000  # past a translation file's first run of 10,000 lines
SHARD_ROWS = 2_000
CHUNK_ROWS = 1_500  # chunks that straddle shards' and runs' boundaries


def numbered(lines: int, text: str) -> bytes:
    return "".join(f"{text.format(n=n)}\n" for n in range(1, lines + 1)).encode()


@pytest.fixture(scope="module")
def long_inputs(tmp_path_factory):
    """A 12,000-line foreign file, its reference, and one system's translations three times: as
    plain LF text, gzip, and CRLF text."""
    folder = tmp_path_factory.mktemp("long")
    (folder / "long.cs").write_bytes(numbered(LINES, "Věta číslo {n} je tady."))
    (folder / "long.en").write_bytes(numbered(LINES, "Sentence number {n} is here."))
    translations = numbered(LINES, "The sentence number {n} is here.")
    (folder / "hyp.lf.en").write_bytes(translations)
    (folder / "hyp.gzip.en.gz").write_bytes(gzip.compress(translations))
    (folder / "hyp.crlf.en").write_bytes(translations.replace(b"\n", b"\r\n"))
    return folder


def long_command(workdir, folder, *extra):
    return [sys.executable, "-m", "luigi", "--module", "workflows", "ImportTranslations", "--inputs", f"{folder}/long.cs",
            "--translations", f"{folder}/long.cs::{folder}/hyp.*", "--IngestBitext-shard-rows", str(SHARD_ROWS),
            "--chunk-rows", str(CHUNK_ROWS), "--local-scheduler", "--paranmt-workdir", str(workdir), *extra]


def imported(workdir) -> pd.DataFrame:
    return pd.read_parquet(workdir / "translations" / "latest" / "pairs").sort_values("id", ignore_index=True)


@pytest.fixture(scope="module")
def long_run(long_inputs, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("long-run") / "work"
    result = subprocess.run(long_command(workdir, long_inputs), capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout + result.stderr
    return workdir


def test_gzip_and_crlf_translations_give_the_plain_files_pairs_past_its_first_run_and_chunk(long_run):
    pairs = imported(long_run)
    assert len(pairs) == 3 * LINES and read_manifest(long_run / "translations" / "latest")["rejects"]["total"] == 0
    by_system = {system: rows.drop(columns=["id", "system"]).reset_index(drop=True) for system, rows in pairs.groupby("system")}
    assert sorted(by_system) == ["crlf", "gzip", "lf"]
    pd.testing.assert_frame_equal(by_system["gzip"], by_system["lf"])
    pd.testing.assert_frame_equal(by_system["crlf"], by_system["lf"])
    lines = by_system["lf"]
    for n in (1, 1_500, 2_001, 9_999, 10_001, LINES):  # each pair is its own line's, on both sides of every boundary
        row = pairs[pairs.id == f"long.cs-{n:09d}~gzip"].iloc[0]
        assert (row.foreign, row.reference, row.translation) == (f"Věta číslo {n} je tady.", f"Sentence number {n} is here.",
                                                                 f"The sentence number {n} is here.")
    assert len(lines) == LINES


def test_a_gzip_files_units_are_read_apart_by_any_worker_from_one_plain_copy_removed_at_the_end(long_run):
    """A gzip file cannot be entered in the middle: its units were one element, read by one worker
    (a 1M-line file took 1.8 times as long as plain on 2 cores). The stage decompresses it once."""
    manifest = read_manifest(long_run / "translations" / "latest")
    shards = len(list((long_run / "ingest" / "latest" / "bitext").glob("part-*")))
    assert shards >= 3 and manifest["work_elements_this_run"] == 3 * shards  # three files, every unit its own element
    assert not [path for path in (long_run / "translations").rglob("*") if ".plain-copies" in str(path)]


def test_a_killed_import_resumes_to_the_same_pairs(long_inputs, long_run, tmp_path):
    workdir = tmp_path / "work"
    run = subprocess.Popen(long_command(workdir, long_inputs), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    written = lambda: {path.name: path.stat().st_mtime_ns for path in workdir.glob("translations/.*.partial/pairs/part-*")}  # noqa: E731
    deadline = time.monotonic() + 300
    while len(written()) < 2:
        assert time.monotonic() < deadline and run.poll() is None, "the import wrote no part before it ended"
        time.sleep(0.02)
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    before = written()
    assert 2 <= len(before) < 3 * LINES // SHARD_ROWS
    rerun = subprocess.run(long_command(workdir, long_inputs), capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stdout + rerun.stderr
    after = {path.name: path.stat().st_mtime_ns for path in (workdir / "translations" / "latest" / "pairs").glob("part-*")}
    assert {name: after[name] for name in before} == before, "a part written before the kill was written again"
    assert sorted(path.read_bytes() for path in (workdir / "translations" / "latest" / "pairs").glob("part-*")) == \
        sorted(path.read_bytes() for path in (long_run / "translations" / "latest" / "pairs").glob("part-*"))


@pytest.mark.parametrize("write, expected", [
    (lambda path: path.write_bytes(b"\x01\n" * 5), "no usable translation in hyp.two.en: 10 lines rejected (control_character 10)"),
    (lambda path: path.write_bytes(gzip.compress(b"x\n" * 5000)[:40]), "is damaged (the file ends inside gzip member 1"),
    (lambda path: path.write_bytes(gzip.compress(b"x\n" * 5)[:-4]), "is damaged (the file ends inside gzip member 1"),
    (lambda path: path.write_text("".join(f'{{"mt": "line {n}", "score": 0.5}}\n' for n in range(5))), "holds JSON lines (fields mt, score)"),
    (lambda path: path.write_text("".join(f"line {n}\t0.5\n" for n in range(5))), "is a table (2 tab-separated columns"),
], ids=["every-line-rejected", "gzip-cut-in-half", "gzip-trailer-cut", "jsonl", "tsv"])
def test_a_translation_file_that_gives_no_pair_is_one_line_and_a_failed_run(tmp_path, inputs, write, expected):
    write(inputs / "hyp.two.en")
    result = run_luigi(tmp_path / "work", "ImportTranslations", *arguments(inputs), cwd=tmp_path)
    assert_one_line_error(result, expected)


def test_systems_are_named_by_the_user_or_by_what_differs_and_a_tilde_stays_out_of_the_ids_join(tmp_path, inputs):
    (inputs / "hyp.two.en").rename(inputs / "hyp.t~wo.en")
    listing = tmp_path / "translations.txt"
    listing.write_text(f"# one system named by the user, the other by its file's name\n{inputs}/test.cs::first={inputs}/hyp.one.en\n"
                       f"{inputs}/test.cs::{inputs}/hyp.t~wo.en\n")
    inputs_listing = tmp_path / "inputs.txt"
    inputs_listing.write_text("data/test.cs::data/ref.A.en\n")
    result = run_luigi(tmp_path / "work", "ImportTranslations", "--inputs", f"@{inputs_listing}", "--translations", f"@{listing}", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    pairs = imported(tmp_path / "work")
    assert sorted(pairs.system.unique()) == ["first", "hyp.t~wo.en"]
    assert pairs.id[pairs.system == "hyp.t~wo.en"].str.endswith("~hyp.t%7Ewo.en").all()
    assert pairs.id.str.rsplit("~", n=1).str[1].str.replace("%7E", "~").tolist() == pairs.system.tolist()


@pytest.mark.slow
def test_every_wmt_system_into_english_through_the_listings_makes_every_pair_exactly(tmp_path):
    """The README's command over ../shared/data/translations (configs/wmt-translations): 180
    systems of 13 test sets in 9 languages, each of their lines with each reference, or a reject."""
    data = require_shared("translations")
    listings = REPO / "configs" / "wmt-translations"
    result = subprocess.run(luigi_command(tmp_path / "work", "ImportTranslations", "--inputs", f"@{listings}/inputs.txt", "--translations",
                                          f"@{listings}/translations.txt", "--source-language", "cs,de,ha,is,ja,ru,zh,he,uk"),
                            cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout + result.stderr
    pairs = imported(tmp_path / "work")
    rejects = pd.read_parquet(tmp_path / "work" / "translations" / "latest" / "rejects")
    assert len(pairs) + len(rejects) == 316_085 and pairs.system.str.contains(".hyp.").sum() == 0
    def read(path):  # the text as every input's is read: invisible formatting removed (docs/README-reference.md)
        return [line.translate(INVISIBLE_FORMATTING) for line in gzip.decompress(path.read_bytes()).decode("utf-8").split("\n")[:-1]]
    systems = sorted(data.glob("wmt2*/system-outputs/*.hyp.*.en.gz"))
    references = {path.name: path for path in data.glob("wmt2*/references/*.en.gz")}
    assert len(systems) == 180
    for source, rows in pairs.groupby("source"):  # every pair is its line's translation and reference
        test = source.split(".src.")[0]
        reference_name = source.split("~")[1] if "~" in source else next(name for name in references if name.startswith(f"{test}.ref."))
        reference = read(references[reference_name])
        lines = rows.id.str.rsplit("~", n=1).str[0].str.rsplit("-", n=1).str[1].astype(int)
        assert (rows.reference.values == [reference[n - 1] for n in lines]).all(), source
        for system_file in (path for path in systems if path.name.startswith(f"{test}.hyp.")):
            system = system_file.name.removesuffix(".en.gz").split(".hyp.")[1]
            translations, mine = read(system_file), rows.system == system
            assert (rows.translation[mine].values == [translations[n - 1] for n in lines[mine]]).all(), (source, system)
            assert (mine.sum() + (rejects.source == system_file.name).sum() // sum(name.startswith(f"{test}.ref.") for name in references)
                    == len(translations))


@pytest.mark.parametrize("translations, figure, accepted", [
    (["A man in a blue shirt is standing in front of a building."] * 5, "distinct", "distinct"),
    (SOURCES, "copies", "copies,english"),  # Czech copied: not English either
    ([f"{line} Of the end of the end of the end of the world." for line in REFERENCE_A], "loops", "loops"),
], ids=["one-sentence-for-every-source", "copies-its-source", "loops"])
def test_a_translator_that_says_one_sentence_or_copies_stops_the_run_in_one_line_unless_accepted(tmp_path, inputs, translations, figure, accepted):
    for name in ("hyp.one.en", "hyp.two.en"):
        (inputs / name).write_text("".join(line + "\n" for line in translations), encoding="utf-8")
    stopped = run_luigi(tmp_path / "work", "ImportTranslations", *arguments(inputs), cwd=tmp_path)
    assert_one_line_error(stopped, f"--ImportTranslations-accept-translations {figure} goes on anyway")
    went_on = run_luigi(tmp_path / "work", "ImportTranslations", *arguments(inputs), "--accept-translations", accepted, cwd=tmp_path)
    assert went_on.returncode == 0, went_on.stdout + went_on.stderr
    check = read_manifest(tmp_path / "work" / "translations" / "latest")["translation_check"]
    assert sorted(check) == ["hyp.one.en", "hyp.two.en"] and {"distinct": 0.2, "copies": 1.0, "loops": 1.0}[figure] == check["hyp.one.en"][figure]


def test_a_pp_encoder_over_pieces_is_one_line_before_any_work(tmp_path, inputs):
    """The PP similarity averages a Word Avg's word vectors: an encoder over sentencepiece pieces
    (TrainEncoder's default) is refused before the ingest, not after two stages in a traceback."""
    from models.configs import EncoderConfig
    from models.encoder_io import CONFIG, FORMAT

    encoder = tmp_path / "pieces-encoder"
    encoder.mkdir()
    (encoder / CONFIG).write_text(json.dumps({"format": FORMAT, "encoder": EncoderConfig().to_dict()}))
    result = run_luigi(tmp_path / "work", "BuildParaNMT", *arguments(inputs), "--pp-encoder", str(encoder), cwd=tmp_path)
    output = result.stdout + result.stderr
    assert result.returncode == 35 and "Traceback" not in output, output  # luigi.cfg [retcode]: a task could not be scheduled
    assert any("is a word_avg over pieces: the PP similarity is a Word Avg over Moses words" in line for line in output.splitlines()), output
    assert not (tmp_path / "work" / "ingest").exists()


@pytest.mark.parametrize(("write", "says"), [
    (lambda path: path.write_text("".join(json.dumps({"src": s, "mt": t, "score": 0.5}, ensure_ascii=False) + "\n"
                                          for s, t in zip(SOURCES, SYSTEM_1, strict=True)), encoding="utf-8"), "holds JSON lines"),
    (lambda path: path.write_text("".join(f"{s}\t{t}\n" for s, t in zip(SOURCES, SYSTEM_1, strict=True)), encoding="utf-8"), "is a table"),
    (lambda path: path.write_bytes("".join(t + "\n" for t in SYSTEM_1).encode("utf-16")), "is UTF-16 text"),
], ids=["jsonl with the source first", "tsv with the source first", "utf-16 from PowerShell"])
def test_a_refused_translation_file_comes_with_a_command_that_works_as_printed(tmp_path, inputs, write, says):
    """The advice names the translations, not the source beside them, and is a command, not a
    template: run as printed from another folder, it writes the file the next run takes."""
    write(inputs / "hyp.one.en")
    refused = run_luigi(tmp_path / "work", "ImportTranslations", *arguments(inputs), cwd=tmp_path)
    assert_one_line_error(refused, says)
    line = next(line for line in (refused.stdout + refused.stderr).splitlines() if says in line)
    command = line.split("; run: ", 1)[1].removesuffix(" [failed ImportTranslations]")  # one command: one candidate
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    subprocess.run(["bash", "-c", command], cwd=elsewhere, check=True)
    written = command.rsplit("> ", 1)[1].strip("'")
    assert Path(written).read_text(encoding="utf-8").splitlines() == SYSTEM_1
    result = run_luigi(tmp_path / "work", "ImportTranslations", *arguments(inputs)[:2], "--translations",
                       f"{inputs}/test.cs::one={written},{inputs}/test.cs::{inputs}/hyp.two.en", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_text_file_whose_first_line_is_a_json_object_is_text(tmp_path, inputs):
    """The format is judged on the file's first lines, not its first: a translation may be JSON."""
    (inputs / "hyp.one.en").write_text('{"a": "b"}\n' + "".join(t + "\n" for t in SYSTEM_1[1:]), encoding="utf-8")
    result = run_luigi(tmp_path / "work", "ImportTranslations", *arguments(inputs), cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    pairs = pd.read_parquet(tmp_path / "work" / "translations" / "latest" / "pairs")
    assert '{"a": "b"}' in set(pairs.translation)


def test_the_corpus_line_names_each_system_once_and_counts_the_names_left_out():
    """A WMT corpus has 180 systems, one per test set and system: the console's line named all
    180, most of them several times."""
    from workflows.corpus import SYSTEMS_NAMED, named_briefly

    assert named_briefly(["Online-B", "CUNI", "Online-B"]) == "Online-B, CUNI"
    many = [f"system-{n % 30}" for n in range(180)]
    assert named_briefly(many) == ", ".join(f"system-{n}" for n in range(SYSTEMS_NAMED)) + f" and {30 - SYSTEMS_NAMED} more names"
