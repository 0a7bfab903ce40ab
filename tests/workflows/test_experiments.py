"""The experiments end to end through Luigi on a small pairs dataset and tiny STS files made by
the tests: reports, runs shared between experiments, idempotent reruns, resuming a half-finished
sweep, equal-sized samples of several sources. (Two worker processes run a sweep in
test_console.py, from a fresh process as a user's command does.)"""

import json
import re
import shutil

import luigi
import numpy as np
import pyarrow.parquet as pq
import pytest
from conftest import squeezed
from test_corpus_flow import WORDS, pairs_dir, pairs_table, shards_of, vectors  # noqa: F401 - fixtures
from test_encoders_flow import fill_sts, sts_dir, write_pairs_tsv  # noqa: F401 - sts_dir is a fixture

import schemas
from corpus.outputs import MANIFEST, read_manifest
from corpus.sts import STS2017_SET, MissingStsFiles, sts_suite
from pipelines.io import write_part
from reports.experiments import DEV
from reports.provenance import count_range
from workflows.base import RELEASE
from workflows.encoders import EvaluateSTS
from workflows.experiments import (
    ChooseDeciles,
    DataSourceComparison,
    DecileSweep,
    MegabatchAblation,
    ModelTable,
    stage_tree,
    uses_demo_corpus,
)

TINY = dict(embed_dim=8, dim=8, batch_size=8, epochs=1)


def build(*tasks):
    """Build ``tasks`` in this process, as ``luigi`` does with one worker: Luigi's worker
    processes are forked, and a fork of this process, which earlier tests left with gRPC, Dask
    and Beam threads, can hang in the child (one did once in CI, under ScoresAgainstJudgments)."""
    assert luigi.build(list(tasks), local_scheduler=True, workers=1, log_level="WARNING")


def manifests(workdir):
    """Every finished stage's manifest path and modification time."""
    return {str(path): path.stat().st_mtime_ns for path in workdir.rglob(MANIFEST)}


def report_of(task):
    return json.loads((task.output_dir / "report.json").read_text())


def assert_png(path):
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 2000


def provenance_of(task):
    """index.html above its first table: the demo warning and the provenance."""
    page = (task.output_dir / "index.html").read_text()
    return page[: page.index('<p class="result">')]


def page_links(task):
    page = (task.output_dir / "index.html").read_text()
    return {label: href for href, label in re.findall(r'<li><a href="([^"]+)">([^<]+)</a></li>', page)}


def test_sweep_ablation_and_model_table_share_runs_rerun_nothing_and_resume(luigi_workdir, pairs_dir, vectors, sts_dir, tmp_path):  # noqa: F811
    fill_sts(sts_dir)
    corpus = dict(pairs=pairs_dir, pp_vectors=vectors, n_pairs=64)
    sweep = DecileSweep(scorers="pp", deciles="8,9", model="word_avg", **corpus, **TINY)
    build(sweep)
    report = report_of(sweep)
    cells = report["data"]["cells"]["pp"]
    assert set(cells) == {"8", "9"} and all(0 < cell["pairs"] <= 40 for cell in cells.values())
    dev = {d: cells[d]["sts"][DEV] for d in ("8", "9")}
    selection = report["data"]["selection"]["pp"]
    assert selection["best_decile"] == int(max(dev, key=dev.get)) and selection["best_range"] == [8, 9]
    for name in ("dev_by_decile", "test_by_decile"):
        assert_png(sweep.output_dir / f"{name}.png")
    plot = next(p for p in report["plots"] if p["file"] == "dev_by_decile.png")
    assert plot["x"] == [8, 9] and plot["series"] == {"pp": [dev["8"], dev["9"]]}
    assert f"| pp | {dev['8']:.1f} | {dev['9']:.1f} |" in squeezed((sweep.output_dir / "report.md").read_text())
    links = page_links(sweep)
    assert links["report.json"] == "report.json"
    head = provenance_of(sweep)
    assert (f"<dt>code version</dt><dd>paranmt {RELEASE['paranmt']}" in head
            and re.search(r"<dt>built</dt><dd>\d{4}-\d\d-\d\d \d\d:\d\d UTC</dd>", head))
    assert "--scorers pp --deciles 8,9" in head and "--model word_avg" in head and re.search(r"<td>scorers</td>\s*<td>pp</td>", head)
    assert f"the pairs dataset {pairs_dir} (--pairs)" in head and "class=\"warning\"" not in head
    assert "<dt>data size: scored pairs in the corpus (all deciles)</dt><dd>400</dd>" in head
    assert f"<dt>data size: pairs each encoder trained on</dt><dd>{count_range([cell['pairs'] for cell in cells.values()])}</dd>" in head
    sts_file = sts_dir / "STS2017" / "STS.input.track5.en-en.txt"
    assert re.search(rf"<td>{re.escape(str(sts_file))}</td>\s*<td>{sts_file.stat().st_size:,}</td>", head)  # the stages' input fingerprints
    run = sweep.runs()["pp/9"]
    assert (sweep.output_dir / links["run pp/9"]).resolve() == (run.output_dir / "report.md").resolve()

    before = manifests(luigi_workdir)
    build(sweep)  # finished: nothing runs again
    assert manifests(luigi_workdir) == before

    # Decile 9 at the default M = 40 is the sweep's run: both experiments reuse it.
    counts = tmp_path / "counts.txt"
    counts.write_text("".join(f"{w} {10 * (i + 1)}\n" for i, w in enumerate(WORDS)))
    ablation = MegabatchAblation(models="word_avg", megabatches="1,40", probe_model="word_avg", probes=3, decile="9", **corpus, **TINY)
    table = ModelTable(models="word_avg", vectors=vectors, word_counts=str(counts), decile="9", **corpus, **TINY)
    build(ablation, table)
    assert ablation.runs()["word_avg/40"].output_dir == table.runs()["word_avg"].output_dir == run.output_dir
    assert all(manifests(luigi_workdir)[path] == mtime for path, mtime in before.items())

    ablated = report_of(ablation)["data"]
    assert set(ablated["cells"]["word_avg"]) == {"1", "40"} and ablated["cells"]["word_avg"]["40"] == cells["9"]
    pairs = pq.read_table(ablation.probe_encoder().training_data()).to_pydict()
    assert len(ablated["negatives"]) == 3
    for row in ablated["negatives"]:
        index = pairs["reference"].index(row["sentence"])
        assert row["paraphrase"] == pairs["translation"][index]
        assert [row["negatives"][m]["pool_pairs"] for m in ("1", "40")] == [8, len(pairs["reference"])]
        for pick in row["negatives"].values():
            assert pick["sentence"] in pairs["reference"] + pairs["translation"] and -1 <= pick["cosine"] <= 1
            assert pick["sentence"] not in (row["sentence"], row["paraphrase"])
    assert_png(ablation.output_dir / "test_by_megabatch.png")
    assert "## Table 6" in (ablation.output_dir / "report.md").read_text()

    rows = report_of(table)["data"]["rows"]
    assert list(rows) == ["word_avg", "Avg vectors", "SIF vectors (+WR)"]
    assert [row["kind"] for row in rows.values()] == ["trained", "baseline", "baseline"]
    assert rows["word_avg"]["sts"] == cells["9"]["sts"] and rows["SIF vectors (+WR)"]["sts"]["2014"] is not None
    markdown = squeezed((table.output_dir / "report.md").read_text())
    assert "## Table 7" in markdown and "## Table 9" in markdown and "| SIF vectors (+WR) | baseline | 8 |" in markdown
    assert set(ModelTable(models="word_avg", without_baselines=True, **corpus, **TINY).requires()) == {"word_avg"}

    # A half-finished sweep: one cell's training and evaluation are gone, and the report.
    before = manifests(luigi_workdir)
    for stage in (run, run.requires(), sweep):
        shutil.rmtree(stage.output_dir)
    build(sweep)
    after = manifests(luigi_workdir)
    assert {path for path in after if after[path] != before.get(path)} == {str(t.output_dir / MANIFEST) for t in (run, run.requires(), sweep)}
    assert report_of(sweep)["data"]["cells"]["pp"] == cells


def scheduled(task):
    """The task families of ``task`` and everything it depends on."""
    return {task.task_family} | {family for dependency in luigi.task.flatten(task.requires()) for family in scheduled(dependency)}


def test_ablation_and_model_table_train_on_given_pairs_without_a_corpus(luigi_workdir, vectors, sts_dir, tmp_path):  # noqa: F811
    fill_sts(sts_dir)
    tsv = str(write_pairs_tsv(tmp_path / "tiny.tsv", 40))  # three fields a line: the third is ignored
    counts = tmp_path / "counts.txt"
    counts.write_text("".join(f"{w} {10 * (i + 1)}\n" for i, w in enumerate(WORDS)))
    ablation = MegabatchAblation(train_data=tsv, models="word_avg", megabatches="1,2", probe_model="word_avg", probes=2, **TINY)
    table = ModelTable(train_data=tsv, models="word_avg,trigram_avg", vectors=vectors, word_counts=str(counts), megabatch=2, **TINY)
    on_file = {"EvaluateSTS", "TrainEncoder", "EvaluateBaselinesOnTrainData"}
    assert scheduled(ablation) == {"MegabatchAblation", *on_file} - {"EvaluateBaselinesOnTrainData"}
    assert scheduled(table) == {"ModelTable", *on_file}
    build(ablation, table)
    assert {path.name for path in luigi_workdir.iterdir()} == {"encoders", "reports", "baselines", "experiments", ".locks"}
    # The cells are plain EvaluateSTS runs on the file, shared with the same command given by hand.
    run = EvaluateSTS(train_data=tsv, model="word_avg", megabatch=2, **TINY)
    assert ablation.runs()["word_avg/2"].output_dir == table.runs()["word_avg"].output_dir == run.output_dir

    ablated = report_of(ablation)["data"]
    assert set(ablated["cells"]["word_avg"]) == {"1", "2"} and all(cell["pairs"] == 40 for cell in ablated["cells"]["word_avg"].values())
    first, second = zip(*(line.split("\t")[:2] for line in (tmp_path / "tiny.tsv").read_text().splitlines()), strict=True)
    assert len(ablated["negatives"]) == 2
    for row in ablated["negatives"]:
        assert row["paraphrase"] == second[first.index(row["sentence"])]
        assert [row["negatives"][m]["pool_pairs"] for m in ("1", "2")] == [8, 16]
    assert "## Table 6" in (ablation.output_dir / "report.md").read_text()

    rows = report_of(table)["data"]["rows"]
    assert list(rows) == ["word_avg", "trigram_avg", "Avg vectors", "SIF vectors (+WR)"]
    assert rows["word_avg"]["pairs"] == rows["trigram_avg"]["pairs"] == 40
    assert rows["word_avg"]["sts"] == ablated["cells"]["word_avg"]["2"]["sts"]
    assert read_manifest(table.baselines().output_dir)["reference_sentences"] == 80  # both sides of the file's pairs
    assert "## Table 7" in (table.output_dir / "report.md").read_text()
    for task in (ablation, table):
        head = provenance_of(task)
        assert f"the sentence pairs in {tsv} (--train-data" in head and "class=\"warning\"" not in head
        assert "<dt>data size: pairs each encoder trained on</dt><dd>40 (" in head and "scored pairs in the corpus" not in head
        assert re.search(rf"<td>{re.escape(tsv)}</td>\s*<td>{(tmp_path / 'tiny.tsv').stat().st_size:,}</td>", head)
    assert "--train-data" in provenance_of(table) and "--models word_avg,trigram_avg" in provenance_of(table)

    before = manifests(luigi_workdir)
    build(ablation, table)  # finished: nothing runs again
    assert manifests(luigi_workdir) == before


def test_data_sources_are_compared_on_equal_samples(luigi_workdir, pairs_dir, vectors, sts_dir, tmp_path):  # noqa: F811
    fill_sts(sts_dir)
    small = tmp_path / "small_pairs"
    small.mkdir()
    shard = sorted((tmp_path / "pairs").rglob("*.parquet"))[0]
    shutil.copy(shard, small / shard.name)
    smaller = pq.read_table(small).num_rows
    task = DataSourceComparison(
        sources={"all": {"pairs": pairs_dir}, "shard": {"pairs": str(small)}}, pp_vectors=vectors, models="word_avg",
        max_tokens=0, n_pairs=smaller + 5, word_counts="", per_domain=50, **TINY,
    )
    build(task)
    sources = report_of(task)["data"]["sources"]
    assert list(sources) == ["all", "shard"]
    assert sources["all"]["pairs"] == sources["shard"]["pairs"] == smaller
    assert sources["all"]["stats"]["(all)"]["sentences"] == 50
    markdown = squeezed((task.output_dir / "report.md").read_text())
    assert "## Table 2" in markdown and "| Statistic | all | shard |" in markdown and "## Table 3" in markdown
    assert_png(task.output_dir / "dev_by_source.png")
    assert "statistics per domain: shard" in page_links(task)
    with pytest.raises(ValueError, match="'bogus'"):
        DataSourceComparison(sources={"x": {"bogus": "1"}}).requires()


def test_only_experiments_on_the_embedded_demo_corpus_are_marked_demo(luigi_workdir, pairs_dir, sts_dir, tmp_path):  # noqa: F811
    fill_sts(sts_dir)
    tsv = str(write_pairs_tsv(tmp_path / "tiny.tsv", 40))
    stages = lambda task: stage_tree(luigi.task.flatten(task.requires()))  # noqa: E731 - nothing is built
    assert uses_demo_corpus(stages(ModelTable(models="word_avg", without_baselines=True)))
    assert uses_demo_corpus(stages(DataSourceComparison(sources={"given": {"pairs": pairs_dir}, "demo": {}}, models="word_avg", word_counts="")))
    assert not uses_demo_corpus(stages(ModelTable(models="word_avg", without_baselines=True, train_data=tsv)))
    assert not uses_demo_corpus(stages(DecileSweep(pairs=pairs_dir, scorers="pp", deciles="9")))
    assert not uses_demo_corpus(stages(MegabatchAblation(inputs=tsv, models="word_avg")))  # other --inputs: back-translated, not the demo


def test_experiments_fail_before_training_without_sts_files(luigi_workdir, pairs_dir, sts_dir):  # noqa: F811
    with pytest.raises(MissingStsFiles, match=str(sts_dir)):
        DecileSweep(pairs=pairs_dir).requires()
    assert not luigi.build([DecileSweep(pairs=pairs_dir)], local_scheduler=True, log_level="CRITICAL")
    assert not luigi_workdir.exists()


def test_the_sts_suite_requires_the_test_years_and_lists_absent_optional_sets(tmp_path):
    with pytest.raises(MissingStsFiles):
        sts_suite(tmp_path)
    fill_sts(tmp_path)
    datasets, absent = sts_suite(tmp_path)
    assert [d.year for d in datasets][-2:] == ["2017", "STS-B"] and len(datasets) == 26  # fill_sts writes STS-B dev
    assert any("stsbenchmark" in path for path in absent) and any("SICK" in path for path in absent)


def planted_corpus(folder, per_decile: int, good: tuple[int, ...], rng) -> str:
    """A pairs dataset whose translation scores rank it into deciles of ``per_decile`` pairs,
    where only the ``good`` deciles are paraphrases (each word of a sentence replaced by its
    synonym: ``w7`` by ``v7``) and every other pair is two unrelated sentences."""
    references, translations = [], []
    for decile in range(10):
        for _ in range(per_decile):
            words = rng.integers(0, len(SYNONYMS), 6)
            references.append(" ".join(f"w{k}" for k in words))
            other = words if decile in good else rng.integers(0, len(SYNONYMS), 6)
            translations.append(" ".join(f"v{k}" for k in other))
    ranks = np.arange(len(references))
    for shard, part in enumerate(shards_of(pairs_table(references, translations, (ranks + 0.5) / len(ranks), rng), 3)):
        write_part(part, schemas.PAIRS, str(folder / "pairs"), shard)
    return str(folder / "pairs")


SYNONYMS = range(12)


def planted_dev_sets(folder, rng) -> None:
    """STS 2017 and STS-B dev whose similarity is the share of a sentence's words kept as their
    synonym (the rest other words): only an encoder that learned the synonyms scores them."""
    rows = []
    for _ in range(200):
        words = rng.integers(0, len(SYNONYMS), 6)
        kept = int(rng.integers(0, 7))
        other = np.concatenate([words[:kept], rng.integers(0, len(SYNONYMS), 6 - kept)])
        rows.append((" ".join(f"w{k}" for k in words), " ".join(f"v{k}" for k in other), 5 * kept / 6))
    (folder / "STS2017" / f"STS.input.{STS2017_SET}.txt").write_text("".join(f"{x}\t{y}\n" for x, y, _ in rows[:100]))
    (folder / "STS2017" / f"STS.gs.{STS2017_SET}.txt").write_text("".join(f"{g:.2f}\n" for _, _, g in rows[:100]))
    (folder / "stsbenchmark" / "sts-dev.csv").write_text("".join(f"main-captions\tMSRvid\t2012test\t{i:04d}\t{g:.2f}\t{x}\t{y}\n"
                                                                 for i, (x, y, g) in enumerate(rows[100:])))


def test_decile_auto_picks_the_deciles_a_planted_corpus_makes_clearly_best(luigi_workdir, vectors, sts_dir, tmp_path):  # noqa: F811
    """Only translation-score deciles 3 and 4 hold paraphrases, the others unrelated pairs, and the
    development sets reward what the paraphrases teach: the choice is 3,4, by a clear margin."""
    rng = np.random.default_rng(0)
    fill_sts(sts_dir)
    planted_dev_sets(sts_dir, rng)
    pairs = planted_corpus(tmp_path, 200, (3, 4), rng)
    choose = ChooseDeciles(pairs=pairs, pp_vectors=vectors, scorer="trans", decile="auto", sweep_pairs=200, sweep_min_pairs=100,
                           sweep_model="word_avg", embed_dim=16, batch_size=10, lr=0.03)
    build(choose)
    choice = read_manifest(choose.output_dir)["choice"]
    assert (choice["scorer"], choice["deciles"]) == ("trans", [3, 4]), choice
    dev = {int(d): np.mean([cell["sts"][name] for name in choice["dev_sets"]]) for d, cell in report_of(choose)["data"]["cells"]["trans"].items()}
    assert min(dev[3], dev[4]) - max(score for d, score in dev.items() if d not in (3, 4)) > 10, dev  # clearly: not by the noise
