"""Allreduce on a real network: INA, the parameter server and gloo, side by side in the mininet lab.

Each topology file becomes the lab's network (network namespaces, veth links shaped by tc to the
file's bandwidths, one softswitch process per switch running the P4 program, entries written by the
controller over P4Runtime). On that one network, for every size (MB of int32 gradient per worker),
it runs in turn:

- ``ina``: the worker agents (kernel UDP) through the aggregating switches to the server agent;
- ``ps``: the parameter server: the same agents and packets on a plan where no switch aggregates;
- ``gloo``: torch.distributed's gloo all_reduce between the worker hosts (TCP through the switches'
  IPv4 routes).

With no options it measures what a user who names nothing runs: star_100m and star (1 Gbit/s), 4 and 64 MB
per worker, 3 runs of each method taking turns, on the switches' default program (the largest K the
topology's links carry: K = 344 at a 1500-byte MTU, K = 1024 on jumbo links; controller.programs.default_program).
``--program v1model v1model-k256`` (or its shorthand ``--lanes 64 256``) runs ina and ps once per build of the switches' program instead, each on a lab of its
own (gloo runs again where the links' MTU changes).

Every sum is checked (the lab against numpy, gloo's ranks against the inputs made again from the
seed). For each run it records the completion time (slowest worker), the ratio to the ideal S/B (S
bytes per worker over the host links' bandwidth B: a worker must at least send S and receive S),
the bytes every link carried, chunks resent, packets dropped anywhere (topologies/lab_drops.py), what each
component did per second (packets the worker agents sent, packets the server agent took in, GRADs the
switches aggregated or passed and RESULTs they forwarded: P4 counters), and the CPU each process used:
per 1,024 values a worker contributes, the hosts' (workers and server, or gloo's ranks) apart from the
switches' (software here, hardware in a deployment). The summary gives each case's median, its ratio to
gloo's median at the same size and to the ideal, resends, drops and host CPU against gloo's. Mininet runs
take /tmp/ina-lab.lock for one lab's run at a time (other lab users wait, and so does this).

Every method first runs one untimed round at the smallest size measured (``--warmup``): a method's
first large round pays costs the later ones do not (gloo connects, the switches' slot cells fault in).
Repeats interleave the methods (ina, ps, gloo, ina, ...), so a slow spell of the machine falls on all of them.

    .venv/bin/python bench/allreduce_netns.py                       # the default story (about 10 minutes)
    .venv/bin/python bench/allreduce_netns.py --topology topologies/leaf_spine_100m.yaml topologies/leaf_spine.yaml
    .venv/bin/python bench/allreduce_netns.py --topology topologies/star_100m.yaml --lanes 64 256 --repeats 1

Needs root and Debian's mininet. Saves bench/results/allreduce_netns.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.cpu_time import machine_busy, process_cpu_seconds, process_kernel_seconds  # noqa: E402
from controller.cli_options import add_lanes_shorthand, add_program  # noqa: E402
from controller.programs import declared_values_per_packet, default_program, program_file  # noqa: E402
from controller.topology_yaml import load_topology  # noqa: E402
from protocol import constants as C  # noqa: E402
from protocol.layouts import link_mtu  # noqa: E402
from topologies.lab_drops import BacklogSampler, DropCounters, drop_total, drops_between, drops_line  # noqa: E402
from topologies.lab_lock import LAB_LOCK  # noqa: E402
from topologies.lab_lock import held as lab_lock_held  # noqa: E402

RESULTS = ROOT / "bench" / "results"
METHODS = ("ina", "ps", "gloo")
DEFAULT_TOPOLOGIES = ("topologies/star_100m.yaml", "topologies/star.yaml")
LOCK = LAB_LOCK


@contextmanager
def lab_lock(path: str | None):
    """Hold the lab lock for one topology's run (the lab takes it too; held here, it covers the run's set-up
    and report as well): two mininet runs collide on interface names."""
    if not path:
        yield
        return
    with lab_lock_held(lambda line: print(line, flush=True), path):
        yield


class LabBench:
    """One topology's lab; ``run(method, values)`` measures one allreduce on it."""

    def __init__(self, topology: str, log, pool_size: int, program: str = "v1model"):
        from controller.planner import PlanOptions
        from topologies.mininet_lab import MininetLab

        # results go down the tree by multicast (the lab's default): from the switch that aggregates every
        # worker where there is one (docs/protocol.md, "Root multicast"; the server's link then carries the
        # sums' copies in only), else one RESULT leaves the server per chunk
        options = PlanOptions(result_mode="multicast", pool_size=pool_size)
        self.lab = MininetLab(str(ROOT / topology), program=program, log=log, plan_options=options)
        self.topology = topology
        self.log = log

    def __enter__(self) -> LabBench:
        self.lab.start()
        topo = self.lab.topo
        hosts = {h.name for h in topo.hosts}
        ends = set(self.lab.workers) | {self.lab.server}
        self.drops = DropCounters(self.lab.network)
        self.host_links = [i for i, link in enumerate(topo.links) if link.a in ends or link.b in ends]
        self.bandwidth_mbps = min(topo.links[i].bandwidth for i in self.host_links)
        self.link_names = [
            f"{link.a}:{link.a_port}-{link.b}:{link.b_port}" if link.a not in hosts else f"{link.a}-{link.b}"
            for link in topo.links
        ]
        return self

    def __exit__(self, *exc) -> None:
        self.lab.stop()

    def processes(self, method: str) -> dict[str, int]:
        """The pids whose CPU a method's run is charged: switches, and the agents or gloo ranks."""
        lab = self.lab
        pids = {f"switch {sw.name}": sw.proc.pid for sw in lab.network.net.switches if sw.proc is not None}
        if method == "gloo":
            pids.update({f"gloo {name}": rank.proc.pid for name, rank in lab.agents.gloo_ranks.items()})
        else:
            pids.update({f"worker {name}": agent.proc.pid for name, agent in lab.agents.workers.items()})
            if lab.agents.server_agent is not None:
                pids[f"server {lab.server}"] = lab.agents.server_agent.proc.pid
        return pids

    def values_and_timeout(self, mb: float) -> tuple[int, float]:
        """int32 values per worker in ``mb`` MB, and a round's timeout: 30x every worker's ideal time, 120 s
        at least."""
        values = int(mb * 2**20) // 4
        ideal = 4 * values * 8 / (self.bandwidth_mbps * 1e6)
        return values, max(120.0, 30 * ideal * len(self.lab.workers))

    def run(self, method: str, values: int, timeout: float, settings: dict | None = None) -> dict:
        """One timed round of ``method``; ``settings``: the worker agents' for it (``agent_settings``)."""
        settings = settings or {}
        lab = self.lab
        if method == "gloo":
            lab.start_gloo()  # start-up (rendezvous, connections) is not part of the round
        plan = lab.ps_plan if method == "ps" else lab.plan
        pids = self.processes(method)
        # the counters are read outside the window the processes' CPU is measured over: a read costs the
        # switch (P4Runtime, the port stats it is signalled for) and the server agent CPU of their own
        switches0 = lab.switch_counters(plan) if method != "gloo" else {}
        server0 = lab.server_stats() if method != "gloo" else {}
        drops0 = self.drops.read()
        links0, cpu0, busy0 = lab.link_bytes(), {k: process_cpu_seconds(p) for k, p in pids.items()}, machine_busy()
        kernel0 = {k: process_kernel_seconds(p) for k, p in pids.items()}
        wall0 = time.monotonic()
        with BacklogSampler(self.drops.switch_ends) as backlog:
            result = lab.allreduce(1, values, mode=method, timeout=timeout, **settings)[0]
        wall = time.monotonic() - wall0
        busy1 = machine_busy()
        cpu = {k: process_cpu_seconds(p) - cpu0[k] for k, p in pids.items()}
        kernel = {k: process_kernel_seconds(p) - kernel0[k] for k, p in pids.items()}
        links1 = lab.link_bytes()
        drops = drops_between(drops0, self.drops.read(), backlog.peak)
        link_bytes = {self.link_names[i]: links1[i] - links0.get(i, 0) for i in links1}
        elapsed = result.elapsed
        size = 4 * values
        # the hosts' CPU in the collective itself: each worker's (or gloo rank's) own figure for the
        # all_reduce call, which leaves out the harness's making of inputs and checking of sums, plus
        # the server agent's process, which does nothing else
        host_cpu = sum(result.cpu_s.values()) + sum(v for k, v in cpu.items() if k.startswith("server "))
        thousands = values * len(lab.workers) / 1024
        ideal = size * 8 / (self.bandwidth_mbps * 1e6)
        row = {
            "method": method,
            "values": values,
            "values_per_packet": lab.plan.value_count,
            "mtu": lab.network.mtu,
            "bytes_per_worker": size,
            "rto_s": settings.get("rto"),  # the worker agents' base retransmission timeout set for the round
            # their detection of spurious timeouts, if set for the round (None: the agent's default, off)
            "detect_spurious": settings.get("spurious"),
            "time_s": elapsed,
            "ideal_s": ideal,
            "ratio_to_ideal": elapsed / ideal,
            "wall_s": wall,
            "retransmissions": result.retransmissions,
            "agent_rtt_ms": result.rtt_ms,
            "agent_windows": result.windows,
            "agent_lowest_rtt_ms": result.lowest_rtt_ms,
            "agent_rto_ms": result.rto_ms,
            "timer": result.timer,  # the workers' timer events (topologies/mininet_lab.TIMER_COUNTERS)
            "send_buffer_full": result.send_buffer_full,
            "link_bytes": link_bytes,
            "host_link_max_bytes": max(link_bytes[self.link_names[i]] for i in self.host_links),
            "collective_cpu_s": {str(rank): v for rank, v in result.cpu_s.items()},
            "datagrams_per_receive": {str(rank): v for rank, v in result.datagrams_per_receive.items()},
            "cpu_share": {k: v / wall for k, v in cpu.items()},
            "cpu_s": cpu,
            "kernel_cpu_s": kernel,  # the system time in cpu_s, by process (bench/cpu_time.process_kernel_seconds)
            # CPU of every process of the method per chunk of K values (gloo: per as many values), all
            # workers' copies included: what the machine's cores must supply at the links' rate
            "cpu_us_per_chunk": 1e6 * sum(cpu.values()) / -(-values // lab.plan.value_count),
            # the same per process: what one component spends on one chunk (a worker its GRAD and RESULT,
            # a switch every copy it handles, the server the chunk's sum), independent of the load
            "cpu_us_per_chunk_by_process": {k: 1e6 * v / -(-values // lab.plan.value_count) for k, v in cpu.items()},
            # CPU per 1,024 values a worker contributes, split between the hosts (workers, server, or gloo's
            # ranks: what a real deployment pays) and the switches (software here, hardware in a real one)
            "host_cpu_us_per_1024_values": 1e6 * host_cpu / thousands,
            # the kernel's part of the hosts' figure: their processes' system time over the round (system calls,
            # and the softirq work that ran while they were on a CPU)
            "host_kernel_cpu_us_per_1024_values": 1e6
            * sum(v for k, v in kernel.items() if not k.startswith("switch "))
            / thousands,
            "switch_cpu_us_per_1024_values": 1e6
            * sum(v for k, v in cpu.items() if k.startswith("switch "))
            / thousands,
            "machine_busy": (busy1[0] - busy0[0]) / max(1e-9, busy1[1] - busy0[1]),
            # every packet lost during the round and where (topologies/lab_drops.py)
            "drops": drops,
            "drops_total": drop_total(drops),
        }
        if method != "gloo":
            switches1 = lab.switch_counters(plan)
            server1 = lab.server_stats()
            per_switch = {}
            for name, now in switches1.items():
                before = switches0.get(name, {})
                delta = {k: v - before.get(k, 0) for k, v in now.items() if v - before.get(k, 0)}
                grads = sum(delta.get(k, 0) for k in ("grad_aggregated", "grad_passed"))
                if grads or delta.get("result_forwarded"):
                    per_switch[name] = {
                        "counters": delta,
                        "grad_per_s": grads / elapsed,
                        "result_per_s": delta.get("result_forwarded", 0) / elapsed,
                    }
            chunks = -(-values // plan.value_count)
            row["switches"] = per_switch
            row["chunks_per_worker"] = chunks
            row["worker_packets_per_s"] = chunks / elapsed  # GRADs one worker sent, first sends only
            row["server_packets_in_per_s"] = (
                server1.get("contributions", 0) - server0.get("contributions", 0)
            ) / elapsed
            row["server_results_out_per_s"] = (
                server1.get("results_sent", 0) - server0.get("results_sent", 0)
            ) / elapsed
        return row


def describe(row: dict) -> str:
    """One progress line: time, ratio to ideal, busiest host link, per-component rates and CPU."""
    text = (
        f"{row['bytes_per_worker'] / 2**20:>5.0f} MB {label(row):>10}: {row['time_s']:8.3f} s "
        f"({row['ratio_to_ideal']:5.2f} x ideal {row['ideal_s']:.3f} s), busiest host link "
        f"{row['host_link_max_bytes'] / 2**20:7.1f} MB, retx {row['retransmissions']}"
    )
    if row.get("timer"):
        text += " (" + ", ".join(f"{k} {v}" for k, v in row["timer"].items()) + ")"
    if "worker_packets_per_s" in row:
        switch_rates = ", ".join(f"{n} {v['grad_per_s'] / 1e3:.0f}k GRAD/s" for n, v in row["switches"].items())
        batches = row.get("datagrams_per_receive") or {}
        batch_text = f" ({min(batches.values()):.0f}-{max(batches.values()):.0f} a wake-up)" if batches else ""
        text += (
            f"\n{'':>13}worker {row['worker_packets_per_s'] / 1e3:.0f}k pkt/s each{batch_text}, server in "
            f"{row['server_packets_in_per_s'] / 1e3:.0f}k/s out {row['server_results_out_per_s'] / 1e3:.0f}k/s"
            + (f", {switch_rates}" if switch_rates else "")
        )
    busiest = sorted(row["cpu_share"].items(), key=lambda kv: -kv[1])[:6]
    per_chunk = row["cpu_us_per_chunk_by_process"]
    cpu = ", ".join(f"{k} {100 * v:.0f}% ({per_chunk[k]:.1f} us/chunk)" for k, v in busiest)
    text += f"\n{'':>13}{drops_line(row['drops'])}" if "drops" in row else ""
    kernel = row.get("host_kernel_cpu_us_per_1024_values")
    kernel_text = f" (kernel {kernel:.1f})" if kernel is not None else ""
    return text + (
        f"\n{'':>13}CPU of one core: {cpu}; {row['cpu_us_per_chunk']:.0f} us of CPU per chunk of "
        f"{row['values_per_packet']} values in all; machine busy {100 * row['machine_busy']:.0f}%"
        f"\n{'':>13}CPU per 1,024 values: hosts {row['host_cpu_us_per_1024_values']:.1f} us{kernel_text}, "
        f"switches {row['switch_cpu_us_per_1024_values']:.1f} us"
    )


def summarize(runs: list[dict]) -> list[dict]:
    """Every method's repeats of one size in one entry: the median time and ratio to the ideal, and the
    spread (fastest, slowest), so no single run stands for the case."""
    groups: dict[tuple[str, int], list[dict]] = {}
    for row in runs:
        groups.setdefault((label(row), row["bytes_per_worker"]), []).append(row)
    out = []
    for (name, size), rows in groups.items():
        times = sorted(r["time_s"] for r in rows)
        median = statistics.median(times)
        out.append(
            {
                "label": name,
                "bytes_per_worker": size,
                "runs": len(times),
                "median_s": median,
                "min_s": times[0],
                "max_s": times[-1],
                "median_ratio_to_ideal": median / rows[0]["ideal_s"],
                "retransmissions": [r["retransmissions"] for r in rows],
                "drops": [r.get("drops_total", 0) for r in rows],
                "host_cpu_us_per_1024_values": [
                    r["host_cpu_us_per_1024_values"] for r in rows if "host_cpu_us_per_1024_values" in r
                ],
                "host_kernel_cpu_us_per_1024_values": [
                    r["host_kernel_cpu_us_per_1024_values"] for r in rows if "host_kernel_cpu_us_per_1024_values" in r
                ],
                "switch_cpu_us_per_1024_values": [
                    r["switch_cpu_us_per_1024_values"] for r in rows if "switch_cpu_us_per_1024_values" in r
                ],
            }
        )
    return out


def describe_summary(entry: dict) -> str:
    """One line per case: median (x ideal) and the spread of its runs."""
    return (
        f"{entry['bytes_per_worker'] / 2**20:>5.0f} MB {entry['label']:>10}: median {entry['median_s']:8.3f} s "
        f"({entry['median_ratio_to_ideal']:5.2f} x ideal) of {entry['runs']} runs, "
        f"{entry['min_s']:.3f}-{entry['max_s']:.3f} s"
    )


def label(row: dict) -> str:
    """The method and, for the agents' methods, K: "ina K=256", "ps K=64", "gloo"; and a link MTU other than
    1500: "ina K=1024 MTU 9000", "gloo MTU 9000"; a retransmission timeout set by --rto: "... RTO 0.5"; the
    detection of spurious timeouts set by --spurious: "... spurious on"/"... spurious off"."""
    text = row["method"] if row["method"] == "gloo" else f"{row['method']} K={row['values_per_packet']}"
    mtu = row.get("mtu", C.MTU_BYTES)
    text = text if mtu == C.MTU_BYTES else f"{text} MTU {mtu}"
    text = text if row.get("rto_s") is None else f"{text} RTO {row['rto_s']:g}"
    spurious = row.get("detect_spurious")
    return text if spurious is None else f"{text} spurious {'on' if spurious else 'off'}"


def agent_settings(rtos: list[float] | None, spurious: list[str] | None) -> list[dict]:
    """The worker agents' settings each agent method runs with in turn: every --rto with every --spurious.

    Examples
    --------
    >>> agent_settings([0.2, 0.5], ["off", "on"])[:2], agent_settings(None, None)
    ([{'rto': 0.2, 'spurious': False}, {'rto': 0.2, 'spurious': True}], [{}])
    """
    return [
        {k: v for k, v in (("rto", rto), ("spurious", None if s is None else s == "on")) if v is not None}
        for rto in (rtos or [None])
        for s in (spurious or [None])
    ]


def run_topology(
    topology: str,
    sizes_mb: list[float],
    methods: list[str],
    repeats: int,
    lock: str | None,
    pool_size: int,
    programs: list[str] | None = None,
    warmup_mb: float | None = None,
    settings: list[dict] | None = None,
) -> dict:
    """Every method and size on one topology; ina and ps once per program in ``programs`` (a lab each)."""
    report: dict = {"topology": topology, "runs": []}
    gloo_mtus: set[int] = set()
    links_mtu = load_topology(ROOT / topology).smallest_mtu()
    for program in programs_for(programs, links_mtu):
        # gloo does not depend on the switches' program, but on the links' MTU (jumbo frames for K = 1024
        # carry TCP's segments too): it runs on the first lab of each MTU, so gloo and INA share a network
        k = declared_values_per_packet(program_file(program)) or C.VALUES_PER_PACKET
        mtu = max(links_mtu, link_mtu(k))
        lab_methods = [m for m in methods if m != "gloo" or mtu not in gloo_mtus]
        gloo_mtus.add(mtu)
        part = _run_lab(
            topology, sizes_mb, lab_methods, repeats, lock, pool_size, program,
            min(sizes_mb) if warmup_mb is None else warmup_mb, settings,
        )  # fmt: skip
        report["runs"] += part.pop("runs")
        report["uptime_after"] = part["uptime_after"]
        for key, value in part.items():  # the first lab's load before, the topology's facts
            report.setdefault(key, value)
    report["summary"] = summarize(report["runs"])
    report["against_gloo"] = against_gloo(report["summary"])
    print(f"{topology}: medians and spreads", flush=True)
    for entry in report["summary"]:
        print(describe_summary(entry), flush=True)
    for entry in report["against_gloo"]:
        print(describe_against_gloo(entry), flush=True)
    return report


def programs_for(programs: list[str] | None, links_mtu: int) -> list[str]:
    """The switches' programs to measure: ``programs`` (--program, or --lanes K), or the default program of links with that
    MTU (controller.programs.default_program), which is what a user who names none runs.

    Examples
    --------
    >>> programs_for(None, 1500), programs_for(None, 9000), programs_for(["v1model", "v1model-k256"], 1500)
    (['v1model-k344'], ['v1model-k1024'], ['v1model', 'v1model-k256'])
    """
    if not programs:
        return [default_program(links_mtu)]
    return list(programs)


def against_gloo(summary: list[dict]) -> list[dict]:
    """Every agent method's median over gloo's at the same size on the same links (MTU): below 1, faster.

    Examples
    --------
    >>> rows = [{"label": "gloo", "bytes_per_worker": 4, "median_s": 2.0, "median_ratio_to_ideal": 1.25,
    ...          "retransmissions": [0], "drops": [0], "host_cpu_us_per_1024_values": [40.0]},
    ...         {"label": "ina K=256", "bytes_per_worker": 4, "median_s": 1.5, "median_ratio_to_ideal": 0.9,
    ...          "retransmissions": [2], "drops": [0], "host_cpu_us_per_1024_values": [20.0]}]
    >>> against_gloo(rows)[0]["time_over_gloo"], against_gloo(rows)[0]["host_cpu_over_gloo"]
    (0.75, 0.5)
    """

    def links(label: str) -> str:  # the links' MTU a label names ("" for 1500): gloo and INA on one network
        return label.partition(" MTU ")[2].split(" ")[0]

    gloo = {(e["bytes_per_worker"], links(e["label"])): e for e in summary if e["label"].startswith("gloo")}
    out = []
    for entry in summary:
        base = gloo.get((entry["bytes_per_worker"], links(entry["label"])))
        if entry["label"].startswith("gloo") or base is None:
            continue
        cpu, base_cpu = entry.get("host_cpu_us_per_1024_values"), base.get("host_cpu_us_per_1024_values")
        kernel = entry.get("host_kernel_cpu_us_per_1024_values")
        out.append(
            {
                "label": entry["label"],
                "bytes_per_worker": entry["bytes_per_worker"],
                "median_s": entry["median_s"],
                "gloo_median_s": base["median_s"],
                "time_over_gloo": entry["median_s"] / base["median_s"],
                "ratio_to_ideal": entry["median_ratio_to_ideal"],
                "gloo_ratio_to_ideal": base["median_ratio_to_ideal"],
                "retransmissions": entry["retransmissions"],
                "drops": entry["drops"],
                "host_cpu_over_gloo": statistics.median(cpu) / statistics.median(base_cpu)
                if cpu and base_cpu
                else None,
                # the hosts' kernel time alone against gloo's hosts' whole CPU: the floor a faster user space
                # leaves (the kernel's per-datagram work)
                "host_kernel_cpu_over_gloo": statistics.median(kernel) / statistics.median(base_cpu)
                if kernel and base_cpu
                else None,
            }
        )
    return out


def describe_against_gloo(entry: dict) -> str:
    """One line per agent method and size: its median against gloo's, x ideal, resends, drops, host CPU."""
    cpu, kernel = entry["host_cpu_over_gloo"], entry.get("host_kernel_cpu_over_gloo")
    return (
        f"{entry['bytes_per_worker'] / 2**20:>5.0f} MB {entry['label']:>10} / gloo: {entry['time_over_gloo']:.2f} "
        f"({entry['median_s']:.3f} / {entry['gloo_median_s']:.3f} s; x ideal {entry['ratio_to_ideal']:.2f} / "
        f"{entry['gloo_ratio_to_ideal']:.2f}); resent {entry['retransmissions']}, dropped {entry['drops']}"
        + ("" if cpu is None else f"; host CPU per value {cpu:.2f}x gloo's")
        + ("" if cpu is None or kernel is None else f" (its kernel part alone {kernel:.2f}x)")
    )


def _run_lab(
    topology: str, sizes_mb: list[float], methods: list[str], repeats: int, lock: str | None, pool_size: int,
    program: str, warmup_mb: float, settings: list[dict] | None = None,
) -> dict:  # fmt: skip
    log_lines: list[str] = []

    def log(message: str) -> None:
        log_lines.append(message)
        if message.startswith("[lab] ") and ("starting" in message or "network up" in message or "agents" in message):
            print(message, flush=True)

    with lab_lock(lock):
        with LabBench(topology, log, pool_size, program) as bench:
            report = {
                "topology": topology,
                "workers": len(bench.lab.workers),
                "server": bench.lab.server,
                "host_link_mbps": bench.bandwidth_mbps,
                "uptime_before": open("/proc/loadavg").read().split()[:3],
                "runs": [],
            }
            print(
                f"{topology} ({program}, K={bench.lab.plan.value_count}): {report['workers']} workers, "
                f"server {bench.lab.server}, host links "
                f"{bench.bandwidth_mbps:g} Mbit/s, load {' '.join(report['uptime_before'])}",
                flush=True,
            )
            # warm-up, untimed, the same for every method: first-round costs (gloo's rendezvous and
            # connections, the agents' congestion window, the switches' slot cells) are paid at the size
            # measured first, so a method's first timed run is not its first large one
            for method in methods:
                bench.run(method, *bench.values_and_timeout(warmup_mb))
            # repeats interleave the methods (a, b, a, b, not a, a, b, b), so a slow spell of the machine
            # touches every method's median alike instead of one method's runs
            # --rto, --spurious: the agents' methods run once per setting in turn (gloo once), A/B on one network
            cases = [(m, s) for m in methods for s in ([{}] if m == "gloo" or not settings else settings)]
            for mb in sizes_mb:
                for _ in range(repeats):
                    for method, setting in cases:
                        row = bench.run(method, *bench.values_and_timeout(mb), setting)
                        report["runs"].append(row)
                        print(describe(row), flush=True)
            report["uptime_after"] = open("/proc/loadavg").read().split()[:3]
            report["notes"] = bench.lab.network.notes
    return report


def plot(reports: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, len(reports), figsize=(6.5 * len(reports), 8.5), squeeze=False)
    for col, report in enumerate(reports):
        runs = report["runs"]
        sizes = sorted({r["bytes_per_worker"] for r in runs})
        mb = [s / 2**20 for s in sizes]
        ax = axes[0][col]
        medians = {(e["label"], e["bytes_per_worker"]): e["median_s"] for e in summarize(runs)}
        for name in sorted({label(r) for r in runs}):
            points = [(m, medians[name, s]) for m, s in zip(mb, sizes, strict=True) if (name, s) in medians]
            if points:
                ax.plot(*zip(*points, strict=True), marker="o", label=name)
        ax.plot(mb, [s * 8 / (report["host_link_mbps"] * 1e6) for s in sizes], "k--", label="ideal S/B")
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="MB per worker",
            ylabel="completion time (s), median of the runs",
            title=f"{Path(report['topology']).stem}: {report['workers']} workers, {report['host_link_mbps']:g} Mbit/s host links",
        )
        ax.legend()
        ax.grid(True, which="major", alpha=0.3)
        ax = axes[1][col]
        for name in sorted({label(r) for r in runs}):
            pts = [
                (r["bytes_per_worker"] / 2**20, r["host_link_max_bytes"] / r["bytes_per_worker"])
                for r in runs
                if label(r) == name
            ]
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", linestyle="", label=name)
        ax.set(xscale="log", xlabel="MB per worker", ylabel="busiest host link bytes / S (both directions)")
        ax.legend()
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--topology", nargs="+", default=list(DEFAULT_TOPOLOGIES), help="lab topology files")
    ap.add_argument("--sizes", type=float, nargs="+", default=[4, 64], help="MB per worker")
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    ap.add_argument(
        "--repeats", type=int, default=3, help="timed runs per method and size (median and spread reported)"
    )
    ap.add_argument(
        "--warmup",
        type=float,
        help="MB per worker of the untimed round every method runs first on each lab (default: the smallest of "
        "--sizes, so the first timed run is not a method's first large one)",
    )
    add_program(
        ap,
        nargs="+",
        help="the switches' programs: ina and ps run on a lab per program (v1model: p4src/ina.p4, K = 64; "
        "v1model-k256; v1model-k344; v1model-k1024 on links with a 9000-byte MTU, where gloo runs again; or a path); default: "
        "the program a user who names none runs, the largest K the topology's links carry (K = 344 at MTU 1500)",
    )
    add_lanes_shorthand(ap, several=True)
    ap.add_argument(
        "--pool-size",
        type=int,
        default=2048,
        help="chunks in flight per tree (the plan's pool): it must cover the link rate x the RTT, and the "
        "RTT through four processes on a busy 2-core machine reaches tens of ms (2048: a job takes all "
        "4096 slot cells of a switch)",
    )
    ap.add_argument(
        "--rto",
        type=float,
        nargs="+",
        help="the worker agents' base retransmission timeout, s (default: topologies/lab_agent's): with several, "
        "ina and ps run once per value in turn on the same network (an A/B of the timeout)",
    )
    ap.add_argument(
        "--spurious",
        choices=["on", "off"],
        nargs="+",
        help="the worker agents' detection of spurious timeouts (worker/stream.py, Round._spurious): with both, "
        "ina and ps run once per value in turn on the same network (an A/B)",
    )
    ap.add_argument("--lock", default=LOCK, help="lab lock file held per topology ('' for none)")
    ap.add_argument("--out", default=str(RESULTS / "allreduce_netns"), help="output path without extension")
    args = ap.parse_args(argv)
    if args.warmup is not None and args.warmup <= 0:
        ap.error(f"--warmup must be a positive number of MB per worker, got {args.warmup:g}")
    if os.geteuid() != 0:
        print("bench/allreduce_netns.py needs root (mininet)", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    reports = []
    for topology in args.topology:
        reports.append(
            run_topology(
                topology,
                args.sizes,
                args.methods,
                args.repeats,
                args.lock,
                args.pool_size,
                args.program,
                args.warmup,
                agent_settings(args.rto, args.spurious),
            )
        )
        out.with_suffix(".json").write_text(json.dumps({"reports": reports}, indent=1))
    plot(reports, out.with_suffix(".png"))
    print(f"saved {out.with_suffix('.json')} and {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
