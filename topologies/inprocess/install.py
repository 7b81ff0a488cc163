"""Writing switch state into the in-process network's softswitch instances.

When the controller's installer offers entries for a switch (``controller.installer``, functions
``route_entries(topo, switch)`` / ``job_entries(plan, switch)`` returning (table, matches, action,
args) rows), they are applied directly through the Switch control API by P4 name, so the entries are
exactly the controller's. Until then this module builds the same rows from the same sources: the
plan's per-switch job configurations (``plan.switches``) and fewest-hop routes to every host.
"""

from __future__ import annotations

import networkx as nx

from protocol import codec


def _installer():
    try:
        from controller import installer
    except ImportError:
        return None
    if hasattr(installer, "route_entries") and hasattr(installer, "job_entries"):
        return installer
    return None


def _mac_int(mac: str) -> int:
    return int.from_bytes(codec.mac_bytes(mac), "big")


def _ip_int(ip: str) -> int:
    return int.from_bytes(codec.ip_bytes(ip), "big")


def _apply(sw, rows) -> None:
    from softswitch.runtime.tables import Exact, Lpm  # noqa: F401  (match kinds, by name below)
    from softswitch.switch import TableEntry

    for table, matches, action, args in rows:
        if table is None:           # default action of a keyless table
            sw.table(matches).set_default(action, args)
            continue
        sw.table(table).insert(TableEntry(matches=matches, action=action, args=args))


def route_rows(topo, switch_name: str) -> list:
    from softswitch.runtime.tables import Exact, Lpm  # noqa: F401

    graph = topo.to_graph()
    rows = [(None, "InaIngress.switch_identity", "InaIngress.set_switch_id",
             {"switch_id": topo.switch(switch_name).device_id})]
    paths = nx.single_source_shortest_path(graph, switch_name)
    for h in topo.hosts:
        if h.name not in paths or len(paths[h.name]) < 2:
            continue
        nxt = paths[h.name][1]
        port = graph.adj[switch_name][nxt]["ports"][switch_name]
        rows.append(("InaIngress.ipv4_lpm", {"hdr.ipv4.dst_addr": Lpm(_ip_int(h.ip), 32)},
                     "InaIngress.ipv4_forward", {"dst_mac": _mac_int(h.mac), "port": port}))
    return rows


def job_rows(plan, switch_name: str, topo) -> tuple[list, list]:
    """(table rows, multicast groups) of ``plan`` for one switch."""
    from softswitch.runtime.tables import Exact

    rows, groups = [], []
    for cfg in plan.switches:
        if cfg.switch != switch_name:
            continue
        rows.append(("InaIngress.ina_jobs",
                     {"hdr.ina.job_id": Exact(plan.job_id), "hdr.ina.tree_id": Exact(cfg.tree_id)},
                     "InaIngress.set_job",
                     {"job_index": cfg.job_index, "slot_base": cfg.slot_base, "pool_size": cfg.pool_size,
                      "max_fan_in": cfg.max_fan_in, "aggregates": int(cfg.aggregates),
                      "result_group": cfg.result_group}))
        if cfg.result_group:
            groups.append((cfg.result_group, [(m.port, m.replica_id) for m in cfg.members]))
            for m in cfg.members:
                if topo.is_host(m.toward):
                    h = topo.host(m.toward)
                    rows.append(("InaEgress.result_rewrite",
                                 {"standard_metadata.egress_port": Exact(m.port)},
                                 "InaEgress.set_result_dst", {"dst_mac": _mac_int(h.mac),
                                                              "dst_ip": _ip_int(h.ip)}))
    return rows, groups


def install_routes(net) -> None:
    inst = _installer()
    for name, sw in net.switches.items():
        rows = inst.route_entries(net.topo, name) if inst else route_rows(net.topo, name)
        _apply(sw, rows)


def install_job(net, plan) -> None:
    inst = _installer()
    for name, sw in net.switches.items():
        if inst:
            rows, groups = inst.job_entries(plan, name)
        else:
            rows, groups = job_rows(plan, name, net.topo)
        existing = {(tuple(sorted(e.matches.items(), key=str))) for e in
                    sw.table("InaEgress.result_rewrite").entries()}
        for row in rows:
            if row[0] == "InaEgress.result_rewrite" and tuple(sorted(row[1].items(), key=str)) in existing:
                continue        # shared by jobs: one rewrite per host-facing port
            _apply(sw, [row])
        for gid, members in groups:
            sw.set_multicast_group(gid, members)


def remove_job(net, plan) -> None:
    from softswitch.runtime.tables import Exact
    from softswitch.switch import TableEntry

    for cfg in plan.switches:
        sw = net.switches[cfg.switch]
        sw.table("InaIngress.ina_jobs").delete(TableEntry(
            matches={"hdr.ina.job_id": Exact(plan.job_id), "hdr.ina.tree_id": Exact(cfg.tree_id)},
            action="InaIngress.set_job", args={}))
        if cfg.result_group:
            sw.delete_multicast_group(cfg.result_group)
