"""From a reduction tree (parent pointers toward a server) to what agents and switches need.

Both planners end here, so a one-tree multi-hop plan and a K-tree plan have the same structure.
Given the tree, this module decides where to aggregate (merge points, every switch, or none: then
every switch forwards and the server sums one packet per worker, the parameter-server baseline), takes
slots for those switches (best effort: a full switch forwards and the next aggregation point or the
server completes the sum), numbers every aggregation point's children, and writes the hop lists,
the server's view, the multicast groups and the host-level tree.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import networkx as nx

from controller.errors import PlanError
from controller.limits import MAX_CHILDREN, MAX_HOPS
from controller.options import DEFAULT_AGGREGATION, DEFAULT_RESULT_MODE
from controller.plan import ChildInfo, Hop, HostRef, McastMember, ServerView, SwitchJobConfig, TreePlan
from controller.resources import JobGrant, Resources
from controller.topology import Topology

MAX_SERVER_FAN_IN = 255  # the child field of a hop entry is 8 bits


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

    @property
    def job_id(self) -> int:
        """The job's id (its grant's)."""
        return self.grant.job_id


def prune(parent: dict[str, str], keep: list[str]) -> dict[str, str]:
    """The part of a parent-pointer tree on the paths from ``keep`` nodes to the root.

    Examples
    --------
    >>> prune({"a": "b", "b": "c", "d": "c"}, ["a"])
    {'a': 'b', 'b': 'c'}
    """
    pruned: dict[str, str] = {}
    for node in keep:
        while node in parent and node not in pruned:
            pruned[node] = parent[node]
            node = parent[node]
    return pruned


def tree_height(graph: nx.Graph, parent: dict[str, str]) -> float:
    """Half the delay diameter of the tree: its height when hung from its centre (ms).

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
    adj: dict[str, list[tuple[str, float]]] = {}
    for child, par in parent.items():
        d = graph.edges[child, par]["delay"]
        adj.setdefault(child, []).append((par, d))
        adj.setdefault(par, []).append((child, d))
    if not adj:
        return 0.0

    def farthest(src: str) -> tuple[str, float]:
        dist = {src: 0.0}
        stack = [src]
        while stack:
            u = stack.pop()
            for v, d in adj[u]:
                if v not in dist:
                    dist[v] = dist[u] + d
                    stack.append(v)
        far = max(dist, key=dist.__getitem__)
        return far, dist[far]

    end, _ = farthest(next(iter(adj)))
    _, diameter = farthest(end)
    return diameter / 2.0


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
        A worker without a path, a hop list longer than the header holds, a server fan-in above 255.
    ResourceError
        No multicast group left (multicast results).
    """
    topo, graph = ctx.topo, ctx.graph
    rank = {w.name: w.rank for w in ctx.workers}
    parent = prune(parent, [w.name for w in ctx.workers])
    for w in ctx.workers:
        if w.name not in parent:
            raise PlanError(f"tree {tree_id}: worker {w.name} has no path to server {root}")
    kids: dict[str, list[str]] = {}
    for child, par in parent.items():
        kids.setdefault(par, []).append(child)

    # Nodes from the root down (BFS), so reversed order visits children before parents.
    order = [root]
    for node in order:
        order.extend(kids.get(node, ()))
    min_rank: dict[str, int] = {}
    for node in reversed(order):
        if node in rank:
            min_rank[node] = rank[node]
        elif node in kids:
            min_rank[node] = min(min_rank[c] for c in kids[node])
    for node in kids:
        kids[node].sort(key=min_rank.__getitem__)

    # Bottom-up: the flows reaching each node, whether it aggregates, its slots.
    flows_in: dict[str, list[str]] = {}
    flows_out: dict[str, list[str]] = {}
    aggregates: dict[str, bool] = {}
    slot_base: dict[str, int] = {}
    for node in reversed(order):
        if node in rank:
            flows_out[node] = [node]
            continue
        incoming = [f for c in kids.get(node, ()) for f in flows_out[c]]
        incoming.sort(key=min_rank.__getitem__)
        flows_in[node] = incoming
        if node == root:
            continue
        want = ctx.aggregation != "none" and len(incoming) >= (2 if ctx.aggregation == "merge" else 1)
        agg = False
        if want and len(incoming) > MAX_CHILDREN:
            ctx.warnings.append(
                f"{node} would need fan-in {len(incoming)} > {MAX_CHILDREN}: it forwards "
                f"tree {tree_id} without aggregating"
            )
        elif want:
            base = ctx.resources.take_slots(ctx.grant, node, tree_id, 2 * ctx.pool_size)
            if base is None:
                ctx.warnings.append(
                    f"{node} has no free slots (needs {2 * ctx.pool_size}, "
                    f"{ctx.resources.slots.free(node)} free): the next aggregation point "
                    f"or server {root} completes those sums (tree {tree_id})"
                )
            else:
                agg = True
                slot_base[node] = base
        aggregates[node] = agg
        flows_out[node] = [node] if agg else incoming

    server_flows = flows_in[root]
    if len(server_flows) > MAX_SERVER_FAN_IN:
        raise PlanError(
            f"server {root} would need fan-in {len(server_flows)} > {MAX_SERVER_FAN_IN} "
            f"(tree {tree_id}); add switch slots or servers"
        )
    if len(server_flows) > MAX_CHILDREN:
        ctx.warnings.append(f"server {root} has fan-in {len(server_flows)} > {MAX_CHILDREN} in tree {tree_id}")
    child_index = {node: {f: i for i, f in enumerate(flows)} for node, flows in flows_in.items()}

    def port(u: str, v: str) -> int:
        return int(graph.adj[u][v]["ports"][u])

    def ranks_under(node: str) -> list[int]:
        if node in rank:
            return [rank[node]]
        return sorted(r for c in kids[node] for r in ranks_under(c))

    grad_hops: dict[str, list[Hop]] = {}
    result_hops: dict[str, list[Hop]] = {}
    for w in ctx.workers:
        hops: list[Hop] = []
        path: list[str] = []
        flow = w.name
        node = parent[w.name]
        while node != root:
            path.append(node)
            dev = topo.switch(node).device_id
            if aggregates[node]:
                hops.append(
                    Hop(dev, True, len(flows_in[node]), child_index[node][flow], port(node, parent[node]), node)
                )
                flow = node
            else:
                hops.append(Hop(dev, False, 0, 0, port(node, parent[node]), node))
            node = parent[node]
        server = topo.host(root)
        hops.append(Hop(server.node_id, True, len(server_flows), child_index[root][flow], 0, root))
        if len(hops) > MAX_HOPS:
            raise PlanError(
                f"tree {tree_id}: the path of {w.name} to {root} crosses {len(path)} switches; "
                f"a hop list holds at most {MAX_HOPS - 1} plus the server"
            )
        grad_hops[w.name] = hops
        below = [w.name] + path
        result_hops[w.name] = [
            Hop(topo.switch(s).device_id, aggregates[s], 0, 0, port(s, below[i]), s)
            for i, s in reversed(list(enumerate(path)))
        ]

    children = []
    for i, f in enumerate(server_flows):
        kind = "worker" if f in rank else "switch"
        children.append(ChildInfo(i, f, topo.node_id(f), kind, ranks_under(f)))
    first = kids[root][0]
    server_view = ServerView(
        root, topo.host(root).node_id, len(server_flows), children, first_switch=first, first_port=port(first, root)
    )

    group = 0
    if ctx.result_mode == "multicast":
        group = ctx.resources.take_group(ctx.grant)
    for node in order:
        if node == root or node in rank:
            continue
        members = []
        if group:
            for c in kids[node]:
                rid = topo.host(c).index if topo.is_host(c) else 0
                members.append(McastMember(port(node, c), rid, c))
        agg = aggregates[node]
        ctx.switch_configs.append(
            SwitchJobConfig(
                switch=node,
                device_id=topo.switch(node).device_id,
                tree_id=tree_id,
                job_index=ctx.grant.job_index,
                aggregates=agg,
                slot_base=slot_base.get(node, 0),
                pool_size=ctx.pool_size,
                max_fan_in=len(flows_in[node]) if agg else 0,
                result_group=group,
                members=members,
            )
        )

    # Host-level tree: each switch is represented by the lowest-ranked worker below it.
    rep = {root: root}
    for node in reversed(order):
        if node != root:
            rep[node] = node if node in rank else rep[kids[node][0]]
    host_parent: dict[str, str | None] = {root: None}
    host_children: dict[str, list[str]] = {root: []}
    for node in order[1:]:
        host_children.setdefault(rep[node], [])
        r, rp = rep[node], rep[parent[node]]
        if r != rp and r not in host_parent:
            host_parent[r] = rp
            host_children.setdefault(rp, []).append(r)

    return TreePlan(
        tree_id=tree_id,
        root=root,
        rate=float(rate),
        weight=float(weight),
        height=tree_height(graph, parent) if height is None else float(height),
        edges=[[c, p] for c, p in parent.items()],
        aggregation_points=[n for n in order if aggregates.get(n)],
        grad_hops=grad_hops,
        result_hops=result_hops,
        server=server_view,
        host_parent=host_parent,
        host_children=host_children,
    )
