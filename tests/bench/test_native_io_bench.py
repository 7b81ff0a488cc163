"""bench/native_io.py in its quick mode: exit 0, and the JSON it saves has every case with frames that
crossed the switch (root only: it creates veth pairs)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "native_io.py"


def run_bench(*args: str, timeout: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH), *args], capture_output=True, text=True, timeout=timeout, cwd=ROOT
    )


def _has_compiler() -> bool:
    from native.build import CompilerMissing, compiler

    try:
        compiler()
    except CompilerMissing:
        return False
    return True


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2 (veth pairs)")
@pytest.mark.skipif(not _has_compiler(), reason="the native runtime needs a C compiler")
def test_quick_run_saves_every_case(tmp_path):
    proc = run_bench("--quick", "--out", str(tmp_path), timeout=180)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((tmp_path / "native_io.json").read_text())["rows"]
    cases = {(r["case"], r.get("rx")) for r in rows}
    assert {("in_process", None), ("harness", None), ("switch", "ring"), ("switch", "recvmmsg")} <= cases
    assert all(r["received"] > 0 and r["switch_received"] > 0 for r in rows if r["case"] == "switch")
    for r in rows:
        if r["case"] == "switch_drain":  # every frame of every burst crossed the switch to the receiver
            assert r["frames"] == r["bursts"] * r["burst_frames"] == r["received_by_receiver"]
        if r["case"] == "switch_absorb":  # every frame reached the switch, none left it
            assert r["frames"] == r["bursts"] * r["burst_frames"] and r["received_by_receiver"] == 0


def test_idle_refuses_a_non_positive_duration():
    proc = run_bench("--idle", "0", timeout=60)
    assert proc.returncode == 2 and "--idle and --trickle take positive numbers" in proc.stderr


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2 (veth pairs)")
@pytest.mark.skipif(not _has_compiler(), reason="the native runtime needs a C compiler")
def test_idle_run_measures_both_receive_paths_at_rest_and_with_a_trickle(tmp_path):
    proc = run_bench("--idle", "0.3", "--rounds", "1", "--out", str(tmp_path), timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads((tmp_path / "native_io_idle.json").read_text())["rows"]
    assert sorted((r["case"], r["rx"]) for r in rows) == [
        ("idle", "hybrid"), ("idle", "ring"), ("trickle", "hybrid"), ("trickle", "ring")
    ]  # fmt: skip
    for r in rows:
        if r["case"] == "idle":  # nothing sent, nothing received
            assert r["sent"] == 0 and r["switch_received"] == 0
        else:  # 100 frames/s for 0.3 s, every one through the switch
            assert 25 <= r["sent"] <= 31 and r["switch_received"] == r["sent"]
