"""bench/softswitch_pps.py in its quick mode: exit 0, the JSON it saves has every packet kind on both
back ends with positive rates and their ratios, and the veth part either ran (root: frames crossed a
softswitch process of each back end, with CPU per frame and where it went, and the router's frames crossed the kernel as
the router in the baselines) or says why not."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
KINDS = {
    "ipv4_router_forward",
    "ina_ipv4_forward",
    "grad_absorbed",
    "grad_completing",
    "grad_aggregation",
    "result_release",
    "grad_passthrough",
    "grad_aggregation_k256",
    "result_release_k256",
    "grad_aggregation_tna",
    "result_release_tna",
}


def test_quick_run_saves_both_back_ends_side_by_side(tmp_path):
    from native.build import CompilerMissing, compiler

    try:
        compiler()
    except CompilerMissing as e:
        pytest.skip(f"the native back end needs a C compiler: {e}")
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "softswitch_pps.py"),
            "--quick",
            "--seconds",
            "0.2",
            "--baselines",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "load average" in proc.stdout and "native/python" in proc.stdout
    result = json.loads((tmp_path / "softswitch_pps.json").read_text())
    assert (tmp_path / "softswitch_pps.png").stat().st_size > 0
    assert result["values_per_packet"] == 64 and result["backends"] == ["native", "python"]
    rows = {(r["backend"], r["kind"]): r for r in result["in_process"]}
    assert set(rows) == {(b, k) for b in ("native", "python") for k in KINDS}
    for row in rows.values():
        assert row["pps_median"] > 0 and row["pps_min"] <= row["pps_median"] <= row["pps_max"]
    for kind in KINDS:
        ratio = result["comparison"]["in_process"][kind]
        assert ratio == rows[("native", kind)]["pps_median"] / rows[("python", kind)]["pps_median"]

    veth = result["veth"]
    if os.geteuid() != 0:
        assert veth["skipped"] and "root" in veth["skipped"] and veth["cases"] == []
        return
    assert veth["skipped"] is None, veth["skipped"]
    cases = [(c["backend"], c["case"]) for c in veth["cases"]]
    assert cases == [
        (backend, case)
        for backend in ("native", "python")
        for case in ("plain IPv4 forward", "GRAD aggregation, fan-in 4", "GRAD pass-through hop")
    ]
    for case in veth["cases"]:
        assert case["sent"] > 0 and 0 < case["delivered"] <= case["expected_delivered"]
        assert case["processed"] > 0 and case["switch_cpu_us_per_frame"] > 0 and case["sender_cpu_us_per_frame"] > 0
        assert case["senders"] == 1
        # where the CPU went: the switch's threads by name (the native one's I/O thread among them), each
        # CPU's time split into kinds that add up to all of it, and the rate those costs allow
        acct = case["cpu_accounting"]
        assert sum(acct["switch_threads_us_per_frame"].values()) > 0 and acct["sender_us_per_frame"] > 0
        if case["backend"] == "native":
            assert acct["switch_threads_us_per_frame"]["softswitch-io"] > 0
        # the senders' figure is per frame they sent, the same as the row's
        assert acct["sender_us_per_frame"] == pytest.approx(case["sender_cpu_us_per_frame"], abs=0.001)
        assert acct["bound_pps"] > 0 and acct["backlog_drops"] >= 0
    for aggregation in (c for c in veth["cases"] if c["kind"] == "grad_aggregation"):
        assert aggregation["expected_delivered"] == aggregation["sent"] // 4
        assert aggregation["processed"] >= aggregation["delivered"] * 4
    baselines = {b["baseline"]: b for b in veth["baselines"]}
    routers = (
        {"kernel router": 1, "kernel router, rps in": 2} if len(os.sched_getaffinity(0)) > 1 else {"kernel router": 1}
    )
    assert set(baselines) == {"sender alone", "sender alone, peer down", *routers}
    alone, down = baselines["sender alone"], baselines["sender alone, peer down"]
    # every frame reached the other end of the sender's veth or its drop count; with that end down, none did
    assert alone["sent"] > 0 and alone["delivered"] > 0 and alone["delivered"] + alone["link_drops"] == alone["sent"]
    assert down["sent"] > 0 and down["delivered"] == 0 and down["link_drops"] == down["sent"]
    for name, cpus in routers.items():  # the kernel router on the senders' CPU only, then on both (RPS)
        router = baselines[name]
        assert 0 < router["delivered"] <= router["sent"] and router["delivered_pps"] > 0
        assert router["router_cpus"] == cpus
        assert result["comparison"]["veth_router_over_kernel_router"][name] > 0
    assert all(b["sender_cpu_us_per_frame"] > 0 for b in baselines.values())
    for b in baselines.values():  # per frame sent, whatever was delivered
        assert b["cpu_accounting"]["sender_us_per_frame"] == pytest.approx(b["sender_cpu_us_per_frame"], abs=0.001)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root (a network namespace and a veth pair)")
def test_receive_steering_sets_rps_for_the_case_and_puts_the_previous_mask_back():
    sys.path.insert(0, str(ROOT))
    from bench.softswitch_pps import ReceiveSteering, sh

    ns, iface = f"ppsrps{os.getpid() % 100000}", "rpstest0"
    sh("ip", "netns", "add", ns)
    try:
        sh("ip", "netns", "exec", ns, "ip", "link", "add", iface, "type", "veth", "peer", "name", "rpstest1")
        read = ("ip", "netns", "exec", ns, "cat", f"/sys/class/net/{iface}/queues/rx-0/rps_cpus")
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) < 2:
            pytest.skip("two CPUs needed to tell the mask set from the one before")

        def mask() -> int:
            return int(sh(*read).stdout.strip().replace(",", ""), 16)

        sh(
            "ip",
            "netns",
            "exec",
            ns,
            "sh",
            "-c",
            f"echo {1 << cpus[0]:x} > /sys/class/net/{iface}/queues/rx-0/rps_cpus",
        )
        with ReceiveSteering(ns, iface, cpus[-1]):
            assert mask() == 1 << cpus[-1]
        assert mask() == 1 << cpus[0]  # what it was before, not 0
        with ReceiveSteering(ns, iface, None):  # off: 0 for the case, whatever was set
            assert mask() == 0
        assert mask() == 1 << cpus[0]
    finally:
        sh("ip", "netns", "del", ns, check=False)
