"""The in-process network as a service for other OS processes.

    python -m topologies.inprocess serve TOPOLOGY.yaml [--workers H1 H2 ... | --workers N]
                                         [--server H] [--job-id ID] [--no-job] [--listen ADDR]

One process runs the in-process network of the topology (a softswitch ``Switch`` running
p4src/ina.p4 per switch, on the wall clock), the controller's job service (``JobManager`` +
``JobServer``: RegisterJob plans a job and installs it into the switches, GetPlan serves it), an
aggregation server agent on each server host and an attach endpoint for every other host
(``AttachServer``: a worker process joins with ``AttachTransport``). Unless ``--no-job``, a job of
the given workers (default: the topology's worker hosts) and server (default: its first server
host) is registered at start. The process prints one JSON line,

    {"controller": "127.0.0.1:PORT", "job_id": 1, "workers": ["h1", ...], "servers": ["h5"],
     "endpoints": {"h1": ["127.0.0.1", PORT], ...}, "switches": ["s1"]}

(``workers`` in rank order), then serves until its stdin closes or it gets SIGTERM, and prints a
last line ``{"switch_counters": {JOB_ID: {SWITCH: {...}}}, "link_bytes": {"a->b": BYTES}}`` with each
job's P4 counters and the bytes every link direction carried.

A fault monitor (controller/replan.py) probes the switches over P4Runtime and reads the links' state
every ``--monitor-interval`` seconds; a dead switch or a cut link re-plans the jobs on it, and the
job service streams the new plan versions to the agents watching them (``WatchPlan``). Faults come in
on stdin, one JSON object a line (tests, benchmarks): ``{"kill_switch": "sp1"}``,
``{"cut_link": ["l1", "sp1"]}``; nobody tells the controller, the monitor notices.

Threads: the network, the agents and the switch tables belong to the loop thread. The job service
answers on gRPC threads, so installing or removing a job is handed to the loop thread
(``call_soon_threadsafe``) and waited for: jobs may be registered at any time while packets flow.
``ServedNetwork`` starts such a process from Python and reads its lines.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

from controller.cli_options import add_program, add_result_mode, add_server, add_workers, pick_workers, worker_choice
from controller.errors import InstallError
from controller.options import AGGREGATION_MODES, DEFAULT_AGGREGATION
from controller.programs import stat_counters
from topologies.errors import LabError

REPO = Path(__file__).resolve().parents[2]
COUNTERS = ("grad_aggregated", "grad_completed", "grad_duplicate", "grad_masked", "overflow")


class LoopInstaller:
    """The job service's installer: switch entries and server agents change on the loop thread."""

    def __init__(self, net, server_hosts: list[str], timeout: float = 30.0):
        from server.agent import ServerAgent

        self.net, self.loop, self.timeout = net, net.loop, timeout
        self.servers = {h: ServerAgent(net.transport(h), h) for h in server_hosts}
        self.plans: dict[int, object] = {}

    def install_job(self, plan) -> None:
        self._on_loop(self._install, plan)

    def remove_job(self, plan, skip=()) -> None:
        self._on_loop(self._remove, plan, skip)

    def values_per_packet(self) -> int:
        """K of the network's program (its switches' P4Info)."""
        return int(self.net.installer.values_per_packet())

    def root_multicast(self) -> bool:
        """Whether the network's program can send results from a tree's root (its switches' P4Info)."""
        return bool(self.net.installer.root_multicast())

    def job_ids_on_switches(self) -> set[int]:
        """The job ids the network's switches still hold (their job entries and slot cells)."""
        return set(self.net.installer.job_ids_on_switches())

    def jobs_on_switches(self) -> dict:
        """The jobs the network's switches run, read off their job entries (``Installer.jobs_on_switches``)."""
        return dict(self.net.installer.jobs_on_switches())

    def remove_adopted(self, job) -> None:
        """Take an adopted job's entries off the switches (on the loop thread: ``Installer.remove_adopted``)."""
        self._on_loop(self.net.installer.remove_adopted, job)

    def _install(self, plan) -> None:
        missing = [s.name for s in plan.servers if s.name not in self.servers]
        if missing:
            raise InstallError(
                f"server {missing[0]} of job {plan.job_id} has no server agent here "
                f"(served: {', '.join(sorted(self.servers))})"
            )
        self.net.install_job(plan)
        replanned = plan.job_id in self.plans  # a new version of a running job
        for s in plan.servers:
            if replanned:
                self.servers[s.name].update_job(plan)
            else:
                self.servers[s.name].add_job(plan)
        self.plans[plan.job_id] = plan

    def _remove(self, plan, skip=()) -> None:
        current = self.plans.get(plan.job_id) is plan  # else: an old version, the job runs on
        if current:
            for s in plan.servers:
                self.servers[s.name].remove_job(plan.job_id)
            self.plans.pop(plan.job_id, None)
        self.net.remove_job(plan, skip)

    def _on_loop(self, fn, plan, *args) -> None:
        done: concurrent.futures.Future = concurrent.futures.Future()

        def run():
            try:
                fn(plan, *args)
            except BaseException as exc:  # handed to the caller's thread
                done.set_exception(exc)
            else:
                done.set_result(None)

        self.loop.call_soon_threadsafe(run)
        done.result(self.timeout)


def job_counters(net, plan) -> dict:
    """Per switch, the job's P4 statistics (InaIngress.ina_stats and, on TNA, its siblings): what the data plane itself did."""
    from protocol import constants as C

    index = {
        "grad_aggregated": C.STAT_GRAD_AGGREGATED,
        "grad_completed": C.STAT_GRAD_COMPLETED,
        "grad_duplicate": C.STAT_GRAD_DUPLICATE,
        "grad_masked": C.STAT_GRAD_MASKED,
        "overflow": C.STAT_OVERFLOW,
    }
    base = plan.job_index * C.NUM_STATS
    return {name: {k: job_stat(sw, base + index[k]) for k in COUNTERS} for name, sw in net.switches.items()}


def job_stat(sw, index: int) -> int:
    """Packets of one per-job statistic of a softswitch, whichever ina program it runs (the TNA one
    counts a statistic in four counters: controller/programs.py)."""
    counters = stat_counters(c.name for c in sw.info.counters)
    return sum(sw.counter(counter).read(index)[0] for counter in counters)


class _Stop(Exception):
    pass


def serve(args) -> int:
    from controller.jobservice import JobManager, JobServer
    from controller.planner import PlanOptions
    from controller.replan import FaultMonitor
    from controller.topology_yaml import load_topology
    from topologies.inprocess.fabric import AttachServer, InProcessNetwork
    from worker.loop import RealTimeLoop

    topo = load_topology(args.topology)
    servers, workers = _job_hosts(args, topo)
    loop = RealTimeLoop()
    # other processes' hosts on the wall clock: the Python engine (the sim engine runs a virtual clock)
    net = InProcessNetwork(topo, loop=loop, seed=args.seed, program=args.program, engine="python")
    net.install_routes()
    installer = LoopInstaller(net, servers)
    attach = AttachServer(net, hosts=[h.name for h in topo.hosts if h.name not in servers], bind_ip=args.attach_ip)
    thread = threading.Thread(target=loop.run_forever, name="inprocess-network", daemon=True)
    thread.start()
    manager = JobManager(topo, installer=installer)
    jobs = JobServer(manager, args.listen).start()
    monitor = FaultMonitor(
        net.installer,
        manager.switches_in_use,
        lambda switch, reason: _off_loop(manager.switch_failed, switch, reason),
        loop,
        args.monitor_interval,
        ports=net,
        on_link_failure=lambda a, b: _off_loop(manager.link_failed, a, b),
    )
    loop.call_soon_threadsafe(monitor.start)

    def on_term(signum, frame):
        raise _Stop()

    signal.signal(signal.SIGTERM, on_term)
    try:
        plan = None
        if not args.no_job:
            plan, _ = manager.register(
                workers,
                servers,
                PlanOptions(job_id=args.job_id, aggregation=args.aggregation, result_mode=args.result_mode),
            )
            if args.plan_out:
                Path(args.plan_out).write_text(plan.to_json())
        print(
            json.dumps(
                {
                    "controller": jobs.address,
                    "job_id": plan.job_id if plan else None,
                    "workers": [w.name for w in plan.workers] if plan else workers,
                    "servers": servers,
                    "endpoints": attach.endpoints,
                    "switches": sorted(net.switches),
                }
            ),
            flush=True,
        )
        for line in sys.stdin:
            _fault(net, loop, line)
    except (_Stop, KeyboardInterrupt):
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        loop.call_soon_threadsafe(monitor.stop)
        jobs.stop()
        loop.stop()
        thread.join(10)
        attach.close()
    counters = {job_id: job_counters(net, p) for job_id, p in installer.plans.items()}
    link_bytes = {name: stats["bytes"] for dirs in net.link_bytes().values() for name, stats in dirs.items()}
    print(json.dumps({"switch_counters": counters, "link_bytes": link_bytes}), flush=True)
    return 0


def _job_hosts(args, topo) -> tuple[list[str], list[str]]:
    """The job's servers (``--server``, else the topology's first host with role server) and workers
    (``--workers`` of the hosts with role worker, else of every other host); a LabError or TopologyError
    names what is missing or unknown."""
    servers = [n for v in args.server or () for n in v.split(",") if n] or [h.name for h in topo.role_hosts("server")][
        :1
    ]
    if not servers:
        raise LabError(f"topology {topo.name} has no host with role server: give --server")
    for name in servers:
        topo.host(name)  # TopologyError naming an unknown host
    candidates = [h.name for h in topo.role_hosts("worker")] or [h.name for h in topo.hosts if h.name not in servers]
    return servers, pick_workers(worker_choice(args.workers), candidates, LabError)


def _off_loop(report, *args) -> None:
    """Run a failure report off the loop thread: re-planning installs entries through the loop
    (LoopInstaller) and waits for it. A job that cannot be re-planned was told why (WatchPlan)."""
    from controller.errors import ControllerError

    def run():
        try:
            report(*args)
        except ControllerError as exc:
            print(f"[serve] {exc}", file=sys.stderr, flush=True)

    threading.Thread(target=run, name="replan", daemon=True).start()


def _fault(net, loop, line: str) -> None:
    """A fault asked for on stdin: ``{"kill_switch": NAME}`` or ``{"cut_link": [A, B]}``."""
    try:
        cmd = json.loads(line)
    except json.JSONDecodeError:
        return
    if not isinstance(cmd, dict):
        return
    if "kill_switch" in cmd:
        loop.call_soon_threadsafe(net.kill_switch, str(cmd["kill_switch"]))
    elif "cut_link" in cmd:
        a, b = cmd["cut_link"]
        loop.call_soon_threadsafe(net.cut_link, str(a), str(b))


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("topology", metavar="TOPOLOGY", help="topology YAML (docs/topologies.md)")
    add_workers(p)
    add_server(p, default="the first host with role server")
    p.add_argument("--job-id", type=int, help="id of the job registered at start (default: lowest free)")
    p.add_argument("--no-job", action="store_true", help="register no job at start (RegisterJob later)")
    p.add_argument(
        "--aggregation",
        default=DEFAULT_AGGREGATION,
        choices=AGGREGATION_MODES,
        help=f"aggregate where flows merge, at every switch on the way, or nowhere (default {DEFAULT_AGGREGATION})",
    )
    add_result_mode(p)
    p.add_argument(
        "--listen", default="127.0.0.1:0", metavar="HOST:PORT", help="job service address (port 0: any free port)"
    )
    p.add_argument("--attach-ip", default="127.0.0.1", help="address of the attach endpoints")
    p.add_argument("--plan-out", help="also write the start job's plan JSON here")
    p.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the in-process network's random choices, e.g. which packets a lossy link drops (default 0)",
    )
    p.add_argument(
        "--monitor-interval",
        type=float,
        default=0.1,
        help="seconds between the fault monitor's probes of the switches and links",
    )
    add_program(p)


class ServedNetwork:
    """Context manager: ``python -m topologies.inprocess serve`` in a child process.

    After ``__enter__``: ``controller``, ``job_id``, ``workers`` (rank order), ``servers``,
    ``endpoints`` (host -> (ip, port)), ``switches``; after ``__exit__``: ``switch_counters`` (the
    start job's, per switch) and ``all_counters`` (per job id). The child exits when this process
    closes its stdin, so it never outlives its parent."""

    def __init__(self, topology: str | Path, *args: str, startup_timeout: float = 120.0):
        self.argv = [sys.executable, "-m", "topologies.inprocess", "serve", str(topology), *map(str, args)]
        self.startup_timeout = startup_timeout
        self.proc: subprocess.Popen | None = None
        self.switch_counters: dict = {}
        self.all_counters: dict = {}
        self.link_bytes: dict[str, int] = {}  # "a->b" -> bytes the link direction carried (after stop)

    def __enter__(self) -> ServedNetwork:
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd=str(REPO),
        )
        line = _readline(self.proc, self.startup_timeout)
        if not line:
            err = self.stop()
            last = err.strip().splitlines()[-1] if err.strip() else "no output"
            raise LabError(f"the in-process network did not start: {last}")
        info = json.loads(line)
        self.controller, self.job_id = info["controller"], info["job_id"]
        self.workers, self.servers, self.switches = info["workers"], info["servers"], info["switches"]
        self.endpoints = {h: tuple(ep) for h, ep in info["endpoints"].items()}
        return self

    def rank_endpoint(self, rank: int) -> tuple[str, int]:
        return self.endpoints[self.workers[rank]]

    def kill_switch(self, switch: str) -> None:
        """The switch stops forwarding and answering P4Runtime (the controller's monitor notices)."""
        self._ask({"kill_switch": switch})

    def cut_link(self, a: str, b: str) -> None:
        """The link between switches ``a`` and ``b`` loses every frame (the monitor notices)."""
        self._ask({"cut_link": [a, b]})

    def _ask(self, cmd: dict) -> None:
        if self.proc is None or self.proc.stdin is None:
            raise LabError("the in-process network is not running")
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> str:
        """Close the child's stdin, wait for it, keep its counters; returns its stderr."""
        err = ""
        if self.proc is not None:
            try:
                out, err = self.proc.communicate(timeout=15)  # closes stdin first
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, err = self.proc.communicate()
            for line in out.splitlines():
                if line.startswith('{"switch_counters"'):
                    self.all_counters = {int(j): c for j, c in json.loads(line)["switch_counters"].items()}
                    self.switch_counters = self.all_counters.get(self.job_id, {})
                    self.link_bytes = json.loads(line).get("link_bytes", {})
            self.proc = None
        return err or ""


def _readline(proc: subprocess.Popen, timeout: float) -> str:
    import selectors

    assert proc.stdout is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        return ""
    return str(proc.stdout.readline())
