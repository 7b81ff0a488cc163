"""Switch entries of the simulated network, written by the controller's ``Installer``.

As in the in-process network (``topologies/inprocess/install.py``), each switch gets a P4Runtime
client that calls softswitch's P4Runtime service in this process, so the entries are the ones a real
network gets. Two costs matter at a thousand hosts and are cut here without changing what is written:
every switch's service shares one P4Info (softswitch builds one per service otherwise: 0.2 s each), and
updates reach the service without a protobuf copy per update. ``install_fabric(routes=False)`` writes
the topology-wide entries an INA job needs (identity, result rewrites) without the /32 route to every
host on every switch (1,024 hosts x 320 switches at k = 16), which only plain IPv4 traffic uses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.errors import P4RuntimeError
from controller.installer import Installer
from controller.topology import Topology
from softswitch.p4info import P4InfoIndex, build_p4info
from softswitch.p4runtime_server import P4RuntimeService, Pipeline
from topologies.inprocess.install import InProcessClient


class _Update(NamedTuple):
    """What the service reads of a p4runtime Update: its type and entity (no copy of the entity)."""

    type: int
    entity: p4runtime_pb2.Entity


class SimClient(InProcessClient):
    """An in-process P4Runtime client whose writes hand the entities over as they are."""

    def write(self, updates: Sequence[tuple[int, p4runtime_pb2.Entity]]) -> None:
        errors = self.service.write_updates([_Update(kind, entity) for kind, entity in updates])
        failed = [error.message for error in errors if error is not None]
        if failed:
            raise P4RuntimeError(f"switch {self.name}: Write failed: {'; '.join(failed)}")


def _service(switch: Any, device_id: int, p4info: p4info_pb2.P4Info, index: P4InfoIndex) -> P4RuntimeService:
    """The switch's P4Runtime service over the shared P4Info (built once for all switches)."""
    attach = getattr(P4RuntimeService, "_attach", None)
    if attach is None:  # softswitch changed: its own constructor (one P4Info per switch) still works
        return P4RuntimeService(switch=switch, device_id=device_id)
    service = P4RuntimeService(device_id=device_id)
    attach(service, switch, Pipeline(p4info, index, b"", None, getattr(switch, "program", None)))
    return service


def sim_installer(topo: Topology, switches: dict[str, Any], program_info: Any) -> Installer:
    """The controller's installer over the simulated switches."""
    p4info = build_p4info(program_info)
    index = P4InfoIndex(p4info)

    def connect(name: str) -> SimClient:
        device_id = topo.switch(name).device_id
        return SimClient(name, _service(switches[name], device_id, p4info, index), p4info)

    return Installer(topo, p4info=p4info, connect=connect)


def install_fabric(installer: Installer, topo: Topology, *, routes: bool = True) -> int:
    """Write every switch's topology-wide entries (all of them, or all but the /32 routes); returns
    how many were written."""
    if routes:
        return installer.install_topology()
    written = 0
    for s in topo.switches:
        entries = installer.topology_entries(s.name, routes=False)
        updates = [
            (
                p4runtime_pb2.Update.MODIFY if e.is_default_action else p4runtime_pb2.Update.INSERT,
                p4runtime_pb2.Entity(table_entry=e),
            )
            for e in entries
        ]
        installer.conn(s.name).write(updates)
        written += len(updates)
    return written
