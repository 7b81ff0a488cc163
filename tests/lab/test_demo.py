"""The demo in quick mode: its in-process path (what `make run` does without root or mininet) and its mininet path."""

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_demo(*flags: str) -> str:
    """``python -m topologies.demo --quick FLAGS`` from the repository root; its output, once it exited 0."""
    done = subprocess.run(
        [sys.executable, "-m", "topologies.demo", "--quick", *flags],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def server_link_reduction(out: str) -> float:
    """How many times fewer bytes the server's link carried with INA than with the parameter server, as
    the demo reports it (infinite where INA sent nothing over it)."""
    if re.search(r"server link: .* with the parameter server, nothing with in-network aggregation", out):
        return float("inf")
    return float(re.search(r"aggregation: ([0-9.]+)x less", out).group(1))


def test_quick_demo_in_process_verifies_sums_and_reports(tmp_path):
    png = tmp_path / "demo.png"
    out = run_demo("--inprocess", "--picture", str(png))
    assert "in-process network" in out.splitlines()[0]
    assert out.count("sums verified") == 4  # 2 in-network + 2 parameter-server rounds
    # the spine aggregates every worker and multicasts the results itself: the server's link stays idle
    assert server_link_reduction(out) == float("inf")
    assert "l1" in out and "fan-in" in out  # the plan table
    assert png.exists() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert f"picture: {png}" in out


def test_quick_demo_on_the_tna_program(tmp_path):
    """`--program tna`: the switches run p4src/tna/ina_tna.p4 (softswitch's TNA pipeline), same sums."""
    out = run_demo("--inprocess", "--program", "tna", "--picture", str(tmp_path / "demo.png"))
    assert "the switches run p4src/tna/ina_tna.p4" in out
    assert out.count("sums verified") == 4
    # its switches send the server every sum (no root mode, docs/tofino.md): a quarter of the PS's bytes
    assert 2.0 < server_link_reduction(out) < float("inf")


def test_quick_demo_in_mininet(tmp_path):
    """`make run`'s mininet path, quick: softswitch processes, agents on kernel UDP, clean exit."""
    import pytest
    from conftest import IS_ROOT, _has_mininet

    if not (IS_ROOT and _has_mininet()):
        pytest.skip("needs root and Debian's mininet")
    rmem = open("/proc/sys/net/core/rmem_default").read()
    png = tmp_path / "demo.png"
    out = run_demo("--picture", str(png))
    assert out.splitlines()[0].startswith("demo: mininet network with softswitch switches")
    assert out.count("sums verified") == 4
    assert server_link_reduction(out) > 2.0  # nothing but what the hosts' kernels send on their own
    assert "demo: finished, network torn down" in out
    assert png.exists()
    assert open("/proc/sys/net/core/rmem_default").read() == rmem
