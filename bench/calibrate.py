"""The simulator against the lab: the same allreduce on the shipped lab topologies, side by side.

For every topology file (the mininet lab's: star_100m, leaf_spine_100m, their jumbo variants, the 1 Gbit/s
star and leaf_spine) and size, the simulator (sim/) runs INA with the lab's configuration: the switches'
default program for the links' MTU (K = 344 at 1500, K = 1024 on jumbo links), the plan the lab installs
(multicast results from the tree's root switch, the controller's default on v1model, ``--pool-size``, as
bench/allreduce_netns.py's default; ``--server-results``: the server sends them), and the worker agents'
settings (sim.allreduce.AgentModel: the agents' window, their RTO with the lab's base timeout, pacing at
the plan's send rate, the ECN rate law with the P4 program marking from the modelled queues). Given the
lab's JSON (bench/allreduce_netns.py's, ``--lab``), it prints each INA run's median time beside the
simulator's and their ratio, and the lab machine's own bound: the CPU seconds the lab's processes spent
in the run (switches, workers, server: the JSON's ``cpu_s``) over the machine's cores (``--lab-cores``, 2).
The lab runs every switch and agent as software on one machine, so its time is the larger of what its
links allow (the simulator's figure) and what its CPUs allow; ``max(sim, cpu bound) / lab`` says
whether the two explain the lab's time. The round trip the lab's agents measure is no latency to add to
the links: with a window of W chunks in flight, a CPU-bound rate R makes it W / R (Little's law), and a
simulation given that round trip as link delay grows its window and finishes sooner than the lab.

    python bench/calibrate.py --lab bench/results/standard/allreduce_100m/allreduce_netns.json \\
        bench/results/standard/allreduce_1g/allreduce_netns.json
    python bench/calibrate.py --topology topologies/star_100m_jumbo.yaml --sizes 4 64   # no lab: sim only

Saves bench/results/calibrate.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.programs import declared_values_per_packet, program_file  # noqa: E402
from controller.topology_yaml import load_topology  # noqa: E402
from sim.allreduce import AgentModel, RunResult, WorkerValues, plan_ina, run_ina  # noqa: E402
from sim.network import LinkModel, SimNetwork  # noqa: E402

RESULTS = ROOT / "bench" / "results"
DEFAULT_TOPOLOGIES = (
    "topologies/star_100m.yaml",
    "topologies/leaf_spine_100m.yaml",
    "topologies/star_100m_jumbo.yaml",
    "topologies/leaf_spine_100m_jumbo.yaml",
    "topologies/star.yaml",
    "topologies/leaf_spine.yaml",
)
PROGRAMS = ("v1model", "v1model-k256", "v1model-k344", "v1model-k1024")  # the v1model builds, one per K
LAB_POOL_SIZE = 2048  # bench/allreduce_netns.py's default --pool-size
TOLERANCE = 0.15  # the calibration bound
LAB_CORES = 2  # the lab machine's CPUs (docs/results.md: the bench's machine)


def program_for(k: int) -> str:
    """The v1model build whose VALUES_PER_PACKET is ``k``."""
    for name in PROGRAMS:
        if declared_values_per_packet(program_file(name)) == k:
            return name
    raise SystemExit(f"no v1model build has K = {k} (builds: {', '.join(PROGRAMS)})")


def simulate(
    topology: str,
    mb: float,
    k: int | None,
    pool: int,
    agent: AgentModel,
    extra_ms: float = 0.0,
    seed: int = 0,
    root_results: bool | None = None,
) -> RunResult:
    """One INA allreduce of ``mb`` MB per worker on a fresh simulated network of ``topology``."""
    topo = load_topology(ROOT / topology)
    workers = [h.name for h in topo.hosts if h.role == "worker"]
    server = next(h.name for h in topo.hosts if h.role == "server")
    program = program_for(k) if k else None
    net = SimNetwork(topo, program=program, links=LinkModel(host_delay_extra_ms=extra_ms), seed=seed)
    try:
        net.install_routes(routes=False)
        plan = plan_ina(net, workers, server, pool_size=pool, root_results=root_results)
        n = int(mb * 2**20 / 4) // plan.value_count * plan.value_count
        return run_ina(net, plan, WorkerValues.random(len(workers), n, seed=seed), agent=agent)
    finally:
        net.close()


def lab_medians(paths: list[str]) -> dict[tuple[str, int, int], dict[str, Any]]:
    """(topology file, bytes per worker, K) -> the lab's INA median time, ideal, round trip, machine load."""
    runs: dict[tuple[str, int, int], list[dict[str, Any]]] = defaultdict(list)
    for path in paths:
        for report in json.loads(Path(path).read_text())["reports"]:
            for run in report["runs"]:
                if run["method"] == "ina" and run.get("rto_s") is None:
                    runs[(report["topology"], run["bytes_per_worker"], run["values_per_packet"])].append(run)
    out = {}
    for key, rows in runs.items():
        rtts = [statistics.mean(r["agent_rtt_ms"].values()) for r in rows if r.get("agent_rtt_ms")]
        out[key] = {
            "time_s": statistics.median(r["time_s"] for r in rows),
            "ideal_s": rows[0]["ideal_s"],
            "runs": len(rows),
            "rtt_ms": statistics.median(rtts) if rtts else None,
            "machine_busy": statistics.median(r.get("machine_busy", float("nan")) for r in rows),
            "retransmissions": statistics.median(r.get("retransmissions", 0) for r in rows),
            "cpu_s": statistics.median(sum(r["cpu_s"].values()) for r in rows if r.get("cpu_s")) if rows else None,
        }
    return out


def _norm(topology: str) -> str:
    return str(Path(topology).as_posix()).split("/")[-1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lab", nargs="*", default=[], help="bench/allreduce_netns.py JSON files (the lab's runs)")
    ap.add_argument("--topology", nargs="+", help="topology files (default: the lab's, or those in --lab)")
    ap.add_argument("--sizes", type=float, nargs="+", default=[4, 64], help="MB per worker (without --lab)")
    ap.add_argument("--pool-size", type=int, default=LAB_POOL_SIZE, help="the plan's pool (the lab's default)")
    ap.add_argument("--rto", type=float, help="the agents' base RTO, s (default: the lab agents')")
    ap.add_argument(
        "--server-results",
        action="store_true",
        help="plan the server path (the server sends the RESULTs; default: the tree's root switch, as the lab)",
    )
    ap.add_argument("--lab-cores", type=int, default=LAB_CORES, help="CPUs of the machine the lab ran on")
    ap.add_argument("--out", default=str(RESULTS / "calibrate.json"))
    args = ap.parse_args()
    agent = AgentModel() if args.rto is None else AgentModel(timeout_s=args.rto)
    lab = lab_medians(args.lab)
    cases: list[tuple[str, int, int | None]] = []
    if lab and not args.topology:
        cases = sorted(lab, key=lambda c: (c[0], c[2], c[1]))
    else:
        for topology in args.topology or DEFAULT_TOPOLOGIES:
            for mb in args.sizes:
                cases.append((topology, int(mb * 2**20), None))
        for key in lab:  # a lab run of a named topology at another K or size
            if _norm(key[0]) in {_norm(t) for t, _, _ in cases} and key not in cases:
                cases.append(key)
    rows = []
    for topology, nbytes, k in cases:
        mb = nbytes / 2**20
        t0 = time.perf_counter()
        sim = simulate(topology, mb, k, args.pool_size, agent, root_results=False if args.server_results else None)
        row: dict[str, Any] = {
            "topology": topology,
            "mb": mb,
            "values_per_packet": k,
            "pool_size": args.pool_size,
            "rto_s": agent.timeout_s,
            "root_results": not args.server_results,
            "sim": sim.as_dict(),
            "sim_rtt_ms": 1e3 * sim.agent.get("srtt_s", float("nan")),
        }
        ref = lab.get((topology, nbytes, k)) if k else None
        if ref is None and k is None:
            ref = next((v for (t, b, _), v in lab.items() if _norm(t) == _norm(topology) and b == nbytes), None)
        if ref is not None:
            row["lab"] = ref
            row["sim_over_lab"] = sim.completion_s / ref["time_s"]
            if ref["cpu_s"]:
                row["lab_cpu_bound_s"] = ref["cpu_s"] / args.lab_cores
                row["bound_s"] = max(sim.completion_s, row["lab_cpu_bound_s"])
                row["bound_over_lab"] = row["bound_s"] / ref["time_s"]
                row["lab_cpu_bound"] = bool(row["lab_cpu_bound_s"] > sim.completion_s)
        row["wall_s"] = time.perf_counter() - t0
        rows.append(row)
        print(line(row), flush=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"tolerance": TOLERANCE, "rows": rows}, indent=1))
    print(f"saved {out}")


def line(row: dict[str, Any]) -> str:
    sim = row["sim"]
    text = (
        f"{_norm(row['topology']):28s} {row['mb']:5.0f} MB K={sim_k(row)}: sim {sim['completion_s']:.3f} s "
        f"({sim['x_ideal']:.2f}x, RTT {row['sim_rtt_ms']:.2f} ms, {sim['resends']} resends)"
    )
    if "lab" in row:
        lab = row["lab"]
        text += (
            f" | lab {lab['time_s']:.3f} s ({lab['time_s'] / lab['ideal_s']:.2f}x, RTT {lab['rtt_ms'] or 0:.1f} ms,"
            f" busy {100 * lab['machine_busy']:.0f}%) sim/lab {row['sim_over_lab']:.2f}"
        )
        if "bound_s" in row:
            text += (
                f" | lab CPU / {LAB_CORES} cores {row['lab_cpu_bound_s']:.3f} s; max(sim, CPU)/lab "
                f"{row['bound_over_lab']:.2f}{' (CPU-bound)' if row['lab_cpu_bound'] else ''}"
            )
    return text


def sim_k(row: dict[str, Any]) -> str:
    return str(row["values_per_packet"] or "default")


if __name__ == "__main__":
    main()
