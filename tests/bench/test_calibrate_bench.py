"""bench/calibrate.py on a lab JSON of one small run: the simulator's row beside the lab's, the ratio of
the two and the lab machine's CPU bound computed from the JSON's own figures."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler")
def test_calibrate_sets_the_simulator_beside_the_labs_run(tmp_path):
    run = {
        "method": "ina",
        "values_per_packet": 256,
        "bytes_per_worker": 262144,  # 0.25 MB
        "rto_s": None,
        "time_s": 0.05,
        "ideal_s": 0.02097152,
        "agent_rtt_ms": {"0": 10.0, "1": 14.0},
        "machine_busy": 0.9,
        "retransmissions": 0,
        "cpu_s": {"switch s1": 0.03, "worker h1": 0.02, "server h5": 0.01},
    }
    lab = tmp_path / "lab.json"
    lab.write_text(json.dumps({"reports": [{"topology": "topologies/star_100m.yaml", "runs": [run]}]}))
    out = tmp_path / "calibrate.json"
    cmd = [sys.executable, str(ROOT / "bench" / "calibrate.py"), "--lab", str(lab), "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    (row,) = json.loads(out.read_text())["rows"]
    sim = row["sim"]
    assert row["topology"] == "topologies/star_100m.yaml" and row["values_per_packet"] == 256
    assert sim["finished"] == 4 and sim["mismatches"] == 0 and sim["bytes_per_worker"] == 262144
    assert row["sim_over_lab"] == pytest.approx(sim["completion_s"] / 0.05)
    assert row["lab"]["rtt_ms"] == 12.0 and row["lab_cpu_bound_s"] == pytest.approx(0.03)  # 0.06 CPU s / 2 cores
    assert row["bound_s"] == pytest.approx(max(sim["completion_s"], 0.03))
    assert "sim/lab" in proc.stdout and "star_100m.yaml" in proc.stdout
