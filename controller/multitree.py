"""Seed 2, multiple spanning trees under a height bound H and a bandwidth floor r.

Reading of the method as implemented here:

1. Residual bandwidth of a link = its bandwidth minus what earlier jobs reserved.
2. A tree grows from a start node drawn by a seeded RNG among the switches and the job's hosts.
   Each step adds the widest link (largest residual, ties to the lower link id) from the tree to a
   node not yet in it, provided the link's residual is at least r and every pairwise delay distance
   in the grown tree stays within 2H. Hosts that are not the job's are never added; a host is a leaf.
   The diameter check is exact and cheap: for a tree with diameter endpoints (a, b), the farthest node
   from u is a or b, so adding v under u keeps the diameter within 2H iff
   max(d(u,a), d(u,b)) + delay(u,v) <= 2H. A link that fails the check can never pass later (the tree
   only grows), so it is dropped.
3. A tree that does not reach all of the job's hosts fails. A found tree is cut down to the links
   between the workers and its root server; its rate b is the smallest residual along those links
   (capped by the patent's per-tree rate b when ``tree_rate`` is given) and their residuals drop by b.
4. Step 2-3 repeat with fresh start nodes until no tree can be found. A bad start node can block a
   tree that another start would find, so "no tree" means START_ATTEMPTS random starts all failed.
5. The height bound is then lowered by binary search (fixed number of halvings) while the total rate
   stays at least (1 - loss_bound) of the rate found with the original bound.
6. The K trees with the largest rates are kept, and their rates are allocated again, in the order
   they were found, on the residual bandwidths (so links freed by dropped trees are used and no link
   carries more than its capacity). The job stripes chunks over the trees in proportion to the rates.

The i-th tree found is rooted at server i mod (number of servers). "Height" of a tree is half its delay diameter.
"""

from __future__ import annotations

import heapq
import math
import random
from dataclasses import dataclass
from typing import Any

import networkx as nx

from controller.errors import PlanError
from controller.limits import MAX_HOPS
from controller.multihop import links_in_order
from controller.options import PlanOptions
from controller.plan import TreePlan
from controller.tree_plan import JobContext, build_tree, edges_up, prune, tree_height

Adjacency = dict[str, list[tuple[str, dict[str, Any]]]]  # node -> (neighbour, link attributes), by link id

HEIGHT_SEARCH_STEPS = 8
START_ATTEMPTS = 8  # start nodes tried before concluding that no tree can be found
MAX_TREES_FOUND = 256  # safety stop for step 4 when a small per-tree rate b is given


@dataclass
class FoundTree:
    edges: list[tuple[str, str]]  # undirected tree links (u, v) of the grown tree
    parent: dict[str, str]  # pruned tree, parent pointers toward ``root``
    root: str
    links: list[int]  # link ids of the pruned tree
    rate: float


@dataclass
class _GrowingTree:
    """A tree being grown: each node's growth parent, delay from the start and depth in links."""

    up: dict[str, tuple[str, float, int]]  # node -> (growth parent, link delay, link id)
    depth: dict[str, float]
    level: dict[str, int]

    def distance(self, x: str, y: str) -> float:
        """Delay between two nodes of the tree (through their lowest common ancestor)."""
        dx, dy = self.depth[x], self.depth[y]
        while self.level[x] > self.level[y]:
            x = self.up[x][0]
        while self.level[y] > self.level[x]:
            y = self.up[y][0]
        while x != y:
            x, y = self.up[x][0], self.up[y][0]
        return dx + dy - 2 * self.depth[x]

    def add(self, u: str, v: str, delay: float, eid: int) -> None:
        """Hang ``v`` under ``u`` over link ``eid``."""
        self.up[v] = (u, delay, eid)
        self.depth[v] = self.depth[u] + delay
        self.level[v] = self.level[u] + 1


def _grow(
    ctx: JobContext, adj: Adjacency, allowed: set[str], residual: dict[int, float], r: float, limit: float, start: str
) -> dict[str, tuple[str, float, int]]:
    """Grow one tree from ``start``; return node -> (growth parent, delay, link id) for every node it
    reached (the caller checks that the job's hosts are among them)."""
    kinds = ctx.graph.nodes
    tree = _GrowingTree({}, {start: 0.0}, {start: 0})
    a = b = start  # the ends of the tree's diameter
    diameter = 0.0
    heap: list[tuple[float, int, str, str, float]] = []

    def push_from(u: str) -> None:
        """Offer ``u``'s links to allowed nodes outside the tree with residual >= r, widest first."""
        for v, e in adj[u]:
            if v not in tree.depth and v in allowed and residual[e["eid"]] >= r:
                heapq.heappush(heap, (-residual[e["eid"]], e["eid"], u, v, e["delay"]))

    push_from(start)
    while heap:
        _, eid, u, v, d = heapq.heappop(heap)
        if v in tree.depth:
            continue
        da, db = tree.distance(u, a) + d, tree.distance(u, b) + d
        if max(da, db) > limit:
            continue
        tree.add(u, v, d, eid)
        if da >= db and da > diameter:
            b, diameter = v, da
        elif db > diameter:
            a, diameter = v, db
        if kinds[v]["kind"] != "host":
            push_from(v)
    return tree.up


def _find_trees(
    ctx: JobContext, capacity: dict[int, float], r: float, limit: float, rate_cap: float | None, seed: int
) -> list[FoundTree]:
    adj = {node: links_in_order(ctx.graph, node) for node in ctx.graph}
    job_hosts = [h.name for h in ctx.workers] + [h.name for h in ctx.servers]
    allowed = {n for n, k in ctx.graph.nodes(data="kind") if k == "switch"} | set(job_hosts)
    starts = sorted(allowed)
    rng = random.Random(seed)
    residual = dict(capacity)
    found: list[FoundTree] = []
    while len(found) < MAX_TREES_FOUND:
        for _ in range(START_ATTEMPTS):
            start = rng.choice(starts)
            up = _grow(ctx, adj, allowed, residual, r, limit, start)
            if all(h == start or h in up for h in job_hosts):
                break
        else:
            break
        root = ctx.servers[len(found) % len(ctx.servers)].name
        grown = nx.Graph([(u, v) for v, (u, _, _) in up.items()])
        parent = prune(dict(nx.bfs_predecessors(grown, root)), [w.name for w in ctx.workers])
        links = [ctx.graph.adj[c][p]["eid"] for c, p in parent.items()]
        rate = _take_rate(residual, links, rate_cap)
        found.append(FoundTree([(u, v) for v, (u, _, _) in up.items()], parent, root, links, rate))
    return found


def _too_long(ctx: JobContext, tree: FoundTree) -> str | None:
    """The first worker whose path in ``tree`` crosses more switches than a hop list holds, if any."""
    for w in ctx.workers:
        switches = sum(1 for _ in edges_up(tree.parent, w.name)) - 1
        if switches > MAX_HOPS - 1:
            return w.name
    return None


def plan_trees(ctx: JobContext, options: PlanOptions) -> tuple[list[TreePlan], dict[int, float]]:
    """Seed 2: up to K spanning trees under the height bound H with residual bandwidth r, rates b.

    Parameters
    ----------
    ctx : JobContext
        The job being planned (trees are built with ``build_tree``).
    options : PlanOptions
        ``trees`` (K), ``height`` (H), ``min_bw`` (r), ``tree_rate`` (b), ``loss_bound``, ``seed``.

    Returns
    -------
    trees : list of TreePlan
        Weighted in proportion to their rates.
    reserved : dict
        Link id -> Mbit/s the trees use (for ``Resources.reserve``).

    Raises
    ------
    PlanError
        No tree under the bounds, or every tree found has a path longer than a hop list holds.

    Examples
    --------
    >>> from controller.generators import leaf_spine
    >>> from controller.planner import plan_job, PlanOptions
    >>> plan = plan_job(leaf_spine(), ["h1", "h2", "h3"], ["h9"], PlanOptions(planner="multitree", trees=2))
    >>> round(sum(t.weight for t in plan.trees), 6)
    1.0
    """
    reserved = ctx.resources.reserved()
    capacity = {link.id: link.bandwidth - reserved.get(link.id, 0.0) for link in ctx.topo.links}
    trees = _lowest_trees(ctx, capacity, options)
    kept = _widest_usable(ctx, trees, options.trees)
    rates = _allocate(kept, capacity, options.tree_rate)
    whole = sum(rates)
    reserve: dict[int, float] = {}
    plans = []
    for i, (t, rate) in enumerate(zip(kept, rates, strict=True)):
        for eid in t.links:
            reserve[eid] = reserve.get(eid, 0.0) + rate
        plans.append(build_tree(ctx, ctx.first_tree_id + i, t.root, t.parent, rate, rate / whole))
    return plans, reserve


def _lowest_trees(ctx: JobContext, capacity: dict[int, float], options: PlanOptions) -> list[FoundTree]:
    """Steps 2-5: the trees under the height bound, then under the lowest bound the binary search finds
    that keeps (1 - loss_bound) of their total rate.

    Raises
    ------
    PlanError
        No tree under the bounds.
    """
    r = options.min_bw
    limit = 2 * options.height if options.height is not None else math.inf
    trees = _find_trees(ctx, capacity, r, limit, options.tree_rate, options.seed)
    if not trees:
        bound = f" and height <= {options.height} ms" if options.height is not None else ""
        raise PlanError(
            f"no tree spans all {len(ctx.workers) + len(ctx.servers)} hosts of the job with "
            f"residual bandwidth >= {r} Mbit/s{bound}"
        )
    target = (1.0 - options.loss_bound) * _total_rate(trees)
    hi = max(_height_of(ctx, t) for t in trees)
    lo = 0.0
    for _ in range(HEIGHT_SEARCH_STEPS):
        mid = (lo + hi) / 2
        lower = _find_trees(ctx, capacity, r, 2 * mid, options.tree_rate, options.seed)
        if lower and _total_rate(lower) >= target:
            trees, hi = lower, mid
        else:
            lo = mid
    return trees


def _total_rate(trees: list[FoundTree]) -> float:
    return sum(t.rate for t in trees)


def _widest_usable(ctx: JobContext, trees: list[FoundTree], k: int) -> list[FoundTree]:
    """Step 6's choice: the ``k`` widest trees whose paths fit a hop list, in the order they were found.

    Raises
    ------
    PlanError
        Every tree has a path longer than a hop list holds.
    """
    usable = []
    for t in trees:
        worker = _too_long(ctx, t)
        if worker:
            ctx.warnings.append(
                f"a tree rooted at {t.root} was dropped: the path of {worker} crosses more than {MAX_HOPS - 1} switches"
            )
        else:
            usable.append(t)
    if not usable:
        raise PlanError(f"every tree found has a path longer than {MAX_HOPS - 1} switches")
    kept_ids = {id(t) for t in sorted(usable, key=lambda t: -t.rate)[:k]}
    kept = [t for t in usable if id(t) in kept_ids]
    if len(usable) > len(kept):
        ctx.warnings.append(f"{len(usable)} trees found, kept the {len(kept)} widest (K={k})")
    return kept


def _allocate(trees: list[FoundTree], capacity: dict[int, float], rate_cap: float | None) -> list[float]:
    """Step 6's rates: each tree in turn takes the smallest residual along its links (at most ``rate_cap``)."""
    residual = dict(capacity)
    return [_take_rate(residual, t.links, rate_cap) for t in trees]


def _take_rate(residual: dict[int, float], links: list[int], rate_cap: float | None) -> float:
    """The rate of a tree over ``links``: their smallest residual (at most ``rate_cap``), taken off each of them."""
    rate = min(residual[eid] for eid in links)
    if rate_cap is not None:
        rate = min(rate, rate_cap)
    for eid in links:
        residual[eid] -= rate
    return rate


def _height_of(ctx: JobContext, tree: FoundTree) -> float:
    return tree_height(ctx.graph, tree.parent)
