"""One all-reduce on a simulated network: INA through the P4 program, gloo's ring, a parameter server.

INA: the job is planned by ``controller.planner.plan_job`` and installed by the controller's
``Installer``; each worker stripes its chunks of K int32 values over the plan's trees and streams them
over the job's slots (chunk j: seq j + 1; the i-th chunk of a tree: slot i mod pool, shadow (i div pool)
mod 2, the worker agent's assignment, worker/stream.py) with a window of chunks in flight per tree (fixed,
or the agent's congestion control: ``AgentModel``), resends a chunk with RETX after its timeout, and takes
the multicast RESULT. Where a switch aggregates every worker of a tree (the controller's default plan on
v1model) that switch, the tree's root, multicasts the RESULTs and answers resends itself (the P4 program)
and the server keeps its copy of each sum and sends nothing; on the server path (``root_results=False``)
the server adds the partial sums its children send and multicasts the chunk's result on its tree. The
server answers a resend of a finished chunk to its sender only, by unicast. Several jobs can run at once (``run_ina_jobs``) and switches can fail mid-run
(``failures``; ``replan_ina`` is the controller's re-plan; with ``Recovery`` the controller notices the
failure after a modelled delay, re-plans, and the workers move their unfinished chunks to the new plan's
recovery tree mid-round and offer it their finished chunks of the last pool, as the agents do). Every result is compared in C, lane by lane, with the
expected sum.

Worker values: worker of rank r holds ``a + c[r] * b`` (int32 arrays a, b, one integer c[r] per rank), so
that a thousand workers' 16 MB need 2 arrays in memory, and their exact sum is ``n * a + sum(c) * b``.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field

import numpy as np

from controller.errors import PlanError
from controller.options import RTO_PYTHON_SWITCHES_S, RTO_VIRTUAL_S, PlanOptions
from controller.plan import HostRef, JobPlan
from controller.planner import plan_job
from controller.topology import Host
from protocol import constants as C
from sim.errors import SimError
from sim.frames import core_layout, grad_frame, multicast_result_frame, plain_frame, unicast_result_frame
from sim.network import SimNetwork
from worker.pacing import PACING_HEADROOM
from worker.stream import INITIAL_WINDOW, MIN_WINDOW_BYTES, MIN_WINDOW_CHUNKS, SLOW_START_BYTES, Striping

BASELINE_PORT = 40010  # the baselines' UDP port (not INA's: plain IPv4 forwarding)
MAX_RESENDS = 20  # resends of one chunk before a worker gives up
BASELINE_PAYLOAD = 1400  # bytes of gradient per baseline packet (a 1500-byte MTU)


@dataclass
class WorkerValues:
    """The workers' int32 vectors as ``a + c[rank] * b``."""

    a: np.ndarray
    b: np.ndarray
    coeffs: np.ndarray

    @classmethod
    def random(cls, n_workers: int, n_values: int, seed: int = 0) -> WorkerValues:
        """Values small enough that no partial sum of ``n_workers`` overflows int32."""
        rng = np.random.default_rng(seed)
        bound = max(1, (2**30) // max(1, n_workers) // 64)
        a = rng.integers(-bound, bound, n_values, dtype=np.int32)
        b = rng.integers(-bound, bound, n_values, dtype=np.int32)
        coeffs = rng.integers(-32, 33, n_workers, dtype=np.int32)
        return cls(a, b, coeffs)

    def of(self, rank: int) -> np.ndarray:
        return (self.a.astype(np.int64) + int(self.coeffs[rank]) * self.b.astype(np.int64)).astype(np.int32)

    def total(self) -> np.ndarray:
        """The exact sum over the workers (numpy, int64, checked to fit int32)."""
        s = len(self.coeffs) * self.a.astype(np.int64) + int(self.coeffs.astype(np.int64).sum()) * self.b.astype(
            np.int64
        )
        if s.size and (s.max() > 2**31 - 1 or s.min() < -(2**31)):
            raise SimError("the workers' sum overflows int32: use smaller values")
        return s.astype(np.int32)


@dataclass(frozen=True)
class AgentModel:
    """The worker agent's congestion control, as the simulated INA workers run it (worker/stream.py,
    worker/pacing.py, worker/agent.py; their constants are imported, not copied): a congestion window in
    slots (INITIAL_WINDOW chunks in slow start up to SLOW_START_BYTES of values, or from there when
    paced), halved once per timeout; the retransmission timeout from the smoothed RTT (at least
    ``timeout_s``, at most RTT_CAP_OVER_MIN lowest round trips) with Karn's backoff up to ``max_backoff``
    times; paced at PACING_HEADROOM of the plan's ``send_rate`` by the agent's token bucket, the rate moved
    once per round trip by the share of results that came back ECN CE (``ecn``: the frames are ECN-capable
    and the P4 program marks them from the modelled egress queues), halved by a timeout."""

    timeout_s: float = RTO_PYTHON_SWITCHES_S  # the lab's agents' base RTO (topologies/lab_agent.py)
    max_backoff: float = 16.0  # WorkerAgent's default
    paced: bool = True  # pace at the plan's send rate (the agents do when the plan gives one)
    ecn: bool = True  # the agents' frames are ECN-capable (ECT(0)), the server echoes marks

    def windows(self, k: int, pool: int, paced: bool) -> tuple[float, float, float]:
        """(initial window, slow-start threshold, smallest window) in chunks of ``k`` values."""

        def slots(value_bytes: int) -> float:
            return float(max(MIN_WINDOW_CHUNKS, value_bytes // (C.VALUE_BYTES * k)))

        if paced:
            start = min(float(pool), slots(SLOW_START_BYTES))
            return start, start, slots(MIN_WINDOW_BYTES)
        return float(INITIAL_WINDOW), slots(SLOW_START_BYTES), slots(MIN_WINDOW_BYTES)


@dataclass
class RunResult:
    """What a simulated all-reduce measured."""

    method: str
    workers: int
    bytes_per_worker: int
    completion_s: float  # modelled time until the last worker finished (-1: not all finished)
    ideal_s: float  # bytes / the slowest host link's bandwidth
    events: int
    wall_s: float
    cpu_s: float  # this process's CPU time over the run (the machine is shared: wall time is the load's too)
    finished: int
    mismatches: int = 0
    resends: int = 0
    busiest: dict[str, object] = field(default_factory=dict)
    agent: dict[str, float] = field(default_factory=dict)  # INA with an AgentModel: its counters, per worker
    # INA: the job's servers' counters (root copies kept, RESULTs sent, resends answered, duplicates), summed
    server: dict[str, int] = field(default_factory=dict)
    # INA with ``Recovery``: the re-plans of the run and the chunks the workers moved (``_Replanner.summary``)
    recovery: dict[str, object] = field(default_factory=dict)
    # INA: the job's plan versions installed by the end of the run (the first, then its re-plans), not in as_dict
    versions: list[JobPlan] = field(default_factory=list, repr=False)

    @property
    def x_ideal(self) -> float:
        return self.completion_s / self.ideal_s if self.completion_s > 0 and self.ideal_s > 0 else float("nan")

    def as_dict(self) -> dict[str, object]:
        d: dict[str, object] = {key: value for key, value in self.__dict__.items() if key != "versions"}
        d["x_ideal"] = self.x_ideal
        d["events_per_s"] = self.events / self.wall_s if self.wall_s > 0 else 0.0
        d["events_per_cpu_s"] = self.events / self.cpu_s if self.cpu_s > 0 else 0.0
        return d


def _host_bandwidth(net: SimNetwork, hosts: list[str]) -> float:
    bw = [bw for (src, _), (bw, _) in net.link_params.items() if src in hosts]
    return min(bw)


Failure = tuple[float, str]  # (modelled time, s): the switch ``name`` fails then (every link of it cut)


@dataclass(frozen=True)
class Recovery:
    """The controller's answer to a failed switch, in modelled time: its ``FaultMonitor`` notices the switch
    ``detect_s`` after it failed (a probe fails within one probe interval: at most the interval), and at
    that time the controller's re-plan (``replan_ina``: ``plan_around`` with the job's ``root_results``) is
    installed and reaches every worker of a job whose plan uses the switch; the workers move their chunks
    without a result on trees that are gone to the new plan's recovery tree, those in flight at once, and
    offer it the chunks with a result from a pool before the first without one (worker/stream.py,
    ``Round.trees_changed``: a root that died multicasting may have left others without a RESULT). The
    re-plan's own wall time is measured, not modelled."""

    detect_s: float
    root_results: bool | None = None  # the jobs' option (None: where the program can, as ``plan_ina``)


def _run(net: SimNetwork, until_s: float | None, failures: list[Failure], replanner: _Replanner | None = None) -> None:
    """Start the hosts and run, failing the switches of ``failures`` at their times (and, with a
    ``replanner``, re-planning around each one its detection delay later)."""
    net.core.start()
    events: list[tuple[float, int, str]] = [(at, 0, switch) for at, switch in failures]
    if replanner is not None:
        events += [(at + replanner.recovery.detect_s, 1, switch) for at, switch in failures]
    for at, kind, switch in sorted(events):
        if until_s is not None and at >= until_s:
            break
        net.core.run(at)
        if kind == 0:
            net.fail_switch(switch)
        elif replanner is not None:
            replanner.switch_failed(switch, at)
    net.core.run(until_s)


class _Replanner:
    """The controller re-planning the running jobs around failed switches mid-run (``Recovery``), and the
    plan switch-over of their simulated agents: one Python call per worker per re-plan, none per packet."""

    def __init__(self, net: SimNetwork, jobs: list[JobPlan], tos: int, recovery: Recovery):
        self.net, self.recovery, self.tos = net, recovery, tos
        self.round_trees = [[t for t in plan.trees if t.weight > 0] for plan in jobs]  # the round's trees, in C order
        self.plans = list(jobs)  # each job's newest version
        self.versions: list[list[JobPlan]] = [[plan] for plan in jobs]
        self.dead: list[str] = []
        self.log: list[list[dict[str, object]]] = [[] for _ in jobs]  # per job, its re-plans
        self.wall_s: list[list[float]] = [[] for _ in jobs]  # per job, its re-plans' wall time (plan + install)

    def switch_failed(self, switch: str, at: float) -> None:
        """The monitor noticed ``switch`` at modelled time ``at``: every job whose plan uses it is re-planned
        on the surviving switches and installed, and its workers take the new version now."""
        self.dead.append(switch)
        for i, plan in enumerate(self.plans):
            if switch not in {c.switch for c in plan.switches}:
                continue
            entry: dict[str, object] = {"switch": switch, "at_s": float(at)}
            t0 = time.perf_counter()
            try:
                new = replan_ina(self.net, plan, self.dead, root_results=self.recovery.root_results)
            except PlanError as exc:  # the controller refuses: the agents keep the old trees (and give up)
                entry["refused"] = str(exc)
                self.log[i].append(entry)
                continue
            entry["replan_wall_s"] = wall = time.perf_counter() - t0
            self.wall_s[i].append(wall)
            entry["version"] = new.version
            self.plans[i] = new
            self.versions[i].append(new)
            _install_answers(self.net, self.versions[i], self.tos)
            self._move(i, new)
            self.log[i].append(entry)

    def _move(self, i: int, new: JobPlan) -> None:
        """Every worker of job ``i`` takes ``new``: its round's trees that are gone send over the recovery tree."""
        live = {t.tree_id for t in new.trees if t.weight > 0}
        gone = [t.tree_id not in live for t in self.round_trees[i]]
        recovery = next((t for t in new.trees if t.weight <= 0), None)
        if recovery is None or not any(gone):
            return
        servers = {s.name: s for s in new.servers}
        for w in new.workers:
            frame = grad_frame(
                new.job_id,
                recovery.tree_id,
                recovery.grad_hops[w.name],
                w,
                servers[recovery.root],
                new.value_count,
                self.tos,
            )
            self.net.core.ina_worker_replan(self.net.node[w.name], gone, frame)

    def summary(self, i: int) -> dict[str, object]:
        """Job ``i``'s re-plans and what its workers and servers did about them."""
        plan = self.plans[i]
        if not self.log[i]:
            return {}
        workers = [self.net.core.host_stats(self.net.node[w.name]) for w in plan.workers]
        servers = [self.net.core.host_stats(self.net.node[s.name]) for s in plan.servers]
        refused = [str(e["refused"]) for e in self.log[i] if "refused" in e]
        return {
            "detect_s": self.recovery.detect_s,
            "replans": self.log[i],
            "plan_version": plan.version,
            "refused": refused[0] if refused else "",
            "replan_wall_s": float(sum(self.wall_s[i])),
            "results_at_replan": sum(max(0, int(s["results_at_replan"])) for s in workers),
            "chunks_moved": sum(int(s["chunks_moved"]) for s in workers),
            "recovery_chunks": sum(int(s["recovery_chunks"]) for s in workers),
            "sent_after_done": sum(int(s["sent_after_done"]) for s in workers),
            "finished_chunks_offered": sum(int(s["finished_chunks_offered"]) for s in workers),
            "answered_from_other_tree": sum(int(s["answered_from_other_tree"]) for s in servers),
        }


def _finish(
    net: SimNetwork,
    method: str,
    hosts: list[str],
    nbytes: int,
    until_s: float | None,
    t0: float,
    c0: float,
    failures: list[Failure] | None = None,
) -> RunResult:
    _run(net, until_s, failures or [])
    return _collect(net, method, hosts, nbytes, time.perf_counter() - t0, time.process_time() - c0)


def _collect(net: SimNetwork, method: str, hosts: list[str], nbytes: int, wall: float, cpu: float) -> RunResult:
    """What the hosts of one job (``hosts``) measured in the run so far."""
    stats = [net.core.host_stats(net.node[h]) for h in hosts]
    done = [s["done_s"] for s in stats if s["done_s"] >= 0]
    busiest_name, busiest = net.busiest_direction()
    agent_keys = ("timeouts", "window_halvings", "rate_cuts", "congested_results", "srtt_s", "lowest_rtt_s")
    return RunResult(
        method=method,
        workers=len(hosts),
        bytes_per_worker=nbytes,
        completion_s=max(done) if len(done) == len(hosts) else -1.0,
        ideal_s=nbytes * 8 / _host_bandwidth(net, hosts),
        events=int(net.core.state()["events"]),
        wall_s=wall,
        cpu_s=cpu,
        finished=len(done),
        mismatches=int(sum(s["mismatches"] for s in stats)),
        resends=int(sum(s["resends"] for s in stats)),
        busiest={"direction": busiest_name, **busiest},
        agent={key: float(np.mean([s[key] for s in stats])) for key in agent_keys} if method == "ina" else {},
    )


def plan_ina(net: SimNetwork, workers: list[str], server: str, **options: object) -> JobPlan:
    """The controller's plan for the job (multicast results, K of the switches' program, results from a
    tree's root where the program can send them unless ``root_results=False``), installed; the network's
    ``resources`` are charged, so jobs planned on one network get their own ids and slots."""
    plan = plan_only(net, workers, server, **options)
    net.install_job(plan)
    return plan


def plan_only(net: SimNetwork, workers: list[str], server: str, **options: object) -> JobPlan:
    """``plan_ina``'s plan, not installed (``net.install_job`` installs it: the two timed apart)."""
    opts = PlanOptions(**_plan_defaults(net, options))  # type: ignore[arg-type]
    return plan_job(net.topo, workers, [server], opts, net.resources, net.graph)


def _plan_defaults(net: SimNetwork, options: dict[str, object]) -> dict[str, object]:
    """The controller's defaults for a job on ``net`` (controller/jobservice.py): multicast results, K
    of the switches' program, and ``root_results`` (None: where the program can, read off its P4Info);
    ``root_results=False`` keeps the server on every tree's path (the server sends the RESULTs)."""
    out = {"result_mode": "multicast", "value_count": net.installer.values_per_packet(), **options}
    if out.get("root_results") is None:
        out["root_results"] = net.installer.root_multicast()
    return out


def replan_ina(net: SimNetwork, plan: JobPlan, dead_switches: list[str], root_results: bool | None = None) -> JobPlan:
    """The controller's next version of ``plan`` around ``dead_switches`` (controller/replan.py:
    ``plan_around`` on the surviving graph, the job's id kept, new tree ids), installed; ``root_results``
    as ``plan_ina``'s (the job's option: None, where the program can)."""
    from controller.replan import plan_around, surviving_graph

    opts = PlanOptions(
        **_plan_defaults(
            net, {"value_count": plan.value_count, "pool_size": plan.pool_size, "root_results": root_results}
        )  # type: ignore[arg-type]
    )
    graph = surviving_graph(net.graph, dead_switches, [])
    new = plan_around(net.topo, graph, net.resources, plan, opts)
    net.install_job(new)
    return new


def run_ina(
    net: SimNetwork,
    plan: JobPlan,
    values: WorkerValues,
    *,
    expected: np.ndarray | None = None,
    window: int | None = None,
    timeout_s: float = RTO_VIRTUAL_S,
    max_resends: int = MAX_RESENDS,
    until_s: float | None = None,
    agent: AgentModel | None = None,
    failures: list[Failure] | None = None,
    recovery: Recovery | None = None,
) -> RunResult:
    """All-reduce ``values`` through the installed job ``plan``; results checked against ``expected``
    (default: ``values.total()``). A worker gives up after ``max_resends`` resends of one chunk (with the
    timeout doubling up to 64x, about 5 s of modelled time at the defaults) and counts as not finished.

    ``agent`` None: a fixed ``window`` (default the pool) and ``timeout_s``; an ``AgentModel``: the
    worker agent's window, RTO, pacing and ECN rate law (``window`` and ``timeout_s`` are then its).
    ``failures``: switches that fail during the run, (time s, name); ``recovery``: the controller notices
    each and re-plans the job mid-round, the workers move their unfinished chunks (``Recovery``; None:
    nobody re-plans, a round whose tree crosses a failed switch is lost)."""
    t0, c0 = time.perf_counter(), time.process_time()
    tos = _add_ina(net, plan, values, expected, window, timeout_s, max_resends, agent)
    replanner = _Replanner(net, [plan], tos, recovery) if recovery is not None else None
    _run(net, until_s, failures or [], replanner)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    result = _collect(net, "ina", [w.name for w in plan.workers], len(values.a) * 4, wall, cpu)
    result.server = _server_counters(net, plan)
    result.versions = [plan]
    if replanner is not None:
        result.recovery = replanner.summary(0)
        result.versions = replanner.versions[0]
    return result


def _server_counters(net: SimNetwork, plan: JobPlan) -> dict[str, int]:
    stats = [net.core.host_stats(net.node[s.name]) for s in plan.servers]
    keys = ("root_copies", "results_sent", "answers", "duplicates")
    return {key: int(sum(s[key] for s in stats)) for key in keys}


def run_ina_jobs(
    net: SimNetwork,
    jobs: list[tuple[JobPlan, WorkerValues]],
    *,
    agent: AgentModel | None = None,
    until_s: float | None = None,
    failures: list[Failure] | None = None,
    recovery: Recovery | None = None,
) -> list[RunResult]:
    """Several INA jobs (installed plans, disjoint hosts) all-reducing at once over the same fabric, from
    time 0: one result per job (its own completion time and sums; events, wall and CPU time are the
    whole run's); ``failures`` and ``recovery`` as ``run_ina``'s."""
    t0, c0 = time.perf_counter(), time.process_time()
    hosts = [w.name for plan, _ in jobs for w in plan.workers] + [s.name for plan, _ in jobs for s in plan.servers]
    if len(set(hosts)) != len(hosts):
        raise SimError("concurrent jobs must not share a host (a host runs one agent)")
    tos = C.ECN_NOT_ECT
    for plan, values in jobs:
        tos = _add_ina(net, plan, values, None, None, RTO_VIRTUAL_S, MAX_RESENDS, agent)
    replanner = _Replanner(net, [plan for plan, _ in jobs], tos, recovery) if recovery is not None else None
    _run(net, until_s, failures or [], replanner)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    results = [_collect(net, "ina", [w.name for w in plan.workers], len(v.a) * 4, wall, cpu) for plan, v in jobs]
    for i, (result, (plan, _)) in enumerate(zip(results, jobs, strict=True)):
        result.server = _server_counters(net, plan)
        result.versions = replanner.versions[i] if replanner is not None else [plan]
        if replanner is not None:
            result.recovery = replanner.summary(i)
    return results


def _add_ina(
    net: SimNetwork,
    plan: JobPlan,
    values: WorkerValues,
    expected: np.ndarray | None,
    window: int | None,
    timeout_s: float,
    max_resends: int,
    agent: AgentModel | None,
) -> int:
    """The job's servers and workers on the core (not started); returns the frames' TOS byte. Chunks are
    striped over the plan's trees of weight above 0 as the worker agent stripes them
    (``worker.stream.Striping``); a re-planned job's recovery tree (weight 0) carries only the chunks a
    later re-plan moves there (``Recovery``)."""
    if (plan.job_id, plan.version) in net.plans_run:
        # the simulated agents start every run at chunk 0 on shadow 0, where the plan's switch slots still
        # hold the last round's chunks: their GRADs would be taken as stale or added to old sums
        raise SimError(
            f"job {plan.job_id} (plan version {plan.version}) has run a round on this network already:"
            " plan a new job for each run (plan_ina)"
        )
    net.plans_run.add((plan.job_id, plan.version))
    trees = [t for t in plan.trees if t.weight > 0]
    if not trees or len(trees) > 255:
        raise SimError(f"job {plan.job_id}: {len(trees)} trees of weight above 0 (the simulator runs 1 to 255)")
    k = plan.value_count
    n_values = len(values.a)
    if n_values % k:
        raise SimError(f"{n_values} values are not a whole number of {k}-value chunks")
    servers = {s.name: s for s in plan.servers}
    net.core.set_layout(core_layout(k))
    net.core.set_values(values.a, values.b, values.total() if expected is None else expected)
    first = min(plan.workers, key=lambda w: w.rank)
    tos = C.ECN_ECT0 if agent is not None and agent.ecn else C.ECN_NOT_ECT
    for root in dict.fromkeys(t.root for t in trees):  # one server agent per root (it answers on a GRAD's tree)
        served = [t for t in trees if t.root == root]
        result = multicast_result_frame(plan.job_id, served[0].tree_id, servers[root], first, k, tos)
        net.core.ina_server(net.node[root], result, 4 * plan.pool_size * len(trees))
    _install_answers(net, [plan], tos)
    paced = agent is not None and agent.paced
    rates = [t.send_rate * 1e6 / 8 * PACING_HEADROOM if paced else 0.0 for t in trees]
    tree_of, _ = Striping([t.weight for t in trees]).place(0, n_values // k)
    for w in plan.workers:
        frames = [grad_frame(plan.job_id, t.tree_id, t.grad_hops[w.name], w, servers[t.root], k, tos) for t in trees]
        net.core.ina_worker(
            net.node[w.name],
            list(zip(frames, rates, strict=True)),
            tree_of,
            plan.pool_size,
            window or plan.pool_size,
            agent.timeout_s if agent is not None else timeout_s,
            max_resends,
            int(values.coeffs[w.rank]),
        )
        if agent is not None:
            start, threshold, smallest = agent.windows(k, plan.pool_size, paced and min(rates) > 0)
            net.core.ina_worker_agent(net.node[w.name], start, threshold, smallest, agent.max_backoff, agent.ecn)
    return tos


def _install_answers(net: SimNetwork, versions: list[JobPlan], tos: int) -> None:
    """How each server agent of the job answers resends, for every tree of its plan ``versions`` rooted at
    a server with an agent (those of the first version's aggregating trees): a unicast RESULT per worker on
    the tree's reverse hop list; whether the tree's root switch multicasts its RESULTs; whether it is a
    recovery tree (weight 0), whose GRADs of a chunk another tree completed are answered with that sum."""
    first = versions[0]
    agents = {t.root for t in first.trees if t.weight > 0}
    ips = [int(ipaddress.IPv4Address(w.ip)) for w in first.workers]  # as the core reads a source address
    k = first.value_count
    for root in agents:
        trees: dict[int, tuple[int, bool, bool, list[bytes]]] = {}
        for plan in versions:
            servers = {s.name: s for s in plan.servers}
            root_trees = {c.tree_id for c in plan.switches if c.root}  # the server gets copies, sends nothing
            for t in plan.trees:
                if t.root != root or t.tree_id in trees:
                    continue
                frames = [
                    unicast_result_frame(plan.job_id, t.tree_id, t.result_hops[w.name], servers[root], w, k, tos)
                    for w in plan.workers
                ]
                trees[t.tree_id] = (t.tree_id, t.tree_id in root_trees, t.weight <= 0, frames)
        net.core.ina_server_answers(net.node[root], ips, list(trees.values()))


def run_ring(net: SimNetwork, workers: list[str], nbytes: int, until_s: float | None = None) -> RunResult:
    """gloo's ring all-reduce (reduce-scatter then all-gather, 2(N-1) steps of nbytes/N to the next
    rank), pipelined per packet; routed by the P4 program's IPv4 tables."""
    t0, c0 = time.perf_counter(), time.process_time()
    n = len(workers)
    refs = {h.name: h for h in net.topo.hosts}
    per_step = max(1, -(-nbytes // n // BASELINE_PAYLOAD))
    net.core.set_layout(core_layout(net.installer.values_per_packet()))
    for i, w in enumerate(workers):
        nxt = workers[(i + 1) % n]
        frame = plain_frame(_ref(refs[w]), _ref(refs[nxt]), BASELINE_PAYLOAD, BASELINE_PORT)
        net.core.ring_worker(net.node[w], frame, per_step, 2 * (n - 1))
    return _finish(net, "ring", workers, nbytes, until_s, t0, c0)


def run_ps(net: SimNetwork, workers: list[str], server: str, nbytes: int, until_s: float | None = None) -> RunResult:
    """A parameter server: every worker sends its nbytes to the server, which sends each packet's sum
    to every worker once all contributions of it arrived."""
    t0, c0 = time.perf_counter(), time.process_time()
    refs = {h.name: _ref(h) for h in net.topo.hosts}
    packets = max(1, -(-nbytes // BASELINE_PAYLOAD))
    net.core.set_layout(core_layout(net.installer.values_per_packet()))
    for w in workers:
        net.core.ps_worker(net.node[w], plain_frame(refs[w], refs[server], BASELINE_PAYLOAD, BASELINE_PORT), packets)
    down = [plain_frame(refs[server], refs[w], BASELINE_PAYLOAD, BASELINE_PORT) for w in workers]
    net.core.ps_server(net.node[server], down, packets)
    return _finish(net, "ps", workers, nbytes, until_s, t0, c0)


def run_transfer(
    net: SimNetwork, src: str, dst: str, packets: int, payload: int = BASELINE_PAYLOAD, until_s: float | None = None
) -> RunResult:
    """One bulk transfer: ``packets`` UDP frames from ``src`` to ``dst``, all offered at time 0."""
    t0, c0 = time.perf_counter(), time.process_time()
    refs = {h.name: _ref(h) for h in net.topo.hosts}
    net.core.set_layout(core_layout(net.installer.values_per_packet()))
    net.core.sender(net.node[src], plain_frame(refs[src], refs[dst], payload, BASELINE_PORT), packets)
    net.core.sink(net.node[dst], packets)
    return _finish(net, "transfer", [dst], packets * payload, until_s, t0, c0)


def _ref(host: Host) -> HostRef:
    return HostRef(host.name, host.ip, host.mac, host.node_id, host.index)
