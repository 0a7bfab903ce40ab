"""ScoresAgainstJudgments end to end through Luigi on a judged file, tiny STS files and a
ParaCrawl-like Czech–English sample made here (tiny encoders trained on 40 pairs, a tiny random
translator for the translation score), a set whose files are absent, and a bad judged file
through the real command line."""

import json
import re

import luigi
import pytest
from conftest import squeezed
from hf_fixtures import demo_lines, marian
from test_bad_input_cli import assert_one_line_error, run_luigi
from test_corpus_flow import WORDS, vectors  # noqa: F401 - vectors is a fixture
from test_encoders_flow import fill_sts, sts_dir, write_pairs_tsv  # noqa: F401 - sts_dir is a fixture
from test_experiments import TINY, assert_png, build, manifests, provenance_of, report_of
from wmt21_fixtures import wmt21_layout

from corpus.judgments import WMT21_UNMAPPED, wmt21_documents
from workflows.judgments import ScoresAgainstJudgments


def judged_file(path):
    """Pairs of four distinct words sharing k = 0 … 4 of them (unigram F1 k/4), judged yes from k = 2 on."""
    lines = []
    for k in range(5):
        for start in range(0, 12, 4):
            first = WORDS[start : start + 4]
            second = first[:k] + WORDS[12 + k : 16]
            lines.append(f"{' '.join(first)}\t{' '.join(reversed(second))}\t{int(k >= 2)}\n")
    path.write_text("".join(lines))
    return path


@pytest.fixture
def judged_folders(tmp_path):
    """[judgments]: pan_dir a folder that does not exist, paracrawl_dir a release of eight
    labelled demo-corpus pairs (every other one valid), for one test."""
    czech, english = demo_lines()
    release = tmp_path / "paracrawl" / "paracrawl-v7-validation"
    release.mkdir(parents=True)
    (release / "sorted.en-cs").write_text("".join(f"u\tv\t{en}\t{cs}\t0.5\t{'VE'[i % 2]}\t\t3\n"
                                                  for i, (cs, en) in enumerate(zip(czech[:8], english[:8], strict=True))))
    config = luigi.configuration.get_config()
    config.set("judgments", "pan_dir", str(tmp_path / "no-pan"))
    config.set("judgments", "paracrawl_dir", str(tmp_path / "paracrawl"))
    yield tmp_path / "no-pan"
    config.remove_option("judgments", "pan_dir")
    config.remove_option("judgments", "paracrawl_dir")


def test_every_score_against_a_judged_file_the_sts_years_and_a_czech_sample(luigi_workdir, sts_dir, judged_folders, tmp_path):  # noqa: F811
    fill_sts(sts_dir)
    tsv, judged = write_pairs_tsv(tmp_path / "train.tsv", 40), judged_file(tmp_path / "judged.tsv")
    task = ScoresAgainstJudgments(train_data=str(tsv), models="word_avg", judged_sets="sts,pan,paracrawl", judged_file=str(judged),
                                  sentence_transformer=str(tmp_path / "no-model"), translator=str(marian(tmp_path / "marian")),
                                  resamples=50, **TINY)
    build(task)
    report = report_of(task)
    data = report["data"]
    assert list(data["sets"]) == ["STS 2012", "STS 2013", "STS 2014", "STS 2015", "STS 2016", "ParaCrawl v7 cs–en", "file judged.tsv"]
    assert data["skipped"] == {"pan": f"absent: {judged_folders / 'pan-train_s1.txt'}"}
    czech = data["sets"]["ParaCrawl v7 cs–en"]
    assert set(czech["scores"]) == {"translation_p_en", "source_p_cs", "trans_score"} and czech["scores"]["trans_score"]["pairs"] == 8
    assert czech["scores"]["trans_score"]["auc"] is not None and "trans_score" not in data["unavailable"]
    assert data["unavailable"]["cosine no-model"].startswith(f"{tmp_path / 'no-model'} could not be loaded offline")
    mine = data["sets"]["file judged.tsv"]
    assert mine["pairs"] == 15 and mine["kind"] == "yes/no"
    assert set(mine["scores"]) == {"trigram_overlap", "pp_sim", "unigram_f1", "kendall_tau", "trigram_then_f1", "kendall_z_then_f1",
                                   "reference_p_en", "translation_p_en", "cosine word_avg"}
    f1 = mine["scores"]["unigram_f1"]  # the corpus's own unigram F1: k/4, so the yes pairs are exactly the top ones
    assert f1["auc"] == 1 and f1["auc_ci"] == [1, 1] and f1["spearman"] > 0.8
    assert [d["mean_judgment"] for d in f1["deciles"] if d["pairs"]][0] == 0 and f1["deciles"][-1]["mean_judgment"] == 1
    assert all("auc" not in result for result in data["sets"]["STS 2012"]["scores"].values())  # graded: no AUC
    assert data["sets"]["STS 2012"]["scores"]["cosine word_avg"]["pairs"] == 30  # five datasets of six pairs pooled
    assert "pp_sim" in data["scores"] and "Word Avg encoder" in data["scores"]["pp_sim"]  # the PP model trained on the pairs

    markdown = squeezed((task.output_dir / "report.md").read_text())
    assert "## Spearman ρ × 100 [95 % interval]" in markdown and "## ROC AUC × 100 [95 % interval] (yes/no sets)" in markdown
    assert "| file judged.tsv | 15 |" in markdown and "| 100.0 [100.0, 100.0] |" in markdown
    assert "## file judged.tsv: share judged yes per decile of each score" in markdown
    assert re.search(r"\| pan \| skipped \| absent: ", markdown) and "| cosine no-model | not computed: " in markdown
    for name in ("spearman_by_set", "judgment_by_decile"):
        assert_png(task.output_dir / f"{name}.png")
    plot = next(p for p in report["plots"] if p["file"] == "spearman_by_set.png")
    assert plot["x"] == list(data["sets"]) and plot["series"]["unigram_f1"][-1] == 100 * f1["spearman"]
    head = provenance_of(task)
    assert f"the sentence pairs in {tsv} (--train-data" in head and "--judged-file" in head and 'class="warning"' not in head
    assert json.loads((task.output_dir / "_SUCCESS").read_text())["stage"] == "experiments/scores-vs-judgments"

    before = manifests(luigi_workdir)
    build(task)  # finished: nothing runs again
    assert manifests(luigi_workdir) == before


def test_a_bad_judged_file_stops_the_command_in_one_line(tmp_path, vectors):  # noqa: F811
    bad = tmp_path / "judged.tsv"
    bad.write_text("a man\ta woman\t3\nthe dog\ta cat\tsimilar\n")
    result = run_luigi(tmp_path / "work", "ScoresAgainstJudgments", "--judged-file", str(bad), "--judged-sets", "pan",
                       "--without-encoders", "--pp-vectors", vectors, "--sentence-transformer", "none")
    assert_one_line_error(result, f"{bad}:2: the judgment 'similar' is not a number")


@pytest.fixture
def wmt21_folder(tmp_path):
    """[judgments] wmt21_dir: cs→en and de→en in the translations layout, six judgments in the first
    matched document of each (the other directions' files absent), for one test."""
    root = tmp_path / "wmt21"
    for direction, system in (("cs", "Online-A"), ("de", "NVIDIA-NeMo")):
        first = wmt21_documents()[direction][0][0]
        named = "Nemo" if system == "NVIDIA-NeMo" else system
        rows = "".join(f"{named}.1 {first + k} 50 {z} 1 \n" for k, z in enumerate((-1.5, -0.5, 0.0, 0.25, 0.5, 1.0)))
        wmt21_layout(root, direction, [system], references=("A", "B")).write_text(f"SYS SID RAW.SCR Z.SCR N \n{rows}HUMAN.0 {first} 90 0.75 1 \n")
    config = luigi.configuration.get_config()
    config.set("judgments", "wmt21_dir", str(root))
    yield root
    config.remove_option("judgments", "wmt21_dir")


def test_wmt21_is_a_row_per_direction_and_a_reason_per_direction_left_out(luigi_workdir, wmt21_folder, vectors, tmp_path):  # noqa: F811
    task = ScoresAgainstJudgments(judged_sets="wmt21", without_encoders=True, pp_vectors=vectors, sentence_transformer=str(tmp_path / "no-model"),
                                  resamples=20)
    assert list(task.chosen_sets()) == [f"wmt21-{d}" for d in ("cs", "de", "ha", "is", "ja", "ru", "zh")]
    build(task)
    data = report_of(task)["data"]
    assert list(data["sets"]) == ["WMT21 DA cs→en", "WMT21 DA de→en"]
    assert data["skipped"]["wmt21-zh"] == WMT21_UNMAPPED["zh"] and data["skipped"]["wmt21-is"].startswith(f"absent: {wmt21_folder}")
    czech, german = data["sets"]["WMT21 DA cs→en"], data["sets"]["WMT21 DA de→en"]
    assert czech["pairs"] == german["pairs"] == 7 and "source_p_cs" in czech["scores"] and "source_p_cs" not in german["scores"]
    assert (german["scores"]["unigram_f1"]["pairs"] == 7
            and german["files"][0] == str(wmt21_folder / "humaneval" / "newstest2021-toen" / "ad-seg-scores-de-en.csv"))
    one = ScoresAgainstJudgments(judged_sets="wmt21-de,sick", without_encoders=True, pp_vectors=vectors)
    assert list(one.chosen_sets()) == ["wmt21-de", "sick"]


def test_an_unknown_judged_set_names_the_sets_there_are(tmp_path, vectors):  # noqa: F811
    result = run_luigi(tmp_path / "work", "ScoresAgainstJudgments", "--judged-sets", "wmt21-xx", "--without-encoders", "--pp-vectors", vectors,
                       "--sentence-transformer", str(tmp_path / "no-model"))
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in output, output  # refused while Luigi asks for its requirements
    assert "--judged-sets: unknown set(s) ['wmt21-xx']; choose from ['msrp', 'pan', 'paracrawl', 'sick', 'sts', 'stsb', 'wmt21', 'wmt21-cs', " \
           "'wmt21-de', 'wmt21-ha', 'wmt21-is', 'wmt21-ja', 'wmt21-ru', 'wmt21-zh']" in output
