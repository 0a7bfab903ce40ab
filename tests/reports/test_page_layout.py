"""The experiment page as a real browser lays it out (issue 24 item 5).

The HTML tests read the page's text; they cannot see that a box is too small for its content.
Here headless Chromium opens a ModelTable page with demo-like provenance (long labels, a long
command and paths, every parameter and input file shown) at several window widths, and a script
in the page measures every element: each must lie inside its parent (unless the parent scrolls
or clips), no two sibling blocks may overlap, and the page must not be wider than the window.
Chromium writes its findings into the DOM, which ``--dump-dom`` returns.
"""

import html
import json
import math
import re
import shutil
import subprocess
from datetime import UTC, datetime

import pytest

from reports.experiments import DEV, TEST_MEAN, model_table_report
from reports.provenance import Provenance

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no Chromium on PATH: install Debian's `chromium` package (CI's .ci/run does) to check the page's layout in a browser"
)

# Flags for a closed network: without the background-networking ones Chromium keeps trying to reach Google.
QUIET_HEADLESS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--mute-audio", "--hide-scrollbars",
]

# Runs once the page and its images are loaded: opens every <details>, measures, and writes the
# faults it finds as JSON into <pre id="layout-faults">.
LAYOUT_PROBE = """<script>
addEventListener("load", () => {
  for (const details of document.querySelectorAll("details")) details.open = true;
  const describe = (e) => e.tagName.toLowerCase() + (e.className ? "." + e.className : "") + ' "' + \
(e.textContent || "").trim().replace(/\\s+/g, " ").slice(0, 50) + '"';
  const shown = (e) => e.getClientRects().length > 0;
  const clips = (e) => { const s = getComputedStyle(e); return s.overflowX !== "visible" || s.overflowY !== "visible"; };
  const box = (e) => e.getBoundingClientRect();
  const inside = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1 && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  const isBlock = (e) => !["inline", "contents", "none"].includes(getComputedStyle(e).display);
  const rect = (r) => [r.left, r.top, r.right, r.bottom].map(Math.round);
  const faults = [];
  const elements = [document.body, ...document.body.querySelectorAll("*")].filter((e) => e.tagName !== "SCRIPT" && shown(e));
  for (const element of elements) {
    const parent = element.parentElement;
    if (!clips(parent) && !inside(box(element), box(parent)))
      faults.push({fault: "outside its parent", element: describe(element), box: rect(box(element)), \
parent: describe(parent), parent_box: rect(box(parent))});
    const blocks = [...element.children].filter((c) => c.tagName !== "SCRIPT" && shown(c) && isBlock(c));
    for (let i = 0; i < blocks.length; i++)
      for (let j = i + 1; j < blocks.length; j++)
        if (overlap(box(blocks[i]), box(blocks[j])))
          faults.push({fault: "overlaps its sibling", element: describe(blocks[i]), box: rect(box(blocks[i])), \
sibling: describe(blocks[j]), sibling_box: rect(box(blocks[j]))});
  }
  const page = document.documentElement;
  if (page.scrollWidth > page.clientWidth + 1)
    faults.push({fault: "page wider than the window", width: page.scrollWidth, window: page.clientWidth});
  const report = document.createElement("pre");
  report.id = "layout-faults";
  report.textContent = JSON.stringify({window: page.clientWidth, checked: elements.length, faults: faults});
  document.body.append(report);
});
</script>
"""


def demo_like_provenance() -> Provenance:
    """What ModelTable on the demo records: several long data-size labels, a long command and paths."""
    demo = "/work/main/.venv/lib/python3.11/site-packages/corpus/demo/czeng-demo.tsv.gz"
    output = "/work/main/work/experiments/model-table/3f9c2a7d41be/9d0e4c1b2a37"
    parameters = {f"option_{index:02d}": f"value {index}" for index in range(28)}
    parameters.update(models="word_avg,trigram_avg,lstm_avg,trigram_word", sts_dir="/work/main/work/sts/sts-2012-2017-and-sts-benchmark")
    return Provenance(
        created=datetime(2026, 11, 25, 20, 30, tzinfo=UTC),
        code={"paranmt": "0.2.0", "schemas": ["corpus/2", "pairs/1", "bitext/1", "sts/1"]},
        revision="d6a5ea8-dirty",
        command="luigi --module workflows ModelTable --workdir /work/main/work "
                "--sts-dir /work/main/work/sts/sts-2012-2017-and-sts-benchmark --local-scheduler",
        output=output,
        training_data=f"the embedded demo corpus {demo} (no --inputs or --pairs), back-translated, scored and ranked here",
        demo=True,
        data_sizes={
            "bitext sentence pairs read": [400],
            "back-translated pairs": [400],
            "scored pairs in the corpus (all deciles)": [396],
            "training pairs selected": [40],
            "pairs each encoder trained on": [28, 40, 35, 40],
            "sentences SIF's common component is fitted on": [792],
            "STS datasets each model is evaluated on": [24, 24, 24, 24, 24, 24],
        },
        parameters=parameters,
        input_files=[demo + ":123456:96ef6b5f82e91611c1c027b751dfcdde",
                     "/work/main/work/vectors/paragram-sl999-demo-vectors.txt:98765:0b1c2d3e4f5a69788796a5b4c3d2e1f0"]
        + [f"/work/main/work/sts/sts-2012-2017-and-sts-benchmark/{year}/STS.input.track{year}.txt:4321:{index:032x}"
           for index, year in enumerate(range(2012, 2018))],
    )


def model_table_page(folder) -> str:
    """A ModelTable page (tables 7 and 9, the comparison plot) with demo-like provenance, written to ``folder``."""
    names = ["word_avg", "trigram_avg", "lstm_avg", "trigram_word", "SIF vectors (+WR)", "averaged vectors"]
    rows = {
        name: {"kind": "baseline" if "vectors" in name else "trained", "dim": 300,
               "sts": {DEV: -5.0 + 7 * i, "2012": 20.0 + i, "2013": math.nan, TEST_MEAN: 30.0 + i, "STS-B dev": 40.0 + i}}
        for i, name in enumerate(names)
    }
    report = model_table_report(rows, {"latest word_avg report": "../../encoders/word_avg/latest/report.md"})
    report.provenance = demo_like_provenance()
    report.write(folder)
    return (folder / "index.html").read_text()


def layout_faults(page: str, folder, width: int) -> dict:
    """Opens ``page`` (saved in ``folder`` beside its PNGs) in headless Chromium ``width`` pixels wide; the probe's findings."""
    probed = folder / f"probed-{width}.html"
    probed.write_text(page.replace("</body>", LAYOUT_PROBE + "</body>"))
    profile = folder / f"chromium-profile-{width}"
    command = [CHROMIUM, *QUIET_HEADLESS, f"--user-data-dir={profile}", f"--window-size={width},2000", "--virtual-time-budget=5000",
               "--dump-dom", probed.as_uri()]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    found = re.search(r'<pre id="layout-faults">(.*?)</pre>', result.stdout, re.S)
    assert found, f"Chromium returned no layout findings (exit {result.returncode}): {result.stderr[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


@pytest.fixture(scope="module")
def written_page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model-table-page")
    return folder, model_table_page(folder)


@pytest.mark.parametrize("width", [800, 1300, 1900])
def test_every_box_holds_its_content_and_no_blocks_overlap(written_page, width):
    folder, page = written_page
    found = layout_faults(page, folder, width)
    assert abs(found["window"] - width) <= 20, f"Chromium laid the page out {found['window']} px wide, not {width}"
    assert found["checked"] > 200, "the probe measured too few elements to mean anything"
    assert found["faults"] == [], f"at {width} px:\n" + "\n".join(map(json.dumps, found["faults"][:20]))
