"""An experiment page's provenance: the facts at the top of index.html and report.md, the demo warning."""

import json
import re
from datetime import UTC, datetime

from conftest import squeezed

from reports.experiments import Report, Table
from reports.provenance import DEMO_HEADLINE, Provenance, count_range, input_file_row

# A content hash, as workflows.fingerprints.file_fingerprint writes it.
DIGEST = "96ef6b5f82e91611c1c027b751dfcdde"


def provenance(demo: bool) -> Provenance:
    return Provenance(
        created=datetime(2024, 3, 6, 9, 30, tzinfo=UTC),
        code={"paranmt": "0.2.0", "schemas": ["corpus/2", "pairs/1"]},
        revision="a1b2c3d-dirty",
        command="luigi --module workflows ModelTable --models word_avg --local-scheduler",
        output="/work/experiments/model-table/0123456789ab",
        training_data="the embedded demo corpus" if demo else "the sentence pairs in pairs.tsv (--train-data; no corpus stage)",
        demo=demo,
        data_sizes={"pairs each encoder trained on": [28, 40, 35], "scored pairs in the corpus (all deciles)": [400], "back-translated pairs": []},
        parameters={"models": "word_avg", "n_pairs": "1000000"},
        input_files=[f"/data/pairs.tsv:1234567:{DIGEST}", "/data/sts/gone.txt:missing", f"/data/pairs.tsv:1234567:{DIGEST}"],
    )


def test_input_fingerprints_and_counts_read_as_people_write_them():
    assert input_file_row(f"/a:b/pairs.tsv:1234567:{DIGEST}") == ["/a:b/pairs.tsv", "1,234,567", DIGEST]
    assert input_file_row("/a/gone.txt:missing") == ["/a/gone.txt", "missing", "–"]
    assert input_file_row("/a/folder:not-a-file") == ["/a/folder", "not a file", "–"]
    assert count_range([400]) == "400" and count_range([28, 40, 35]) == "28–40 (3 runs)" and count_range([7, 7]) == "7 (2 runs)"


def test_the_page_starts_with_the_provenance_and_warns_about_demo_data(tmp_path):
    table = Table("Table 7", ["model", "score"], [["word_avg", 50.0]])
    Report("Models", "word_avg is best.", "What it does.", [table], {}, provenance=provenance(demo=True)).write(tmp_path)
    page = (tmp_path / "index.html").read_text()
    head = page[: page.index("<h2>Table 7")]  # everything before the first table
    assert re.search(r'<p class="warning"><strong>Demo data: these numbers are meaningless.</strong>', head)
    for fact in (
        "<dt>built</dt><dd>2024-03-06 09:30 UTC</dd>",
        "<dt>code version</dt><dd>paranmt 0.2.0 (git a1b2c3d-dirty); dataset schemas corpus/2, pairs/1</dd>",
        "<dd><code>luigi --module workflows ModelTable --models word_avg --local-scheduler</code></dd>",
        "<dt>training data</dt><dd>the embedded demo corpus</dd>",
        "<dt>data size: pairs each encoder trained on</dt><dd>28–40 (3 runs)</dd>",
        "<dt>data size: scored pairs in the corpus (all deciles)</dt><dd>400</dd>",
    ):
        assert fact in head
    assert "back-translated pairs" not in head  # nothing counted: not shown
    assert re.search(r"<td>n_pairs</td>\s*<td>1000000</td>", head) and "All 2 parameters" in head
    assert re.search(rf"<td>/data/pairs.tsv</td>\s*<td>1,234,567</td>\s*<td>{DIGEST}</td>", head)
    assert "2 input files" in head and head.index("warning") < head.index("How this page was made") < head.index("Result.")

    markdown = (tmp_path / "report.md").read_text()
    assert (markdown.index(DEMO_HEADLINE) < markdown.index("- built: 2024-03-06 09:30 UTC") < markdown.index("## Table 7")
            < markdown.index("## Parameters"))
    assert f"| /data/pairs.tsv | 1,234,567 | {DIGEST} |" in squeezed(markdown)
    document = json.loads((tmp_path / "report.json").read_text())["provenance"]
    assert document["created"] == "2024-03-06T09:30:00+00:00" and document["demo"] is True
    assert document["input_files"] == ["/data/pairs.tsv:1234567:96ef6b5f82e91611c1c027b751dfcdde", "/data/sts/gone.txt:missing"]


def test_no_warning_on_real_data(tmp_path):
    Report("Models", "word_avg is best.", "What it does.", [], {}, provenance=provenance(demo=False)).write(tmp_path)
    for name in ("index.html", "report.md"):
        text = (tmp_path / name).read_text()
        assert "How this page was made" in text and "pairs.tsv (--train-data" in text
        assert "Demo data" not in text and "class=\"warning\"" not in text
