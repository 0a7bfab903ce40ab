"""The README stays true: its install commands are CI's, every command it shows parses with the
real parsers (task names, parameter names and values), and every link in it and in docs/ leads to
a file and heading that exist inside the repository. (The quick tour's Python is run on a real demo build in
tests/test_kit.py, on the wheel the kit installs.)"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from luigi.cmdline_parser import CmdlineParser

import benchmarks.__main__ as benchmark_runner
import kit.cli
import workflows  # noqa: F401 - registers the tasks the commands name
from fetch import evaluation_data as fetcher
from models import cli

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def code_blocks(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```", text, flags=re.S | re.M)


def readme_commands(program: str) -> list[list[str]]:
    """Every command line of ``program`` in the README's bash blocks and inline code: comments,
    continuation lines and leading ``VAR=value`` assignments handled as the shell does."""
    lines = [line for block in code_blocks(README, "bash") for line in block.replace("\\\n", " ").splitlines()]
    lines += re.findall(r"`([^`\n]*\b" + re.escape(program) + r" [^`\n]*)`", README)
    commands = []
    for line in lines:
        for part in re.split(r"&&|;", line.split(" #")[0]):
            words = shlex.split(part)
            while words and re.match(r"^[A-Z_]+=", words[0]):
                words.pop(0)
            if words[: len(program.split())] == program.split():
                commands.append(words[len(program.split()):])
    return commands


def test_the_install_commands_are_the_ones_ci_runs():
    main_command, test_command = (line for block in code_blocks(README, "bash")[:1] for line in block.splitlines() if not line.startswith("#"))
    ci = re.search(r'^test_command="(.*)"$', (REPO / ".ci" / "run").read_text(), flags=re.M).group(1)
    assert test_command == ci
    # The main command is the test command's install without the dev extra, then the demo build.
    assert main_command == ci.replace("-e '.[dev]'", "-e .").replace("python -m pytest", "luigi --module workflows BuildParaNMT --local-scheduler")


def test_every_luigi_command_in_the_readme_parses():
    commands = readme_commands("luigi --module workflows")
    assert len(commands) >= 10, commands  # the extraction itself still finds them
    for args in commands:
        with CmdlineParser.global_instance(args) as parser:
            assert parser.get_task_obj().get_task_family() == args[0]


def test_a_wrong_command_fails_to_parse_so_the_check_above_can_fail():
    with pytest.raises(SystemExit), CmdlineParser.global_instance(["TrainOnFiltered", "--no-such-flag", "1"]) as parser:
        parser.get_task_obj()


def test_every_paranmt_encode_command_in_the_readme_parses():
    commands = readme_commands("paranmt-encode")
    assert {args[0] for args in commands} >= {"embed", "score", "export"}
    for args in commands:
        cli.parser().parse_args(args)


def test_every_paranmt_data_command_in_the_readme_parses():
    commands = readme_commands("paranmt-data")
    assert commands, "the README shows how to fetch the evaluation data"
    for args in commands:
        fetcher.parser().parse_args(args)
def test_every_paranmt_kit_command_in_the_readme_parses():
    commands = readme_commands("paranmt-kit")
    assert commands
    for args in commands:
        kit.cli.parser().parse_args(args)


def test_every_benchmark_the_readme_names_exists():
    named = [args[0] for args in readme_commands("python -m benchmarks") if not args[0].startswith("-")]
    assert named and set(named) <= set(benchmark_runner.available()), named
    listed = subprocess.run([sys.executable, "-m", "benchmarks", "--list"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert all(name in listed for name in named)


def heading_anchors(page: Path) -> set[str]:
    """GitHub's anchors of a Markdown page's headings: lowercase, punctuation dropped, spaces → -."""
    headings = re.findall(r"^#+ (.*)$", re.sub(r"^```.*?^```", "", page.read_text(), flags=re.S | re.M), flags=re.M)
    return {re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-") for heading in headings}


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_link_leads_to_a_file_and_heading_that_exist(page):
    for target in re.findall(r"\]\(([^)\s]+)\)", page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.is_relative_to(REPO), f"{page.name}: {target} leads out of the repository, which a fresh clone lacks"
        assert linked.exists(), f"{page.name}: {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in heading_anchors(linked), f"{page.name}: {target}"
