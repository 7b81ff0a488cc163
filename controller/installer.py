"""Writes what switches need, over P4Runtime, by P4 name (docs/design-decisions.md, control-plane API).

Per switch, for the topology: the pipeline (P4Info + device config: the program source for
softswitch, the BMv2 JSON for simple_switch_grpc; just bytes from a file here), the identity default
action, an IPv4 /32 route to every host, and result_rewrite for host-facing ports.
Per job: one InaIngress.ina_jobs entry per (switch, tree), its admission entries (InaIngress.ina_admission:
which port may carry which child's GRADs, which ports RESULTs come from; everything else of the job is
dropped as DROP_NOT_ADMITTED) and the multicast groups of multicast jobs.
Every write is idempotent: existing entries are read first and modified instead of inserted.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.errors import InstallError, P4RuntimeError, PlanError
from controller.multihop import path_tree
from controller.p4rt import P4Names, P4RuntimeClient, SwitchConnection, decode, load_p4info, read_counter
from controller.plan import JobPlan
from controller.programs import program_kind, root_multicast, stat_counters, values_per_packet
from controller.resources import AdoptedJob
from controller.tls import TlsFiles
from controller.topology import Topology
from protocol import constants as C

INSERT, MODIFY, DELETE = (p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY, p4runtime_pb2.Update.DELETE)

T_IDENTITY, A_IDENTITY = "InaIngress.switch_identity", "InaIngress.set_switch_id"
T_JOBS, A_JOB = "InaIngress.ina_jobs", "InaIngress.set_job"
T_ROUTES, A_FORWARD = "InaIngress.ipv4_lpm", "InaIngress.ipv4_forward"
T_REWRITE, A_REWRITE = "InaEgress.result_rewrite", "InaEgress.set_result_dst"
T_ADMISSION, A_ADMIT, A_NOT_ADMITTED = "InaIngress.ina_admission", "InaIngress.admit", "InaIngress.not_admitted"
K_PKT_TYPE, K_ADMIT_HOP, K_INGRESS = "hdr.ina.pkt_type", "meta.admit_hop", "standard_metadata.ingress_port"
ADMIT_PRIORITY, CATCH_ALL_PRIORITY = 10, 1  # ina_admission: a flow's own port wins over the job's catch-all
EXACT_9 = 0x1FF  # ternary mask of a whole 9-bit key (admit_hop, ingress_port)
K_JOB, K_TREE = "hdr.ina.job_id", "hdr.ina.tree_id"
K_DST, K_EGRESS = "hdr.ipv4.dst_addr", "standard_metadata.egress_port"
C_STATS, C_DROPS = "InaIngress.ina_stats", "InaIngress.drop_stats"  # TNA: stats in four counters (read_stats)
# the slot cells' owner: ina.p4's job_id ++ seq (48 bits), the TNA program's job id alone (docs/tofino.md)
R_SLOT_OWNER, R_SLOT_OWNER_JOB = "InaIngress.slot_owner", "InaIngress.slot_owner_job"


def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def _ip(text: str) -> int:
    return int(ipaddress.IPv4Address(text))


def _entity(
    table_entry: p4runtime_pb2.TableEntry | None = None, group: p4runtime_pb2.MulticastGroupEntry | None = None
) -> p4runtime_pb2.Entity:
    e = p4runtime_pb2.Entity()
    if table_entry is not None:
        e.table_entry.CopyFrom(table_entry)
    if group is not None:
        e.packet_replication_engine_entry.multicast_group_entry.CopyFrom(group)
    return e


EntryKey = tuple[Any, ...]  # (table id, match fields) of an entry, or ("group", id) of a multicast group


def _key(entry: p4runtime_pb2.TableEntry) -> EntryKey:
    return (entry.table_id, tuple(sorted(m.SerializeToString() for m in entry.match)))


# per switch: its table entries and its multicast groups
JobEntries = tuple[list[p4runtime_pb2.TableEntry], list[p4runtime_pb2.MulticastGroupEntry]]


class Installer:
    """One P4Runtime client per switch of a topology (opened on first use).

    By default the clients are gRPC ``SwitchConnection``s to the addresses of the topology (or
    ``addresses``), over TLS with ``tls``; ``connect`` gives any other ``P4RuntimeClient`` for a switch name (the in-process
    network's switches: ``topologies.inprocess.install``). The installer only reads and writes
    entities through that protocol, so every target gets the same entries, inserted or modified alike.
    """

    def __init__(
        self,
        topo: Topology,
        p4info: p4info_pb2.P4Info | str | Path | None = None,
        device_config: bytes | str | Path | None = None,
        addresses: dict[str, str] | None = None,
        election_id: int = 1,
        timeout: float = 10.0,
        connect: Callable[[str], P4RuntimeClient] | None = None,
        tls: TlsFiles | None = None,
    ):
        self.topo = topo
        self.p4info = load_p4info(p4info) if isinstance(p4info, (str, Path)) else p4info
        if isinstance(device_config, (str, Path)):
            try:
                device_config = Path(device_config).read_bytes()
            except OSError as exc:
                raise P4RuntimeError(f"cannot read device config {device_config!s}: {exc.strerror}") from None
        self.device_config: bytes | None = device_config
        self.addresses = dict(addresses or {})
        self.election_id, self.timeout, self.tls = election_id, timeout, tls
        self.connect = connect or self._connect_grpc
        self.conns: dict[str, P4RuntimeClient] = {}
        self._names: P4Names | None = None
        self._graph = topo.to_graph()  # the whole topology: the ports of any link (a plan's, however old)
        self._route_graph = self._graph  # what host-to-host routes go over: what survives (route_around)
        self._routes: dict[str, dict[str, str]] = {}  # host -> parent pointers toward it in _route_graph
        self._dead: tuple[frozenset[str], frozenset[tuple[str, str]]] = (frozenset(), frozenset())
        # switches whose job ids job_ids_on_switches could not read in full, and why
        self.cells_unread: dict[str, str] = {}
        # switches whose running jobs jobs_on_switches could not read (their ina_jobs entries), and why
        self.jobs_unread: dict[str, str] = {}

    # -- connections -------------------------------------------------------------------------------
    def conn(self, switch: str) -> P4RuntimeClient:
        """The P4Runtime client of ``switch``, connected on first use (``connect``).

        Raises
        ------
        TopologyError
            ``switch`` is not a switch of the topology.
        P4RuntimeError
            The switch cannot be reached (no address, no server, not primary).
        """
        if switch not in self.conns:
            self.topo.switch(switch)  # an unknown name is a TopologyError
            self.conns[switch] = self.connect(switch)
        return self.conns[switch]

    def _connect_grpc(self, switch: str) -> SwitchConnection:
        sw = self.topo.switch(switch)
        address = self.addresses.get(switch) or sw.grpc
        if not address:
            raise P4RuntimeError(f"switch {switch} has no P4Runtime address (grpc) in the topology")
        return SwitchConnection(address, sw.device_id, self.election_id, self.timeout, name=switch, tls=self.tls).open()

    def names(self, switch: str | None = None) -> P4Names:
        """Name lookups over the P4Info (given, or read from ``switch``, by default the first switch)."""
        if self._names is None:
            if self.p4info is None:
                self.p4info = self.conn(switch or self.topo.switches[0].name).get_p4info()
            self._names = P4Names(self.p4info)
        return self._names

    def close(self) -> None:
        """Close every client opened so far."""
        for c in self.conns.values():
            c.close()
        self.conns.clear()

    def __enter__(self) -> Installer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pipeline and topology-wide state ----------------------------------------------------------
    def push_pipeline(self, switches: list[str] | None = None) -> None:
        """Load the P4Info and device config into ``switches`` (None: all; an empty list: none).

        Raises
        ------
        P4RuntimeError
            No P4Info or device config was given, or a switch refused them.
        """
        if self.p4info is None or self.device_config is None:
            raise P4RuntimeError("pushing a pipeline needs both a P4Info and a device config")
        for s in self._or_all(switches):
            self.conn(s).set_pipeline(self.p4info, self.device_config)

    def topology_entries(self, switch: str, *, routes: bool = True) -> list[p4runtime_pb2.TableEntry]:
        """The topology-wide entries of ``switch``: identity default action, a /32 route to every host
        (unless ``routes`` is False: INA's own packets never use them, and computing them for thousands
        of hosts takes minutes), result_rewrite for host-facing ports.

        Examples
        --------
        >>> from controller.generators import star
        >>> from softswitch.compiler import compile_program
        >>> from softswitch.p4info import build_p4info
        >>> inst = Installer(star(2), p4info=build_p4info(compile_program("p4src/ina.p4").info))
        >>> len(inst.topology_entries("s1"))  # identity, 3 routes, 3 host ports
        7
        """
        n = self.names(switch)
        sw = self.topo.switch(switch)
        entries = [n.table_entry(T_IDENTITY, None, A_IDENTITY, {"switch_id": sw.device_id}, default=True)]
        for h in self.topo.hosts if routes else ():
            parent = self._toward(h.name)
            if switch not in parent:
                continue
            port = self._graph.adj[switch][parent[switch]]["ports"][switch]
            entries.append(
                n.table_entry(T_ROUTES, {K_DST: (_ip(h.ip), 32)}, A_FORWARD, {"dst_mac": _mac(h.mac), "port": port})
            )
        for link in self.topo.links_of(switch):
            other = link.other(switch)
            if self.topo.is_host(other):
                h = self.topo.host(other)
                entries.append(
                    n.table_entry(
                        T_REWRITE,
                        {K_EGRESS: link.port_of(switch)},
                        A_REWRITE,
                        {"dst_mac": _mac(h.mac), "dst_ip": _ip(h.ip)},
                    )
                )
        return entries

    def _toward(self, host: str) -> dict[str, str]:
        if host not in self._routes:
            self._routes[host] = path_tree(self._route_graph, host, "fewest_hops")
        return self._routes[host]

    def install_topology(self, switches: list[str] | None = None) -> int:
        """Write the topology-wide entries of ``switches`` (None: all; an empty list: none), inserting or
        modifying.

        Returns
        -------
        int
            The number of entries written.

        Raises
        ------
        P4RuntimeError
            A switch refused an update or cannot be reached.
        """
        return sum(self._upsert(s, self.topology_entries(s)) for s in self._or_all(switches))

    def _or_all(self, switches: list[str] | None) -> list[str]:
        """``switches``, or every switch of the topology for None (not for an empty list: a caller that
        computed which switches need a write and found none means none)."""
        return [s.name for s in self.topo.switches] if switches is None else switches

    def route_around(self, dead_switches: Collection[str], dead_links: Collection[tuple[str, str]]) -> int:
        """Re-route the live switches' /32 routes over what survives of the topology (fewest hops, as at
        install), so that host-to-host traffic (a training job's TCP rendezvous and gloo connections) stops
        crossing a dead switch or link; return the number of entries written. Only switches where a route
        changes are written (nothing when the dead set is the one routed around last). A host no longer
        reachable from a switch keeps its old route there (nothing better exists). The whole topology stays
        what ports are read from (``admission_ports`` of a plan made before the failure)."""
        from controller.replan import surviving_graph

        dead = (frozenset(dead_switches), frozenset(dead_links))
        if dead == self._dead:
            return 0
        graph = surviving_graph(self._graph, *dead)
        routes = {h.name: path_tree(graph, h.name, "fewest_hops") for h in self.topo.hosts}
        changed = [
            s.name
            for s in self.topo.switches
            if s.name in graph
            and any(s.name in new and self._toward(host).get(s.name) != new[s.name] for host, new in routes.items())
        ]
        self._route_graph, self._routes, self._dead = graph, routes, dead
        return self.install_topology(changed)

    # -- jobs --------------------------------------------------------------------------------------
    def job_entries(self, plan: JobPlan) -> dict[str, JobEntries]:
        """Per switch: its ina_jobs entries and its multicast group entries for ``plan``.

        Examples
        --------
        >>> from controller.generators import star
        >>> from controller.planner import PlanOptions, plan_job
        >>> from softswitch.compiler import compile_program
        >>> from softswitch.p4info import build_p4info
        >>> topo = star(2)
        >>> inst = Installer(topo, p4info=build_p4info(compile_program("p4src/ina.p4").info))
        >>> # ina_jobs, admission: 2 workers' GRAD ports, the server's RESULT port, 2 catch-alls; the results'
        >>> # multicast group (the default result mode), none with unicast results
        >>> {switch: (len(t), len(g)) for switch, (t, g) in inst.job_entries(plan_job(topo, ["h1", "h2"], ["h3"])).items()}
        {'s1': (6, 1)}
        >>> unicast = PlanOptions(result_mode="unicast")
        >>> {switch: (len(t), len(g)) for switch, (t, g) in inst.job_entries(plan_job(topo, ["h1", "h2"], ["h3"], unicast)).items()}
        {'s1': (6, 0)}
        """
        out: dict[str, JobEntries] = {}
        for cfg in plan.switches:
            n = self.names(cfg.switch)
            if cfg.root and not self.root_multicast(cfg.switch):
                raise InstallError(
                    f"job {plan.job_id}: {cfg.switch}'s program cannot send results from the tree's root "
                    "(its set_job takes aggregates 0 or 1): plan with root_results=False"
                )
            entry = n.table_entry(
                T_JOBS,
                {K_JOB: plan.job_id, K_TREE: cfg.tree_id},
                A_JOB,
                {
                    "job_index": cfg.job_index,
                    "slot_base": cfg.slot_base,
                    "pool_size": cfg.pool_size,
                    "max_fan_in": cfg.max_fan_in,
                    "aggregates": C.AGGREGATES_ROOT if cfg.root else int(cfg.aggregates),
                    "result_group": cfg.result_group,
                },
            )
            tables, groups = out.setdefault(cfg.switch, ([], []))
            tables.append(entry)
            if cfg.result_group:
                g = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=cfg.result_group)
                for m in cfg.members:
                    g.replicas.add(egress_port=m.port, instance=m.replica_id)
                groups.append(g)
        for switch, entries in self.admission_entries(plan).items():
            out.setdefault(switch, ([], []))[0].extend(entries)
        return out

    def admission_ports(self, plan: JobPlan) -> dict[tuple[str, int], tuple[set[tuple[int, int, int]], set[int]]]:
        """Per (switch, tree): the GRADs it admits as (aggregate, child, ingress port) and the ports its
        RESULTs come from, read off every worker's GRAD path (results take the reverse paths, and
        multicast copies come down the same tree from the parent side).

        Examples
        --------
        >>> from controller.generators import star
        >>> from controller.planner import PlanOptions, plan_job
        >>> from softswitch.compiler import compile_program
        >>> from softswitch.p4info import build_p4info
        >>> topo = star(2)
        >>> inst = Installer(topo, p4info=build_p4info(compile_program("p4src/ina.p4").info))
        >>> inst.admission_ports(plan_job(topo, ["h1", "h2"], ["h3"]))
        {('s1', 0): ({(1, 0, 1), (1, 1, 2)}, {3})}
        """
        by_device = {sw.device_id: sw.name for sw in self.topo.switches}
        out: dict[tuple[str, int], tuple[set[tuple[int, int, int]], set[int]]] = {}
        for tree in plan.trees:
            for worker, hops in tree.grad_hops.items():
                previous = worker
                for hop in hops[:-1]:  # the last entry is the server's own
                    switch = by_device[hop.switch_id]
                    grads, results = out.setdefault((switch, tree.tree_id), (set(), set()))
                    ingress = self._graph.adj[switch][previous]["ports"][switch]
                    grads.add((int(hop.aggregate), hop.child, ingress))
                    results.add(hop.egress_port)
                    previous = switch
        return out

    def admission_entries(self, plan: JobPlan) -> dict[str, list[p4runtime_pb2.TableEntry]]:
        """Per switch: the job's ina_admission entries (none when the program has no such table)."""
        out: dict[str, list[p4runtime_pb2.TableEntry]] = {}
        for (switch, tree_id), (grads, results) in sorted(self.admission_ports(plan).items()):
            n = self.names(switch)
            if T_ADMISSION not in n.tables:
                continue
            entries = out.setdefault(switch, [])
            job: dict[str, int | tuple[int, int]] = {K_JOB: plan.job_id, K_TREE: tree_id}
            match: dict[str, int | tuple[int, int]]
            for aggregate, child, port in sorted(grads):
                match = {**job, K_PKT_TYPE: C.PKT_TYPE_GRAD, K_ADMIT_HOP: ((aggregate << 8) | child, EXACT_9)}
                entries.append(
                    n.table_entry(
                        T_ADMISSION, {**match, K_INGRESS: (port, EXACT_9)}, A_ADMIT, {}, priority=ADMIT_PRIORITY
                    )
                )
            for port in sorted(results):
                match = {**job, K_PKT_TYPE: C.PKT_TYPE_RESULT, K_ADMIT_HOP: (0, 0), K_INGRESS: (port, EXACT_9)}
                entries.append(n.table_entry(T_ADMISSION, match, A_ADMIT, {}, priority=ADMIT_PRIORITY))
            for pkt_type in (C.PKT_TYPE_GRAD, C.PKT_TYPE_RESULT):
                match = {**job, K_PKT_TYPE: pkt_type, K_ADMIT_HOP: (0, 0), K_INGRESS: (0, 0)}
                entries.append(n.table_entry(T_ADMISSION, match, A_NOT_ADMITTED, {}, priority=CATCH_ALL_PRIORITY))
        return out

    def install_job(self, plan: JobPlan) -> int:
        """Write the job's entries and multicast groups, inserting or modifying; return how many.

        Raises
        ------
        PlanError
            The plan's chunks are not the switches' K (their packets would be dropped as malformed).
        P4RuntimeError
            A switch refused an update or cannot be reached.
        """
        entries = self.job_entries(plan)
        if entries:  # the switches run one program (one P4Info): a dense packet carries exactly its K lanes
            switch = next(iter(entries))
            k = self.values_per_packet(switch)
            if plan.value_count != k:
                raise PlanError(
                    f"job {plan.job_id} is planned with {plan.value_count} values per packet but {switch} runs a "
                    f"program built with K = {k}: plan it with the switches' K (PlanOptions.value_count None)"
                )
        return self._write_each_switch(entries, self._upsert)

    def remove_job(self, plan: JobPlan, skip: Collection[str] = ()) -> int:
        """Delete the job's entries and groups (those still present); return how many.

        ``skip``: switches to leave alone (dead ones, when a re-planned job leaves its old trees).

        Raises
        ------
        P4RuntimeError
            A switch refused an update or cannot be reached.
        """
        return self._write_each_switch(self.job_entries(plan), self._delete_present, skip)

    def _write_each_switch(
        self,
        entries: dict[str, JobEntries],
        write: Callable[[str, list[p4runtime_pb2.TableEntry], list[p4runtime_pb2.MulticastGroupEntry]], int],
        skip: Collection[str] = (),
    ) -> int:
        """``write`` each switch's ``entries`` (a job's: ``job_entries``) but ``skip``'s; the number of updates."""
        return sum(write(switch, tables, groups) for switch, (tables, groups) in entries.items() if switch not in skip)

    def remove_adopted(self, job: AdoptedJob) -> int:
        """Delete an adopted job's entries (its ina_jobs and ina_admission entries, found by its job id) and
        its multicast groups at the switches that hold them; return how many.

        Raises
        ------
        P4RuntimeError
            A switch refused an update or cannot be reached.
        """
        count = 0
        for switch in sorted(job.switches):
            n = self.names(switch)
            entries = []
            for table in (T_JOBS, T_ADMISSION):
                if table not in n.tables:
                    continue
                field_id = n.table(table).fields[K_JOB][0]
                entries += [
                    e
                    for e in self.read_table(switch, table)
                    if any(m.field_id == field_id and decode(m.exact.value) == job.job_id for m in e.match)
                ]
            groups = [p4runtime_pb2.MulticastGroupEntry(multicast_group_id=g) for g in sorted(job.groups)]
            count += self._delete_present(switch, entries, groups)
        return count

    def _delete_present(
        self, switch: str, tables: list[p4runtime_pb2.TableEntry], groups: list[p4runtime_pb2.MulticastGroupEntry]
    ) -> int:
        """Delete those of ``tables`` and ``groups`` that ``switch`` holds; the number of deletes."""
        conn = self.conn(switch)
        have = self._existing(conn, {e.table_id for e in tables}, bool(groups))
        updates = []
        for e in tables:
            if _key(e) in have:
                gone = p4runtime_pb2.TableEntry(table_id=e.table_id, priority=e.priority)
                gone.match.extend(e.match)
                updates.append((DELETE, _entity(table_entry=gone)))
        for g in groups:
            if ("group", g.multicast_group_id) in have:
                group = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=g.multicast_group_id)
                updates.append((DELETE, _entity(group=group)))
        conn.write(updates)
        return len(updates)

    def probe(self, switch: str) -> str | None:
        """None when ``switch`` answers a P4Runtime read (of its identity table), else the reason."""
        try:
            self.read_table(switch, T_IDENTITY)
        except P4RuntimeError as exc:
            self.conns.pop(switch, None)  # reconnect on the next use
            return str(exc)
        return None

    # -- reading back ------------------------------------------------------------------------------
    def read_table(self, switch: str, table: str) -> list[p4runtime_pb2.TableEntry]:
        """Every entry of ``table`` at ``switch`` (table by P4 name)."""
        n = self.names(switch)
        q = _entity(table_entry=p4runtime_pb2.TableEntry(table_id=n.table(table).id))
        return [e.table_entry for e in self.conn(switch).read([q])]

    def job_ids_on_switches(self) -> set[int]:
        """The job ids the switches still hold: their ina_jobs entries' (running jobs) and their slot cells'
        owners (jobs whose chunks the cells keep after the job's entries are gone). A restarted job manager
        continues its id rotation after them (docs/design-decisions.md, "A controller that restarts"). A switch
        that does not answer, or a target that cannot read its registers (BMv2), adds what it can: nothing, or
        the entries' ids; ``cells_unread`` then names it and why."""
        ids: set[int] = set()
        self.cells_unread.clear()
        for sw in self.topo.switches:
            try:
                field_id = self.names(sw.name).table(T_JOBS).fields[K_JOB][0]
                for entry in self.read_table(sw.name, T_JOBS):
                    ids.update(decode(m.exact.value) for m in entry.match if m.field_id == field_id)
                ids.update(self._slot_owner_jobs(sw.name))
            except P4RuntimeError as exc:
                self.cells_unread[sw.name] = str(exc)
        ids.discard(C.JOB_ID_INVALID)  # a fresh cell's owner
        return ids

    def jobs_on_switches(self) -> dict[int, AdoptedJob]:
        """The jobs the switches run, by job id, read off their ina_jobs entries (by P4 name): each (switch,
        tree)'s counter row, its slot range where it aggregates (``slot_base``, two shadow sets of ``pool_size``)
        and its results' multicast group. A restarted job manager adopts them (docs/design-decisions.md,
        "A controller that restarts"). A switch that does not answer adds nothing; ``jobs_unread`` names it."""
        jobs: dict[int, AdoptedJob] = {}
        self.jobs_unread.clear()
        for sw in self.topo.switches:
            try:
                n = self.names(sw.name)
                fields = n.table(T_JOBS).fields
                job_field, tree_field = fields[K_JOB][0], fields[K_TREE][0]
                action_id, params = n.action(A_JOB)
                param_names = {pid: name for name, (pid, _) in params.items()}
                for entry in self.read_table(sw.name, T_JOBS):
                    keys = {m.field_id: decode(m.exact.value) for m in entry.match}
                    if entry.action.action.action_id != action_id:
                        continue
                    p = {param_names.get(q.param_id, ""): decode(q.value) for q in entry.action.action.params}
                    job_id, tree = keys[job_field], keys[tree_field]
                    job = jobs.setdefault(job_id, AdoptedJob(job_id))
                    job.switches.add(sw.name)
                    job.trees.add(tree)
                    job.job_indices.add(p["job_index"])
                    if p["aggregates"]:
                        job.slots[(sw.name, tree)] = (p["slot_base"], 2 * p["pool_size"])
                    if p["result_group"]:
                        job.groups.add(p["result_group"])
            except P4RuntimeError as exc:
                self.jobs_unread[sw.name] = str(exc)
        return jobs

    def _slot_owner_jobs(self, switch: str) -> set[int]:
        """The job ids of the slot cells' owners at ``switch`` (one wildcard read of the owner register)."""
        assert self.p4info is not None
        shift = {R_SLOT_OWNER: 32, R_SLOT_OWNER_JOB: 0}
        ids: set[int] = set()
        for register in self.p4info.registers:
            if register.preamble.name in shift:
                q = p4runtime_pb2.Entity(register_entry=p4runtime_pb2.RegisterEntry(register_id=register.preamble.id))
                by = shift[register.preamble.name]
                ids.update(decode(e.register_entry.data.bitstring) >> by for e in self.conn(switch).read([q]))
        return ids

    def read_groups(self, switch: str) -> dict[int, list[tuple[int, int]]]:
        """Multicast group id -> sorted (egress port, instance) replicas at ``switch``."""
        q = _entity(group=p4runtime_pb2.MulticastGroupEntry())
        out = {}
        for e in self.conn(switch).read([q]):
            g = e.packet_replication_engine_entry.multicast_group_entry
            out[g.multicast_group_id] = sorted((r.egress_port, r.instance) for r in g.replicas)
        return out

    def read_counter(self, switch: str, counter: str, indices: list[int]) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) of the P4 counter called ``counter`` at ``switch``."""
        cid, _ = self.names(switch).counter(counter)
        return read_counter(self.conn(switch), cid, indices)

    def program(self, switch: str | None = None) -> str:
        """The aggregation program the switches run, "v1model" or "tna", from the P4Info (given, or read
        from ``switch``): controller/programs.py."""
        self.names(switch)
        assert self.p4info is not None
        return program_kind(self.p4info)

    def root_multicast(self, switch: str | None = None) -> bool:
        """Whether the switches' program can send results from a tree's root (its P4Info: ina.p4 can, the
        TNA program cannot): controller/programs.py."""
        self.names(switch)
        assert self.p4info is not None
        return root_multicast(self.p4info)

    def values_per_packet(self, switch: str | None = None) -> int:
        """K of the program the switches run, from the P4Info (given, or read from ``switch``)."""
        self.names(switch)
        assert self.p4info is not None
        return values_per_packet(self.p4info)

    def read_stats(self, switch: str, indices: list[int]) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) of the per-job statistics (index job_index * NUM_STATS + STAT_*) at
        ``switch``, whichever program it runs (the TNA program's are the sum of four counters)."""
        assert self.names(switch) is not None and self.p4info is not None
        total = {i: (0, 0) for i in indices}
        for counter in stat_counters(c.preamble.name for c in self.p4info.counters):
            for i, (packets, nbytes) in self.read_counter(switch, counter, indices).items():
                total[i] = (total[i][0] + packets, total[i][1] + nbytes)
        return total

    # -- idempotent write --------------------------------------------------------------------------
    def _existing(self, conn: P4RuntimeClient, table_ids: set[int], groups: bool) -> set[EntryKey]:
        q = [_entity(table_entry=p4runtime_pb2.TableEntry(table_id=t)) for t in sorted(table_ids)]
        have = {_key(e.table_entry) for e in conn.read(q)} if q else set()
        if groups:
            for e in conn.read([_entity(group=p4runtime_pb2.MulticastGroupEntry())]):
                have.add(("group", e.packet_replication_engine_entry.multicast_group_entry.multicast_group_id))
        return have

    def _upsert(
        self,
        switch: str,
        tables: list[p4runtime_pb2.TableEntry],
        groups: list[p4runtime_pb2.MulticastGroupEntry] | None = None,
    ) -> int:
        conn = self.conn(switch)
        groups = groups or []
        have = self._existing(conn, {e.table_id for e in tables if not e.is_default_action}, bool(groups))
        updates = []
        for e in tables:
            kind = MODIFY if e.is_default_action or _key(e) in have else INSERT
            updates.append((kind, _entity(table_entry=e)))
        for g in groups:
            kind = MODIFY if ("group", g.multicast_group_id) in have else INSERT
            updates.append((kind, _entity(group=g)))
        conn.write(updates)
        return len(updates)
