"""examples/train_digits.py end to end on the in-process switch network (short run)."""

import json
import subprocess
import sys
from pathlib import Path

from ina_jobs import softswitch_available

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not softswitch_available(), reason="softswitch / in-process network not importable")
def test_train_digits_on_ina_learns_and_keeps_ranks_in_sync(tmp_path):
    out = tmp_path / "summary.json"
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "train_digits.py"), "--backend", "ina",
                           "--workers", "2", "--epochs", "3", "--seed", "0", "--json", str(out)],
                          capture_output=True, text=True, timeout=240, cwd=str(REPO))
    assert proc.returncode == 0, proc.stderr[-2000:]
    summary = json.loads(out.read_text())
    assert summary["backend"] == "ina" and summary["ranks_in_sync"]
    assert summary["test_accuracy"] > 0.7            # 10 classes: chance is 0.1
    assert "chunks completed in the data plane" in proc.stdout


def test_bad_flags_are_one_line():
    proc = subprocess.run([sys.executable, str(REPO / "examples" / "train_digits.py"), "--rank", "1"],
                          capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert proc.returncode == 2
    assert "--rank needs --world-size" in proc.stderr
