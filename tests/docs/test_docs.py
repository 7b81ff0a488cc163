"""The docs are true: every path, `make` target and command that README.md and docs/ name exists and
runs (cheap ones with --help), the README's results come from docs/results.md, and the front page and
the pages kept journal-free carry no date, load average or commit hash. Each check is also run on a
copy of the checkout with one referenced thing removed, and must name it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import docs_check as check
import pytest

REPO = check.REPO
# every page is kept free of dated journal entries: docs/results.md's header is the one place for a date, a
# machine and a commit (history stays in git)
JOURNALED = ("docs/results.md",)


def test_every_named_path_exists():
    assert check.missing_paths(REPO) == []


def test_every_make_target_exists():
    assert check.missing_make_targets(REPO) == []


def test_every_command_runs_with_help():
    found = check.commands(REPO)
    # the commands the front page relies on are among those checked
    for argv in [
        ("-m", "topologies.mininet_lab"),
        ("-m", "topologies.inprocess", "serve"),
        ("-m", "controller", "install"),
    ]:
        assert argv in found, argv
    assert check.failing_commands(REPO) == []


def test_readme_results_come_from_results_page():
    rows, images = check.readme_results(REPO)
    assert rows, "README.md has no results table"
    assert images == ["docs/images/results/allreduce.png"]
    assert check.readme_figures_not_in_results(REPO) == []


def test_readme_is_one_screen_and_timeless():
    lines = (REPO / "README.md").read_text().splitlines()
    assert len(lines) <= 210, f"README.md has {len(lines)} lines"


def test_every_page_is_timeless():
    timeless = [p for p in check.markdown_pages(REPO) if str(p.relative_to(REPO)) not in JOURNALED]
    assert {"README.md", "docs/compression.md", "softswitch/native/README.md"} <= {
        str(p.relative_to(REPO)) for p in timeless
    }
    assert [line for page in timeless for line in check.journal_lines(REPO, page)] == []


def test_every_section_reference_names_a_heading():
    assert check.broken_section_refs(REPO) == []


# -- the checks fail when what they check is gone ------------------------------------------------------


def _copy_without(tmp_path: Path, remove: list[str]) -> Path:
    """A checkout made of links to this one's files, without ``remove`` (paths relative to the root)."""
    root = tmp_path / "checkout"

    def link_tree(src: Path, dst: Path) -> None:
        dst.mkdir()
        for entry in src.iterdir():
            rel = str(entry.relative_to(REPO))
            if rel in remove or entry.name in (".git", ".venv", "__pycache__"):
                continue
            if any(r.startswith(rel + "/") for r in remove):
                link_tree(entry, dst / entry.name)
            else:
                os.symlink(entry, dst / entry.name)

    link_tree(REPO, root)
    return root


def test_a_removed_file_is_named(tmp_path):
    root = _copy_without(tmp_path, ["examples/torchrun_ddp.py", "docs/topologies.md"])
    problems = check.missing_paths(root)
    assert "README.md: names examples/torchrun_ddp.py, which does not exist" in problems
    assert "README.md: links to docs/topologies.md, which does not exist" in problems


def test_a_removed_command_is_named(tmp_path):
    root = _copy_without(tmp_path, ["topologies/demo.py", "Makefile"])
    (root / "Makefile").write_text((REPO / "Makefile").read_text().replace("\nbench:", "\nbenchmarks:"))
    assert "README.md: `make bench`, but the Makefile has no target bench" in check.missing_make_targets(root)
    problems = check.failing_commands(root, only={("-m", "topologies.demo")})
    assert len(problems) == 1 and "`python -m topologies.demo` does not run" in problems[0]
    assert problems[0].endswith("(--help: no module topologies.demo in the checkout)")


def test_a_results_row_not_on_the_results_page_is_named(tmp_path):
    root = _copy_without(tmp_path, ["docs/results.md"])
    rows, _ = check.readme_results(REPO)
    results = (REPO / "docs" / "results.md").read_text()
    (root / "docs" / "results.md").write_text(results.replace(rows[-1], "| a row measured elsewhere |"))
    assert check.readme_figures_not_in_results(root) == [f"README.md: results row not in docs/results.md: {rows[-1]}"]


@pytest.mark.parametrize(
    "line, what",
    [
        ("Measured on 2026-11-24 at night.", "a date"),
        ("(load average 5-8, indicative)", "a load average"),
        ("as of git 41047b9, faster", "a commit hash"),
        ("figures from the same session as above", "a session"),
    ],
)
def test_a_journal_line_is_named(tmp_path, line, what):
    page = tmp_path / "page.md"
    shutil.copy(REPO / "docs" / "lab.md", page)
    page.write_text(page.read_text() + line + "\n")
    n = len(page.read_text().splitlines())
    assert [p.split(": ", 1)[1].split(" (")[0] for p in check.journal_lines(tmp_path, page)] == [what]
    assert check.journal_lines(tmp_path, page)[0].startswith(f"page.md:{n}: ")


def test_a_section_reference_to_a_renamed_heading_is_named(tmp_path):
    root = _copy_without(tmp_path, ["docs/tofino.md", "docs/cli.md"])
    tofino = (REPO / "docs" / "tofino.md").read_text()
    assert "\n## Resources (" in tofino
    (root / "docs" / "tofino.md").write_text(tofino.replace("\n## Resources (", "\n## Budget ("))
    cli = (REPO / "docs" / "cli.md").read_text()
    (root / "docs" / "cli.md").write_text(cli + "\nSee [the budget](tofino.md#budget) and ([x](#the-tablex)).\n")
    problems = check.broken_section_refs(root)
    assert 'docs/compression.md: refers to tofino.md, "Resources", which is no heading there' in problems
    assert "docs/cli.md: links to tofino.md#budget, which is no heading there" in problems
    assert "docs/cli.md: links to #the-tablex, which is no heading there" in problems
