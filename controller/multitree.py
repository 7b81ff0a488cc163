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
   only grows), so it is dropped; a node's links that fail it when the node joins are never offered.
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
import itertools
import math
import random
from dataclasses import dataclass, field

import networkx as nx

from controller.errors import PlanError
from controller.limits import MAX_HOPS
from controller.options import PlanOptions
from controller.plan import TreePlan
from controller.tree_plan import JobContext, build_tree, edges_up, prune, tree_height

Links = dict[str, list[tuple[str, int, float]]]  # node -> (neighbour, link id, delay), by link id

HEIGHT_SEARCH_STEPS = 8
START_ATTEMPTS = 8  # start nodes tried before concluding that no tree can be found
MAX_TREES_FOUND = 256  # safety stop for step 4 when a small per-tree rate b is given
LIMIT_SLACK = 1e-9  # ms: a link is left out when it is over the bound by more than rounding could explain


@dataclass
class FoundTree:
    edges: list[tuple[str, str]]  # undirected tree links (u, v) of the grown tree
    parent: dict[str, str]  # pruned tree, parent pointers toward ``root``
    root: str
    links: list[int]  # link ids of the pruned tree
    rate: float
    height: float | None = None  # half the pruned tree's delay diameter, once measured (ms)


@dataclass
class _GrowingTree:
    """A tree being grown: each node's growth parent, delay from the start and depth in links, and the
    ends of its delay diameter.

    A node's distance to a diameter end is kept until that end moves (distances between the tree's
    nodes never change as it grows): most links offered come from a node already measured."""

    up: dict[str, tuple[str, float, int]]  # node -> (growth parent, link delay, link id)
    depth: dict[str, float]
    level: dict[str, int]
    a: str  # the ends of the diameter
    b: str
    diameter: float = 0.0
    to_a: dict[str, float] = field(default_factory=dict)  # node -> its distance to a (while a stays)
    to_b: dict[str, float] = field(default_factory=dict)

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

    def to_ends(self, u: str) -> tuple[float, float]:
        """``u``'s distances to the diameter's ends a and b."""
        ua = self.to_a.get(u)
        if ua is None:
            ua = self.to_a[u] = self.distance(u, self.a)
        ub = self.to_b.get(u)
        if ub is None:
            ub = self.to_b[u] = self.distance(u, self.b)
        return ua, ub

    def add(self, u: str, v: str, delay: float, eid: int, da: float, db: float) -> None:
        """Hang ``v`` under ``u`` over link ``eid``; ``da``, ``db``: ``v``'s distances to a and b."""
        self.up[v] = (u, delay, eid)
        self.depth[v] = self.depth[u] + delay
        self.level[v] = self.level[u] + 1
        if da >= db and da > self.diameter:
            self.b, self.diameter = v, da
            self.to_b.clear()
        elif db > self.diameter:
            self.a, self.diameter = v, db
            self.to_a.clear()


def _grow(
    links: Links, hosts: set[str], allowed: set[str], residual: dict[int, float], r: float, limit: float, start: str
) -> dict[str, tuple[str, float, int]]:
    """Grow one tree from ``start``; return node -> (growth parent, delay, link id) for every node it
    reached (the caller checks that the job's hosts are among them)."""
    tree = _GrowingTree({}, {start: 0.0}, {start: 0}, start, start)
    in_tree = tree.depth
    heap: list[tuple[float, int, str, str, float]] = []
    push, pop = heapq.heappush, heapq.heappop

    def push_from(u: str, eccentricity: float) -> None:
        """Offer ``u``'s links to allowed nodes outside the tree with residual >= r, widest first; not
        those that already break the height bound (``u``'s eccentricity only grows with the tree)."""
        reach = limit + LIMIT_SLACK - eccentricity
        for v, eid, delay in links[u]:
            if v not in in_tree and v in allowed and delay <= reach:
                left = residual[eid]
                if left >= r:
                    push(heap, (-left, eid, u, v, delay))

    push_from(start, 0.0)
    while heap:
        _, eid, u, v, d = pop(heap)
        if v in in_tree:
            continue
        ua, ub = tree.to_ends(u)
        da, db = ua + d, ub + d
        farthest = max(da, db)
        if farthest > limit:
            continue
        tree.add(u, v, d, eid, da, db)
        if v not in hosts:
            push_from(v, farthest)
    return tree.up


def _rerooted(up: dict[str, tuple[str, float, int]], start: str, root: str) -> dict[str, str]:
    """The grown tree's parent pointers toward ``root`` instead of ``start``: the path between them turned."""
    parent = {v: u for v, (u, _, _) in up.items()}
    chain = [root]
    while chain[-1] != start:
        chain.append(parent[chain[-1]])
    parent.pop(root, None)
    for above, below in itertools.pairwise(chain):
        parent[below] = above
    return parent


def _link_id(up: dict[str, tuple[str, float, int]], c: str, p: str) -> int:
    """The id of the grown tree's link between neighbours ``c`` and ``p``."""
    grown = up.get(c)
    return grown[2] if grown is not None and grown[0] == p else up[p][2]


def _link_ids(graph: nx.Graph) -> Links:
    """Every node's links as (neighbour, link id, delay), by link id (as ``links_in_order`` orders them)."""
    return {
        node: [(v, e["eid"], e["delay"]) for v, e in sorted(nbrs.items(), key=lambda item: item[1]["eid"])]
        for node, nbrs in graph.adjacency()
    }


def _find_trees(
    ctx: JobContext,
    links: Links,
    capacity: dict[int, float],
    r: float,
    limit: float,
    rate_cap: float | None,
    seed: int,
) -> list[FoundTree]:
    job_hosts = [h.name for h in ctx.workers] + [h.name for h in ctx.servers]
    kinds = ctx.graph.nodes(data="kind")
    hosts = {n for n, k in kinds if k == "host"}
    allowed = {n for n, k in kinds if k == "switch"} | set(job_hosts)
    starts = sorted(allowed)
    rng = random.Random(seed)
    residual = dict(capacity)
    found: list[FoundTree] = []
    while len(found) < MAX_TREES_FOUND:
        for _ in range(START_ATTEMPTS):
            start = rng.choice(starts)
            up = _grow(links, hosts, allowed, residual, r, limit, start)
            if all(h == start or h in up for h in job_hosts):
                break
        else:
            break
        root = ctx.servers[len(found) % len(ctx.servers)].name
        parent = prune(_rerooted(up, start, root), [w.name for w in ctx.workers])
        tree_links = [_link_id(up, c, p) for c, p in parent.items()]
        rate = _take_rate(residual, tree_links, rate_cap)
        found.append(FoundTree([(u, v) for v, (u, _, _) in up.items()], parent, root, tree_links, rate))
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
    reserved = ctx.resources.reserved(excluding=ctx.grant.job_id)  # a re-plan's old trees give theirs back
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
        plans.append(build_tree(ctx, ctx.first_tree_id + i, t.root, t.parent, rate, rate / whole, t.height))
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
    links = _link_ids(ctx.graph)
    trees = _find_trees(ctx, links, capacity, r, limit, options.tree_rate, options.seed)
    if not trees:
        bound = f" and height <= {options.height} ms" if options.height is not None else ""
        raise PlanError(
            f"no tree spans all {len(ctx.workers) + len(ctx.servers)} hosts of the job with "
            f"residual bandwidth >= {r} Mbit/s{bound}"
        )
    target = (1.0 - options.loss_bound) * _total_rate(trees)
    hi = max(_height_of(ctx, t) for t in trees)
    lo = 0.0
    spread = _spread(ctx, links)
    for _ in range(HEIGHT_SEARCH_STEPS):
        mid = (lo + hi) / 2
        if 2 * mid < spread - LIMIT_SLACK:  # no tree under this bound can reach every host: no search
            lower = []
        else:
            lower = _find_trees(ctx, links, capacity, r, 2 * mid, options.tree_rate, options.seed)
        if lower and _total_rate(lower) >= target:
            trees, hi = lower, mid
        else:
            lo = mid
    return trees


def _spread(ctx: JobContext, links: Links) -> float:
    """The largest delay from the first server to a job host over the whole graph (Dijkstra).

    A tree spanning the job's hosts has a diameter at least this (its path between two hosts is no
    shorter than the graph's), so a bound below it cannot be met: a search under it would fail every
    start, as it would find nothing."""
    src = ctx.servers[0].name
    dist: dict[str, float] = {}
    fringe: list[tuple[float, str]] = [(0.0, src)]
    while fringe:
        d, node = heapq.heappop(fringe)
        if node in dist:
            continue
        dist[node] = d
        for v, _, delay in links[node]:
            if v not in dist:
                heapq.heappush(fringe, (d + delay, v))
    hosts = [h.name for h in ctx.workers] + [h.name for h in ctx.servers]
    return max(dist.get(h, math.inf) for h in hosts)


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
    """The tree's height, measured once (``build_tree`` takes it instead of measuring again)."""
    if tree.height is None:
        tree.height = tree_height(ctx.graph, tree.parent)
    return tree.height
