"""The STF runner on a real compiled program: a passing file, a failing one, and the CLI's exit codes."""

import subprocess
import sys
from pathlib import Path

from softswitch.stf import run_stf

STF_DIR = Path(__file__).parent / "stf"
PROGRAM = STF_DIR / "l2l3.p4"
ROUTED = "020000000001020000000099080045000018000100004011" + "64c80a0000090a010203deadbeef"
FORWARDED = "0a0000000005020000000001080045000018000100003f1165c80a0000090a010203deadbeef"


def test_routing_multicast_and_mirroring_pass():
    result = run_stf(PROGRAM, STF_DIR / "l2l3.stf")
    assert result.failures == []
    assert result.ok and (result.packets_sent, result.packets_checked) == (4, 5)


def test_each_mismatch_is_reported_per_port():
    result = run_stf(PROGRAM, STF_DIR / "l2l3_fail.stf")
    assert not result.ok
    assert result.failures == [
        "port 2: packet #1 (line 4) differs: expected "
        "0a00000000050200000000010800450000180001000040"
        "1165c80a0000090a010203deadbeef, got " + FORWARDED,
        "port 2: unexpected packet #2: got " + FORWARDED,
        "port 5: missing packet #1 (line 6): expected 00, got nothing",
    ]


def test_cli_exit_status_and_report():
    ok = subprocess.run(
        [sys.executable, "-m", "softswitch", "stf", str(PROGRAM), str(STF_DIR / "l2l3.stf")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (ok.returncode, ok.stdout) == (0, "PASS: 4 packet(s) sent, 5 expectation(s) met\n")
    bad = subprocess.run(
        [sys.executable, "-m", "softswitch", "stf", str(PROGRAM), str(STF_DIR / "l2l3_fail.stf")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode == 1
    assert bad.stdout.splitlines()[0] == "FAIL:" and len(bad.stdout.splitlines()) == 4


def test_unknown_table_is_a_one_line_error(tmp_path):
    stf = tmp_path / "bad.stf"
    stf.write_text("add nosuch k:1 NoAction()\n")
    result = subprocess.run(
        [sys.executable, "-m", "softswitch", "stf", str(PROGRAM), str(stf)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    # one line, besides the one that says the program falls back to Python (on a machine without a C compiler)
    errors = [line for line in result.stderr.splitlines() if "runs on the Python back end" not in line]
    assert len(errors) == 1 and errors[0].startswith(f"softswitch: error: {stf}:1: add: no table named 'nosuch'")
