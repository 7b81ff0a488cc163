"""The processes the lab runs in its hosts: the server agent, a worker agent per worker host and, once
asked, a gloo rank per worker host; each driven by JSON lines on its stdin and stdout
(topologies/lab_agent.py, topologies/lab_gloo.py).

``AgentProcess`` is one such process; ``LabAgents`` owns them all, starts and stops them, and is the one
way to talk to the server agent (``server_call``: one command and its answer at a time, from the launcher
and the fault monitor's thread alike).
"""

from __future__ import annotations

import json
import select
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from controller.plan import JobPlan
from topologies.errors import LabJobError
from topologies.lab_network import LabNetwork, intf_name
from topologies.lab_training import RankHost, rank_env

SERVER_ANSWER_S = 30.0  # the server agent answers a command within this
START_S = 60.0  # an agent says it is ready within this
GLOO_START_S = 120.0  # a gloo rank has joined its group within this (rendezvous and connections)


class AgentProcess:
    """One lab_agent (or lab_gloo) process in a host, driven by JSON lines."""

    def __init__(self, proc: subprocess.Popen[bytes], name: str):
        self.proc, self.name = proc, name
        self.lock = threading.Lock()  # the launcher and the fault monitor's thread both write commands
        self.exited: str | None = None  # exit_reason, once the process has ended

    def send(self, obj: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        with self.lock:
            self.proc.stdin.write((json.dumps(obj) + "\n").encode())
            self.proc.stdin.flush()

    def read(self, timeout: float) -> dict[str, Any]:
        assert self.proc.stdout is not None
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
                return dict(json.loads(line))
            except json.JSONDecodeError:
                continue  # stray output (a library warning): not a reply

    def wait_ready(self, timeout: float) -> None:
        msg = self.read(timeout)
        if not msg.get("ready"):
            raise LabJobError(f"{self.name}: {msg.get('error', 'did not start')}")

    def exit_reason(self) -> str:
        """Why the agent's process ended, for a one-line error: its exit code and last line of stderr
        (what it said as it stopped), or that it is still running with its input closed. Kept: stderr
        can be read once."""
        if self.exited is None:
            try:
                code = self.proc.wait(1)
            except subprocess.TimeoutExpired:
                return "still running, but its command pipe is closed"
            assert self.proc.stderr is not None
            err = self.proc.stderr.read().decode(errors="replace").strip().splitlines()
            self.exited = f"exit code {code}: {err[-1] if err else 'no message'}"
        return self.exited

    def stop(self) -> None:
        try:
            self.send({"cmd": "quit"})
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            self.proc.wait(5)
        except Exception:
            self.proc.kill()
            self.proc.wait(5)


class LabAgents:
    """The agents of one lab run: ``start`` them, ``server_call``/``tell_workers``, ``stop``."""

    def __init__(self, network: LabNetwork, server: str):
        self.network = network
        self.server = server  # the server agent's host
        self.server_agent: AgentProcess | None = None
        self.workers: dict[str, AgentProcess] = {}  # worker host -> its agent
        self.gloo_ranks: dict[str, AgentProcess] = {}  # worker host -> its gloo rank (start_gloo)
        self._server_lock = threading.RLock()  # one command/answer exchange with the server agent at a time

    def _popen(
        self, host: str, argv: list[str], what: str, name: str, env: dict[str, str] | None = None
    ) -> AgentProcess:
        """Start a process in ``host`` (``what`` it is, recorded for teardown; ``name`` in its errors) with
        pipes for its commands, answers and last words; ``env``: its whole environment (None: this one's)."""
        pipes = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        extra = {} if env is None else {"env": env}
        return AgentProcess(self.network.popen(host, argv, what, **pipes, **extra), name)

    def start(self, plan: JobPlan, plan_file: Path, ps_plan_file: Path) -> None:
        """The server agent and a worker agent per worker of ``plan``, both jobs' plans given; returns once
        every one said it is ready."""
        agent = [sys.executable, "-m", "topologies.lab_agent"]
        both = ["--plan", str(plan_file), "--ps-plan", str(ps_plan_file)]
        server_argv = [*agent, "server", *both, "--server", self.server]
        self.server_agent = self._popen(
            self.server, server_argv, f"server agent {self.server}", f"server {self.server}"
        )
        for w in plan.workers:
            worker_argv = [*agent, "worker", *both, "--rank", str(w.rank)]
            name = f"worker {w.name} (rank {w.rank})"
            self.workers[w.name] = self._popen(w.name, worker_argv, f"worker agent {w.name}", name)
        for each in [self.server_agent, *self.workers.values()]:
            each.wait_ready(START_S)

    def start_gloo(self, plan: JobPlan, port: int) -> None:
        """A gloo rank on every worker host of ``plan`` (rendezvous on the first's IP at ``port``), started
        once: a timed round then does not include the rendezvous and gloo's connections."""
        if self.gloo_ranks:
            return
        first = plan.workers[0]
        for w in plan.workers:
            host = RankHost(w.name, w.ip, intf_name(w.name, self.network.spec.host(w.name).port))
            argv = [sys.executable, "-m", "topologies.lab_gloo", "--rank", str(w.rank), "--world-size"]
            argv += [str(len(plan.workers)), "--master-addr", first.ip, "--master-port", str(port)]
            what, name = f"gloo rank {w.rank} on {w.name}", f"gloo {w.name} (rank {w.rank})"
            self.gloo_ranks[w.name] = self._popen(w.name, argv, what, name, env=rank_env(host, None))
        for rank in self.gloo_ranks.values():
            rank.wait_ready(GLOO_START_S)

    def tell_workers(self, cmd: dict[str, Any]) -> list[tuple[str, OSError]]:
        """Send ``cmd`` to every worker agent, even past one whose pipe broke; return the agents that
        could not take it, with why."""
        refused = []
        for name, agent in self.workers.items():
            try:
                agent.send(cmd)
            except OSError as exc:  # the agent's process died: BrokenPipeError
                refused.append((name, exc))
        return refused

    def server_call(self, cmd: dict[str, Any], answer: str = "job") -> dict[str, Any]:
        """Send the server agent a command and return its answer; a dead agent (its pipe broke) or its
        error reply raises LabJobError naming the server host, its address and why."""
        agent = self.server_agent
        if agent is None:
            raise LabJobError(f"server {self.server}: its agent has not started")
        with self._server_lock:
            try:
                agent.send(cmd)
            except OSError as exc:  # BrokenPipeError: the agent's process is gone
                ip = self.network.spec.host(self.server).ip
                raise LabJobError(
                    f"{agent.name} at {ip}: its agent is not running "
                    f"({agent.exit_reason()}), so it cannot take {cmd['cmd']} ({exc.strerror or exc}); "
                    "its last line says why it stopped: start the lab again"
                ) from exc
            while True:
                msg = agent.read(SERVER_ANSWER_S)
                if "error" in msg:
                    raise LabJobError(f"{agent.name}: {msg['error']}")
                if answer in msg:
                    return msg

    def server_stats(self) -> dict[str, int]:
        """The server agent's counters (all jobs, cumulative)."""
        return dict(self.server_call({"cmd": "stats"}, "stats")["stats"])

    def pids(self) -> dict[str, int]:
        """Every running agent's and gloo rank's pid, by its name."""
        agents = [*self.gloo_ranks.values(), *self.workers.values(), self.server_agent]
        return {a.name: a.proc.pid for a in agents if a is not None}

    def stop(self) -> None:
        for agent in [*self.gloo_ranks.values(), *self.workers.values(), self.server_agent]:
            if agent is not None:
                agent.stop()
        self.gloo_ranks.clear()
        self.workers.clear()
        self.server_agent = None
