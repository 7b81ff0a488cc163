"""Switch state of the in-process network, written the way the controller writes it.

The entries are the controller installer's own (``Installer.topology_entries`` and
``Installer.job_entries``: P4Runtime TableEntry / MulticastGroupEntry messages built from the plan),
and they reach each softswitch through softswitch's P4Runtime service applied in process (the same
translation a gRPC Write goes through), so there is no second copy of the entry logic and no socket.
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

U = p4runtime_pb2.Update


def _installer(net):
    inst = getattr(net, "_installer", None)
    if inst is None:
        from controller.installer import Installer
        from softswitch.p4info import build_p4info

        inst = net._installer = Installer(net.topo, p4info=build_p4info(net.program.info))
    return inst


def _service(net, name: str):
    services = net.__dict__.setdefault("_p4rt_services", {})
    if name not in services:
        from softswitch.p4runtime_server import P4RuntimeService

        sw = net.switches[name]
        services[name] = P4RuntimeService(switch=sw, device_id=net.topo.switch(name).device_id)
    return services[name]


def _write(net, switch: str, updates: list[tuple[int, object, str]]) -> None:
    service = _service(net, switch)
    for kind, message, field in updates:
        update = p4runtime_pb2.Update(type=kind)
        if field == "table_entry":
            update.entity.table_entry.CopyFrom(message)
        else:
            update.entity.packet_replication_engine_entry.multicast_group_entry.CopyFrom(message)
        service._write_one(update)


def install_routes(net) -> None:
    """Identity, IPv4 routes to every host and result_rewrite of host-facing ports, per switch."""
    inst = _installer(net)
    for name in net.switches:
        _write(
            net,
            name,
            [(U.MODIFY if e.is_default_action else U.INSERT, e, "table_entry") for e in inst.topology_entries(name)],
        )


def install_job(net, plan) -> None:
    for switch, (tables, groups) in _installer(net).job_entries(plan).items():
        _write(net, switch, [(U.INSERT, e, "table_entry") for e in tables] + [(U.INSERT, g, "group") for g in groups])


def remove_job(net, plan) -> None:
    for switch, (tables, groups) in _installer(net).job_entries(plan).items():
        updates = []
        for e in tables:
            gone = p4runtime_pb2.TableEntry(table_id=e.table_id)
            gone.match.extend(e.match)
            updates.append((U.DELETE, gone, "table_entry"))
        for g in groups:
            updates.append(
                (U.DELETE, p4runtime_pb2.MulticastGroupEntry(multicast_group_id=g.multicast_group_id), "group")
            )
        _write(net, switch, updates)
