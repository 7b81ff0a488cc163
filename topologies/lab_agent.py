"""An agent process on a lab host: a worker or a server of one job, over kernel UDP.

The launcher starts one per host (inside the host's namespace) and drives it with one JSON command
per line on stdin; the agent answers with one JSON line on stdout per command. A worker keeps its
WorkerAgent for the whole session, so sequence numbers keep growing across rounds (a switch would
otherwise answer a restarted worker with a stored sum). A worker's input is made from the seed
(``worker_input``), so the launcher makes every rank's input again and checks each result against
numpy's sum by its digest (``result_digest``): no array leaves the agent, no file is written per round.

Commands: {"cmd": "allreduce", "round": r, "values": n, "seed": s, "mode": "ina"|"ps"} (optional
"rto": the agent's base retransmission timeout in seconds from this round on; "spurious": false turns off
the agent's detection of spurious timeouts from this round on, true turns it on again) and
{"cmd": "quit"}. Mode "ps" is the parameter-server baseline: the job of ``--ps-plan`` (the same
hosts planned with no aggregating switch), run by a second WorkerAgent on the same UDP port; the
server agent serves both jobs. Replies: {"ready": true} once at start, then {"round": r, "elapsed": seconds, "started_at": wall clock,
"digest": the result's result_digest, "stats": the agent's counters (cumulative; ``send_buffer_full``: sends
the kernel refused, lost packets)} or {"error": "one line"}. The server answers {"cmd": "stats"}
with {"stats": ...}.

The server also takes {"cmd": "add_job", "plan": path} and {"cmd": "remove_job", "job": id}: the
launcher's training runs are jobs of their own (fresh job ids, so their processes' sequence numbers
start afresh in the switches), served by the same agent on the server host's one UDP port; and
{"cmd": "update_job", "plan": path}: a new version of a job the controller re-planned around a failure.
Replies: {"job": id} or {"error": "one line"}.

Re-planning: a worker reads stdin on its event loop, so {"cmd": "plan", "plan": path} (a new version of
its job: ``WorkerAgent.update_plan`` moves the chunks in flight) and {"cmd": "plan_failed", "job": id,
"reason": why} (no tree is left: the allreduce in progress fails with that reason) act at once, even in
the middle of an allreduce. They get no reply.
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from controller.options import GIVE_UP_S, RTO_PYTHON_SWITCHES_S

# Where a profile of an agent's Python goes (cProfile, one file per agent: rank0.prof, server.prof) when
# set, and which agents are profiled (comma-separated "rankN"/"server"; default: rank 0 and the server).
PROFILE_DIR_ENV = "INA_AGENT_PROFILE_DIR"
PROFILE_WHO_ENV = "INA_AGENT_PROFILE"
# The agents' receive hold (worker/transport.py BATCH_WAIT_S), in seconds, when set: a bench A/B of it
BATCH_WAIT_ENV = "INA_AGENT_BATCH_WAIT"
# "0": the agents send datagrams one by one with sendmmsg instead of UDP_SEGMENT sends (a bench A/B of it)
SEGMENTATION_ENV = "INA_AGENT_SEGMENTATION"


def agent_transport(ip: str):
    """The agent's kernel-UDP transport (with the receive hold BATCH_WAIT_ENV asks for and the sending
    SEGMENTATION_ENV asks for, if set)."""
    from worker.transport import BATCH_WAIT_S, UdpTransport

    segmentation = None if os.environ.get(SEGMENTATION_ENV, "").strip() != "0" else False
    return UdpTransport(
        ip=ip, batch_wait=float(os.environ.get(BATCH_WAIT_ENV) or BATCH_WAIT_S), segmentation=segmentation
    )


def worker_input(seed: int, round_no: int, rank: int, values: int) -> np.ndarray:
    """A worker's gradient for a round: int32 values whose sum over 8 ranks cannot overflow."""
    rng = np.random.default_rng([seed, round_no, rank])
    return rng.integers(-100_000, 100_000, size=values, dtype=np.int32)


def expected_sum(seed: int, round_no: int, ranks: Iterable[int], values: int) -> np.ndarray:
    """The sum of the ranks' inputs of a round, as int32 (the inputs cannot overflow it)."""
    total = np.zeros(values, dtype=np.int64)
    for rank in ranks:
        total += worker_input(seed, round_no, rank, values)
    return total.astype(np.int32)


def result_digest(values: np.ndarray) -> str:
    """SHA-256 of an allreduce result as int32 bytes: what a worker reports instead of the array."""
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.int32).data).hexdigest()  # no copy: its buffer


def reply(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def parse_command(line: bytes | str) -> dict | None:
    """One of the launcher's JSON lines as a command (anything but an object: an empty one); a line that is
    not JSON is answered with an error and gives None."""
    try:
        cmd = json.loads(line)
    except json.JSONDecodeError:
        text = line.decode(errors="replace") if isinstance(line, bytes) else line
        reply({"error": f"not JSON: {text.strip()[:60]}"})
        return None
    return cmd if isinstance(cmd, dict) else {}


class CommandLines:
    """The launcher's JSON commands, read from stdin on the agent's event loop, so commands that must
    act at once (a new plan version in the middle of an allreduce) are taken between two events while
    the others queue for the agent's main code."""

    def __init__(self, loop, urgent: Callable[[dict], bool]):
        self.loop, self.urgent = loop, urgent
        self.queue: collections.deque[dict | None] = collections.deque()  # None: end of input
        self._buf = b""
        loop.add_reader(sys.stdin, self._readable)

    def _readable(self) -> None:
        chunk = os.read(sys.stdin.fileno(), 65536)
        if not chunk:
            self.loop.remove_reader(sys.stdin)
            self.queue.append(None)
            return
        self._buf += chunk
        while b"\n" in self._buf:
            line, self._buf = self._buf.split(b"\n", 1)
            cmd = parse_command(line)
            if cmd is not None and not self.urgent(cmd):
                self.queue.append(cmd)

    def next(self) -> dict | None:
        """The next queued command (None at end of input), running the loop until one comes."""
        self.loop.run_until(lambda: bool(self.queue))
        return self.queue.popleft()


class WorkerHost:
    """A worker host's agents on one transport: the lab's job's (mode "ina") and, made on first use, the
    parameter-server baseline's ("ps"); each follows the new versions of its job's plan."""

    def __init__(self, args, plan):
        from worker.agent import WorkerAgent

        self.args = args
        self.me = plan.worker(args.rank)
        self.transport = agent_transport(self.me.ip)
        self.agents = {
            "ina": WorkerAgent(
                plan,
                args.rank,
                self.transport,
                timeout=args.timeout,
                retries=args.retries,
                give_up_after=args.give_up_after,
            )
        }
        self.latest: dict = {}  # job id -> the newest plan version heard of (a baseline agent made later starts on it)

    def plan_update(self, cmd: dict) -> bool:
        """{"cmd": "plan", "plan": path} (a new version of a job) or {"cmd": "plan_failed", "job": id,
        "reason": why}: taken at once, even in the middle of an allreduce; no reply."""
        if cmd.get("cmd") == "plan":
            from controller.plan import JobPlan

            new = JobPlan.from_json(Path(cmd["plan"]).read_text())
            self.latest[new.job_id] = new
            self._update(new.job_id, new)
            return True
        if cmd.get("cmd") == "plan_failed":
            self._update(int(cmd["job"]), None, str(cmd.get("reason", "the controller could not re-plan the job")))
            return True
        return False

    def _update(self, job_id: int, plan, reason: str = "") -> None:
        for a in self.agents.values():
            if a.job_id == job_id:
                a.update_plan(plan, reason)

    def agent(self, mode: str):
        if mode not in self.agents:
            self.agents[mode] = _baseline_agent(mode, self.args, self.transport, self.latest)
        return self.agents[mode]

    def allreduce(self, cmd: dict) -> dict:
        """One round's allreduce of this rank's inputs ({"round", "values", "seed", "mode", and the agents'
        "rto" and "spurious" from this round on}); the reply: times, the result's digest, the agent's figures."""
        r, n, mode = int(cmd["round"]), int(cmd["values"]), cmd.get("mode", "ina")
        data = worker_input(int(cmd["seed"]), r, self.args.rank, n)
        agent = self.agent(mode)
        if "rto" in cmd:
            agent.timeout = float(cmd["rto"])
        if "spurious" in cmd:
            agent.detect_spurious = bool(cmd["spurious"])
        started_at, start, cpu_start = time.time(), time.monotonic(), time.process_time()
        packets, wakeups = self.transport.received_packets, self.transport.received_batches
        result = agent.allreduce(data, "sum")
        elapsed, cpu = time.monotonic() - start, time.process_time() - cpu_start
        packets, wakeups = self.transport.received_packets - packets, self.transport.received_batches - wakeups
        return {
            "round": r,
            "mode": mode,
            "elapsed": elapsed,
            "started_at": started_at,  # wall clock: the lab's hosts share the machine's clock
            "cpu_s": cpu,  # the process's CPU in the collective (every thread), not the harness's
            # datagrams the transport handed the agent per wake-up: the batch its per-call work is spread over
            "datagrams_per_receive": packets / wakeups if wakeups else 0.0,
            "values": int(np.asarray(result).size),
            "digest": result_digest(np.asarray(result)),
            "stats": {**agent.stats, "send_buffer_full": self.transport.send_buffer_full},
            "rtt_ms": 1000 * (agent.smoothed_rtt or 0.0),
            "lowest_rtt_ms": 1000 * agent.lowest_rtt(),
            "rto_ms": 1000 * float(agent.rto(0)),
            "windows": [cursor.allowed() for cursor in agent.cursors],
        }

    def close(self) -> None:
        for a in self.agents.values():
            a.close()
        self.transport.close()


def run_worker(args, plan) -> None:
    """Run the launcher's allreduce rounds until "quit" or end of input on stdin."""
    host = WorkerHost(args, plan)
    commands = CommandLines(host.transport.loop, host.plan_update)
    reply({"ready": True, "rank": args.rank, "host": host.me.name})
    while True:
        cmd = commands.next()
        if cmd is None or cmd.get("cmd") == "quit":
            break
        try:
            reply(host.allreduce(cmd))
        except Exception as exc:  # one line to the launcher, never a traceback on its console
            reply({"error": f"{type(exc).__name__}: {exc}"})
    host.close()


def _baseline_agent(mode: str, args, transport, latest: dict):
    """The parameter-server baseline ("ps"): a worker agent of the --ps-plan job on the same transport."""
    from controller.plan import JobPlan
    from worker.agent import WorkerAgent

    if mode != "ps":
        raise ValueError(f"unknown mode {mode!r} (ina or ps)")
    if not args.ps_plan:
        raise ValueError("mode ps needs the agent started with --ps-plan")
    ps_plan = JobPlan.from_json(Path(args.ps_plan).read_text())
    ps_plan = latest.get(ps_plan.job_id, ps_plan)
    return WorkerAgent(
        ps_plan, args.rank, transport, timeout=args.timeout, retries=args.retries, give_up_after=args.give_up_after
    )


class ServerHost:
    """The server agent and the launcher's commands to it: "stats", "add_job", "update_job" (a job the
    controller re-planned), "remove_job"; each answered on the agent's event loop, between two packets."""

    def __init__(self, args, plan):
        from controller.plan import JobPlan
        from server.agent import ServerAgent

        self.me = next(s for s in plan.servers if s.name == args.server)
        self.transport = agent_transport(self.me.ip)
        self.agent = ServerAgent(self.transport, self.me.name)
        self.agent.add_job(plan)
        if args.ps_plan:  # the parameter-server baseline's job: same agent, same port
            self.agent.add_job(JobPlan.from_json(Path(args.ps_plan).read_text()))

    def command(self, cmd: dict) -> bool:
        """Answer a command at once; "quit" (and anything unknown) is left for ``run_server``."""
        what = cmd.get("cmd")
        if what == "stats":
            stats = {"send_buffer_full": self.transport.send_buffer_full, "held_batches": self.transport.held_batches}
            reply({"stats": {**self.agent.stats, **stats}})
        elif what in ("add_job", "update_job"):
            self._take_job(cmd)
        elif what == "remove_job":
            self.agent.remove_job(int(cmd["job"]))
            reply({"job": int(cmd["job"])})
        else:
            return what != "quit"  # an unknown command: ignored
        return True

    def _take_job(self, cmd: dict) -> None:
        from controller.plan import JobPlan

        try:
            job = JobPlan.from_json(Path(cmd["plan"]).read_text())
            (self.agent.add_job if cmd["cmd"] == "add_job" else self.agent.update_job)(job)
            reply({"job": job.job_id})
        except Exception as exc:
            reply({"error": f"{type(exc).__name__}: {exc}"})

    def close(self) -> None:
        self.agent.close()
        self.transport.close()


def run_server(args, plan) -> None:
    """Serve the job until "quit" or end of input on stdin (the launcher closing the pipe)."""
    host = ServerHost(args, plan)
    commands = CommandLines(host.transport.loop, host.command)
    reply({"ready": True, "host": host.me.name})
    while (cmd := commands.next()) is not None and cmd.get("cmd") != "quit":
        pass  # what is not a command the server knows (answered at once) is ignored
    host.close()


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(prog="python -m topologies.lab_agent")
    ap.add_argument("role", choices=("worker", "server"))
    ap.add_argument("--plan", required=True, help="JobPlan JSON file")
    ap.add_argument("--rank", type=int, default=-1)
    ap.add_argument("--server", default="", help="server host name (role server)")
    ap.add_argument("--timeout", type=float, default=RTO_PYTHON_SWITCHES_S, help="first retransmission timeout, s")
    ap.add_argument(
        "--give-up-after", type=float, default=GIVE_UP_S, help="seconds a chunk may go without a result (time budget)"
    )
    ap.add_argument("--retries", type=int, default=None, help="also give up after this many resends of one chunk")
    ap.add_argument("--ps-plan", default="", help="JobPlan JSON of the parameter-server baseline's job")
    args = ap.parse_args(argv)
    from controller.plan import JobPlan

    plan = JobPlan.from_json(Path(args.plan).read_text())
    run = run_worker if args.role == "worker" else run_server
    who = f"rank{args.rank}" if args.role == "worker" else "server"
    profile_dir, profiled = os.environ.get(PROFILE_DIR_ENV), os.environ.get(PROFILE_WHO_ENV, "rank0,server")
    if not profile_dir or who not in profiled.split(","):
        run(args, plan)
        return
    import cProfile

    with cProfile.Profile(time.thread_time) as profile:  # CPU time: a wall clock counts other processes' turns
        try:
            run(args, plan)
        finally:
            profile.dump_stats(str(Path(profile_dir) / f"{who}.prof"))


if __name__ == "__main__":
    main()
