"""Allreduce on the in-process network (virtual clock): INA vs parameter server, ring and host tree.

The parameter server is the INA protocol on a plan where no switch aggregates (the same agents and
packets; the server sums one packet per worker and chunk), so "bytes into the server" compares only
what in-switch aggregation changes. Ring and host tree are host-level baselines (worker/baselines.py).

N workers and one server behind one switch (softswitch running p4src/ina.p4), every link at
--bandwidth Mbit/s, so the links are the bottleneck and times are those of the modelled network.
For each size (bytes of int32 values per worker, from 4 KB doubling up to the largest size whose
run still fits --wall-limit seconds of wall time) it measures the completion time (virtual) and the
bytes on every link direction of each method, prints a table as it goes, and saves
bench/results/allreduce.json and bench/results/allreduce.png.

    .venv/bin/python bench/allreduce.py [--workers 4 8] [--bandwidth 100] [--wall-limit 60]

``--engine sim`` carries the frames on the simulator's native core instead of the Python network
(topologies/inprocess/sim_engine.py; results then go to allreduce_sim.json/.png); the "wall/model" column
is wall time over modelled time, "cpu/model" this process's CPU time over it. ``--methods ina --min-kb 1024 --max-kb 1024`` measures one case.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.options import DEFAULT_RESULT_MODE  # noqa: E402
from controller.planner import PlanOptions  # noqa: E402
from controller.topology import Topology  # noqa: E402
from topologies.inprocess import InProcessNetwork  # noqa: E402
from topologies.inprocess.fabric import ENGINES, engine_name  # noqa: E402
from topologies.inprocess.jobs import InProcessJob  # noqa: E402
from worker.baselines import HostTreeAllreduce, RingAllreduce, parameter_server_options  # noqa: E402

RESULTS = ROOT / "bench" / "results"
METHODS = ("ina", "ina_unicast", "ps", "ring", "host_tree")


def star(n_workers: int, bandwidth: float, delay: float) -> Topology:
    topo = Topology(name=f"star{n_workers}")
    topo.add_switch("s1", 1)
    for i in range(n_workers + 1):
        topo.add_host(
            f"h{i + 1}", f"10.0.0.{i + 1}", f"02:00:00:00:00:{i + 1:02x}", role="server" if i == n_workers else "worker"
        )
        topo.add_link(f"h{i + 1}", 0, "s1", i + 1, bandwidth=bandwidth, delay=delay)
    topo.validate()
    return topo


class Bench:
    """One network and job; each method runs on it in turn with the link counters reset."""

    def __init__(self, n_workers: int, bandwidth: float, delay: float, engine: str | None = None):
        self.topo = star(n_workers, bandwidth, delay)
        self.net = InProcessNetwork(self.topo, seed=1, engine=engine)
        self.net.install_routes()
        self.workers = [h.name for h in self.topo.role_hosts("worker")]
        self.server = self.topo.role_hosts("server")[0].name
        from controller.resources import Resources

        resources, servers = Resources.for_topology(self.topo), {}
        # INA with the default result mode (DEFAULT_RESULT_MODE, multicast: one RESULT leaves the server) and
        # with unicast reverse paths
        # (one RESULT per worker leaves the server: its downlink carries N copies); the parameter
        # server: the same protocol with no aggregating switch, unicast results
        options = {
            "ina": PlanOptions(pool_size=64, result_mode=DEFAULT_RESULT_MODE),
            "ina_unicast": PlanOptions(pool_size=64, result_mode="unicast"),
            "ps": parameter_server_options(PlanOptions(pool_size=64)),
        }
        self.jobs = {
            method: InProcessJob(
                self.net,
                self.workers,
                [self.server],
                resources=resources,
                server_agents=servers,
                timeout=0.02,
                retries=10,
                options=opts,
            )
            for method, opts in options.items()
        }
        self.plan = self.jobs["ina"].plan

    def _baselines(self, method: str):
        """Fresh host-level baseline agents (they share BASELINE_UDP_PORT, so one method at a time)."""
        plan, net = self.plan, self.net
        tr = [net.transport(w) for w in self.workers]
        if method == "ring":
            return [RingAllreduce(plan, r, t) for r, t in enumerate(tr)], []
        # host_tree: the controller's host-level trees
        server = HostTreeAllreduce(plan, self.server, net.transport(self.server))
        return [HostTreeAllreduce(plan, r, t) for r, t in enumerate(tr)], [server]

    def run(self, method: str, xs: list[np.ndarray]) -> dict:
        self.net.reset_stats()
        loop = self.net.loop
        start_wall, start_cpu, start = time.perf_counter(), time.process_time(), loop.now()
        retx = 0
        if method in self.jobs:
            job = self.jobs[method]
            before = sum(a.stats["retransmissions"] for a in job.agents)
            handles = job.start(xs)
            outs = [h.wait() for h in handles]
            retx = sum(a.stats["retransmissions"] for a in job.agents) - before
        else:
            agents, passive = self._baselines(method)
            handles = [p.allreduce_async(x) for p, x in zip(agents, xs, strict=True)]
            outs = [h.wait() for h in handles]
            for a in agents + passive:
                a.close()
        elapsed, wall = loop.now() - start, time.perf_counter() - start_wall
        cpu = time.process_time() - start_cpu
        expect = np.sum(xs, axis=0, dtype=np.int64)
        if not all(np.array_equal(o, expect) for o in outs):
            raise SystemExit(f"{method}: wrong result")
        links = {}
        for dirs in self.net.link_bytes().values():
            for name, stats in dirs.items():
                links[name] = stats["bytes"]
        return {
            "time_s": elapsed,
            "wall_s": wall,
            "cpu_s": cpu,  # this process's CPU time: on a shared machine, steadier than the wall time
            "links": links,
            "retransmissions": retx,
            "server_in": links[f"s1->{self.server}"],
            "max_link": max(links.values()),
            "total": sum(links.values()),
        }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[4, 8])
    ap.add_argument("--bandwidth", type=float, default=100.0, help="Mbit/s of every link")
    ap.add_argument("--delay", type=float, default=0.01, help="ms propagation delay of every link")
    ap.add_argument("--wall-limit", type=float, default=60.0, help="wall seconds a size may take")
    ap.add_argument("--min-kb", type=int, default=4)
    ap.add_argument("--max-kb", type=int, default=1 << 20)
    ap.add_argument("--engine", choices=ENGINES, default=None, help="the in-process network's engine")
    ap.add_argument("--methods", nargs="+", choices=METHODS, default=list(METHODS))
    args = ap.parse_args(argv)
    engine = engine_name(args.engine)
    stem = "allreduce" if engine == "python" else f"allreduce_{engine}"
    RESULTS.mkdir(parents=True, exist_ok=True)
    report = {"bandwidth_mbps": args.bandwidth, "delay_ms": args.delay, "engine": engine, "runs": []}
    for n in args.workers:
        bench = Bench(n, args.bandwidth, args.delay, engine)
        print(f"\n{n} workers, 1 server, one switch, {args.bandwidth:g} Mbit/s links (virtual clock, {engine} engine)")
        print(
            f"{'size':>9} {'method':>11} {'time ms':>9} {'x ideal':>8} {'server in KB':>13} "
            f"{'max link KB':>12} {'retx':>5} {'wall s':>7} {'wall/model':>10} {'cpu/model':>9}"
        )
        kb = args.min_kb
        rng = np.random.default_rng(0)
        while kb <= args.max_kb:
            size = kb * 1024
            xs = [rng.integers(-1000, 1000, size // 4).astype(np.int32) for _ in range(n)]
            ideal = size * 8 / (args.bandwidth * 1e6)
            row = {"workers": n, "bytes": size, "ideal_s": ideal}
            wall = 0.0
            for method in args.methods:
                r = bench.run(method, xs)
                row[method] = r
                wall += r["wall_s"]
                print(
                    f"{kb:>7}KB {method:>11} {r['time_s'] * 1e3:>9.2f} {r['time_s'] / ideal:>8.2f} "
                    f"{r['server_in'] / 1024:>13.1f} {r['max_link'] / 1024:>12.1f} {r['retransmissions']:>5} "
                    f"{r['wall_s']:>7.1f} {r['wall_s'] / r['time_s']:>10.1f} {r['cpu_s'] / r['time_s']:>9.1f}",
                    flush=True,
                )
            if all(m in row for m in ("ina", "ps", "ring")):
                row["server_out_ratio_ina_vs_ps"] = (
                    row["ina"]["links"][f"{bench.server}->s1"] / row["ps"]["links"][f"{bench.server}->s1"]
                )
                row["server_in_ratio_ina_vs_ps"] = row["ina"]["server_in"] / row["ps"]["server_in"]
                row["ina_vs_ring_speedup"] = row["ring"]["time_s"] / row["ina"]["time_s"]
                print(
                    f"{'':>9} server bytes INA/PS = {row['server_in_ratio_ina_vs_ps']:.3f} (1/N = {1 / n:.3f}); "
                    f"INA time / ideal = {row['ina']['time_s'] / ideal:.2f}; ring / INA = "
                    f"{row['ina_vs_ring_speedup']:.2f}"
                )
            report["runs"].append(row)
            (RESULTS / f"{stem}.json").write_text(json.dumps(report, indent=1))
            if wall * 2 > args.wall_limit:  # the next size doubles the work
                break
            kb *= 2
    plot(report, args.methods, RESULTS / f"{stem}.png")
    print(f"\nsaved {RESULTS / f'{stem}.json'} and {RESULTS / f'{stem}.png'}")
    return 0


def plot(report: dict, methods=METHODS, path: Path = RESULTS / "allreduce.png") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ns = sorted({r["workers"] for r in report["runs"]})
    fig, axes = plt.subplots(2, len(ns), figsize=(6 * len(ns), 8), squeeze=False)
    for col, n in enumerate(ns):
        runs = [r for r in report["runs"] if r["workers"] == n]
        sizes = [r["bytes"] / 1024 for r in runs]
        ax = axes[0][col]
        for m in methods:
            ax.plot(sizes, [r[m]["time_s"] * 1e3 for r in runs], marker="o", label=m)
        ax.plot(sizes, [r["ideal_s"] * 1e3 for r in runs], "k--", label="ideal (payload/bw)")
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="KB per worker",
            ylabel="completion time (ms, virtual)",
            title=f"{n} workers, {report['bandwidth_mbps']:g} Mbit/s links",
        )
        ax.legend()
        ax = axes[1][col]
        for m in methods:
            ax.plot(sizes, [r[m]["server_in"] / 1024 for r in runs], marker="o", label=m)
        ax.set(xscale="log", yscale="log", xlabel="KB per worker", ylabel="KB into the server")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
