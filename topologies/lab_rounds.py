"""Allreduce rounds through the lab's agents: every worker at once, each result checked exactly.

A round in mode ``ina`` (through the aggregating switches) or ``ps`` (the parameter-server baseline) is
one command to every worker agent; mode ``gloo`` sends the same inputs through torch.distributed's gloo
ranks. ``AllreduceRounds`` numbers the rounds, checks every worker's sum against numpy's (by digest),
and turns the agents' cumulative counters into this round's (``RoundResult``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controller.plan import JobPlan
from topologies.errors import LabJobError
from topologies.lab_agent import expected_sum, result_digest

if TYPE_CHECKING:  # the agents run in mininet hosts; the in-process lab shares RoundResult without mininet
    from topologies.lab_agents import LabAgents

# worker agents' counters of timer events (worker/stream.py): timer firings that resent, window halvings,
# halvings taken back as spurious, chunks whose result answered the first send after a resend
TIMER_COUNTERS = ("timeouts", "window_halvings", "window_halvings_undone", "spurious_resends")
# the agents' figures a round reports by rank: RoundResult's field and the agent's answer's key
RANK_FIGURES = (
    ("rtt_ms", "rtt_ms"),
    ("lowest_rtt_ms", "lowest_rtt_ms"),
    ("rto_ms", "rto_ms"),
    ("cpu_s", "cpu_s"),
    ("started_at", "started_at"),
    ("datagrams_per_receive", "datagrams_per_receive"),
)


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
    # when each rank began the collective (wall clock, time.time()): what else the round's links carried
    # then (another flow's share of them) is measured from there to there + its elapsed
    started_at: dict[int, float] = field(default_factory=dict)
    # datagrams each rank's transport handed its agent per wake-up (the batch per-call work is spread over)
    datagrams_per_receive: dict[int, float] = field(default_factory=dict)

    def losses_text(self) -> str:
        text = f"{self.retransmissions} retransmissions"
        if self.send_buffer_full:
            text += f", {self.send_buffer_full} packets lost to full host socket buffers"
        return text


class AllreduceRounds:
    """The lab's allreduce rounds: ``run`` them; ``last_errors``/``last_stats`` say how the last one went."""

    def __init__(self, agents: LabAgents, plan: Callable[[], JobPlan], log: Callable[[str], None], seed: int = 7):
        self.agents = agents
        self.plan = plan  # the lab's job as it runs now (a re-plan gives a new version)
        self.log = log
        self.seed = seed  # of the workers' inputs (lab_agent.worker_input)
        self.rounds_done = 0
        self.last_errors: dict[str, str] = {}  # worker host -> its error in the last round (ina, ps)
        self.last_stats: dict[str, dict[str, Any]] = {}  # worker host -> its agent's counters after the last round
        self._counted: dict[tuple[Any, str], int] = {}  # (agent, counter) -> its value after the last round

    def run(
        self, rounds: int, values: int, mode: str, timeout: float, settings: dict[str, Any] | None = None
    ) -> list[RoundResult]:
        """``rounds`` rounds of ``values`` values per worker; ``settings``: the worker agents' ``rto`` and
        ``spurious`` from these rounds on (ina, ps). Raises LabJobError naming the first rank that failed or
        got a wrong sum."""
        if mode == "gloo":
            return [self._gloo_round(values, timeout) for _ in range(rounds)]
        return [self._agents_round(values, mode, timeout, settings or {}) for _ in range(rounds)]

    def _next_round(self) -> int:
        r = self.rounds_done
        self.rounds_done += 1
        return r

    def _agents_round(self, values: int, mode: str, timeout: float, settings: dict[str, Any]) -> RoundResult:
        r = self._next_round()
        cmd = {"cmd": "allreduce", "round": r, "values": values, "seed": self.seed, "mode": mode}
        for agent in self.agents.workers.values():
            agent.send({**cmd, **settings})
        replies = self._replies(r, timeout)
        self._verify(r, values, replies)
        res = self._result(r, mode, values, replies)
        self.log(
            f"[lab] round {r} ({mode}, {values} values x {len(self.agents.workers)} workers): "
            f"{res.elapsed * 1000:.0f} ms, sums verified, {res.losses_text()}"
        )
        return res

    def _replies(self, r: int, timeout: float) -> dict[str, dict[str, Any]]:
        """Every worker agent's answer to round ``r`` (all read, so none is left unread for the next round)."""
        replies, errors = {}, {}
        for name, agent in self.agents.workers.items():
            msg = agent.read(timeout)
            if "error" in msg:
                errors[name] = f"{agent.name}: {msg['error']}"
            replies[name] = msg
        self.last_errors = errors
        if errors:
            first = next(iter(errors.values()))
            more = f" (and {len(errors) - 1} more ranks failed)" if len(errors) > 1 else ""
            raise LabJobError(f"round {r}: {first}{more}")
        return replies

    def _result(self, r: int, mode: str, values: int, replies: dict[str, dict[str, Any]]) -> RoundResult:
        """The round's figures from the agents' answers: times and figures by rank, counters as this round's."""
        rank = {name: self.plan().worker(name).rank for name in replies}
        elapsed = {rank[n]: m["elapsed"] for n, m in replies.items()}
        res = RoundResult(r, mode, values, max(elapsed.values()), elapsed, verified=True)
        self.last_stats = {n: m.get("stats", {}) for n, m in replies.items()}
        stats = {(n, mode): m.get("stats", {}) for n, m in replies.items()}
        stats[(self.agents.server, "server")] = self.agents.server_stats()
        res.retransmissions = self._growth(stats, "retransmissions")
        res.send_buffer_full = self._growth(stats, "send_buffer_full")
        res.timer = {key: self._growth(stats, key) for key in TIMER_COUNTERS}
        for n, m in replies.items():
            for attr, key in RANK_FIGURES:
                getattr(res, attr)[rank[n]] = float(m.get(key, 0.0))
            res.windows[rank[n]] = list(m.get("windows", []))
        return res

    def _gloo_round(self, values: int, timeout: float) -> RoundResult:
        """One torch.distributed gloo all_reduce of the same inputs on the worker hosts (a process per
        host, over TCP through the switches' IPv4 routes); each rank checks the sum itself."""
        r = self._next_round()
        ranks = self.agents.gloo_ranks
        for rank in ranks.values():
            rank.send({"cmd": "allreduce", "round": r, "values": values, "seed": self.seed})
        elapsed, cpu = {}, {}
        for name, rank in ranks.items():
            msg = rank.read(timeout)
            if "error" in msg:
                raise LabJobError(f"round {r}: {rank.name}: {msg['error']}")
            elapsed[self.plan().worker(name).rank] = msg["elapsed"]
            cpu[self.plan().worker(name).rank] = float(msg.get("cpu_s", 0.0))
        res = RoundResult(r, "gloo", values, max(elapsed.values()), elapsed, verified=True, cpu_s=cpu)
        self.log(
            f"[lab] round {r} (gloo, {values} values x {len(elapsed)} workers): {res.elapsed * 1000:.0f} ms, sums verified"
        )
        return res

    def _growth(self, stats: dict[tuple[str, str], dict[str, Any]], key: str) -> int:
        """Growth of a cumulative agent counter since the last round, summed over agents (a transport's
        counter is shared by a host's agents: counted once per host)."""
        total, seen = 0, set()
        for (host, mode), row in stats.items():
            ident: Any = host if key == "send_buffer_full" else (host, mode)
            if ident in seen:
                continue
            seen.add(ident)
            now = int(row.get(key, 0))
            total += now - self._counted.get((ident, key), 0)
            self._counted[(ident, key)] = now
        return total

    def _verify(self, r: int, values: int, replies: dict[str, dict[str, Any]]) -> None:
        """Every worker's result against numpy's sum of the ranks' inputs, made again from the seed
        (lab_agent.worker_input), by digest."""
        expected = result_digest(expected_sum(self.seed, r, [w.rank for w in self.plan().workers], values))
        for n, m in replies.items():
            if m.get("values") != values or m.get("digest") != expected:
                raise LabJobError(
                    f"round {r}: {n} got a wrong sum ({m.get('values')} values, its digest differs from numpy's sum)"
                )
