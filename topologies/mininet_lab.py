"""The mininet lab: a topology file as a live network of P4 switches running one aggregation job.

    python -m topologies.mininet_lab topologies/leaf_spine.yaml                 # mininet CLI + extras
    python -m topologies.mininet_lab topologies/star.yaml --rounds 3 --batch    # run, check, exit
    python -m topologies.mininet_lab topologies/star.yaml --train --epochs 20 --backend ina   # train, exit
    python -m topologies.mininet_lab topologies/star.yaml --train --example recsys --epochs 1  # sharded tables
    python -m topologies.mininet_lab --clean                                    # remove dead runs' leftovers

A run's files (switch logs, plans, agents' results, training logs) live in its work directory,
removed at teardown unless the run failed (then the error says where they are) or ``--keep-logs DIR``
asks for a copy.

Extra CLI commands: ``allreduce [ROUNDS] [VALUES]`` (run and check sums), ``baseline [ROUNDS] [VALUES]``
(the same through the parameter-server baseline), ``gloo [ROUNDS] [VALUES]`` (the same inputs through
torch.distributed's gloo between the worker hosts), ``counters`` (bytes per link, switch packet
and drop counts, the server agent's counters), ``plan`` (which switches aggregate, fan-ins, paths), ``train [EPOCHS] [--backend ina|gloo]
[--seed S] [--example digits|recsys]`` (examples/train_digits.py or train_recsys.py, one process per worker
host), ``kill SWITCH`` (kill a switch's process). Needs root and Debian's mininet.

Faults: the controller's fault monitor probes the switches over P4Runtime and reads the switch ports'
state every ``monitor_interval`` seconds; a switch that stops answering (``kill SWITCH``) or a link whose
ports go down (mininet's ``link A B down``) re-plans the lab's jobs around it, and the new plan version
goes to the server agent, then to the workers, which move their chunks in flight (docs/agents.md).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.options import DEFAULT_RESULT_MODE, RESULT_MODES
from protocol.layouts import link_mtu
from topologies.errors import USER_ERRORS, LabError, LabJobError, TrainError
from topologies.lab_network import LabNetwork, LabSpec, intf_name
from topologies.lab_state import clean_stale
from topologies.lab_training import BACKENDS, EXAMPLES, RankHost, TrainResult, rank_env, run_ranks
from worker.plan_updates import publish_failure, publish_plan

# worker agents' counters of timer events (worker/stream.py): timer firings that resent, window halvings,
# halvings taken back as spurious, chunks whose result answered the first send after a resend
TIMER_COUNTERS = ("timeouts", "window_halvings", "window_halvings_undone", "spurious_resends")


@dataclass
class RoundResult:
    round: int
    mode: str
    values: int
    elapsed: float  # slowest worker, seconds
    per_rank: dict[int, float] = field(default_factory=dict)
    verified: bool = False
    retransmissions: int = 0  # chunks resent by all workers in this round
    send_buffer_full: int = 0  # sends refused by a full socket buffer (workers + server): lost
    rtt_ms: dict[int, float] = field(default_factory=dict)  # agents' smoothed RTT by rank (ina, ps)
    windows: dict[int, list[int]] = field(default_factory=dict)  # chunks in flight allowed per tree, by rank
    lowest_rtt_ms: dict[int, float] = field(default_factory=dict)  # agents' lowest RTT measured, by rank
    rto_ms: dict[int, float] = field(default_factory=dict)  # agents' base retransmission timeout by rank, at the end
    # the workers' timer events in this round, summed over ranks: TIMER_COUNTERS
    timer: dict[str, int] = field(default_factory=dict)
    # CPU seconds each rank's process spent in the collective itself (all its threads), by rank: not the
    # harness's making of inputs and checking of sums
    cpu_s: dict[int, float] = field(default_factory=dict)

    def losses_text(self) -> str:
        text = f"{self.retransmissions} retransmissions"
        if self.send_buffer_full:
            text += f", {self.send_buffer_full} packets lost to full host socket buffers"
        return text


def pick_hosts(topo, workers=None, server=None) -> tuple[list[str], str]:
    """Workers and server by name, or by the topology's role hints (``workers`` may be a count)."""
    hinted_servers = [h.name for h in topo.hosts if h.role == "server"]
    server = server or (hinted_servers[0] if hinted_servers else topo.hosts[-1].name)
    if isinstance(workers, int) or workers is None:
        pool = [h.name for h in topo.hosts if h.role == "worker"] or [
            h.name for h in topo.hosts if h.name != server and h.role != "server"
        ]
        count = len(pool) if workers is None else workers
        if count > len(pool):
            raise LabError(f"asked for {count} workers, the topology has {len(pool)} worker hosts")
        workers = pool[:count]
    for name in list(workers) + [server]:
        topo.host(name)  # raises TopologyError naming an unknown host
    return list(workers), server


class AgentProcess:
    """One lab_agent process in a host, driven by JSON lines."""

    def __init__(self, proc, name: str):
        self.proc, self.name = proc, name
        self.lock = threading.Lock()  # the launcher and the fault monitor's thread both write commands
        self.exited: str | None = None  # exit_reason, once the process has ended

    def send(self, obj: dict) -> None:
        with self.lock:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()

    def read(self, timeout: float) -> dict:
        import select

        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise LabJobError(f"{self.name}: no answer within {timeout:.0f} s")
            ready, _, _ = select.select([self.proc.stdout], [], [], left)
            if not ready:
                continue
            line = self.proc.stdout.readline()
            if not line:
                raise LabJobError(f"{self.name}: agent exited ({self.exit_reason()})")
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                continue  # stray output (a library warning): not a reply

    def exit_reason(self) -> str:
        """Why the agent's process ended, for a one-line error: its exit code and last line of stderr
        (what it said as it stopped), or that it is still running with its input closed. Kept: stderr
        can be read once."""
        if self.exited is None:
            try:
                code = self.proc.wait(1)
            except subprocess.TimeoutExpired:
                return "still running, but its command pipe is closed"
            err = self.proc.stderr.read().decode(errors="replace").strip().splitlines()
            self.exited = f"exit code {code}: {err[-1] if err else 'no message'}"
        return self.exited

    def stop(self) -> None:
        try:
            self.send({"cmd": "quit"})
            self.proc.stdin.close()
            self.proc.wait(5)
        except Exception:
            self.proc.kill()
            self.proc.wait(5)


class MininetLab:
    """Network + controller + one job + agents. ``start``, then ``allreduce``/``counters``, ``stop``."""

    def __init__(
        self,
        topology_path: str,
        workers=None,
        server: str | None = None,
        target: str = "softswitch",
        program: str | None = None,
        values: int = 2048,
        log=print,
        plan_options=None,  # controller's PlanOptions; None: its defaults
        p4info: str | None = None,
        device_config: str | None = None,
        keep_logs: str | None = None,
        tls: bool = False,
        monitor_interval: float = 0.5,
    ):
        from controller.topology_yaml import load_topology

        self.topo = load_topology(topology_path)
        self.workers, self.server = pick_hosts(self.topo, workers, server)
        self.spec = LabSpec.from_topology(self.topo)
        self.values = values
        self.log = log
        self.network = LabNetwork(self.spec, target=target, program=program, log=log, tls=tls)
        self.plan_options = plan_options
        self.p4info, self.device_config = p4info, device_config
        self.plan = None
        self.ps_plan = None  # the parameter-server baseline: same hosts, no aggregating switch
        self.installer = None
        self.jobs = None  # controller JobManager: the lab's job and training jobs share its resources
        self.next_job_id = 0
        self.train_runs = 0
        self.keep_logs = Path(keep_logs) if keep_logs else None  # copy the work directory there at teardown
        self.failed = False  # a job or training run failed: keep the logs at teardown
        self.logs_kept: Path | None = None
        self.agents: dict[str, AgentProcess] = {}
        self.server_agent: AgentProcess | None = None
        self.gloo_ranks: dict[str, AgentProcess] = {}  # started by the first round in mode "gloo"
        self.rounds_done = 0
        self.last_errors: dict[str, str] = {}  # worker host -> its error in the last round (allreduce)
        self.last_stats: dict[str, dict] = {}  # worker host -> its agent's counters after the last round
        self.seed = 7
        self._last_stats: dict[tuple, int] = {}
        self.monitor_interval = monitor_interval  # seconds between the fault monitor's probes (0: no monitor)
        self.monitor = None  # controller.replan.FaultMonitor, on a loop thread of its own
        self._monitor_loop = None
        self._monitor_thread: threading.Thread | None = None
        self._server_lock = threading.RLock()  # one command/answer exchange with the server agent at a time

    @property
    def workdir(self) -> Path:
        """The run's work directory (the network's: made at start, removed at teardown)."""
        if self.network.workdir is None:
            raise LabError("the lab has not started")
        return self.network.workdir

    # -- bring-up --------------------------------------------------------------------------------
    def start(self) -> MininetLab:
        self._compile_for_bmv2()
        t0 = time.monotonic()
        self.log(
            f"[lab] starting {len(self.spec.switches)} {self.network.target.name} switches, "
            f"{len(self.spec.hosts)} hosts, {len(self.spec.links)} links ({self.topo.name})"
        )
        self.network.start()
        self.log(f"[lab] network up in {time.monotonic() - t0:.1f} s")
        try:
            t1 = time.monotonic()
            self._install()
            (self.workdir / "plan.json").write_text(self.plan.to_json(indent=1))
            self.log(f"[lab] controller installed routes and job {self.plan.job_id} in {time.monotonic() - t1:.1f} s")
            self._start_agents()
            self._start_monitor()
        except BaseException as exc:
            self.stop(failed=not isinstance(exc, KeyboardInterrupt))
            raise
        return self

    def _compile_for_bmv2(self) -> None:
        """BMv2 started with no program and no pipeline given gets the default program (the largest K the
        links carry), compiled by p4c-bm2-ss (topologies/bmv2_build.py), pushed like --device-config."""
        if self.network.target.name != "bmv2" or self.network.program is not None or self.device_config:
            return
        from controller.programs import default_program
        from topologies.bmv2_build import compiled

        name = default_program(self.topo.smallest_mtu(), "bmv2")
        self.log(f"[lab] BMv2 runs {name}: compiling it with p4c-bm2-ss (once; kept in build/bmv2/)")
        json_path, p4info_path = compiled(name)
        self.device_config, self.p4info = str(json_path), str(p4info_path)

    def _install(self) -> None:
        """Routes, then the job (planned and installed by the controller's job manager) over
        P4Runtime. A switch started with a program reports its own P4Info; one started with --no-p4
        (BMv2) first gets the pipeline from --p4info/--device-config."""
        from controller.installer import Installer
        from controller.jobservice import JobManager
        from worker.baselines import parameter_server_options

        self.installer = Installer(
            self.topo,
            self.p4info,
            self.device_config,
            addresses=self.network.grpc_addresses(),
            tls=self.network.client_tls(),
        )
        if self.p4info and self.device_config:
            self.installer.push_pipeline()
        self.installer.install_topology()
        self.jobs = JobManager(self.topo, installer=self.installer)
        self.plan, _ = self.jobs.register(self.workers, [self.server], self._options())
        needed = link_mtu(self.plan.value_count)
        if needed > self.network.mtu:
            raise LabError(
                f"the switches run K = {self.plan.value_count} (their P4Info), whose packets need an MTU of "
                f"{needed}, but the links were set to {self.network.mtu} from the program's source: start the "
                "lab with --program naming the P4 source (e.g. v1model-k1024)"
            )
        self.ps_plan, _ = self.jobs.register(self.workers, [self.server], parameter_server_options(self._options()))
        self.next_job_id = max(self.plan.job_id, self.ps_plan.job_id) + 1

    def _options(self, **changes):
        from controller.planner import PlanOptions

        return dataclasses.replace(self.plan_options or PlanOptions(), **changes)

    def _start_agents(self) -> None:
        py = sys.executable
        plan_file = str(self.workdir / "plan.json")
        ps_file = self.workdir / "ps-plan.json"
        ps_file.write_text(self.ps_plan.to_json(indent=1))
        both = ["--plan", plan_file, "--ps-plan", str(ps_file)]
        proc = self.network.popen(
            self.server,
            [py, "-m", "topologies.lab_agent", "server", *both, "--server", self.server],
            f"server agent {self.server}",
            stdin=-1,
            stdout=-1,
            stderr=-1,
        )
        self.server_agent = AgentProcess(proc, f"server {self.server}")
        for w in self.plan.workers:
            proc = self.network.popen(
                w.name,
                [py, "-m", "topologies.lab_agent", "worker", *both, "--rank", str(w.rank)],
                f"worker agent {w.name}",
                stdin=-1,
                stdout=-1,
                stderr=-1,
            )
            self.agents[w.name] = AgentProcess(proc, f"worker {w.name} (rank {w.rank})")
        for agent in [self.server_agent, *self.agents.values()]:
            msg = agent.read(60)
            if not msg.get("ready"):
                raise LabJobError(f"{agent.name}: {msg.get('error', 'did not start')}")
        self.log(f"[lab] agents ready: server on {self.server}, workers on {', '.join(self.agents)}")

    # -- faults and re-planning ------------------------------------------------------------------
    def _start_monitor(self) -> None:
        """Follow the lab's jobs (new plan versions go to the server agent, then to the workers) and
        start the controller's fault monitor: it probes the switches over P4Runtime and reads the
        switch ports' state from the kernel, and re-plans the jobs around what died."""
        from controller.replan import FaultMonitor
        from worker.loop import RealTimeLoop

        for plan in (self.plan, self.ps_plan):
            self.jobs.watch(
                plan.job_id, lambda new, reason, job_id=plan.job_id: self._plan_changed(job_id, new, reason)
            )
        if self.monitor_interval <= 0:
            return
        self._monitor_loop = RealTimeLoop()
        self.monitor = FaultMonitor(
            self.installer,
            self.jobs.switches_in_use,
            self._switch_failed,
            self._monitor_loop,
            self.monitor_interval,
            ports=self.network,
            on_link_failure=self._link_failed,
        )
        self._monitor_loop.call_soon_threadsafe(self.monitor.start)
        self._monitor_thread = threading.Thread(
            target=self._monitor_loop.run_forever, name="fault-monitor", daemon=True
        )
        self._monitor_thread.start()

    def _stop_monitor(self) -> None:
        if self._monitor_loop is None:
            return
        self._monitor_loop.call_soon_threadsafe(self.monitor.stop)
        self._monitor_loop.stop()
        if self._monitor_thread is not None:
            self._monitor_thread.join(30)
        self._monitor_loop.close()
        self._monitor_loop = self._monitor_thread = None

    def _switch_failed(self, switch: str, reason: str) -> None:
        self.log(f"[lab] switch {switch} stopped answering P4Runtime ({reason}): re-planning its jobs")
        self._replan(self.jobs.switch_failed, switch, reason)

    def _link_failed(self, a: str, b: str) -> None:
        self.log(f"[lab] link {a}-{b} is down (its ports): re-planning the jobs that cross it")
        self._replan(self.jobs.link_failed, a, b)

    def _replan(self, report, *args) -> None:
        """Run a failure report on the monitor's thread, then route host-to-host traffic around what died
        (training ranks talk TCP through the switches); what goes wrong is logged, the monitor goes on
        (a job that cannot be re-planned was told why: its ranks fail with the reason). Both under the job
        manager's lock: a job installed or removed meanwhile sees the installer's routes before or after."""
        with self.jobs.lock:
            for step in (lambda: report(*args), lambda: self.installer.route_around(*self._dead())):
                try:
                    step()
                except Exception as exc:
                    self.failed = True
                    self.log(f"[lab] {exc}")

    def _dead(self) -> tuple[set[str], set[tuple[str, str]]]:
        """The switches and links the controller knows are dead."""
        return set(self.jobs.dead_switches), set(self.jobs.dead_links)

    def _plan_changed(self, job_id: int, plan, reason: str) -> None:
        """A job manager watcher: a new plan version goes to the server agent (which must know the new
        trees before chunks arrive on them), then to every worker; ``plan`` None fails the job's rounds
        with ``reason``, and so does an agent that does not take the version (a server agent that does
        not answer, an agent whose pipe broke: it died). Raises nothing: the job manager calls it while
        re-planning, and the other jobs must be re-planned too."""
        if plan is None:
            self.log(f"[lab] job {job_id} cannot go on: {reason}")
            self._tell_workers({"cmd": "plan_failed", "job": job_id, "reason": reason})
            return
        try:
            path = self._server_takes(job_id, plan)
        except (LabJobError, OSError) as exc:  # the old trees' entries are gone: the job cannot go on
            self.failed = True
            self._plan_changed(job_id, None, f"the server agent did not take plan version {plan.version}: {exc}")
            return
        refused = self._tell_workers({"cmd": "plan", "plan": str(path)})
        if refused:
            name, exc = refused[0]
            self._plan_changed(job_id, None, f"the worker agent {name} did not take plan version {plan.version}: {exc}")
            return
        if job_id == self.plan.job_id:
            self.plan = plan
        elif job_id == self.ps_plan.job_id:
            self.ps_plan = plan
        self._log_version("job", job_id, plan)

    def _tell_workers(self, cmd: dict) -> list[tuple[str, OSError]]:
        """Send ``cmd`` to every worker agent, even past one whose pipe broke; return the agents that
        could not take it, with why."""
        refused = []
        for name, agent in self.agents.items():
            try:
                agent.send(cmd)
            except OSError as exc:  # the agent's process died: BrokenPipeError
                self.failed = True
                refused.append((name, exc))
        return refused

    def _log_version(self, what: str, job_id: int, plan) -> None:
        """The line saying a job runs on a new plan version, and where it aggregates (tests that kill an
        aggregating switch wait for it)."""
        aggregating = sorted({c.switch for c in plan.switches if c.aggregates})
        where = ", ".join(aggregating) or "none"
        self.log(f"[lab] {what} {job_id} runs on plan version {plan.version} (aggregating: {where})")

    def _server_takes(self, job_id: int, plan) -> Path:
        """Give the server agent a job's new plan version (before any worker sends on its trees); return
        the version's file."""
        path = self.workdir / f"plan-job{job_id}-v{plan.version}.json"
        path.write_text(plan.to_json(indent=1))
        self._server_call({"cmd": "update_job", "plan": str(path)})
        return path

    def _training_plan_changed(self, plan_path: Path, job_id: int, plan, reason: str) -> None:
        """A job manager watcher of a training job: the ranks follow the plan file they were started with
        (worker.plan_updates.PlanFileWatch), so a new version goes to the server agent, then replaces that
        file; ``plan`` None makes the ranks' collectives fail with ``reason``, and so does a server agent that
        does not take the version (as ``_plan_changed``, raises nothing)."""
        if plan is None:
            self.log(f"[lab] training job {job_id} cannot go on: {reason}")
            publish_failure(plan_path, reason)
            return
        try:
            self._server_takes(job_id, plan)
        except (LabJobError, OSError) as exc:  # the old trees' entries are gone: the job cannot go on
            self.failed = True
            self._training_plan_changed(
                plan_path, job_id, None, f"the server agent did not take plan version {plan.version}: {exc}"
            )
            return
        publish_plan(plan_path, plan)
        self._log_version("training job", job_id, plan)

    def kill_switch(self, switch: str) -> None:
        """Kill a switch's process (SIGKILL, as a crash): it stops forwarding and answering P4Runtime."""
        import os

        node = self.network.net.nameToNode.get(switch) if self.network.net is not None else None
        if node is None or getattr(node, "proc", None) is None:
            raise LabError(f"no running switch {switch!r} in this lab")
        try:
            os.killpg(node.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        node.proc.wait(10)
        self.log(f"[lab] killed switch {switch}")

    def link_down(self, a: str, b: str) -> None:
        """Take the link between ``a`` and ``b`` down (mininet's ``link a b down``: both ports down)."""
        self.network.set_link(a, b, up=False)
        self.log(f"[lab] link {a}-{b} down")

    # -- jobs ------------------------------------------------------------------------------------
    def allreduce(
        self,
        rounds: int = 1,
        values: int | None = None,
        mode: str = "ina",
        timeout: float = 120.0,
        rto: float | None = None,
        spurious: bool | None = None,
    ) -> list[RoundResult]:
        """Run ``rounds`` allreduces on every worker at once and check each result exactly. ``rto``: the
        worker agents' base retransmission timeout (seconds) from these rounds on (None: as it is);
        ``spurious``: their detection of spurious timeouts on or off from these rounds on (None: as it is)."""
        values = values or self.values
        settings = {k: v for k, v in (("rto", rto), ("spurious", spurious)) if v is not None}
        try:
            return self._allreduce(rounds, values, mode, timeout, settings)
        except LabJobError:
            self.failed = True
            raise

    def _allreduce(
        self, rounds: int, values: int, mode: str, timeout: float, settings: dict | None = None
    ) -> list[RoundResult]:
        if mode == "gloo":
            return [self._gloo_round(values, timeout) for _ in range(rounds)]
        out = []
        for _ in range(rounds):
            r = self.rounds_done
            self.rounds_done += 1
            for agent in self.agents.values():
                cmd = {"cmd": "allreduce", "round": r, "values": values, "seed": self.seed, "mode": mode}
                agent.send({**cmd, **(settings or {})})
            replies, errors = {}, {}
            for name, agent in self.agents.items():  # every rank's answer, so none is left unread
                msg = agent.read(timeout)
                if "error" in msg:
                    errors[name] = f"{agent.name}: {msg['error']}"
                replies[name] = msg
            self.last_errors = errors
            if errors:
                first = next(iter(errors.values()))
                more = f" (and {len(errors) - 1} more ranks failed)" if len(errors) > 1 else ""
                raise LabJobError(f"round {r}: {first}{more}")
            res = RoundResult(
                r,
                mode,
                values,
                max(m["elapsed"] for m in replies.values()),
                {self.plan.worker(n).rank: m["elapsed"] for n, m in replies.items()},
            )
            self._verify(r, values, replies)
            res.verified = True
            self.last_stats = {n: m.get("stats", {}) for n, m in replies.items()}
            stats = {(n, mode): m.get("stats", {}) for n, m in replies.items()}
            stats[(self.server, "server")] = self.server_stats()
            res.retransmissions = self._stats_delta(stats, "retransmissions")
            res.send_buffer_full = self._stats_delta(stats, "send_buffer_full")
            res.timer = {key: self._stats_delta(stats, key) for key in TIMER_COUNTERS}
            for n, m in replies.items():
                res.rtt_ms[self.plan.worker(n).rank] = float(m.get("rtt_ms", 0.0))
                res.windows[self.plan.worker(n).rank] = list(m.get("windows", []))
                res.lowest_rtt_ms[self.plan.worker(n).rank] = float(m.get("lowest_rtt_ms", 0.0))
                res.rto_ms[self.plan.worker(n).rank] = float(m.get("rto_ms", 0.0))
                res.cpu_s[self.plan.worker(n).rank] = float(m.get("cpu_s", 0.0))
            out.append(res)
            self.log(
                f"[lab] round {r} ({mode}, {values} values x {len(self.agents)} workers): "
                f"{res.elapsed * 1000:.0f} ms, sums verified, {res.losses_text()}"
            )
        return out

    def _gloo_round(self, values: int, timeout: float) -> RoundResult:
        """One torch.distributed gloo all_reduce of the same inputs on the worker hosts (a process per
        host, over TCP through the switches' IPv4 routes); each rank checks the sum itself."""
        self.start_gloo()
        r = self.rounds_done
        self.rounds_done += 1
        for rank in self.gloo_ranks.values():
            rank.send({"cmd": "allreduce", "round": r, "values": values, "seed": self.seed})
        elapsed, cpu = {}, {}
        for name, rank in self.gloo_ranks.items():
            msg = rank.read(timeout)
            if "error" in msg:
                raise LabJobError(f"round {r}: {rank.name}: {msg['error']}")
            elapsed[self.plan.worker(name).rank] = msg["elapsed"]
            cpu[self.plan.worker(name).rank] = float(msg.get("cpu_s", 0.0))
        res = RoundResult(r, "gloo", values, max(elapsed.values()), elapsed, verified=True, cpu_s=cpu)
        self.log(
            f"[lab] round {r} (gloo, {values} values x {len(elapsed)} workers): {res.elapsed * 1000:.0f} ms, sums verified"
        )
        return res

    def start_gloo(self) -> None:
        """Start a gloo rank on every worker host (once; the first round in mode "gloo" does it too),
        so a timed round does not include the rendezvous and gloo's connections."""
        if self.gloo_ranks:
            return
        self.train_runs += 1
        port = 29500 + self.train_runs  # the training runs' port range: no TIME_WAIT of an earlier store
        first = self.plan.workers[0]
        for w in self.plan.workers:
            intf = intf_name(w.name, self.spec.host(w.name).port)
            argv = [sys.executable, "-m", "topologies.lab_gloo", "--rank", str(w.rank), "--world-size"]
            argv += [str(len(self.plan.workers)), "--master-addr", first.ip, "--master-port", str(port)]
            proc = self.network.popen(
                w.name,
                argv,
                f"gloo rank {w.rank} on {w.name}",
                stdin=-1,
                stdout=-1,
                stderr=-1,
                env=rank_env(RankHost(w.name, w.ip, intf), None),
            )
            self.gloo_ranks[w.name] = AgentProcess(proc, f"gloo {w.name} (rank {w.rank})")
        for rank in self.gloo_ranks.values():
            msg = rank.read(120)
            if not msg.get("ready"):
                raise LabJobError(f"{rank.name}: {msg.get('error', 'did not start')}")

    def _stats_delta(self, stats: dict[tuple[str, str], dict], key: str) -> int:
        """Growth of a cumulative agent counter since the last round, summed over agents (a transport's
        counter is shared by a host's agents: counted once per host)."""
        total, seen = 0, set()
        for (host, mode), row in stats.items():
            ident = host if key == "send_buffer_full" else (host, mode)
            if ident in seen:
                continue
            seen.add(ident)
            now = int(row.get(key, 0))
            total += now - self._last_stats.get((ident, key), 0)
            self._last_stats[(ident, key)] = now
        return total

    def _verify(self, r: int, values: int, replies: dict[str, dict]) -> None:
        """Every worker's result against numpy's sum of the ranks' inputs, made again from the seed
        (lab_agent.worker_input), by digest."""
        from topologies.lab_agent import expected_sum, result_digest

        expected = result_digest(expected_sum(self.seed, r, [w.rank for w in self.plan.workers], values))
        for n, m in replies.items():
            if m.get("values") != values or m.get("digest") != expected:
                raise LabJobError(
                    f"round {r}: {n} got a wrong sum ({m.get('values')} values, its digest differs from numpy's sum)"
                )

    # -- training ------------------------------------------------------------------------------------
    def train(
        self,
        epochs: int = 20,
        backend: str = "ina",
        seed: int = 0,
        timeout: float | None = None,
        example: str = "digits",
        example_args: Sequence[str] = (),
    ) -> TrainResult:
        """A training example (``digits``: examples/train_digits.py, ``recsys``: examples/train_recsys.py,
        sharded embedding tables) with one ``--rank R`` process per worker host (ranks in the job's
        order, rendezvous on rank 0's IP). With ina the run is a job of its own: a job id never used
        before in this lab (the switches then take its chunks afresh, whatever the lab's agents
        sent), served by the lab's server agent, removed from switches and server afterwards."""
        if example not in EXAMPLES:  # refused before anything starts (the run did not fail)
            raise TrainError(f"unknown example {example!r} (choose {' or '.join(EXAMPLES)})")
        try:
            return self._train(epochs, backend, seed, timeout, example, example_args)
        except USER_ERRORS:
            self.failed = True
            raise

    def _train(
        self, epochs: int, backend: str, seed: int, timeout: float | None, example: str, example_args: Sequence[str]
    ) -> TrainResult:
        self.train_runs += 1
        port = 29500 + self.train_runs  # no TIME_WAIT from an earlier run's store
        hosts = [RankHost(w.name, w.ip, intf_name(w.name, self.spec.host(w.name).port)) for w in self.plan.workers]
        self.log(
            f"[lab] training {example} {backend}: {len(hosts)} ranks on {', '.join(h.name for h in hosts)}, "
            f"{epochs} epochs, seed {seed}, rendezvous {hosts[0].ip}:{port}"
        )
        common = dict(port=port, timeout=timeout, log=self.log, example=example, example_args=example_args)
        if backend != "ina":
            result = run_ranks(self.network, hosts, backend, epochs, seed, self.workdir, **common)
            self.log("[lab] " + result.summary_line())
            return result
        with self.training_job() as (plan, plan_path):
            before, held = self.switch_counters(plan), self.server_stats().get("held_batches", 0)
            result = run_ranks(
                self.network, hosts, backend, epochs, seed, self.workdir, plan_path=str(plan_path), **common
            )
            after, held = self.switch_counters(plan), self.server_stats().get("held_batches", 0) - held
            result.job_id = plan.job_id
            result.switch_counters = {
                s: {k: v - before[s].get(k, 0) for k, v in row.items() if v - before[s].get(k, 0)}
                for s, row in after.items()
            }
        self.log("[lab] " + result.summary_line())
        self.log(f"[lab] the server agent left its port unread {held} times to gather a batch (receive coalescing)")
        for name, row in sorted(result.switch_counters.items()):
            if row.get("grad_completed"):
                self.log(
                    f"[lab] switch {name} (P4 counters, job {plan.job_id}): {row.get('grad_aggregated', 0)} "
                    f"gradient packets aggregated, {row['grad_completed']} chunks completed in the data plane"
                )
        return result

    @contextlib.contextmanager
    def training_job(self) -> Iterator[tuple[Any, Path]]:
        """A job of its own for processes that join the network through the torch backend (training,
        bench/allreduce_latency.py): a job id never used before in this lab, its plan file written for
        INA_PLAN, served by the lab's server agent; yields (plan, plan file) and removes the job from
        server and switches afterwards."""
        early: list[tuple[Any, str]] | None = []  # told before the server agent has the job (then None)

        def follow(new, reason: str) -> None:
            if early is not None:
                early.append((new, reason))
            else:
                self._training_plan_changed(plan_path, plan.job_id, new, reason)

        with self.jobs.lock:  # a re-plan tells its watchers under this lock: none between register and watch
            plan = self._training_job()
            self.jobs.watch(plan.job_id, follow)
        plan_path = self.workdir / f"train-job{plan.job_id}.json"
        try:
            publish_plan(plan_path, plan)
            self._server_call({"cmd": "add_job", "plan": str(plan_path)})
            with self.jobs.lock:  # the fault monitor re-planned meanwhile: the server and ranks take the last word
                told, early = early, None
                if told:
                    self._training_plan_changed(plan_path, plan.job_id, *told[-1])
            yield plan, plan_path
        finally:
            self.jobs.unwatch(plan.job_id, follow)
            self._release_training_job(plan)

    def _training_job(self):
        plan, _ = self.jobs.register(
            [w.name for w in self.plan.workers], [self.server], self._options(job_id=self.next_job_id)
        )
        self.next_job_id += 1
        return plan

    def _release_training_job(self, plan) -> None:
        """Remove the job from server and switches. Runs in ``finally``: a failure here is noted, not
        raised over the training's own error (teardown removes everything anyway)."""
        for what, step in (
            ("server agent", lambda: self._server_call({"cmd": "remove_job", "job": plan.job_id})),
            ("switches", lambda: self.jobs.release(plan.job_id)),
        ):
            try:
                step()
            except Exception as exc:
                self.log(f"[lab] note: could not remove training job {plan.job_id} from the {what}: {exc}")

    def server_stats(self) -> dict[str, int]:
        """The server agent's counters (all jobs, cumulative)."""
        return self._server_call({"cmd": "stats"}, "stats")["stats"]

    def _server_call(self, cmd: dict, answer: str = "job") -> dict:
        """Send the server agent a command and return its answer; a dead agent (its pipe broke) or its
        error reply raises LabJobError naming the server host, its address and why."""
        with self._server_lock:
            try:
                self.server_agent.send(cmd)
            except OSError as exc:  # BrokenPipeError: the agent's process is gone
                ip = self.spec.host(self.server).ip
                raise LabJobError(
                    f"{self.server_agent.name} at {ip}: its agent is not running "
                    f"({self.server_agent.exit_reason()}), so it cannot take {cmd['cmd']} ({exc.strerror or exc}); "
                    "its last line says why it stopped: start the lab again"
                ) from exc
            while True:
                msg = self.server_agent.read(30)
                if "error" in msg:
                    raise LabJobError(f"{self.server_agent.name}: {msg['error']}")
                if answer in msg:
                    return msg

    # -- inspection ----------------------------------------------------------------------------------
    def link_bytes(self) -> dict[int, int]:
        return self.network.link_bytes()

    def switch_counters(self, plan=None) -> dict[str, dict[str, int]]:
        """Non-zero per-job packet counts (Installer.read_stats, either program) of ``plan`` (default: the lab's job)
        and drop reasons (drop_stats, all jobs) of every switch, read over P4Runtime (switches the
        controller found dead are left out)."""
        from protocol import constants as C

        out = {}
        base = (plan or self.plan).job_index * C.NUM_STATS
        for s in self.topo.switches:
            if self.jobs is not None and s.name in self.jobs.dead_switches:
                continue
            stats = self.installer.read_stats(s.name, [base + i for i in C.STAT_NAMES])
            drops = self.installer.read_counter(s.name, "InaIngress.drop_stats", list(C.DROP_REASON_NAMES))
            row = {C.STAT_NAMES[i - base].removeprefix("STAT_").lower(): v[0] for i, v in stats.items() if v[0]}
            row.update(
                {
                    "drop " + C.DROP_REASON_NAMES[i].removeprefix("DROP_").lower(): v[0]
                    for i, v in drops.items()
                    if v[0] and i
                }
            )
            out[s.name] = row
        return out

    def counters_text(self) -> str:
        from topologies.report import traffic_table

        lines = [traffic_table(self.topo, {"total": self.link_bytes()}), "switch counters (packets):"]
        for name, row in self.switch_counters().items():
            lines.append(f"  {name}: " + (", ".join(f"{k} {v}" for k, v in row.items()) or "-"))
        stats = self.server_stats()
        lines.append(
            f"server agent {self.server} (all jobs): "
            + (", ".join(f"{k} {v}" for k, v in sorted(stats.items())) or "-")
        )
        return "\n".join(lines)

    def plan_text(self) -> str:
        from topologies.report import plan_text

        return plan_text(self.plan)

    # -- teardown --------------------------------------------------------------------------------
    def stop(self, failed: bool = False) -> list[str]:
        """Stop everything the run started and remove its work directory, except: after a failure
        (``failed``, or a job or training run that failed) the directory stays where it is, and with
        ``keep_logs`` it is moved there. ``logs_kept`` then says where the logs are."""
        workdir = self.network.workdir
        keep_here = (failed or self.failed) and not self.keep_logs
        self._stop_monitor()
        for agent in [*self.gloo_ranks.values(), *self.agents.values(), self.server_agent]:
            if agent is not None:
                agent.stop()
        self.gloo_ranks.clear()
        self.agents.clear()
        self.server_agent = None
        self.jobs = None
        if self.installer is not None:
            try:
                self.installer.close()
            except Exception:
                pass
            self.installer = None
        left = self.network.stop(keep_logs=keep_here or self.keep_logs is not None)
        if workdir is not None and workdir.is_dir():
            if self.keep_logs is not None:
                try:
                    shutil.copytree(workdir, self.keep_logs, dirs_exist_ok=True)
                    shutil.rmtree(workdir)
                    self.logs_kept = self.keep_logs
                except OSError as exc:
                    self.logs_kept = workdir
                    self.log(f"[lab] could not copy the logs to {self.keep_logs} ({exc.strerror or exc})")
            elif keep_here:
                self.logs_kept = workdir
        if self.logs_kept is not None:
            self.log(f"[lab] this run's logs are in {self.logs_kept}")
        if left:
            self.log("[lab] could not remove: " + ", ".join(left))
        return left


def lab_cli(lab: MininetLab, script: str | None = None) -> None:
    """mininet's CLI with the lab's commands added."""
    from mininet.cli import CLI

    class LabCLI(CLI):
        prompt = "ina> "

        def _rounds_values(self, line):
            parts = line.split()
            try:
                return (int(parts[0]) if parts else 1), (int(parts[1]) if len(parts) > 1 else None)
            except ValueError:
                raise LabError(f"expected [ROUNDS] [VALUES] as whole numbers, got {line!r}") from None

        def do_allreduce(self, line):
            """allreduce [ROUNDS] [VALUES]: run allreduce rounds through the switches and check the sums"""
            try:
                lab.allreduce(*self._rounds_values(line))
            except USER_ERRORS as exc:
                print(f"error: {exc}{_logs_hint(lab)}")

        def do_baseline(self, line):
            """baseline [ROUNDS] [VALUES]: the same rounds through the parameter-server baseline"""
            try:
                lab.allreduce(*self._rounds_values(line), mode="ps")
            except USER_ERRORS as exc:
                print(f"error: {exc}{_logs_hint(lab)}")

        def do_gloo(self, line):
            """gloo [ROUNDS] [VALUES]: the same rounds through torch.distributed's gloo between the worker hosts"""
            try:
                lab.allreduce(*self._rounds_values(line), mode="gloo")
            except USER_ERRORS as exc:
                print(f"error: {exc}{_logs_hint(lab)}")

        def do_counters(self, line):
            """counters: bytes each link carried (both directions), switch and server agent counters"""
            print(lab.counters_text())

        def do_train(self, line):
            """train [EPOCHS] [--backend ina|gloo] [--seed S] [--example digits|recsys]: a training example,
            one process per worker host"""
            try:
                opts = parse_train_line(line)
            except LabError as exc:
                print(f"error: {exc}")
                return
            try:
                lab.train(**opts)
            except USER_ERRORS as exc:
                print(f"error: {exc}{_logs_hint(lab)}")

        def do_plan(self, line):
            """plan: which switches aggregate, their fan-in, each worker's path"""
            print(lab.plan_text())

        def do_kill(self, line):
            """kill SWITCH: kill a switch's process, as a crash (the controller notices and re-plans the
            jobs on it; mininet's own 'link A B down' takes a link down, which it notices too)"""
            try:
                lab.kill_switch(line.strip())
            except USER_ERRORS as exc:
                print(f"error: {exc}")

    LabCLI(lab.network.net, script=script)


def _logs_hint(lab: MininetLab) -> str:
    """For an error in the CLI: the run goes on; its logs are kept when it ends."""
    if not lab.failed:
        return ""
    return f"\n(this run's logs, in {lab.workdir}, are kept at exit" + (
        f" in {lab.keep_logs})" if lab.keep_logs else ")"
    )


def parse_train_line(line: str) -> dict:
    """``[EPOCHS] [--backend ina|gloo] [--seed S] [--timeout SECONDS] [--example digits|recsys]`` -> keyword
    arguments of train()."""
    ap = argparse.ArgumentParser(prog="train", add_help=False, exit_on_error=False)
    ap.add_argument("epochs", nargs="?", type=int, default=20)
    ap.add_argument("--backend", default="ina")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float)
    ap.add_argument("--example", default="digits")
    try:
        ns, extra = ap.parse_known_args(line.split())
    except argparse.ArgumentError as exc:
        raise LabError(f"train: {exc}") from None
    if extra:
        raise LabError(
            f"train: unexpected {' '.join(extra)} (usage: train [EPOCHS] [--backend ina|gloo] [--seed S] "
            "[--example digits|recsys])"
        )
    if ns.backend not in BACKENDS:
        raise LabError(f"train: unknown backend {ns.backend!r} (choose {' or '.join(BACKENDS)})")
    if ns.example not in EXAMPLES:
        raise LabError(f"train: unknown example {ns.example!r} (choose {' or '.join(EXAMPLES)})")
    if ns.epochs < 1:
        raise LabError(f"train: epochs must be at least 1, got {ns.epochs}")
    return vars(ns)


def _plan_options(result_mode: str):
    from controller.planner import PlanOptions

    return PlanOptions(result_mode=result_mode)


def compare_line(gloo: TrainResult, ina: TrainResult) -> str:
    diff = 100 * (ina.test_accuracy - gloo.test_accuracy)
    return (
        f"same seed {ina.seed}: gloo {100 * gloo.test_accuracy:.2f} % at {gloo.ms_per_iteration:.1f} ms/iteration"
        f"{gloo.steady_text()}, ina {100 * ina.test_accuracy:.2f} % at {ina.ms_per_iteration:.1f} ms/iteration"
        f"{ina.steady_text()} "
        f"(ina/gloo {ina.ms_per_iteration / gloo.ms_per_iteration:.2f} per iteration, accuracy difference "
        f"{diff:+.2f} points)"
    )


def install_signal_handlers() -> None:
    """SIGTERM/SIGHUP end the run like Ctrl-C, so ``finally`` blocks tear the lab down."""

    def handler(signum, frame):
        raise KeyboardInterrupt(f"signal {signum}")

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m topologies.mininet_lab", description=__doc__.split("\n")[0])
    ap.add_argument("topology", nargs="?", help="topology YAML (topologies/*.yaml)")
    ap.add_argument("--target", choices=("softswitch", "bmv2"), default="softswitch")
    ap.add_argument(
        "--program",
        help="P4 program (softswitch; default: the largest K the topology's links carry, v1model-k256 at a "
        "1500-byte MTU, v1model-k1024 where every link has mtu 9000): v1model (p4src/ina.p4, K = 64), v1model-k256 "
        "(p4src/ina_k256.p4), v1model-k1024 (p4src/ina_k1024.p4: the lab's links then take a 9000-byte MTU), tna "
        "(p4src/tna/ina_tna.p4) or a path; compiled JSON (bmv2)",
    )
    ap.add_argument("--p4info", help="P4Info to push (with --device-config) to switches started without a program")
    ap.add_argument("--device-config", help="device config to push: the BMv2 JSON, or the P4 source for softswitch")
    ap.add_argument("--workers", help="worker hosts, comma-separated, or a count (default: role hints)")
    ap.add_argument("--server", help="aggregation server host (default: role hint)")
    ap.add_argument(
        "--results",
        choices=RESULT_MODES,
        default=DEFAULT_RESULT_MODE,
        help=f"results down the tree by multicast or unicast per worker (default {DEFAULT_RESULT_MODE})",
    )
    ap.add_argument("--values", type=int, default=2048, help="values per worker per round")
    ap.add_argument(
        "--tls",
        action="store_true",
        help="P4Runtime over TLS with client certificates (a private CA made in the run's work directory)",
    )
    ap.add_argument("--rounds", type=int, default=0, help="allreduce rounds to run before the CLI / exit")
    ap.add_argument("--script", help="mininet CLI script to run (batch)")
    ap.add_argument("--batch", action="store_true", help="exit after --rounds/--script instead of the CLI")
    ap.add_argument(
        "--train", action="store_true", help="run a training example, one process per worker host, then exit"
    )
    ap.add_argument(
        "--example",
        choices=tuple(EXAMPLES),
        default="digits",
        help="--train: digits (examples/train_digits.py) or recsys (examples/train_recsys.py, sharded embeddings)",
    )
    ap.add_argument(
        "--example-args",
        default="",
        metavar="ARGS",
        help="--train: more flags for the example, e.g. '--embeddings replicated' (recsys's baseline)",
    )
    ap.add_argument(
        "--backend",
        choices=(*BACKENDS, "both"),
        default="ina",
        help="--train: torch.distributed backend (both: gloo, then ina, same seed)",
    )
    ap.add_argument("--epochs", type=int, default=20, help="--train: epochs")
    ap.add_argument("--seed", type=int, default=0, help="--train: seed of the data split, shards and weights")
    ap.add_argument(
        "--train-timeout",
        type=float,
        help="--train: seconds one training run may take (default grows with epochs and workers)",
    )
    ap.add_argument(
        "--keep-logs",
        metavar="DIR",
        help="copy the run's work directory (switch logs, plans, results, training logs) to DIR at exit",
    )
    ap.add_argument(
        "--clean",
        action="store_true",
        help="remove what crashed runs left behind and the work directories of earlier runs, then exit",
    )
    args = ap.parse_args(argv)

    if args.clean:
        return 1 if clean_stale(workdirs=True) else 0
    if not args.topology:
        ap.error("a topology file is required (or --clean)")
    if args.epochs < 1:
        ap.error("--epochs must be at least 1")
    workers = None
    if args.workers:
        workers = int(args.workers) if args.workers.isdigit() else args.workers.split(",")
    install_signal_handlers()
    lab = None
    failed, error = True, None
    try:
        lab = MininetLab(
            args.topology,
            workers,
            args.server,
            args.target,
            args.program,
            args.values,
            p4info=args.p4info,
            device_config=args.device_config,
            plan_options=_plan_options(args.results),
            keep_logs=args.keep_logs,
            tls=args.tls,
        )
        lab.start()
        print(lab.plan_text())
        if args.rounds:
            lab.allreduce(args.rounds)
        if args.train:
            backends = ("gloo", "ina") if args.backend == "both" else (args.backend,)
            extra = shlex.split(args.example_args)
            results = [lab.train(args.epochs, b, args.seed, args.train_timeout, args.example, extra) for b in backends]
            if len(results) == 2:
                print("[lab] " + compare_line(*results))
        if args.script:
            lab_cli(lab, script=args.script)
        if not (args.batch or args.train):
            lab_cli(lab)
        failed = False
        return 0
    except KeyboardInterrupt:
        failed = False
        print("\n[lab] interrupted: tearing down")
        return 130
    except USER_ERRORS as exc:  # one line; anything else is a bug and shows its traceback
        error = exc
        return 1
    finally:
        if lab is not None:
            lab.stop(failed=failed)
        if error is not None:
            kept = lab.logs_kept if lab is not None else None
            print(f"error: {error}" + (f"\n(this run's logs are in {kept})" if kept else ""), file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
