"""Completion time against the number of workers, in the packet-level simulator (sim/): INA through
the P4 program, gloo's ring and a parameter server over the same links, on fat-trees and leaf-spines.

Each size builds one simulated network (native switches running the default program for the links'
MTU, routes and the job's entries written by the controller's Installer), then runs each method on a
fresh simulation over the same switches. Reports modelled completion time, x ideal (bytes over the
host link's bandwidth), events and events per second of wall time, set-up times, the busiest link
direction. INA's sums are checked lane by lane against numpy's. Saves bench/results/scale.json and .png.

    python bench/scale.py --fat-tree 4 8 --mb 1              # quick
    python bench/scale.py --fat-tree 16 --mb 16 --methods ina  # the issue's 1,024-host target
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
from controller.topology import Topology  # noqa: E402
from sim.allreduce import RunResult, WorkerValues, plan_ina, run_ina, run_ps, run_ring  # noqa: E402
from sim.errors import SimError  # noqa: E402
from sim.network import SimNetwork  # noqa: E402

METHODS = ("ina", "ring", "ps")


def topologies(args: argparse.Namespace) -> list[tuple[str, Topology]]:
    out = [(f"fat_tree_k{k}", fat_tree(k)) for k in args.fat_tree]
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
    baselines = [m for m in args.methods if m != "ina" and len(workers) <= args.baseline_max_workers]
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
        if method != "ina" and len(workers) > args.baseline_max_workers:
            print(f"{name}: {method} skipped above {args.baseline_max_workers} workers", flush=True)
            continue
        net.fresh_core(args.seed)
        setup = {"build_s": build_s, "topology_entries_s": routes_s}
        if method == "ina":
            t0 = time.perf_counter()
            plan = plan_ina(net, workers, server)
            setup["job_install_s"] = time.perf_counter() - t0
            k = plan.value_count
            values = WorkerValues.random(len(workers), n_values // k * k, seed=args.seed)
            result: RunResult = run_ina(net, plan, values, window=args.window)
        elif method == "ring":
            result = run_ring(net, workers, n_values * 4)
        else:
            result = run_ps(net, workers, server, n_values * 4)
        row = {"topology": name, "program": net.program_name, "switches": len(topo.switches), "entries": entries}
        row.update(setup)
        row.update(result.as_dict())
        rows.append(row)
        print(
            f"{name:>18} {method:>4} workers {result.workers:5d}: {result.completion_s * 1e3:9.3f} ms modelled "
            f"({result.x_ideal:6.2f} x ideal), {result.events:11,d} events in {result.wall_s:7.1f} s "
            f"({row['events_per_s']:,.0f}/s; CPU {result.cpu_s:.1f} s), finished {result.finished}, mismatches {result.mismatches}, "
            f"set-up {sum(setup.values()):.1f} s",
            flush=True,
        )
    net.close()
    return rows


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for family in sorted({r["topology"].rsplit("_", 1)[0] for r in rows}):
        for method in METHODS:
            pts = sorted(
                (r["workers"], r["x_ideal"])
                for r in rows
                if r["method"] == method and r["topology"].rsplit("_", 1)[0] == family and r["completion_s"] > 0
            )
            if pts:
                ax.plot(*zip(*pts, strict=True), marker="o", label=f"{method} ({family})")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("workers")
    ax.set_ylabel("completion time / ideal (bytes / host link bandwidth)")
    ax.set_title("All-reduce in the packet-level simulator")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--fat-tree", type=int, nargs="*", default=[4, 6, 8], help="fat-tree arities k (k^3/4 hosts)")
    p.add_argument("--leaf-spine", type=int, nargs="*", default=[], help="leaf counts of leaf-spines")
    p.add_argument("--spines", type=int, default=4)
    p.add_argument("--per-leaf", type=int, default=8, help="workers per leaf (at most 9: uplinks start at port 11)")
    p.add_argument("--mb", type=float, default=1.0, help="MB of int32 values per worker")
    p.add_argument("--methods", nargs="+", default=list(METHODS), choices=METHODS)
    p.add_argument("--worker-stride", type=int, default=1, help="workers: every n-th host (1: all but the server)")
    p.add_argument("--window", type=int, default=None, help="INA chunks in flight per worker (default: the pool)")
    p.add_argument("--baseline-max-workers", type=int, default=256, help="skip ring/PS above this many workers")
    p.add_argument("--seed", type=int, default=0)
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
    meta = {"mb_per_worker": args.mb, "argv": sys.argv[1:]}
    args.out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1, default=float) + "\n")
    plot(rows, args.out.with_suffix(".png"))
    print(f"saved {args.out} and {args.out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
