"""bench/scale.py on the smallest fat-tree: every method finishes, INA's sums are exact, the JSON holds
a row per method with its times, and the plot is written."""

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
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["method"] for r in rows] == ["ina", "ring", "ps"]
    for r in rows:
        assert r["workers"] == 15 and r["finished"] == 15 and r["completion_s"] > r["ideal_s"] > 0
        assert r["events"] > 0 and r["program"] == "v1model-k256"
    assert rows[0]["mismatches"] == 0
    assert out.with_suffix(".png").stat().st_size > 0
