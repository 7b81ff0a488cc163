"""Topologies built by code: k-ary fat-trees (tests, benchmarks) and the shipped examples.

The YAML files in topologies/ were written from ``star``, ``leaf_spine`` and ``fat_tree(4)``;
generated topologies are the same Topology object, no file needed.
"""

from __future__ import annotations

from controller.errors import TopologyError
from controller.topology import Topology


def _mac(i: int) -> str:
    return f"02:00:00:{(i >> 16) & 0xFF:02x}:{(i >> 8) & 0xFF:02x}:{i & 0xFF:02x}"


def fat_tree(
    k: int,
    bandwidth: float = 10000.0,
    delay: float = 0.05,
    host_bandwidth: float | None = None,
    host_delay: float | None = None,
    grpc_base_port: int = 0,
    slots: int | None = None,
) -> Topology:
    """A k-ary fat-tree: k pods of k/2 edge and k/2 aggregation switches, (k/2)^2 cores, k^3/4 hosts.

    Ports: an edge switch reaches its hosts on 1..k/2 and the aggregation switches of its pod on
    k/2+1..k; an aggregation switch reaches the edges on 1..k/2 and cores on k/2+1..k; core j (in
    group j // (k/2)) reaches pod p on port p+1. Host ``h<i>`` of pod p, edge e, slot n has IP
    10.p.e.(n+2). Switch device ids count from 1: cores, then per pod aggregations then edges.

    Parameters
    ----------
    k : int
        The arity, even and at least 2.
    bandwidth, delay : float
        Switch-to-switch links (Mbit/s, ms); ``host_bandwidth``/``host_delay`` for host links
        (default: the same).
    grpc_base_port : int
        When not 0, switch i gets P4Runtime address ``127.0.0.1:<grpc_base_port + i>``.
    slots : int or None
        Slot entries per switch (None: the default of a topology file).

    Returns
    -------
    Topology
        Validated; no role hints.

    Raises
    ------
    TopologyError
        ``k`` odd or below 2.

    Examples
    --------
    >>> topo = fat_tree(4)
    >>> len(topo.hosts), len(topo.switches), len(topo.links)
    (16, 20, 48)
    """
    if k < 2 or k % 2:
        raise TopologyError(f"fat-tree arity k={k} must be an even number >= 2")
    half = k // 2
    topo = Topology(name=f"fat_tree_k{k}")
    extra = {} if slots is None else {"slots": slots}
    dev = 0

    def switch(name: str) -> str:
        nonlocal dev
        dev += 1
        grpc = f"127.0.0.1:{grpc_base_port + dev}" if grpc_base_port else ""
        topo.add_switch(name, dev, grpc, **extra)
        return name

    cores = [switch(f"c{j}") for j in range(half * half)]
    hb = bandwidth if host_bandwidth is None else host_bandwidth
    hd = delay if host_delay is None else host_delay
    for p in range(k):
        aggs = [switch(f"a{p}_{j}") for j in range(half)]
        edges = [switch(f"e{p}_{j}") for j in range(half)]
        for j, agg in enumerate(aggs):
            for e, edge in enumerate(edges):
                topo.add_link(edge, half + 1 + j, agg, 1 + e, bandwidth, delay)
            for c in range(half):
                topo.add_link(agg, half + 1 + c, cores[j * half + c], p + 1, bandwidth, delay)
        for e, edge in enumerate(edges):
            for n in range(half):
                i = len(topo.hosts)
                h = topo.add_host(f"h{i}", f"10.{p}.{e}.{n + 2}", _mac(i))
                topo.add_link(h.name, 0, edge, 1 + n, hb, hd)
    return topo.validate()


def star(workers: int = 4, bandwidth: float = 1000.0, delay: float = 0.1) -> Topology:
    """One switch s1; workers h1..hN on ports 1..N and the server h(N+1) on port N+1.

    Parameters
    ----------
    workers : int
    bandwidth, delay : float
        Every link (Mbit/s, ms).

    Returns
    -------
    Topology
        Validated, with role hints.

    Examples
    --------
    >>> [(h.name, h.role) for h in star(2).hosts]
    [('h1', 'worker'), ('h2', 'worker'), ('h3', 'server')]
    """
    topo = Topology(name="star")
    topo.add_switch("s1", 1, "127.0.0.1:50001")
    for i in range(workers + 1):
        role = "worker" if i < workers else "server"
        h = topo.add_host(f"h{i + 1}", f"10.0.0.{i + 1}", _mac(i + 1), role)
        topo.add_link(h.name, 0, "s1", i + 1, bandwidth, delay)
    return topo.validate()


def leaf_spine(
    spines: int = 2,
    leaves: int = 4,
    workers_per_leaf: int = 2,
    servers: int = 2,
    bandwidth: float = 10000.0,
    host_bandwidth: float = 1000.0,
    delay: float = 0.05,
) -> Topology:
    """A two-level leaf-spine fabric with role hints.

    Spines sp1.., leaves l1..; each leaf has ``workers_per_leaf`` workers on ports 1..; servers go on the
    last leaves (port workers_per_leaf+1); leaf uplinks are on ports 10+j, spine port i = leaf i.

    Returns
    -------
    Topology
        Validated.

    Examples
    --------
    >>> topo = leaf_spine()
    >>> [s.name for s in topo.switches], len(topo.role_hosts("worker"))
    (['sp1', 'sp2', 'l1', 'l2', 'l3', 'l4'], 8)
    """
    topo = Topology(name="leaf_spine")
    for j in range(spines):
        topo.add_switch(f"sp{j + 1}", j + 1, f"127.0.0.1:{50001 + j}")
    for i in range(leaves):
        topo.add_switch(f"l{i + 1}", spines + i + 1, f"127.0.0.1:{50001 + spines + i}")
        for j in range(spines):
            topo.add_link(f"l{i + 1}", 10 + j + 1, f"sp{j + 1}", i + 1, bandwidth, delay)
    n = 0
    for i in range(leaves):
        for w in range(workers_per_leaf):
            n += 1
            h = topo.add_host(f"h{n}", f"10.0.{i + 1}.{w + 1}", _mac(n), "worker")
            topo.add_link(h.name, 0, f"l{i + 1}", w + 1, host_bandwidth, delay)
    for s in range(servers):
        leaf = leaves - servers + s + 1
        n += 1
        h = topo.add_host(f"h{n}", f"10.0.{leaf}.100", _mac(n), "server")
        topo.add_link(h.name, 0, f"l{leaf}", workers_per_leaf + 1, host_bandwidth, delay)
    return topo.validate()
