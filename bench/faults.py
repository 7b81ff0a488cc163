"""A fault campaign on the in-process leaf-spine (softswitch running p4src/ina.p4, virtual clock).

Every row runs real allreduces through the controller's plans and the switches, and says whether each
job's result was exact, or which error it ended with and when, against the job's time budget:

- loss 0..30% on every link (plus 5% duplication and 10% reordering, as in issue 15), one job of
  8 workers, completion time against the same run at 0% loss, over several seeds;
- duplication and reordering alone;
- with a second job on the other hosts (the bystander, its own server): a spine killed mid-allreduce
  (the controller's monitor notices, re-plans, the agents move their chunks; the re-plan time is from
  the kill to the new plan in the agents), a link cut (reported to the controller), a worker killed,
  the victim's server killed, and a storm of packets forged into the victim from the bystander's hosts.

Times are the modelled network's (virtual seconds) unless marked wall. Prints a table, saves
bench/results/faults.json and bench/results/faults.png.

With ``--lab`` (root and mininet; run it under ``flock /tmp/ina-lab.lock``), rows in the mininet lab
too, wall clock: 4 workers on leaf-spine, softswitch in every switch; a clean round, then a round
during which the aggregating spine's switch process is killed (then one during which the other spine
dies: no tree left), and, in a second lab, a round during which ``link l1 spN down`` cuts a link.

    .venv/bin/python bench/faults.py [--seeds 3] [--values 10240] [--quick] [--lab]
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.jobservice import JobManager  # noqa: E402
from controller.options import DEFAULT_RESULT_MODE, PlanOptions  # noqa: E402
from controller.replan import FaultMonitor  # noqa: E402
from controller.topology_yaml import load_topology  # noqa: E402
from protocol import codec  # noqa: E402
from protocol import constants as C  # noqa: E402
from topologies.inprocess import InProcessNetwork  # noqa: E402
from topologies.inprocess.jobs import InProcessJob  # noqa: E402
from worker.errors import AgentError  # noqa: E402

RESULTS = ROOT / "bench" / "results"
TOPOLOGY = ROOT / "topologies" / "leaf_spine.yaml"
VICTIM, BYSTANDER = ["h1", "h3", "h5", "h7"], ["h2", "h4", "h6", "h8"]
BUDGET_S = 2.0  # the agents' time budget (virtual seconds) in the fault rows
MONITOR_S = 0.002  # the controller's probe interval


def network(seed: int) -> InProcessNetwork:
    net = InProcessNetwork(load_topology(TOPOLOGY), seed=seed)
    net.install_routes()
    return net


def inputs(n: int, size: int, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-(10**6), 10**6, size).astype(np.int32) for _ in range(n)]


def outcome(handles, xs, net) -> dict[str, Any]:
    """Wait for every rank: exact, wrong, or the errors (first message) and when they came."""
    exact, wrong, errors = 0, 0, []
    for h in handles:
        try:
            out = h.wait()
        except AgentError as exc:
            errors.append((net.loop.now(), str(exc)))
            continue
        if np.array_equal(out, sum(xs)):
            exact += 1
        else:
            wrong += 1
    row: dict[str, Any] = {"ranks": len(handles), "exact": exact, "wrong": wrong, "errors": len(errors)}
    if errors:
        row["first_error"] = errors[0][1][:240]
        row["error_at_s"] = max(t for t, _ in errors)
    return row


# -- loss, duplication, reordering ------------------------------------------------------------------
def impaired_run(seed: int, values: int, **impairment: float) -> dict[str, Any]:
    net = network(seed)
    net.set_impairments(**impairment)
    workers = [f"h{i}" for i in range(1, 9)]
    job = InProcessJob(net, workers, ["h9"], give_up_after=30.0)
    xs = inputs(8, values, seed)
    start, wall = net.loop.now(), time.perf_counter()
    row = outcome(job.start(xs), xs, net)
    row.update(
        time_s=net.loop.now() - start,
        wall_s=time.perf_counter() - wall,
        resends=sum(a.stats["retransmissions"] for a in job.agents),
        sent=sum(a.stats["packets_sent"] for a in job.agents),
    )
    return row


def sweep(seeds: int, values: int, losses: list[float]) -> list[dict[str, Any]]:
    rows = []
    base_time = None
    cases = [
        (f"loss {loss:.0%} +dup 5% +reorder 10%", {"loss": loss, "duplicate": 0.05, "reorder": 0.1}) for loss in losses
    ]
    cases = [
        ("no impairment", {}),
        *cases,
        ("duplication 20%", {"duplicate": 0.2}),
        ("reordering 30%", {"reorder": 0.3}),
    ]
    for name, impairment in cases:
        runs = [
            impaired_run(seed, values, **impairment, **({"reorder_delay_s": 0.002} if "reorder" in impairment else {}))
            for seed in range(1, seeds + 1)
        ]
        exact_runs = sum(r["exact"] == r["ranks"] for r in runs)
        median = statistics.median(r["time_s"] for r in runs)
        if base_time is None:
            base_time = median
        row = {
            "row": name,
            "kind": "impairment",
            "loss": impairment.get("loss", 0.0),
            "runs": seeds,
            "exact_runs": exact_runs,
            "errors": sum(r["errors"] for r in runs),
            "time_s": median,
            "time_vs_clean": median / base_time,
            "wall_s": statistics.median(r["wall_s"] for r in runs),
            "resent_share": sum(r["resends"] for r in runs) / max(1, sum(r["sent"] for r in runs)),
            "ok": exact_runs == seeds,
        }
        rows.append(row)
        show(row)
    return rows


# -- faults with a bystander job --------------------------------------------------------------------
class TwoJobs:
    """A victim job (h1, h3, h5, h7 -> h9) and a bystander (h2, h4, h6, h8 -> h10), planned and installed
    by a job manager, watched by a fault monitor, each running one allreduce."""

    def __init__(self, seed: int, values: int):
        self.net = net = network(seed)
        self.manager = JobManager(net.topo, installer=net.installer)
        servers: dict = {}
        self.jobs = []
        for workers, server in ((VICTIM, "h9"), (BYSTANDER, "h10")):
            plan, _ = self.manager.register(workers, [server], PlanOptions())
            job = InProcessJob(
                net, workers, [server], plan=plan, install=False, server_agents=servers, give_up_after=BUDGET_S
            )
            job.follow(self.manager)
            self.jobs.append(job)
        self.victim, self.bystander = self.jobs
        self.monitor = FaultMonitor(
            net.installer,
            self.manager.switches_in_use,
            self.manager.switch_failed,
            net.loop,
            MONITOR_S,
            ports=net,
            on_link_failure=self.manager.link_failed,
        )
        self.xs = [inputs(4, values, seed), inputs(4, values, seed + 100)]

    def run(self, fault: Callable[[], object] | None, when_done: float = 1 / 3) -> dict[str, Any]:
        """Start both allreduces, apply ``fault`` once rank 0 of the victim has ``when_done`` of its
        results, wait for every rank."""
        net = self.net
        self.monitor.start()
        handles = [job.start(xs) for job, xs in zip(self.jobs, self.xs, strict=True)]
        start = net.loop.now()
        self.fault_at = None

        def check():
            round_ = self.victim.agents[0]._round
            if round_ is not None and round_.results_heard >= round_.chunks * when_done:
                self.fault_at = net.loop.now()
                if fault is not None:
                    fault()
            else:
                net.loop.call_later(20e-6, check)

        net.loop.call_soon(check)
        wall = time.perf_counter()
        victim = outcome(handles[0], self.xs[0], net)
        bystander = outcome(handles[1], self.xs[1], net)
        self.monitor.stop()
        return {
            "victim": victim,
            "bystander": bystander,
            "time_s": net.loop.now() - start,
            "wall_s": time.perf_counter() - wall,
            "fault_at_s": None if self.fault_at is None else self.fault_at - start,
        }


def fault_rows(seed: int, values: int) -> list[dict[str, Any]]:
    rows = []

    def record(name: str, result: dict[str, Any], expect: str, **extra: Any) -> None:
        v, b = result["victim"], result["bystander"]
        bystander_ok = b["exact"] == b["ranks"]
        if expect == "exact":
            ok = v["exact"] == v["ranks"] and bystander_ok
        else:  # every rank exact or a clear error (at least one) within the budget after the fault; none wrong
            ended = v["exact"] + v["errors"] == v["ranks"] and v["wrong"] == 0 and v["errors"] > 0
            ok = ended and v.get("error_at_s", 1e9) - (result["fault_at_s"] or 0) <= BUDGET_S + 0.5 and bystander_ok
        row = {"row": name, "kind": "fault", "expect": expect, "ok": ok, **result, **extra}
        rows.append(row)
        show(row)

    clean = TwoJobs(seed, values).run(None)
    record("no fault (two jobs)", clean, "exact")

    # a spine killed: the monitor notices, the manager re-plans, the agents move their chunks
    bench = TwoJobs(seed, values)
    spine = next(c.switch for c in bench.victim.plan.switches if c.switch.startswith("sp"))
    replanned_at: list[float] = []
    bench.manager.watch(bench.victim.plan.job_id, lambda plan, _: replanned_at.append(bench.net.loop.now()))
    wall_replan: list[float] = []
    switch_failed = bench.manager.switch_failed

    def timed_switch_failed(switch: str, reason: str = ""):
        t = time.perf_counter()
        try:
            return switch_failed(switch, reason)
        finally:
            wall_replan.append(time.perf_counter() - t)

    bench.monitor.on_failure = timed_switch_failed
    result = bench.run(lambda: bench.net.kill_switch(spine))
    record(
        f"spine {spine} killed mid-allreduce",
        result,
        "exact",
        replan_s=(replanned_at[0] - bench.fault_at) if replanned_at and bench.fault_at is not None else None,
        replan_wall_s=wall_replan[0] if wall_replan else None,
        time_vs_clean=result["time_s"] / clean["time_s"],
        chunks_moved=sum(a.stats["chunks_moved"] for a in bench.victim.agents),
    )

    # a link cut, noticed by the monitor (the links' state)
    bench = TwoJobs(seed, values)
    spine = next(c.switch for c in bench.victim.plan.switches if c.switch.startswith("sp"))
    result = bench.run(lambda: bench.net.cut_link("l1", spine))
    record(f"link l1-{spine} cut", result, "exact", time_vs_clean=result["time_s"] / clean["time_s"])

    bench = TwoJobs(seed, values)
    bench.net.kill_host("h7")
    record("victim worker h7 dead from the start", bench.run(None), "error")

    bench = TwoJobs(seed, values)
    record("victim worker h7 killed mid-allreduce", bench.run(lambda: bench.net.kill_host("h7")), "error")

    # with results from the tree's root switch (docs/protocol.md, "Root multicast") no round waits for the
    # server: the victim runs on; with the server completing the sums, it ends with a clear error
    bench = TwoJobs(seed, values)
    root = any(c.root for c in bench.victim.plan.switches)
    record("victim's server h9 killed", bench.run(lambda: bench.net.kill_host("h9")), "exact" if root else "error")

    bench = TwoJobs(seed, values)
    forged = forgeries(bench.victim.plan, chunks=200)

    def storm():
        for k, (host, payload, dst) in enumerate(forged):
            bench.net.loop.call_later(k * 2e-6, bench.net.transport(host).sendto, payload, dst)

    result = bench.run(storm, when_done=0.1)
    bench.net.loop.run(0.1)  # the rest of the storm
    dropped = sum(
        bench.net.installer.read_counter(s, "InaIngress.drop_stats", [C.DROP_NOT_ADMITTED])[C.DROP_NOT_ADMITTED][0]
        for s in bench.net.switches
    )
    record("forged-packet storm from the bystander's hosts", result, "exact", forged=len(forged), not_admitted=dropped)
    return rows


def forgeries(plan, chunks: int) -> list[tuple[str, bytes, str]]:
    """GRADs, unicast and multicast RESULTs forged into ``plan``'s job from the neighbour host of each
    of its workers, with the job's own hop lists, seqs and slots."""
    tree = plan.trees[0]
    neighbour = dict(zip(VICTIM, BYSTANDER, strict=True))
    junk = np.full(plan.value_count, 1_000_000, dtype=np.int32)  # well-formed for the switches' K
    out = []
    for w in plan.workers:
        grad_hops = [h.to_codec() for h in tree.grad_hops[w.name]]
        result_hops = [h.to_codec() for h in tree.result_hops[w.name]]
        for seq in range(1, chunks + 1):
            common = {"slot": (seq - 1) % plan.pool_size, "contributor": w.rank, "tree_id": tree.tree_id}
            out.append(
                (
                    neighbour[w.name],
                    codec.encode(codec.grad(plan.job_id, seq, grad_hops, junk, **common), plan.value_count),
                    plan.servers[0].ip,
                )
            )
            out.append(
                (
                    neighbour[w.name],
                    codec.encode(codec.result(plan.job_id, seq, result_hops, junk, **common), plan.value_count),
                    w.ip,
                )
            )
            mcast = codec.result(plan.job_id, seq, [], junk, flags=C.FLAG_MCAST, **common)
            out.append((neighbour[w.name], codec.encode(mcast, plan.value_count), w.ip))
    return out


# -- the mininet lab (wall clock) ----------------------------------------------------------------------
def lab_rows(values: int) -> list[dict[str, Any]]:
    """The lab's fault rows: each is a round with the fault a third into it (by the clean round's time)."""
    import threading

    from topologies.errors import LabJobError
    from topologies.mininet_lab import MininetLab

    def aggregating_spine(plan) -> str:
        return next(c.switch for c in plan.switches if c.switch.startswith("sp") and c.aggregates)

    def faulty_round(lab, name: str, action: Callable[[], object], clean_s: float, expect: str) -> dict[str, Any]:
        lab.rounds.last_errors, lab.rounds.last_stats = {}, {}
        timer = threading.Timer(clean_s / 3, action)
        timer.start()
        start = time.perf_counter()
        try:
            (res,) = lab.allreduce(1)
            outcome, exact = "exact", res.verified
        except LabJobError as exc:
            outcome, exact = str(exc), False
        took = time.perf_counter() - start
        timer.join()
        errors = len(lab.rounds.last_errors)
        ok = exact if expect == "exact" else errors == len(lab.workers) and "re-planning job" in outcome
        moved = sum(int(st.get("chunks_moved", 0)) for st in lab.rounds.last_stats.values())
        row = {"row": f"lab: {name}", "kind": "lab", "outcome": outcome, "errors": errors}
        row.update(ranks=len(lab.workers), time_s=took, clean_s=clean_s, time_vs_clean=took / clean_s)
        row.update(chunks_moved=moved, plan_version=lab.plan.version, ok=ok)
        show(row)
        return row

    def one_lab(fault: str) -> list[dict[str, Any]]:
        lab = MininetLab(
            str(TOPOLOGY),
            4,
            values=values,
            log=lambda m: None,
            plan_options=PlanOptions(result_mode=DEFAULT_RESULT_MODE),
            monitor_interval=0.2,
        )
        rows = []
        try:
            lab.start()
            (clean,) = lab.allreduce(1)
            spine = aggregating_spine(lab.plan)
            if fault == "link":
                cut = functools.partial(lab.link_down, "l1", spine)
                return [faulty_round(lab, f"link l1-{spine} down", cut, clean.elapsed, "exact")]
            rows.append(
                faulty_round(lab, f"{spine} killed", functools.partial(lab.kill_switch, spine), clean.elapsed, "exact")
            )
            other = aggregating_spine(lab.plan)
            kill_other = functools.partial(lab.kill_switch, other)
            rows.append(faulty_round(lab, f"then {other} killed (no tree left)", kill_other, clean.elapsed, "error"))
            return rows
        finally:
            lab.stop()

    return one_lab("spine") + one_lab("link")


# -- output -------------------------------------------------------------------------------------------
def show(row: dict[str, Any]) -> None:
    if row["kind"] == "lab":
        outcome = "exact" if row["outcome"] == "exact" else f"error on {row['errors']}/{row['ranks']}"
        print(
            f"{row['row']:<44} {outcome:<14} time {row['time_s']:6.2f} s wall ({row['time_vs_clean']:.2f}x the "
            f"clean round's {row['clean_s']:.2f} s)   {row['chunks_moved']} chunks moved   plan v{row['plan_version']}   "
            f"{'ok' if row['ok'] else 'NOT OK'}",
            flush=True,
        )
        if row["errors"] or row["outcome"] != "exact":
            print(f"    {row['outcome'][:200]}", flush=True)
        return
    if row["kind"] == "impairment":
        print(
            f"{row['row']:<44} exact {row['exact_runs']}/{row['runs']} runs   time {row['time_s'] * 1e3:8.1f} ms "
            f"({row['time_vs_clean']:.2f}x clean)   resent {row['resent_share']:.0%}   "
            f"{'ok' if row['ok'] else 'NOT OK'}",
            flush=True,
        )
        return
    v, b = row["victim"], row["bystander"]
    victim = (
        f"exact {v['exact']}/{v['ranks']}"
        if not v["errors"]
        else f"error on {v['errors']}/{v['ranks']} at {v['error_at_s'] * 1e3:.0f} ms"
    )
    extra = ""
    if row.get("replan_s") is not None:
        extra = f"   re-plan {row['replan_s'] * 1e3:.1f} ms after the kill ({row['replan_wall_s'] * 1e3:.0f} ms wall)"
    if "not_admitted" in row:
        extra = f"   {row['forged']} forged, {row['not_admitted']} dropped as not admitted"
    print(
        f"{row['row']:<44} victim {victim:<24} bystander exact {b['exact']}/{b['ranks']}   time "
        f"{row['time_s'] * 1e3:7.1f} ms{extra}   {'ok' if row['ok'] else 'NOT OK'}",
        flush=True,
    )
    if v["errors"] and "first_error" in v:
        print(f"    {v['first_error'][:200]}", flush=True)


def plot(rows: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep_rows = [r for r in rows if r["kind"] == "impairment" and r["row"].startswith("loss")]
    faults = [r for r in rows if r["kind"] == "fault"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2))
    losses = [r["loss"] * 100 for r in sweep_rows]
    left.plot(losses, [r["time_vs_clean"] for r in sweep_rows], "o-", color="tab:blue")
    for r, x in zip(sweep_rows, losses, strict=True):
        left.annotate(
            f"{r['exact_runs']}/{r['runs']} exact",
            (x, r["time_vs_clean"]),
            textcoords="offset points",
            xytext=(0, 6),
            ha="center",
            fontsize=8,
        )
    left.set_xlabel("loss on every link, % (+5% duplication, +10% reordering)")
    left.set_ylabel("completion time / without impairment (log)")
    left.set_yscale("log")
    left.set_title("8 workers on leaf-spine: exact at every loss rate")
    left.grid(alpha=0.3)
    names = [r["row"] for r in faults]
    times = [r["time_s"] * 1e3 for r in faults]
    colors = ["tab:green" if r["ok"] else "tab:red" for r in faults]
    right.barh(range(len(faults)), times, color=colors)
    right.set_yticks(range(len(faults)), names, fontsize=8)
    right.invert_yaxis()
    for i, r in enumerate(faults):
        v = r["victim"]
        label = "exact" if not v["errors"] else f"{v['errors']} clear errors"
        right.annotate(
            f" victim {label}, bystander exact {r['bystander']['exact']}/{r['bystander']['ranks']}",
            (times[i], i),
            va="center",
            fontsize=7,
        )
    right.set_xlabel("time until every rank of both jobs ended, ms (virtual, log)")
    right.set_xscale("log")
    right.set_title("faults with a second job on the other hosts")
    right.set_xlim(min(times) / 2, max(times) * 400)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3, help="runs per impairment row")
    ap.add_argument(
        "--values", type=int, default=10_240, help="int32 values per worker (40 chunks at the default K = 256)"
    )
    ap.add_argument("--losses", type=float, nargs="+", default=[0.0, 0.05, 0.1, 0.2, 0.3])
    ap.add_argument("--quick", action="store_true", help="one seed, 2,560 values, losses 0 and 20%%")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--lab", action="store_true", help="also the mininet lab's rows (root, mininet; wall clock)")
    ap.add_argument("--lab-values", type=int, default=192_000, help="int32 values per worker in the lab rows")
    args = ap.parse_args()
    if args.quick:
        args.seeds, args.values, args.losses = 1, 2560, [0.0, 0.2]
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    load = os.getloadavg()[0]
    print(f"fault campaign on {TOPOLOGY.name}: {args.values} values per worker, {args.seeds} seed(s); load {load:.1f}")
    wall = time.perf_counter()
    rows = sweep(args.seeds, args.values, args.losses) + fault_rows(1, args.values * 16)
    if args.lab:
        rows += lab_rows(args.lab_values)
    summary = {
        "topology": TOPOLOGY.name,
        "values": args.values,
        "seeds": args.seeds,
        "budget_s": BUDGET_S,
        "monitor_interval_s": MONITOR_S,
        "load_avg": load,
        "wall_s": time.perf_counter() - wall,
        "all_ok": all(r["ok"] for r in rows),
        "rows": rows,
    }
    (out / "faults.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot(rows, out / "faults.png")
    print(f"{'every row ok' if summary['all_ok'] else 'SOME ROWS NOT OK'}; saved {out / 'faults.json'} and faults.png")
    return 0 if summary["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
