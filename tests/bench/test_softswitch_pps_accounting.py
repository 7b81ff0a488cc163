"""bench/softswitch_pps.py's CPU accounting and comparisons, from made-up readings: the senders' CPU is
per frame they sent and the switch's per frame it processed (with input loss the two differ), the
native/python and switch/kernel-router comparisons use the RPS-off rows only, and --rps in on one CPU is
refused with a clear error."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from bench import softswitch_pps as pps  # noqa: E402


def snapshot(cpu0: dict, threads: dict, softnet: list, ksoftirqd: float) -> pps.CpuSnapshot:
    """A CpuSnapshot with the given readings instead of the machine's."""
    snap = pps.CpuSnapshot.__new__(pps.CpuSnapshot)
    snap.cpus = {0: {"user": 0.0, "system": 0.0, "softirq": 0.0, "irq": 0.0, "steal": 0.0, **cpu0}}
    snap.cpus[1] = dict(snap.cpus[0])
    snap.threads, snap.softnet, snap.ksoftirqd = threads, softnet, ksoftirqd
    return snap


def test_senders_per_frame_sent_switch_per_frame_processed():
    # 1,000,000 frames sent, 400,000 processed (60 % input loss); the senders spent 1.6 s, the switch's
    # I/O thread 0.8 s (slept 40 times), ksoftirqd 0.04 s; both CPUs 2.0 s busy of 2.2 s
    before = snapshot({"idle": 10.0}, {"softswitch-io": (5.0, 100)}, [(0, 0), (0, 0)], 1.0)
    after = snapshot(
        {"user": 1.5, "system": 0.3, "softirq": 0.2, "idle": 10.2},
        {"softswitch-io": (5.8, 140)},
        [(7, 0), (9, 3)],
        1.04,
    )
    acct = after.accounting(before, processed=400_000, sent=1_000_000, sender_cpu_seconds=1.6)
    assert acct["sender_us_per_frame"] == 1.6  # not 4.0: the senders sent every frame, lost ones too
    assert acct["sender_core_pps"] == 625_000
    assert acct["switch_threads_us_per_frame"] == {"softswitch-io": 2.0}
    assert acct["ksoftirqd_us_per_frame"] == 0.1
    assert acct["rest_of_machine_us_per_frame"] == pytest.approx((4.0 - 1.6 - 0.8 - 0.04) / 0.4, abs=0.001)
    assert acct["bound_pps"] == round(2 * 1e6 / (1.6 + 2.0 + 0.1))
    assert acct["io_thread_sleeps_per_1000_frames"] == 0.1
    assert (acct["backlog_drops"], acct["backlog_frames_per_cpu"]) == (3, [7, 9])
    # each CPU: 1.5 s user, 0.3 system, 0.2 softirq and 0.2 idle of 2.2 s
    assert acct["cpus"][0] == {"user_pct": 68.2, "system_pct": 13.6, "softirq_pct": 9.1, "irq_pct": 0.0,
                               "steal_pct": 0.0, "idle_pct": 9.1}  # fmt: skip
    assert after.busy_pct(before) == pytest.approx(100 * 4.0 / 4.4)


def veth_row(backend: str, kind: str, pps_: float, rps: str, cpu_us: float) -> dict:
    return {"backend": backend, "kind": kind, "processed_pps": pps_, "rps": rps, "switch_cpu_us_per_frame": cpu_us,
            "switch_tx": "ring" if backend == "native" else None,
            "switch_rx": pps.DEFAULT_RX if backend == "native" else None}  # fmt: skip


def test_comparisons_leave_the_rps_in_rows_out():
    cases = [
        veth_row("native", "ipv4_router_forward", 600_000, "off", 1.6),
        veth_row("native", "ipv4_router_forward", 900_000, "in", 0.5),  # made up to be seen if it counted
        veth_row("python", "ipv4_router_forward", 60_000, "off", 16.0),
        veth_row("python", "ipv4_router_forward", 300_000, "in", 3.0),
    ]
    baselines = [
        {"baseline": "sender alone", "senders": 1, "sender_path": "sendmmsg", "sender_cpu_us_per_frame": 1.2,
         "delivered_pps": 800_000, "router_cpus": None},
        {"baseline": pps.KERNEL_ROUTER, "senders": 1, "sender_path": "sendmmsg", "sender_cpu_us_per_frame": 2.0,
         "delivered_pps": 500_000, "router_cpus": 1},
        {"baseline": pps.KERNEL_ROUTER_RPS, "senders": 1, "sender_path": "sendmmsg", "sender_cpu_us_per_frame": 1.3,
         "delivered_pps": 800_000, "router_cpus": 2},
    ]  # fmt: skip
    out = pps.comparisons({"in_process": [], "veth": {"cases": cases, "baselines": baselines}})
    assert out["veth"]["ipv4_router_forward"] == 10.0
    assert out[f"veth_{pps.DEFAULT_RX}_rx_pps"] == {"ipv4_router_forward": 600_000}  # the native default path
    assert out["targets"]["veth_router_pps"] == 600_000
    assert out["veth_router_over_kernel_router"] == {pps.KERNEL_ROUTER: 1.2, pps.KERNEL_ROUTER_RPS: 0.75}


def test_rps_in_on_one_cpu_is_refused(monkeypatch, capsys):
    monkeypatch.setattr(pps.os, "sched_getaffinity", lambda pid: {0})
    with pytest.raises(SystemExit) as exit_:
        pps.parse_args(["--rps", "off,in"])
    assert exit_.value.code == 2
    assert "--rps in moves the switch's input receive work to the switch's CPU" in capsys.readouterr().err
    assert pps.parse_args(["--rps", "off"]).rps == ("off",)
