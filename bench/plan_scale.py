"""Planning time on k-ary fat-trees (controller, seed 1 multi-hop and seed 2 multi-tree).

k = 16: 1,024 hosts, 512 workers; k = 32: 8,192 hosts, 4,096 workers (goals: under 1 s and 10 s for
the multi-hop plan; k = 64 multi-tree: 10 s). Workers are every second host (``--pods P``: of the first P
pods only), the server is host 0. A switch aggregates at most 32 children and forwards more; a job
whose server would hear more than 255 (the hop's 8-bit fan-in) is refused (PlanError): the row reports
the refusal and the time to it. At k = 64 each tree's server hears 110 children (the cores, and the
aggregation and edge switches above the server, forward). Each plan is also written as
the columnar plan file (controller/plan_columns.py, .npz) and loaded back: its size and both times are
reported beside the JSON's (the issue's goal at k = 64: a plan file of at most 20 MB). Prints a table and
saves bench/results/plan_scale.json and .png.

    python bench/plan_scale.py --ks 64 --planners multitree --repeats 1  # the data-centre case, 32,768 workers
    python bench/plan_scale.py --ks 64 --planners multitree --repeats 1 --pods 32  # 16,384 workers: every switch aggregates
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import io  # noqa: E402

from controller.cli_options import add_deprecated  # noqa: E402
from controller.errors import PlanError, PlanFormatError  # noqa: E402
from controller.generators import fat_tree  # noqa: E402
from controller.plan_columns import load_plan_columns, save_plan_columns  # noqa: E402
from controller.planner import PlanOptions, plan_job  # noqa: E402

GOALS = {16: 1.0, 32: 10.0}  # multi-hop
MULTITREE_GOALS = {64: 10.0}


def run(k: int, planner: str, repeat: int, pods: int | None = None) -> dict:
    t0 = time.perf_counter()
    topo = fat_tree(k, bandwidth=10000.0, host_bandwidth=40000.0, delay=0.01)
    graph = topo.to_graph()
    build = time.perf_counter() - t0
    hosts = [h.name for h in topo.hosts]  # pod by pod, (k/2)^2 hosts each
    workers, servers = hosts[1 : (pods or k) * (k // 2) ** 2 : 2], [hosts[0]]
    opts = dict(planner=planner)
    if planner == "multitree":
        opts.update(trees=4, height=0.1, min_bw=100.0)
    times, cpu = [], []
    row = {"k": k, "planner": planner, "hosts": len(hosts), "switches": len(topo.switches), "workers": len(workers)}
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        try:
            plan = plan_job(topo, workers, servers, PlanOptions(**opts), graph=graph)
        except PlanError as exc:
            wall, spent = time.perf_counter() - t0, time.process_time() - c0
            print(f"k = {k} {planner}: refused after {wall:.2f} s ({spent:.2f} s CPU): {exc}", flush=True)
            return {**row, "refused": str(exc), "plan_s": wall, "plan_runs_s": [wall], "plan_cpu_s": spent}
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    t0 = time.perf_counter()
    size = len(plan.to_json())
    dump = time.perf_counter() - t0
    buffer = io.BytesIO()
    t0 = time.perf_counter()
    save_plan_columns(plan, buffer)
    columns_save = time.perf_counter() - t0
    buffer.seek(0)
    t0 = time.perf_counter()
    loaded = load_plan_columns(buffer, validate=False)
    columns_load = time.perf_counter() - t0
    try:  # what an agent checks before it starts (JobPlan.validate, as from_json)
        plan.validate()
        invalid = None
    except PlanFormatError as exc:
        invalid = str(exc)
        print(f"k = {k} {planner}: the plan is one an agent refuses: {invalid}", flush=True)
    if loaded != plan:
        raise SystemExit(f"k = {k} {planner}: the columnar plan file did not load back the same plan")
    return {
        **row,
        "refused": None,
        "trees": len(plan.trees),
        "build_s": build,
        "plan_s": min(times),
        "plan_runs_s": times,
        "plan_cpu_s": min(cpu),  # the process's CPU time: the figure to read on a shared machine
        "json_bytes": size,
        "json_s": dump,
        "columns_bytes": len(buffer.getvalue()),
        "columns_save_s": columns_save,
        "columns_load_s": columns_load,
        "invalid": invalid,
        "aggregation_points": sum(len(t.aggregation_points) for t in plan.trees),
        "goal_s": (GOALS if planner == "multihop" else MULTITREE_GOALS).get(k),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ks", type=int, nargs="+", default=[16, 32])
    ap.add_argument("--planners", nargs="+", default=["multihop", "multitree"])
    ap.add_argument("--repeats", type=int, default=3, help="timed plans per case, the median reported (default 3)")
    add_deprecated(ap, "--repeat", "--repeats", "repeats", type=int)
    ap.add_argument("--pods", type=int, default=None, help="workers only in the first PODS pods (default: all)")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    args = ap.parse_args()
    rows = [run(k, p, args.repeats, args.pods) for k in args.ks for p in args.planners]
    head = (
        f"{'k':>3} {'planner':<10} {'hosts':>6} {'workers':>7} {'trees':>5} {'agg pts':>7} "
        f"{'first s':>8} {'best s':>8} {'CPU s':>6} {'goal s':>6} {'json MB':>8} {'npz MB':>7} {'save s':>6} {'load s':>6}"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        if r["refused"]:
            print(f"{r['k']:>3} {r['planner']:<10} {r['hosts']:>6} {r['workers']:>7} refused after {r['plan_s']:.3f} s")
            continue
        goal = f"{r['goal_s']:g}" if r["goal_s"] else "-"
        print(
            f"{r['k']:>3} {r['planner']:<10} {r['hosts']:>6} {r['workers']:>7} {r['trees']:>5} "
            f"{r['aggregation_points']:>7} {r['plan_runs_s'][0]:>8.3f} {r['plan_s']:>8.3f} {r['plan_cpu_s']:>6.2f} {goal:>6} {r['json_bytes'] / 1e6:>8.2f}"
            f" {r['columns_bytes'] / 1e6:>7.2f} {r['columns_save_s']:>6.2f} {r['columns_load_s']:>6.2f}"
        )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "plan_scale.json").write_text(json.dumps(rows, indent=2) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for planner in args.planners:
        pts = [(r["workers"], r["plan_s"]) for r in rows if r["planner"] == planner and not r["refused"]]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=planner)
    for k, goal in [*GOALS.items(), *MULTITREE_GOALS.items()]:
        w = [r["workers"] for r in rows if r["k"] == k]
        if w:
            ax.scatter(w[:1], [goal], marker="_", s=400, color="red")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("workers (fat-tree, half the hosts)")
    ax.set_ylabel("planning time (s)")
    ax.set_title("controller planning time (red: goals)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "plan_scale.png", dpi=110)
    print(f"saved {out / 'plan_scale.json'} and {out / 'plan_scale.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
