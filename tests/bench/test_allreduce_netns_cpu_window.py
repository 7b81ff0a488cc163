"""bench/allreduce_netns.py charges a method only the CPU of its round: the switches' and the server's
counters, read before and after for the packet rates and drops, cost the switch (a P4Runtime read, the
port stats it is signalled for) and the server agent CPU that the round's figures must leave out."""

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import allreduce_netns as bench  # noqa: E402

ROUND_S = {"switch s1": 0.1, "worker h1": 0.3, "server h3": 0.2}  # what the round itself costs each process
READ_S = {"switch s1": 0.022, "server h3": 0.005}  # what one read of the counters costs


class Clock:
    """Every process's CPU seconds so far: the round and every counter read add to them."""

    def __init__(self):
        self.cpu = dict.fromkeys(ROUND_S, 0.0)

    def charge(self, costs: dict[str, float]) -> None:
        for name, seconds in costs.items():
            self.cpu[name] += seconds


def fake_bench(clock: Clock) -> bench.LabBench:
    def switch_counters(plan):
        clock.charge({"switch s1": READ_S["switch s1"]})
        return {"s1": {"grad_aggregated": 16}}

    def server_stats():
        clock.charge({"server h3": READ_S["server h3"]})
        return {"contributions": 0, "results_sent": 0}

    def allreduce(rounds, values, mode, timeout):
        clock.charge(ROUND_S)
        return [
            SimpleNamespace(
                elapsed=0.5,
                cpu_s={0: ROUND_S["worker h1"]},
                retransmissions=0,
                rtt_ms=None,
                windows=None,
                lowest_rtt_ms=None,
                rto_ms=None,
                timer={},
                send_buffer_full=0,
                datagrams_per_receive={},
            )
        ]

    plan = SimpleNamespace(value_count=64)
    lab_bench = bench.LabBench.__new__(bench.LabBench)
    lab_bench.lab = SimpleNamespace(
        plan=plan,
        ps_plan=plan,
        workers=["h1"],
        network=SimpleNamespace(mtu=1500),
        link_bytes=lambda: {0: 0},
        switch_counters=switch_counters,
        server_stats=server_stats,
        allreduce=allreduce,
    )

    def read_drops():
        clock.charge({"switch s1": READ_S["switch s1"]})  # the switch writes its port stats when signalled
        return {"qdisc": {}, "veth": {}, "ring": {"s1 port 1": 0}, "udp": {}, "softnet": {}}

    lab_bench.drops = SimpleNamespace(read=read_drops, switch_ends=[])
    lab_bench.processes = lambda method: {name: name for name in ROUND_S}
    lab_bench.link_names, lab_bench.host_links, lab_bench.bandwidth_mbps = ["h1-s1"], [0], 100.0
    return lab_bench


class NoSampler:
    def __init__(self, interfaces):
        self.peak = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def test_a_round_is_charged_its_own_cpu_and_not_the_counter_reads(monkeypatch):
    clock = Clock()
    monkeypatch.setattr(bench, "process_cpu_seconds", lambda name: clock.cpu[name])
    monkeypatch.setattr(bench, "machine_busy", lambda: (0.0, 1.0))
    monkeypatch.setattr(bench, "BacklogSampler", NoSampler)
    row = fake_bench(clock).run("ina", 1024, timeout=1.0)  # one worker's 1,024 values
    assert row["cpu_s"] == pytest.approx(ROUND_S)
    assert row["switch_cpu_us_per_1024_values"] == pytest.approx(1e6 * ROUND_S["switch s1"])
    host = ROUND_S["worker h1"] + ROUND_S["server h3"]
    assert row["host_cpu_us_per_1024_values"] == pytest.approx(1e6 * host)
    assert clock.cpu["switch s1"] > ROUND_S["switch s1"]  # the reads did cost the switch, outside the window
