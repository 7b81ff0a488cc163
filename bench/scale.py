"""Completion time against the number of workers, in the packet-level simulator (sim/): INA through
the P4 program, gloo's ring and a parameter server over the same links, on fat-trees and leaf-spines.

Each size builds one simulated network (native switches running the default program for the links'
MTU, routes and the job's entries written by the controller's Installer), then runs each method on a
fresh simulation over the same switches. Reports modelled completion time, x ideal (bytes over the
host link's bandwidth), events and events per second of wall time, set-up times, the busiest link
direction. INA's sums are checked lane by lane against numpy's. Saves bench/results/scale.json and .png.

``--jobs 2 4`` also splits each topology's hosts into that many INA jobs (each with its own server) that
all-reduce at once over the shared fabric; ``--fail-spine 0.5`` also fails the job's top switch (a core
or spine switch its tree crosses) halfway through an INA round; ``--detect-s`` later (the controller's
fault monitor noticing it) the controller re-plans the job around the dead switch (controller/replan.py,
timed) and the workers move their unfinished chunks to the new plan's recovery tree, so the round
finishes: its completion time and the chunks moved are reported. ``--agent`` runs the INA workers with the agents' congestion control
(sim.allreduce.AgentModel, the kernel agents' base RTO) instead of a fixed window. INA plans are the
controller's default: a tree's root switch multicasts the RESULTs where one aggregates every worker;
``--server-results`` plans the server path instead (the server sends every RESULT), for comparison.

    python bench/scale.py --fat-tree 4 8 --mb 1              # quick
    python bench/scale.py --fat-tree 16 --mb 16 --methods ina  # the issue's 1,024-host target
    python bench/scale.py --fat-tree 4 6 8 --mb 1 --jobs 2 4 --fail-spine 0.5
    python bench/scale.py --fat-tree 4 --mb 1 --methods ina --fail-spine 0.5 --detect-s 0.002
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.errors import ControllerError  # noqa: E402
from controller.generators import fat_tree, leaf_spine  # noqa: E402
from controller.options import RTO_S  # noqa: E402
from controller.plan import JobPlan  # noqa: E402
from controller.topology import Topology  # noqa: E402
from sim.allreduce import (  # noqa: E402
    AgentModel,
    Recovery,
    RunResult,
    WorkerValues,
    plan_ina,
    plan_only,
    run_ina,
    run_ina_jobs,
    run_ps,
    run_ring,
)
from sim.errors import SimError  # noqa: E402
from sim.network import SimNetwork  # noqa: E402

METHODS = ("ina", "ina_multitree", "ring", "ps")
INA_METHODS = ("ina", "ina_multitree")


def topologies(args: argparse.Namespace) -> list[tuple[str, Topology]]:
    hosts = {"host_bandwidth": args.host_bandwidth} if args.host_bandwidth else {}
    out = [(f"fat_tree_k{k}", fat_tree(k, **hosts)) for k in args.fat_tree]
    for leaves in args.leaf_spine:
        topo = leaf_spine(
            spines=args.spines, leaves=leaves, workers_per_leaf=args.per_leaf, servers=1, host_bandwidth=10000.0
        )
        out.append((f"leaf_spine_{args.spines}x{leaves}", topo))
    return out


def run_size(name: str, topo: Topology, args: argparse.Namespace) -> list[dict[str, Any]]:
    hosts = [h.name for h in topo.hosts]
    if (
        args.worker_stride > 1
    ):  # every n-th host from the second on, the server the first (bench/plan_scale.py's choice)
        workers, server = hosts[1 :: args.worker_stride], hosts[0]
    else:
        workers, server = hosts[:-1], hosts[-1]
    n_values = int(args.mb * 2**20 / 4)
    t0 = time.perf_counter()
    net = SimNetwork(topo, seed=args.seed)
    build_s = time.perf_counter() - t0
    baselines = [m for m in args.methods if m not in INA_METHODS and len(workers) <= args.baseline_max_workers]
    t0 = time.perf_counter()
    entries = net.install_routes(routes=bool(baselines))  # /32 routes only for the baselines' IPv4 traffic
    routes_s = time.perf_counter() - t0
    print(
        f"{name}: {len(topo.switches)} switches built in {build_s:.1f} s, {entries:,d} topology entries in "
        f"{routes_s:.1f} s",
        flush=True,
    )
    rows = []
    for method in args.methods:
        if method not in INA_METHODS and len(workers) > args.baseline_max_workers:
            print(f"{name}: {method} skipped above {args.baseline_max_workers} workers", flush=True)
            continue
        net.fresh_core(args.seed)
        setup = {"build_s": build_s, "topology_entries_s": routes_s}
        job_entries, install_cpu_s, n_trees, root_trees = 0, 0.0, 0, 0
        if method in INA_METHODS:
            t0 = time.perf_counter()
            options = {"planner": "multitree", "trees": args.trees} if method == "ina_multitree" else {}
            plan = plan_only(net, workers, server, **options, **plan_options(args))
            setup["job_plan_s"] = time.perf_counter() - t0
            t0, c0 = time.perf_counter(), time.process_time()
            job_entries = net.install_job(plan)
            setup["job_install_s"] = time.perf_counter() - t0
            install_cpu_s = time.process_time() - c0
            k = plan.value_count
            values = WorkerValues.random(len(workers), n_values // k * k, seed=args.seed)
            result: RunResult = run_ina(net, plan, values, window=args.window, agent=agent_model(args))
            n_trees = len(plan.trees)
            root_trees = len({c.tree_id for c in plan.switches if c.root})  # trees whose root sends the RESULTs
            net.remove_job(plan)  # its slots back for the next cases
        elif method == "ring":
            result = run_ring(net, workers, n_values * 4)
        else:
            result = run_ps(net, workers, server, n_values * 4)
        row = {
            "case": "curve",
            "topology": name,
            "program": net.program_name,
            "switches": len(topo.switches),
            "entries": entries,
        }
        row.update(setup)
        if method in INA_METHODS:
            row["job_entries"], row["job_install_cpu_s"], row["trees"] = job_entries, install_cpu_s, n_trees
            row["root_trees"] = root_trees
        row.update(result.as_dict())
        rows.append(row)
        print(
            f"{name:>18} {method:>4} workers {result.workers:5d}: {result.completion_s * 1e3:9.3f} ms modelled "
            f"({result.x_ideal:6.2f} x ideal), {result.events:11,d} events in {result.wall_s:7.1f} s "
            f"({row['events_per_s']:,.0f}/s; CPU {result.cpu_s:.1f} s), finished {result.finished}, mismatches {result.mismatches}, "
            f"set-up {sum(setup.values()):.1f} s",
            flush=True,
        )
        if method in INA_METHODS:
            print(
                f"{name:>18} the job: {n_trees} tree(s) planned in {setup['job_plan_s']:.2f} s, {job_entries:,d} entries and groups "
                f"installed on the simulated switches in {setup['job_install_s']:.2f} s (CPU {install_cpu_s:.2f} s)",
                flush=True,
            )
    for n_jobs in args.jobs:
        net.fresh_core(args.seed)
        rows.append(concurrent_jobs(net, name, workers + [server], n_jobs, n_values, args))
    if args.fail_spine is not None:
        ina = [r for r in rows if r["method"] == "ina" and r["case"] == "curve" and r["completion_s"] > 0]
        if ina:
            rows.append(spine_failure(net, name, workers, server, n_values, ina[0]["completion_s"], args))
    net.close()
    return rows


def agent_model(args: argparse.Namespace) -> AgentModel | None:
    return AgentModel(timeout_s=RTO_S) if args.agent else None


def plan_options(args: argparse.Namespace) -> dict[str, Any]:
    """The INA plans' options: the controller's default (results from a tree's root), or the server path."""
    return {"root_results": False} if args.server_results else {}


def concurrent_jobs(
    net: SimNetwork, name: str, hosts: list[str], n_jobs: int, n_values: int, args: argparse.Namespace
) -> dict[str, Any]:
    """``hosts`` dealt round-robin into ``n_jobs`` jobs (the last host of each its server: jobs scattered over
    the fabric, as a scheduler's placement leaves them, so they share its core), all at once."""
    size = len(hosts) // n_jobs
    jobs: list[tuple[JobPlan, WorkerValues]] = []
    t0 = time.perf_counter()
    for j in range(n_jobs):
        group = hosts[j::n_jobs][:size]
        plan = plan_ina(net, group[:-1], group[-1], **plan_options(args))
        k = plan.value_count
        jobs.append((plan, WorkerValues.random(len(group) - 1, n_values // k * k, seed=args.seed + j)))
    install_s = time.perf_counter() - t0
    results = run_ina_jobs(net, jobs, agent=agent_model(args))
    for plan, _ in jobs:
        net.remove_job(plan)
    done = [r.completion_s for r in results]
    row: dict[str, Any] = {
        "case": "jobs",
        "topology": name,
        "method": "ina",
        "jobs": n_jobs,
        "workers": sum(r.workers for r in results),
        "workers_per_job": size - 1,
        "bytes_per_worker": results[0].bytes_per_worker,
        "completion_s": max(done) if min(done) > 0 else -1.0,
        "job_completion_s": done,
        "x_ideal": max(r.x_ideal for r in results),
        "ideal_s": results[0].ideal_s,
        "finished": sum(r.finished for r in results),
        "mismatches": sum(r.mismatches for r in results),
        "resends": sum(r.resends for r in results),
        "events": results[0].events,
        "wall_s": results[0].wall_s,
        "cpu_s": results[0].cpu_s,
        "job_install_s": install_s,
        "busiest": results[0].busiest,
    }
    print(
        f"{name:>18} {n_jobs} concurrent jobs of {size - 1} workers: slowest {row['completion_s'] * 1e3:.3f} ms "
        f"({row['x_ideal']:.2f} x ideal), jobs {', '.join(f'{d * 1e3:.3f}' for d in done)} ms, "
        f"mismatches {row['mismatches']}, {row['events']:,d} events in {row['wall_s']:.1f} s",
        flush=True,
    )
    return row


def top_switch(plan: JobPlan) -> str:
    """The switch to fail: a core or spine switch the job's tree crosses (else its highest aggregation point)."""
    tree = plan.trees[0]
    on_tree = [n for edge in tree.edges for n in edge]
    for prefix in ("c", "sp"):
        found = [n for n in on_tree if n.startswith(prefix) and n[len(prefix) :].split("_")[0].isdigit()]
        if found:
            return found[0]
    return tree.aggregation_points[-1]


def spine_failure(
    net: SimNetwork,
    name: str,
    workers: list[str],
    server: str,
    n_values: int,
    healthy_s: float,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """A round with the tree's top switch failing at ``args.fail_spine`` of the healthy round's time, noticed
    ``args.detect_s`` later: the controller's re-plan (timed) is installed then and the workers move their
    unfinished chunks to its recovery tree, so the round finishes (sim.allreduce.Recovery)."""
    net.fresh_core(args.seed)
    plan = plan_ina(net, workers, server, **plan_options(args))
    k = plan.value_count
    values = WorkerValues.random(len(workers), n_values // k * k, seed=args.seed)
    victim = top_switch(plan)
    at = args.fail_spine * healthy_s
    recovery = Recovery(detect_s=args.detect_s, root_results=False if args.server_results else None)
    result = run_ina(
        net, plan, values, window=args.window, agent=agent_model(args), failures=[(at, victim)], recovery=recovery
    )
    rec = result.recovery
    row: dict[str, Any] = {
        "case": "failure",
        "topology": name,
        "method": "ina",
        "workers": len(workers),
        "failed_switch": victim,
        "failed_at_s": at,
        "detect_s": args.detect_s,
        "healthy_s": healthy_s,
    }
    if rec.get("refused"):  # the controller refuses the job around the failure: say why, as a user sees it
        print(f"{name:>18} {victim} failed at {at * 1e3:.3f} ms: the re-plan was refused: {rec['refused']}", flush=True)
        row.update({"replan_refused": rec["refused"], "round_finished": result.finished})
    else:
        row.update(
            {
                "replan_and_install_s": rec.get("replan_wall_s", 0.0),
                "plan_version": rec.get("plan_version", plan.version),
                "completion_s": result.completion_s,
                "x_ideal": result.x_ideal,
                "slowdown": result.completion_s / healthy_s if result.completion_s > 0 else float("nan"),
                "finished": result.finished,
                "mismatches": result.mismatches,
                "resends": result.resends,
                "chunks": len(workers) * (n_values // k),
                "results_at_replan": rec.get("results_at_replan", 0),
                "chunks_moved": rec.get("chunks_moved", 0),
                "recovery_chunks": rec.get("recovery_chunks", 0),
                "finished_chunks_offered": rec.get("finished_chunks_offered", 0),
                "answered_from_other_tree": rec.get("answered_from_other_tree", 0),
                "events": result.events,
                "wall_s": result.wall_s,
                "cpu_s": result.cpu_s,
                "busiest": result.busiest,
            }
        )
        print(
            f"{name:>18} {victim} failed at {at * 1e3:.3f} ms, noticed {args.detect_s * 1e3:.1f} ms later and "
            f"re-planned (plan + install {row['replan_and_install_s']:.2f} s of wall time): the round finished at "
            f"{result.completion_s * 1e3:.3f} ms ({row['slowdown']:.2f}x the healthy {healthy_s * 1e3:.3f} ms), "
            f"{result.finished}/{len(workers)} workers, mismatches {result.mismatches}; chunks: "
            f"{row['results_at_replan']:,d} of {row['chunks']:,d} had their result at the re-plan, "
            f"{row['chunks_moved']:,d} in flight moved to the recovery tree, {row['recovery_chunks']:,d} sent over it, "
            f"{row['finished_chunks_offered']:,d} finished ones offered it, "
            f"{row['answered_from_other_tree']:,d} answered from sums the server had from the old tree",
            flush=True,
        )
    net.remove_job(*reversed(result.versions))  # every version's entries off the switches, slots back
    net.repair()
    return row


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    """The run's curve, drawn as docs/results.md draws it (bench/report.py)."""
    from bench.report import plot_scale_curve

    plot_scale_curve(rows, path)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fat-tree", type=int, nargs="*", default=[4, 6, 8], help="fat-tree arities k (k^3/4 hosts)")
    p.add_argument("--leaf-spine", type=int, nargs="*", default=[], help="leaf counts of leaf-spines")
    p.add_argument("--spines", type=int, default=4)
    p.add_argument("--per-leaf", type=int, default=8, help="workers per leaf (at most 9: uplinks start at port 11)")
    p.add_argument("--mb", type=float, default=1.0, help="MB of int32 values per worker")
    p.add_argument(
        "--methods", nargs="+", default=["ina", "ring", "ps"], choices=METHODS, help="ina_multitree: --trees trees"
    )
    p.add_argument("--trees", type=int, default=4, help="trees of the multi-tree INA plans (the planner's K)")
    p.add_argument(
        "--host-bandwidth",
        type=float,
        help="Mbit/s of the fat-trees' host links (default the generator's, as the fabric's): hosts faster than "
        "one path through the fabric are what multi-tree plans split over several trees",
    )
    p.add_argument("--worker-stride", type=int, default=1, help="workers: every n-th host (1: all but the server)")
    p.add_argument("--window", type=int, default=None, help="INA chunks in flight per worker (default: the pool)")
    p.add_argument("--baseline-max-workers", type=int, default=256, help="skip ring/PS above this many workers")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--jobs", type=int, nargs="*", default=[], help="also: this many concurrent INA jobs")
    p.add_argument(
        "--fail-spine", type=float, help="also: fail the INA tree's top switch at this share of a healthy round"
    )
    p.add_argument(
        "--detect-s",
        type=float,
        default=0.1,
        help="with --fail-spine: seconds until the controller notices the failed switch and re-plans (its fault "
        "monitor's probe interval: the in-process network's default 0.1, the mininet lab's 0.5)",
    )
    p.add_argument("--agent", action="store_true", help="INA workers run the agents' congestion control")
    p.add_argument(
        "--server-results",
        action="store_true",
        help="INA plans with the server sending every RESULT (default: a tree's root switch multicasts them)",
    )
    p.add_argument("--include", type=Path, nargs="*", default=[], help="earlier JSON files whose rows join the plot")
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "scale.json")
    args = p.parse_args()
    rows: list[dict[str, Any]] = []
    try:
        for name, topo in topologies(args):
            rows.extend(run_size(name, topo, args))
    except (SimError, ControllerError) as exc:
        print(f"scale: {exc}", file=sys.stderr)
        return 2
    for path in args.include:
        rows.extend(r for r in json.loads(path.read_text())["rows"] if r not in rows)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"mb_per_worker": args.mb, "argv": sys.argv[1:], "root_results": not args.server_results}
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=float) + "\n")
    plot(rows, args.out.with_suffix(".png"))
    print(f"saved {args.out} and {args.out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
