"""The plan of one job: what the controller tells agents and writes into switches.

A plan is plain data (dataclasses of ints, strings, lists and dicts), versioned by PLAN_VERSION and
serialised to JSON. Agents read it with ``JobPlan.from_json``; loading checks the version and the
internal consistency of the hop lists, so an agent never starts a job on a malformed plan.

Vocabulary (docs/design-decisions.md):
- A *tree* is one reduction tree rooted at an aggregation server. A multi-hop plan has one tree per
  server; a multi-tree plan has up to K trees. Agents stripe chunks over trees by ``weight``.
- A worker's *GRAD hop list* in a tree names every switch its packets cross, in order, and ends with
  the terminal entry of the tree's server (switch_id = server node id, aggregate 1, egress_port 0).
- A worker's *RESULT hop list* is the reverse path from the server; ``aggregate`` there means
  "release the slot here".
- A *switch config* is one ``InaIngress.ina_jobs`` entry (key job_id, tree_id) plus, for multicast
  results, the members of its multicast group.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from controller.errors import PlanFormatError
from controller.limits import MAX_CHILDREN, MAX_HOPS, MAX_VALUES_PER_PACKET, SERVER_MAX_CHILDREN, VALUES_PER_PACKET
from controller.options import (
    DEFAULT_OP,
    DEFAULT_PLANNER,
    DEFAULT_POLICY,
    DEFAULT_POOL_SIZE,
    OPS,
    RESULT_MODES,
)

# a JobPlan built by hand (no planner, perhaps no switch: tests, benches of the agents) sends each worker its
# results; the planner always sets result_mode from PlanOptions (DEFAULT_RESULT_MODE when nobody chose)
HAND_BUILT_RESULT_MODE = "unicast"

if TYPE_CHECKING:
    from protocol import codec

PLAN_VERSION = 1


@dataclass
class Hop:
    """One hop entry as the plan describes it; ``to_codec`` builds the codec's wire object."""

    switch_id: int  # switch device id, or the server's node id on the terminal entry
    aggregate: bool  # GRAD: aggregate here; RESULT: release the slot here
    fan_in: int  # children this aggregation point waits for (0 when not aggregating)
    child: int  # this flow's child index at this hop (0 when not aggregating)
    egress_port: int  # port to leave this switch by (0 on the terminal entry)
    name: str = ""  # switch or server name, for display only (not on the wire)

    def to_codec(self) -> codec.Hop:
        """This hop as protocol.codec's hop entry (the codec owns the wire layout, bos included).

        Examples
        --------
        >>> Hop(1, True, 2, 0, 3, "s1").to_codec()
        Hop(switch_id=1, aggregate=True, fan_in=2, child=0, egress_port=3)
        """
        from protocol import codec  # imported late: planning does not need the codec

        return codec.Hop(
            switch_id=self.switch_id,
            aggregate=bool(self.aggregate),
            fan_in=self.fan_in,
            child=self.child,
            egress_port=self.egress_port,
        )


def hops_to_codec(hops: list[Hop]) -> list[codec.Hop]:
    """A plan's hop list as the codec's hop entries, ready for ``protocol.codec.grad``/``result`` and
    ``protocol.batch.PacketTemplate``: the one conversion from plan hops to wire hops.

    Parameters
    ----------
    hops : list of Hop
        A worker's ``grad_hops`` or ``result_hops`` of one tree.

    Returns
    -------
    list of protocol.codec.Hop

    Examples
    --------
    >>> hops_to_codec([Hop(1, True, 2, 0, 3, "s1"), Hop(0x8002, True, 1, 0, 0, "h3")])[1].switch_id
    32770
    """
    return [h.to_codec() for h in hops]


@dataclass
class HostRef:
    """A worker or server taking part in the job."""

    name: str
    ip: str
    mac: str
    node_id: int  # 0x8000 + host index
    host_index: int
    rank: int = -1  # worker rank (0..n-1); -1 for servers


@dataclass
class ChildInfo:
    """One child of an aggregation point: what a child index stands for."""

    index: int
    node: str  # the switch that aggregated below, or the worker itself
    node_id: int
    kind: str  # "switch" or "worker"
    ranks: list[int]  # worker ranks whose contributions this child carries


@dataclass
class ServerView:
    """What the tree's server expects: its fan-in and which child index is which flow."""

    server: str
    node_id: int
    fan_in: int
    children: list[ChildInfo]
    first_switch: str = ""  # the switch the server is attached to (multicast results start there)
    first_port: int = 0  # that switch's port facing the server


@dataclass
class TreePlan:
    """One reduction tree of the job."""

    tree_id: int
    root: str  # the aggregation server
    rate: float  # Mbit/s allocated to this tree
    weight: float  # share of the job's chunks (weights sum to 1)
    height: float  # ms: half the tree's delay diameter
    edges: list[list[str]]  # [child, parent] pairs, every node toward root
    aggregation_points: list[str]  # switches that aggregate for this tree
    grad_hops: dict[str, list[Hop]]  # worker name -> GRAD hop list
    result_hops: dict[str, list[Hop]]  # worker name -> RESULT reverse hop list
    server: ServerView
    host_parent: dict[str, str | None]  # host-level tree (no in-switch aggregation)
    host_children: dict[str, list[str]]
    # Mbit/s each worker sends on this tree: its share of the path's bottleneck (controller/pacing.py); agents
    # pace to it. 0: not known (a hand-built plan, or one written before the field): agents do not pace.
    send_rate: float = 0.0


@dataclass
class McastMember:
    """A replica of a multicast RESULT: egress port and replica id (the destination host's index
    for host-facing ports, 0 for ports facing another switch)."""

    port: int
    replica_id: int
    toward: str  # neighbour on that port, for display


@dataclass
class SwitchJobConfig:
    """One InaIngress.ina_jobs entry (job_id, tree_id) -> set_job(...), and its multicast group."""

    switch: str
    device_id: int
    tree_id: int
    job_index: int
    aggregates: bool
    slot_base: int
    pool_size: int
    max_fan_in: int
    result_group: int  # 0 when results are unicast
    members: list[McastMember] = field(default_factory=list)
    # the tree's root: aggregates every worker and multicasts the RESULT of what it completes itself (set_job
    # aggregates = AGGREGATES_ROOT; its group holds the ports down only: the server gets no copy)
    root: bool = False


@dataclass
class JobPlan:
    """Everything an agent and the installer need to run one job."""

    job_id: int
    workers: list[HostRef]
    servers: list[HostRef]
    trees: list[TreePlan]
    switches: list[SwitchJobConfig]
    planner: str = DEFAULT_PLANNER  # one of PLANNERS
    policy: str = DEFAULT_POLICY  # a multi-hop policy, or "widest_tree" for multi-tree plans
    version: int = 1  # revision of this job's plan
    plan_version: int = PLAN_VERSION  # format of this document
    value_count: int = VALUES_PER_PACKET
    pool_size: int = DEFAULT_POOL_SIZE
    result_mode: str = HAND_BUILT_RESULT_MODE
    op: str = DEFAULT_OP
    job_index: int = 0  # row of the switches' per-job counters
    topology: str = ""
    warnings: list[str] = field(default_factory=list)

    # -- convenience for agents ------------------------------------------------------------------
    def worker(self, name_or_rank: str | int) -> HostRef:
        """The worker with this name or rank.

        Raises
        ------
        KeyError
            No such worker in the job (a caller's mistake in code, not a user's).

        Examples
        --------
        >>> from controller.generators import star
        >>> from controller.planner import plan_job
        >>> plan_job(star(2), ["h1", "h2"], ["h3"]).worker(1).name
        'h2'
        """
        for w in self.workers:
            if w.name == name_or_rank or w.rank == name_or_rank:
                return w
        raise KeyError(f"no worker {name_or_rank!r} in job {self.job_id}")

    def tree(self, tree_id: int) -> TreePlan:
        """The tree with this id.

        Raises
        ------
        KeyError
            No such tree in the job.
        """
        for t in self.trees:
            if t.tree_id == tree_id:
                return t
        raise KeyError(f"no tree {tree_id} in job {self.job_id}")

    def weights(self) -> list[float]:
        """Each tree's share of the data, in tree order (they sum to 1)."""
        return [t.weight for t in self.trees]

    # -- serialisation ---------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The plan as plain data (what ``to_json`` writes and ``from_dict`` reads)."""
        return dataclasses.asdict(self)

    def to_json(self, indent: int | None = None) -> str:
        """The plan document agents load (``from_json``).

        Examples
        --------
        >>> from controller.generators import star
        >>> from controller.planner import plan_job
        >>> plan = plan_job(star(2), ["h1", "h2"], ["h3"])
        >>> JobPlan.from_json(plan.to_json()) == plan
        True
        """
        return json.dumps(self.to_dict(), indent=indent, sort_keys=False)

    @classmethod
    def from_dict(cls, data: Any) -> JobPlan:
        """A plan from plain data, checked field by field and then as a whole (``validate``).

        Parameters
        ----------
        data : dict
            A decoded plan document.

        Returns
        -------
        JobPlan

        Raises
        ------
        PlanFormatError
            Another format version, a missing or mistyped field (named by its path, e.g.
            ``plan.trees[0].rate``), or an inconsistency ``validate`` finds.

        Examples
        --------
        >>> JobPlan.from_dict({"plan_version": 0})
        Traceback (most recent call last):
        ...
        controller.errors.PlanFormatError: plan format version 0 is not supported (this code reads version 1)
        """
        if not isinstance(data, dict):
            raise PlanFormatError("a plan must be a JSON object")
        version = data.get("plan_version")
        if version != PLAN_VERSION:
            raise PlanFormatError(
                f"plan format version {version!r} is not supported (this code reads version {PLAN_VERSION})"
            )
        plan: JobPlan = _build(cls, data, "plan")
        plan.validate()
        return plan

    @classmethod
    def from_json(cls, text: str | bytes) -> JobPlan:
        """A plan from its JSON document (``from_dict`` after decoding).

        Raises
        ------
        PlanFormatError
            Not JSON, or what ``from_dict`` refuses.
        """
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise PlanFormatError(f"plan is not valid JSON: {exc}") from None
        return cls.from_dict(data)

    # -- consistency -----------------------------------------------------------------------------
    def validate(self) -> None:
        """Raise PlanFormatError naming the first inconsistency an agent would trip over.

        Raises
        ------
        PlanFormatError
            An unknown result mode or op, K out of range, ranks not 0..n-1, tree weights not summing to 1,
            a hop list missing, too long, not ending at its server or with a child index outside its fan-in.
        """
        self._check_settings()
        server_ids = {s.name: s.node_id for s in self.servers}
        for t in self.trees:
            if t.root not in server_ids:
                raise PlanFormatError(f"tree {t.tree_id} is rooted at {t.root}, not a server of the job")
            for w in self.workers:
                _check_grad_hops(t, w.name, server_ids[t.root])
                if w.name not in t.result_hops:
                    raise PlanFormatError(f"tree {t.tree_id} has no result hop list for {w.name}")
            if t.server.fan_in != len(t.server.children):
                raise PlanFormatError(
                    f"tree {t.tree_id}: server fan-in {t.server.fan_in} but {len(t.server.children)} children listed"
                )

    def _check_settings(self) -> None:
        """The job-wide fields: modes, K, pool size, trees, ranks 0..n-1, weights summing to 1."""
        if self.result_mode not in RESULT_MODES:
            raise PlanFormatError(f"result_mode {self.result_mode!r} is not one of {RESULT_MODES}")
        if self.op not in OPS:
            raise PlanFormatError(f"op {self.op!r} is not one of {OPS}")
        if not 0 < self.value_count <= MAX_VALUES_PER_PACKET:
            raise PlanFormatError(f"value_count {self.value_count} outside 1..{MAX_VALUES_PER_PACKET}")
        if self.pool_size <= 0:
            raise PlanFormatError(f"pool_size {self.pool_size} must be positive")
        if not self.trees:
            raise PlanFormatError(f"job {self.job_id} has no trees")
        ranks = sorted(w.rank for w in self.workers)
        if ranks != list(range(len(self.workers))):
            raise PlanFormatError(f"worker ranks {ranks} are not 0..{len(self.workers) - 1}")
        total = sum(t.weight for t in self.trees)
        if abs(total - 1.0) > 1e-6:
            raise PlanFormatError(f"tree weights sum to {total}, not 1")
        for c in self.switches:  # a tree's root multicasts the sums it completes: it needs both
            if c.root and not (c.aggregates and c.result_group):
                raise PlanFormatError(
                    f"switches: {c.switch} is tree {c.tree_id}'s root without aggregating or a result group"
                )


def _check_grad_hops(t: TreePlan, worker: str, server_id: int) -> None:
    """``worker``'s hop list in tree ``t`` exists, fits a packet, ends at the server, has child indices in range."""
    hops = t.grad_hops.get(worker)
    if not hops:
        raise PlanFormatError(f"tree {t.tree_id} has no hop list for worker {worker}")
    if len(hops) > MAX_HOPS:
        raise PlanFormatError(
            f"tree {t.tree_id}: hop list of {worker} has {len(hops)} entries, more than MAX_HOPS={MAX_HOPS}"
        )
    last = hops[-1]
    if last.switch_id != server_id or not last.aggregate or last.egress_port:
        raise PlanFormatError(
            f"tree {t.tree_id}: hop list of {worker} does not end with the terminal entry of server {t.root}"
        )
    for h in hops:  # a switch's slot tracks MAX_CHILDREN children, the server SERVER_MAX_CHILDREN
        limit = SERVER_MAX_CHILDREN if h is last else MAX_CHILDREN
        if h.aggregate and not 0 <= h.child < h.fan_in <= limit:
            raise PlanFormatError(
                f"tree {t.tree_id}: {worker} has child index {h.child} at {h.name or h.switch_id} with fan-in "
                f"{h.fan_in} (at most {limit} children there)"
            )


# -- generic dataclass loading -------------------------------------------------------------------


def _build(tp: Any, value: Any, where: str) -> Any:
    """Convert JSON data into the annotated type ``tp``, naming the field path on failure."""
    origin = typing.get_origin(tp)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        return _build_dataclass(tp, value, where)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _build(inner[0], value, where)
    if origin is list:
        if not isinstance(value, list):
            raise PlanFormatError(f"{where}: expected a list")
        (item,) = typing.get_args(tp)
        return [_build(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise PlanFormatError(f"{where}: expected an object")
        _, item = typing.get_args(tp)
        return {str(k): _build(item, v, f"{where}.{k}") for k, v in value.items()}
    if tp in _SCALARS:
        return _build_scalar(tp, value, where)
    return value


def _build_dataclass(tp: type, value: Any, where: str) -> Any:
    """An instance of dataclass ``tp`` from a JSON object: every field without a default must be there."""
    if not isinstance(value, dict):
        raise PlanFormatError(f"{where}: expected an object")
    hints = typing.get_type_hints(tp)
    kwargs = {}
    for f in dataclasses.fields(tp):
        if f.name in value:
            kwargs[f.name] = _build(hints[f.name], value[f.name], f"{where}.{f.name}")
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise PlanFormatError(f"{where}: missing field {f.name!r}")
    return tp(**kwargs)


# scalar type -> (accepts a JSON value, what the error says was expected); bool is an int to Python but not here
_SCALARS: dict[type, tuple[Callable[[Any], bool], str]] = {
    bool: (lambda v: isinstance(v, bool), "true/false"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "an integer"),
    float: (lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "a number"),
    str: (lambda v: isinstance(v, str), "a string"),
}


def _build_scalar(tp: type, value: Any, where: str) -> Any:
    """``value`` if it is a JSON ``tp`` (a float from an integer too), else a PlanFormatError naming ``where``."""
    accepts, expected = _SCALARS[tp]
    if not accepts(value):
        raise PlanFormatError(f"{where}: expected {expected}, got {value!r}")
    return float(value) if tp is float else value
