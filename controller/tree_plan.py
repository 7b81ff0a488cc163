"""From a reduction tree (parent pointers toward a server) to what agents and switches need.

Both planners end here, so a one-tree multi-hop plan and a K-tree plan have the same structure.
Given the tree, this module decides where to aggregate (merge points, every switch, or none: then
every switch forwards and the server sums one packet per worker, the parameter-server baseline), takes
slots for those switches (best effort: a full switch forwards and the next aggregation point or the
server completes the sum), numbers every aggregation point's children, and writes the hop lists,
the server's view, the multicast groups and the host-level tree.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

import networkx as nx

from controller.errors import PlanError
from controller.limits import MAX_CHILDREN, MAX_HOPS, SERVER_MAX_CHILDREN
from controller.options import DEFAULT_AGGREGATION, DEFAULT_RESULT_MODE
from controller.plan import ChildInfo, Hop, HostRef, McastMember, ServerView, SwitchJobConfig, TreePlan
from controller.resources import JobGrant, Resources
from controller.topology import Topology


@dataclass
class JobContext:
    """What every tree of one job shares while it is being planned."""

    topo: Topology
    graph: nx.Graph
    workers: list[HostRef]
    servers: list[HostRef]
    resources: Resources
    grant: JobGrant  # the job's id, counter row and groups, taken before any tree is built
    pool_size: int
    aggregation: str = DEFAULT_AGGREGATION
    result_mode: str = DEFAULT_RESULT_MODE
    warnings: list[str] = field(default_factory=list)
    switch_configs: list[SwitchJobConfig] = field(default_factory=list)
    first_tree_id: int = 0  # the job's trees are numbered from here (a re-planned job's new trees)
    root_results: bool = True  # multicast results: the switch aggregating every worker sends them down itself

    @property
    def job_id(self) -> int:
        """The job's id (its grant's)."""
        return self.grant.job_id


def edges_up(parent: dict[str, str], node: str) -> Iterator[tuple[str, str]]:
    """The links from ``node`` up to the root of a parent-pointer tree, as (child, parent), nearest first.

    Examples
    --------
    >>> list(edges_up({"a": "b", "b": "c"}, "a"))
    [('a', 'b'), ('b', 'c')]
    """
    while node in parent:
        yield node, parent[node]
        node = parent[node]


def prune(parent: dict[str, str], keep: list[str]) -> dict[str, str]:
    """The part of a parent-pointer tree on the paths from ``keep`` nodes to the root.

    Examples
    --------
    >>> prune({"a": "b", "b": "c", "d": "c"}, ["a"])
    {'a': 'b', 'b': 'c'}
    """
    pruned: dict[str, str] = {}
    for node in keep:
        for child, par in edges_up(parent, node):
            if child in pruned:
                break  # the rest of the way up is in already
            pruned[child] = par
    return pruned


def tree_height(graph: nx.Graph, parent: dict[str, str]) -> float:
    """Half the delay diameter of the tree: its height when hung from its centre (ms).

    The diameter of a tree is the distance from the node farthest from any node to the node farthest
    from that one (two searches).

    Parameters
    ----------
    graph : networkx.Graph
        Edges carry ``delay``.
    parent : dict
        Child -> parent pointers of the tree.

    Examples
    --------
    >>> from controller.generators import star
    >>> from controller.multihop import path_tree
    >>> g = star(2).to_graph()
    >>> tree_height(g, path_tree(g, "h3"))
    0.1
    """
    adj: dict[str, list[tuple[str, float]]] = {}  # node -> (neighbour, delay), in networkx's order
    for child, par in parent.items():
        delay = graph.edges[child, par]["delay"]
        adj.setdefault(child, []).append((par, delay))
        adj.setdefault(par, []).append((child, delay))
    if not adj:
        return 0.0
    return _eccentricity(adj, _farthest(adj, next(iter(adj)))) / 2.0


def _farthest(adj: dict[str, list[tuple[str, float]]], src: str) -> str:
    """The node of tree ``adj`` farthest from ``src``, found as networkx's Dijkstra finds it (same sums in
    the same order, so the same one of equally far nodes); in a tree every node is reached once."""
    dist: dict[str, float] = {}
    tick = itertools.count()
    fringe: list[tuple[float, int, str]] = [(0, next(tick), src)]
    while fringe:
        d, _, node = heapq.heappop(fringe)
        dist[node] = d
        for nb, delay in adj[node]:
            if nb not in dist:
                heapq.heappush(fringe, (d + delay, next(tick), nb))
    return max(dist, key=dist.__getitem__)


def _eccentricity(adj: dict[str, list[tuple[str, float]]], src: str) -> float:
    """The delay from ``src`` to the node of tree ``adj`` farthest from it (the same sums as ``_farthest``)."""
    dist: dict[str, float] = {src: 0}
    stack = [src]
    while stack:
        node = stack.pop()
        d = dist[node]
        for nb, delay in adj[node]:
            if nb not in dist:
                dist[nb] = d + delay
                stack.append(nb)
    return max(dist.values())


@dataclass
class TreeShape:
    """A tree pruned to its workers' paths, in the orders every phase of ``build_tree`` walks it."""

    root: str
    parent: dict[str, str]  # child -> parent, only nodes on a worker's path
    kids: dict[str, list[str]]  # node -> children, lowest-ranked worker below first
    order: list[str]  # nodes from the root down (breadth-first): reversed, children come before parents
    rank: dict[str, int]  # worker -> rank
    min_rank: dict[str, int]  # node -> the lowest rank at or below it

    def ranks_under(self, node: str) -> list[int]:
        """The ranks of the workers at or below ``node``, sorted."""
        if node in self.rank:
            return [self.rank[node]]
        return sorted(r for c in self.kids[node] for r in self.ranks_under(c))


@dataclass
class Aggregation:
    """Where one tree aggregates: what flows reach each node and which switches sum them."""

    flows_in: dict[str, list[str]]  # node -> the flows arriving there (a worker or an aggregating switch)
    aggregates: dict[str, bool]  # switch -> whether it sums its flows
    slot_base: dict[str, int]  # aggregating switch -> its first slot

    def child_index(self, node: str, flow: str) -> int:
        """The index ``node`` knows ``flow`` by."""
        return self.flows_in[node].index(flow)


def build_tree(
    ctx: JobContext,
    tree_id: int,
    root: str,
    parent: dict[str, str],
    rate: float,
    weight: float,
    height: float | None = None,
) -> TreePlan:
    """Plan one tree rooted at server ``root``: where to aggregate, slots, child indices, hop lists.

    Parameters
    ----------
    ctx : JobContext
        The job being planned; its resources are charged for slots and a multicast group, its
        ``switch_configs`` and ``warnings`` grow.
    tree_id : int
    root : str
        The server this tree ends at.
    parent : dict
        Parent pointers toward ``root`` covering every worker (pruned to the workers' paths here).
    rate, weight : float
        The tree's rate (Mbit/s) and its share of the job's data.
    height : float or None
        The tree's height if known (ms); computed otherwise.

    Returns
    -------
    TreePlan

    Raises
    ------
    PlanError
        A worker without a path, a hop list longer than the header holds, a server fan-in above
        ``SERVER_MAX_CHILDREN``.
    ResourceError
        No multicast group left (multicast results).
    """
    shape = tree_shape(ctx, tree_id, root, parent)
    agg = place_aggregation(ctx, tree_id, shape)
    check_server_fan_in(ctx, tree_id, shape, agg)
    grad_hops, result_hops = hop_lists(ctx, tree_id, shape, agg)
    server = server_view(ctx, shape, agg)
    ctx.switch_configs.extend(switch_configs(ctx, tree_id, shape, agg))
    host_parent, host_children = host_tree(shape)
    return TreePlan(
        tree_id=tree_id,
        root=root,
        rate=float(rate),
        weight=float(weight),
        height=tree_height(ctx.graph, shape.parent) if height is None else float(height),
        edges=[[c, p] for c, p in shape.parent.items()],
        aggregation_points=[n for n in shape.order if agg.aggregates.get(n)],
        grad_hops=grad_hops,
        result_hops=result_hops,
        server=server,
        host_parent=host_parent,
        host_children=host_children,
    )


def tree_shape(ctx: JobContext, tree_id: int, root: str, parent: dict[str, str]) -> TreeShape:
    """``parent`` pruned to the workers' paths, its nodes from the root down, children by lowest rank.

    Raises
    ------
    PlanError
        A worker that ``parent`` does not lead to ``root``.
    """
    rank = {w.name: w.rank for w in ctx.workers}
    parent = prune(parent, [w.name for w in ctx.workers])
    for w in ctx.workers:
        if w.name not in parent:
            raise PlanError(f"tree {tree_id}: worker {w.name} has no path to server {root}")
    below: dict[str, list[str]] = {}
    for child, par in parent.items():
        below.setdefault(par, []).append(child)
    order = [root]  # breadth-first from the root, children in the order ``parent`` lists them
    for node in order:
        order.extend(below.get(node, ()))
    kids = {node: below[node] for node in order if node in below}
    min_rank: dict[str, int] = {}
    for node in reversed(order):
        min_rank[node] = rank[node] if node in rank else min(min_rank[c] for c in kids[node])
    for children in kids.values():
        children.sort(key=min_rank.__getitem__)
    return TreeShape(root, parent, kids, order, rank, min_rank)


def place_aggregation(ctx: JobContext, tree_id: int, shape: TreeShape) -> Aggregation:
    """Bottom-up: the flows reaching each node, whether it aggregates (``ctx.aggregation``), its slots.

    A switch whose fan-in is above ``MAX_CHILDREN`` or that has no free slots forwards its flows (a warning
    says so): the next aggregation point or the server completes the sums.
    """
    flows_out: dict[str, list[str]] = {}
    agg = Aggregation({}, {}, {})
    for node in reversed(shape.order):
        if node in shape.rank:
            flows_out[node] = [node]
            continue
        incoming = sorted((f for c in shape.kids.get(node, ()) for f in flows_out[c]), key=shape.min_rank.__getitem__)
        agg.flows_in[node] = incoming
        if node == shape.root:
            continue
        aggregates = _take_aggregation_slots(ctx, tree_id, shape.root, node, len(incoming), agg)
        agg.aggregates[node] = aggregates
        flows_out[node] = [node] if aggregates else incoming
    return agg


def _take_aggregation_slots(ctx: JobContext, tree_id: int, root: str, node: str, fan_in: int, agg: Aggregation) -> bool:
    """Whether switch ``node`` aggregates ``fan_in`` flows: wanted by ``ctx.aggregation`` and slots taken."""
    minimum = 2 if ctx.aggregation == "merge" else 1
    if ctx.aggregation == "none" or fan_in < minimum:
        return False
    if fan_in > MAX_CHILDREN:
        ctx.warnings.append(
            f"{node} would need fan-in {fan_in} > {MAX_CHILDREN}: it forwards tree {tree_id} without aggregating"
        )
        return False
    base = ctx.resources.take_slots(ctx.grant, node, tree_id, 2 * ctx.pool_size)
    if base is None:
        ctx.warnings.append(
            f"{node} has no free slots (needs {2 * ctx.pool_size}, "
            f"{ctx.resources.slots.free(node)} free): the next aggregation point "
            f"or server {root} completes those sums (tree {tree_id})"
        )
        return False
    agg.slot_base[node] = base
    return True


def check_server_fan_in(ctx: JobContext, tree_id: int, shape: TreeShape, agg: Aggregation) -> None:
    """Refuse a tree whose server would hear more children than a server agent tracks
    (``SERVER_MAX_CHILDREN``: the most the hop entry's 8-bit fan-in says; ``JobPlan.validate`` refuses
    such a plan too, so it is never produced).

    Raises
    ------
    PlanError
        The server would receive more than ``SERVER_MAX_CHILDREN`` flows; the message names the switches
        that forward without aggregating because their own fan-in is above a switch's ``MAX_CHILDREN``.
    """
    root, fan_in = shape.root, len(agg.flows_in[shape.root])
    if fan_in <= SERVER_MAX_CHILDREN:
        return
    crowded = [
        n
        for n in shape.order[1:]
        if not agg.aggregates.get(n, True) and ctx.aggregation != "none" and len(agg.flows_in[n]) > MAX_CHILDREN
    ]
    verb = "forwards" if len(crowded) == 1 else "forward"
    why = f"; {', '.join(crowded)} {verb} without aggregating (fan-in above {MAX_CHILDREN})" if crowded else ""
    raise PlanError(
        f"server {root} would need fan-in {fan_in} > {SERVER_MAX_CHILDREN}, the children a server tracks, "
        f"in tree {tree_id}{why}; plan fewer workers per job or aggregate at switches"
    )


def _port(graph: nx.Graph, u: str, v: str) -> int:
    """``u``'s port toward its neighbour ``v``."""
    return int(graph.adj[u][v]["ports"][u])


def hop_lists(
    ctx: JobContext, tree_id: int, shape: TreeShape, agg: Aggregation
) -> tuple[dict[str, list[Hop]], dict[str, list[Hop]]]:
    """Every worker's gradient hops (up to and including the server) and result hops (back down).

    Raises
    ------
    PlanError
        A path with more hops than a hop list holds.
    """
    topo, root, parent, aggregates = ctx.topo, shape.root, shape.parent, agg.aggregates
    switches = [n for n in shape.order[1:] if n not in shape.rank]
    device = {n: topo.switch(n).device_id for n in switches}
    port_up = {n: _port(ctx.graph, n, parent[n]) for n in switches}
    port_down = {n: _port(ctx.graph, parent[n], n) for n in shape.order[1:] if parent[n] != root}
    fan_in = {n: len(flows) for n, flows in agg.flows_in.items()}
    index: dict[str, dict[str, int]] = {}  # aggregation point or server -> flow -> its child index
    for n in [*(n for n in switches if aggregates[n]), root]:
        at: dict[str, int] = {}
        index[n] = at
        for i, f in enumerate(agg.flows_in[n]):
            at.setdefault(f, i)
    server_id = topo.host(root).node_id
    grad_hops: dict[str, list[Hop]] = {}
    result_hops: dict[str, list[Hop]] = {}
    for w in ctx.workers:
        hops: list[Hop] = []
        path: list[str] = []  # the switches, without the server
        node, flow = parent[w.name], w.name
        while node != root:
            path.append(node)
            if aggregates[node]:
                hops.append(Hop(device[node], True, fan_in[node], index[node][flow], port_up[node], node))
                flow = node
            else:
                hops.append(Hop(device[node], False, 0, 0, port_up[node], node))
            node = parent[node]
        hops.append(Hop(server_id, True, fan_in[root], index[root][flow], 0, root))
        if len(hops) > MAX_HOPS:
            raise PlanError(
                f"tree {tree_id}: the path of {w.name} to {root} crosses {len(path)} switches; "
                f"a hop list holds at most {MAX_HOPS - 1} plus the server"
            )
        grad_hops[w.name] = hops
        result_hops[w.name] = [
            Hop(device[s], aggregates[s], 0, 0, port_down[below], s)
            for s, below in zip(reversed(path), [*reversed(path[:-1]), w.name], strict=True)
        ]
    return grad_hops, result_hops


def server_view(ctx: JobContext, shape: TreeShape, agg: Aggregation) -> ServerView:
    """What the server expects: its fan-in and which child index is which flow."""
    root, flows = shape.root, agg.flows_in[shape.root]
    children = [
        ChildInfo(i, f, ctx.topo.node_id(f), "worker" if f in shape.rank else "switch", shape.ranks_under(f))
        for i, f in enumerate(flows)
    ]
    first = shape.kids[root][0]
    return ServerView(
        root,
        ctx.topo.host(root).node_id,
        len(flows),
        children,
        first_switch=first,
        first_port=_port(ctx.graph, first, root),
    )


def switch_configs(ctx: JobContext, tree_id: int, shape: TreeShape, agg: Aggregation) -> list[SwitchJobConfig]:
    """Every switch's entries for this tree, from the root down; takes a multicast group for multicast results.

    Raises
    ------
    ResourceError
        No multicast group left.
    """
    topo = ctx.topo
    group = ctx.resources.take_group(ctx.grant) if ctx.result_mode == "multicast" else 0
    root = tree_root_switch(agg, shape) if group and ctx.root_results else None
    configs = []
    for node in shape.order:
        if node == shape.root or node in shape.rank:
            continue
        members = []
        if group:
            for c in shape.kids[node]:
                rid = topo.host(c).index if topo.is_host(c) else 0
                members.append(McastMember(_port(ctx.graph, node, c), rid, c))
            # the root sends the server no copy of the sums it completes (a member with replica id
            # ROOT_UP_REPLICA would: p4src/ina.p4, egress): after a re-plan around a dead root, the workers'
            # own values complete its chunks on the recovery tree (worker/stream.py, RoundTail)
        aggregates = agg.aggregates[node]
        configs.append(
            SwitchJobConfig(
                switch=node,
                device_id=topo.switch(node).device_id,
                tree_id=tree_id,
                job_index=ctx.grant.job_index,
                aggregates=aggregates,
                slot_base=agg.slot_base.get(node, 0),
                pool_size=ctx.pool_size,
                max_fan_in=len(agg.flows_in[node]) if aggregates else 0,
                result_group=group,
                members=members,
                root=node == root,
            )
        )
    return configs


def tree_root_switch(agg: Aggregation, shape: TreeShape) -> str | None:
    """The switch that aggregates every worker of the tree, if one does: the server's only flow is an
    aggregating switch's. It can send the RESULTs down itself (docs/protocol.md, "Root multicast")."""
    flows = agg.flows_in.get(shape.root, [])
    if len(flows) == 1 and agg.aggregates.get(flows[0]):
        return flows[0]
    return None


def host_tree(shape: TreeShape) -> tuple[dict[str, str | None], dict[str, list[str]]]:
    """The tree between hosts: each switch is represented by the lowest-ranked worker below it."""
    root = shape.root
    rep = {root: root}
    for node in reversed(shape.order):
        if node != root:
            rep[node] = node if node in shape.rank else rep[shape.kids[node][0]]
    host_parent: dict[str, str | None] = {root: None}
    host_children: dict[str, list[str]] = {root: []}
    for node in shape.order[1:]:
        host_children.setdefault(rep[node], [])
        r, rp = rep[node], rep[shape.parent[node]]
        if r != rp and r not in host_parent:
            host_parent[r] = rp
            host_children.setdefault(rp, []).append(r)
    return host_parent, host_children
