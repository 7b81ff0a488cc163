"""make bench's plumbing: the runner (bench/standard.py) on toy sizes and the report (bench/report.py) on
fixture JSON write docs/results.md, its plot and README.md's results table from the JSON alone.

The fixture's step JSON comes from toy runs of the bench scripts (a 0.25 MB allreduce on star_100m, one
epoch of lab training, ...), trimmed to the fields the report reads; its manifest.json is written for
the test (a fixed date, machine and commit, one skipped and one failed step)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import docs_check as check
import pytest

REPO = check.REPO
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "standard"


def _script_module(name: str):
    """bench/NAME.py as a module (bench/ is a folder of scripts, not a package)."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", REPO / "bench" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


standard = _script_module("standard")

README_STUB = "# x\n\nbefore\n\n<!-- results:begin -->\nold table\n<!-- results:end -->\n\nafter\n"


def run_report(tmp_path: Path, results: Path = FIXTURE) -> tuple[subprocess.CompletedProcess, Path, Path]:
    docs, readme = tmp_path / "docs", tmp_path / "README.md"
    readme.write_text(README_STUB)
    argv = ["bench/report.py", "--input", str(results), "--docs", str(docs), "--readme", str(readme)]
    proc = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=120)
    return proc, docs, readme


def test_report_from_fixture_json(tmp_path):
    proc, docs, readme = run_report(tmp_path)
    assert proc.returncode == 0, proc.stderr
    page = (docs / "results.md").read_text()
    # the header: how, when, on what, at which commit
    assert "- run: `bench/standard.py --tiny`, 2026-01-01 00:00 UTC, commit 0123456789ab" in page
    assert "fixture CPU, 2 CPUs, 8.0 GB, Linux 6.1.0, Python 3.11.2" in page
    # each table with its command; skipped and failed steps say why
    assert "- `python bench/allreduce_netns.py --topology topologies/star_100m.yaml --sizes 0.25`\n" in page
    assert "**skipped: needs root (the mininet lab)**" in page
    assert "**failed: exit status 1 (log: train_leaf_spine_100m.log)**" in page
    # figures as the fixture's JSON has them (tests/docs/fixtures/standard/allreduce_100m/allreduce_netns.json)
    headline = "| star_100m | 4 | 100 Mbit/s | 0.25 | 64 | 0.137 (6.55x) | 0.412 (19.66x) | 0.053 (2.52x) | 0.38 |"
    assert headline in page
    assert "| star_100m | 4 | 1 | 27.62 % | 27.62 % | 119.0 | 90.0 | 0.76 | yes |" in page
    assert "| 8 | multitree | 128 | 64 | 4 | 164 | 18.6 | 0.32 |" in page
    assert "| spine sp1 killed mid-allreduce | victim exact 4/4, bystander exact 4/4 | 2.5 | ok |" in page
    assert "| digits MLP | 2:4 | 6,904 | 22,478 | 17.4 | 52.34 % |" in page
    assert "| native | GRAD aggregation, per GRAD (ina.p4) | 6,950,155 |" in page
    assert "| worker | batch | 130,765 | 0.98 | 0.88 | 0 |" in page
    assert (docs / "images" / "results" / "allreduce.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the simulator's section (tests/docs/fixtures/standard/scale/scale.json): the curve, the jobs, the failure
    assert "| fat_tree_k4 | 15 | ina | 0.725 | 6.92 | 0 | 7,168 | 0.0 |" in page
    assert "| fat_tree_k4 | 2 | 7 | 0.839, 0.839 | 8.01 | 0 |" in page
    assert "| fat_tree_k4 | c0 | 0.363 | 3/15 | 0.13 | 0.725 | 0.838 | 0 |" in page  # a lost round (older rows)
    assert "| fat_tree_k4 | c0 | 0.370 | 100.0 | 0.37 | 0.739 | 103.538 | 900/3,840 | 2,940 | 2,940 | - | 0 |" in page
    for plot in ("scale.png", "scale_jobs.png"):
        assert (docs / "images" / "results" / plot).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # README: only the block between the markers changes, to the page's headline rows and plot
    text = readme.read_text()
    assert text.startswith("# x\n\nbefore\n\n<!-- results:begin -->\n|") and text.endswith(
        "<!-- results:end -->\n\nafter\n"
    )
    assert "old table" not in text and headline in text
    assert "![Allreduce time over the ideal per method](docs/images/results/allreduce.png)" in text


def test_report_without_results_says_so(tmp_path):
    proc, docs, _ = run_report(tmp_path, tmp_path / "nothing")
    assert proc.returncode == 1
    assert (
        proc.stderr.strip()
        == f"bench/report.py: error: no {tmp_path / 'nothing' / 'manifest.json'}: run the bench first (make bench, or bench/standard.py)"
    )
    assert not (docs / "results.md").exists()


def test_every_step_flag_is_its_scripts():
    """The full and quick variants are not run here: their flags must at least be the scripts' own."""
    helps: dict[str, str] = {}
    env = dict(os.environ, PYTHONPATH=str(REPO))
    for step in standard.STEPS:
        for mode in standard.MODES:
            argv = step.command(mode, Path("/tmp/x"))
            script = argv[1] if argv[0] == "-m" else argv[0]
            if script not in helps:
                cmd = [sys.executable, *(["-m", script] if argv[0] == "-m" else [script]), "--help"]
                helps[script] = subprocess.run(
                    cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=120
                ).stdout
            for flag in (a for a in argv if a.startswith("--")):
                assert re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", helps[script]), (step.name, mode, flag)


@pytest.mark.timeout(600)
def test_runner_on_tiny_sizes(tmp_path):
    results, docs, readme = tmp_path / "results", tmp_path / "docs", tmp_path / "README.md"
    readme.write_text(README_STUB)
    argv = ["bench/standard.py", "--tiny", "--only", "plan_scale", "faults"]
    argv += ["--out", str(results), "--docs", str(docs), "--readme", str(readme)]
    proc = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # the progress display: each step announced with its command, the step's own lines under it
    assert "[1/2] Planning time" in proc.stdout and "[2/2] Fault campaign" in proc.stdout
    assert "$ python bench/plan_scale.py --ks 4 --repeats 1 --out " in proc.stdout
    manifest = json.loads((results / "manifest.json").read_text())
    assert [(s["name"], s["status"]) for s in manifest["steps"]] == [("plan_scale", "ok"), ("faults", "ok")]
    assert manifest["steps"][0]["outputs"] == ["plan_scale/plan_scale.json"]
    assert manifest["mode"] == "tiny" and manifest["machine"]["cpus"] == os.cpu_count()
    rows = json.loads((results / "plan_scale" / "plan_scale.json").read_text())
    page = (docs / "results.md").read_text()
    for row in rows:  # every planning row of the JSON is on the page
        assert f"| {row['k']} | {row['planner']} | {row['hosts']:,} | {row['workers']:,} |" in page
    faults = json.loads((results / "faults" / "faults.json").read_text())
    assert all(f"| {r['row']} |" in page for r in faults["rows"])
    # the steps not run leave their sections saying so, and the README says there is no allreduce yet
    assert page.count("- not run") == 6
    assert "(no allreduce results yet: `make bench` as root)" in readme.read_text()


def test_only_keeps_the_other_steps_of_the_same_run(tmp_path):
    """--only runs one step again; the others stay when the earlier run had the same mode and commit."""
    earlier = {"mode": "quick", "commit": "abc", "dirty": False, "date": "then", "steps": []}
    earlier["steps"] = [{"name": n, "status": "ok"} for n in ("allreduce_100m", "plan_scale", "faults")]
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(earlier))
    now = {"mode": "quick", "commit": "abc", "dirty": False, "date": "now"}
    kept = standard.earlier_steps(path, now, {"plan_scale"})
    assert sorted(kept) == ["allreduce_100m", "faults"] and now["date"] == "then"
    for other in ({"commit": "def"}, {"mode": "full"}, {"dirty": True}):
        assert standard.earlier_steps(path, {**now, **other}, {"plan_scale"}) == {}
    assert standard.earlier_steps(tmp_path / "none.json", dict(now), {"plan_scale"}) == {}
