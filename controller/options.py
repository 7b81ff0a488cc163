"""Every default and choice list of running a job, in one place.

The planner (``PlanOptions``), ``inactl``'s arguments, the plan loader (``JobPlan``), the job service's
protobuf options and the launchers all read these names, so a default or a choice is written once:

- planning: which planner, path policy, where to aggregate, how results come back, the reduction,
  the slot pool, seed 2's tree parameters (docs/glossary.md: H, r, b, K);
- the agents' retransmission defaults: the first retransmission timeout and the resends per chunk,
  with the timeout that suits each kind of network the project runs on.
"""

from __future__ import annotations

from dataclasses import dataclass

from controller.errors import PlanError
from controller.limits import MAX_VALUES_PER_PACKET

# -- choice lists --------------------------------------------------------------------------------
PLANNERS = ("multihop", "multitree")  # seed 1: one tree per server; seed 2: up to K spanning trees
POLICIES = ("fewest_hops", "lowest_delay", "widest")  # multi-hop path policies (controller/multihop.py)
AGGREGATION_MODES = ("merge", "all", "none")  # where flows merge, every switch on the way, or none (parameter server)
RESULT_MODES = ("unicast", "multicast")  # results along each worker's reverse path, or one multicast down the tree
OPS = ("sum", "max")  # reductions the data plane performs

# -- planning defaults ---------------------------------------------------------------------------
DEFAULT_PLANNER = "multihop"
DEFAULT_POLICY = "fewest_hops"
DEFAULT_AGGREGATION = "merge"
# results down the tree: one multicast RESULT per chunk leaves the server, where unicast sends one per worker
# along each reverse path. The default wherever a user does not choose: PlanOptions, inactl, the mininet
# lab (class and command line), the in-process lab, the demo and the benches
DEFAULT_RESULT_MODE = "multicast"
DEFAULT_OP = "sum"
# slots per job and tree at an aggregating switch (x2 cells for the shadow sets): the chunks a worker keeps
# in flight per tree, which must cover rate x round trip (docs/agents.md, "Window")
DEFAULT_POOL_SIZE = 512
MAX_POOL_SIZE = 0x3FFF  # pool_size is a 14-bit action parameter of set_job
DEFAULT_TREES = 4  # K: at most this many trees (multi-tree)
DEFAULT_MIN_BW = 1.0  # r (Mbit/s): an edge joins a tree only with this much residual
DEFAULT_LOSS_BOUND = 0.1  # the height search may give up this fraction of throughput

# -- agents: retransmission ----------------------------------------------------------------------
# The first retransmission timeout of a chunk (seconds of the transport's clock); the worker agent raises
# it to twice the measured round trip and doubles it per resend, so it only needs the right magnitude:
RTO_S = 0.05  # kernel UDP through switches that forward in microseconds (BMv2, the native runtime)
RTO_PYTHON_SWITCHES_S = 0.2  # processes through Python softswitches (mininet lab, torch backend): ms per hop
RTO_VIRTUAL_S = 0.005  # the in-process network's virtual clock: modelled links of ~0.1 ms, no CPU time
# A chunk is resent (backoff doubling up to a cap) until it has gone this long without a result since its
# first send or its round's last new result, whichever is later; then the collective fails with
# AllreduceTimeout. Time, not a count of resends, bounds a job: a link losing one packet in five needs many
# resends, a dead peer is given up after the same budget.
GIVE_UP_S = 30.0  # kernel UDP agents, the torch backend (its INA_TIMEOUT), the mininet lab
GIVE_UP_VIRTUAL_S = 5.0  # the in-process network's virtual clock (round trips of ~1 ms)
# The backstop behind the budget: a worker agent that sees no progress at all (no new result in any round, no
# round started, no plan version) for this many budgets fails its collectives with AllreduceStalled. The budget
# ends a stall it sees within one budget and a resend backoff; this ends the ones it cannot see.
STALL_BUDGETS = 2.0


@dataclass
class PlanOptions:
    """How to plan one job: ``plan_job``'s options, with the defaults above.

    Parameters
    ----------
    planner : str
        ``"multihop"`` (seed 1) or ``"multitree"`` (seed 2).
    policy : str
        Multi-hop path policy, one of ``POLICIES``.
    aggregation : str
        One of ``AGGREGATION_MODES``: aggregate where flows merge, at every switch, or nowhere.
    result_mode : str
        ``"unicast"`` reverse paths or ``"multicast"`` down the tree.
    pool_size : int
        Slots per job and tree at an aggregating switch.
    value_count : int or None
        Values per packet (K of the wire format, 1..``MAX_VALUES_PER_PACKET``): the K the switches' program
        was built with. None takes it from the program (``JobManager`` with an installer reads the P4Info:
        controller/programs.py), else ina.p4's default ``VALUES_PER_PACKET``.
    op : str
        The reduction, one of ``OPS``.
    root_results : bool or None
        Multicast results: let the switch that aggregates every worker of a tree send the RESULT down itself
        (no server hop; docs/design-decisions.md, "Results from the tree's root"). None: where the switches'
        program can (``JobManager`` with an installer reads the P4Info: the TNA program cannot), else True.
    job_id : int or None
        The job id to take; None takes the lowest free one.
    trees, height, min_bw, tree_rate, loss_bound, seed
        Multi-tree only: K, H (ms, None: no bound), r (Mbit/s), b (Mbit/s, None: the bottleneck
        residual), the throughput loss the height search may accept, and the RNG seed of start nodes.

    Examples
    --------
    >>> PlanOptions(result_mode="multicast").pool_size
    512
    >>> PlanOptions(policy="shortest").check()
    Traceback (most recent call last):
    ...
    controller.errors.PlanError: unknown policy 'shortest' (choose fewest_hops, lowest_delay, widest)
    """

    planner: str = DEFAULT_PLANNER
    policy: str = DEFAULT_POLICY
    aggregation: str = DEFAULT_AGGREGATION
    result_mode: str = DEFAULT_RESULT_MODE
    pool_size: int = DEFAULT_POOL_SIZE
    value_count: int | None = None
    op: str = DEFAULT_OP
    root_results: bool | None = None
    job_id: int | None = None
    trees: int = DEFAULT_TREES
    height: float | None = None
    min_bw: float = DEFAULT_MIN_BW
    tree_rate: float | None = None
    loss_bound: float = DEFAULT_LOSS_BOUND
    seed: int = 0

    def check(self) -> None:
        """Raise ``PlanError`` naming the first option outside its choices or range.

        Raises
        ------
        PlanError
            An unknown planner, policy, aggregation mode, result mode or op, or a number out of range.
        """
        for name, value, allowed in (
            ("planner", self.planner, PLANNERS),
            ("policy", self.policy, POLICIES),
            ("aggregation", self.aggregation, AGGREGATION_MODES),
            ("result mode", self.result_mode, RESULT_MODES),
            ("op", self.op, OPS),
        ):
            if value not in allowed:
                raise PlanError(f"unknown {name} {value!r} (choose {', '.join(allowed)})")
        if not 1 <= self.pool_size <= MAX_POOL_SIZE:
            raise PlanError(f"pool_size {self.pool_size} outside 1..{MAX_POOL_SIZE}")
        if self.value_count is not None and not 1 <= self.value_count <= MAX_VALUES_PER_PACKET:
            raise PlanError(f"value_count {self.value_count} outside 1..{MAX_VALUES_PER_PACKET}")
        if not 1 <= self.trees <= 255:
            raise PlanError(f"trees (K) {self.trees} outside 1..255")
        if self.height is not None and self.height <= 0:
            raise PlanError(f"height bound H {self.height} must be positive")
        if self.min_bw <= 0:
            raise PlanError(f"min_bw r {self.min_bw} must be positive")
        if self.tree_rate is not None and self.tree_rate <= 0:
            raise PlanError(f"tree rate b {self.tree_rate} must be positive")
        if not 0 <= self.loss_bound < 1:
            raise PlanError(f"loss bound {self.loss_bound} outside [0, 1)")
