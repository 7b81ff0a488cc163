"""bench/scale.py on the smallest fat-tree: every method finishes, INA's sums are exact, the JSON holds
a row per method with its times, two concurrent jobs and a failed core switch (recovered within the
round) have their rows, and the plot is written."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_scale_bench_writes_a_row_per_method(tmp_path):
    out = tmp_path / "scale.json"
    cmd = [sys.executable, str(ROOT / "bench" / "scale.py"), "--fat-tree", "4", "--mb", "0.125", "--out", str(out)]
    cmd += ["--jobs", "2", "--fail-spine", "0.5"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [(r["case"], r["method"]) for r in rows] == [
        ("curve", "ina"),
        ("curve", "ring"),
        ("curve", "ps"),
        ("jobs", "ina"),
        ("failure", "ina"),
    ]
    jobs, failure = rows[3], rows[4]
    assert jobs["jobs"] == 2 and jobs["finished"] == 14 and jobs["mismatches"] == 0
    assert len(jobs["job_completion_s"]) == 2 and min(jobs["job_completion_s"]) > 0
    assert failure["failed_switch"].startswith("c")  # a core switch of the fat-tree
    # recovered within the round: every worker, exact sums, after the controller noticed the failure
    assert failure["finished"] == 15 and failure["mismatches"] == 0
    assert failure["completion_s"] > failure["failed_at_s"] + failure["detect_s"] > failure["healthy_s"]
    assert failure["chunks_moved"] > 0
    assert failure["results_at_replan"] + failure["recovery_chunks"] == failure["chunks"]  # none sent again
    rows = rows[:3]
    for r in rows:
        assert r["workers"] == 15 and r["finished"] == 15 and r["completion_s"] > r["ideal_s"] > 0
        assert r["events"] > 0 and r["program"] == "v1model-k344"
    assert rows[0]["mismatches"] == 0
    assert out.with_suffix(".png").stat().st_size > 0
