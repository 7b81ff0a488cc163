"""Switch state of the in-process network, written by the controller's own installer.

``InProcessClient`` is a ``controller.p4rt.P4RuntimeClient`` for one softswitch of this process: its
writes and reads go through softswitch's P4Runtime service (the same translation a gRPC Write or Read
goes through), without a socket. ``network_installer`` gives the controller's ``Installer`` these
clients, so the in-process network gets exactly the entries a real network gets, inserted or
modified as the installer decides, and removing a job is the installer's ``remove_job``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.errors import P4RuntimeError
from controller.installer import Installer
from softswitch.p4info import build_p4info
from softswitch.p4runtime_server import P4RTError, P4RuntimeService

if TYPE_CHECKING:
    from topologies.inprocess.fabric import InProcessNetwork


class InProcessClient:
    """P4Runtime entities of one in-process softswitch, read and written in this process."""

    def __init__(
        self, name: str, service: P4RuntimeService, p4info: p4info_pb2.P4Info, alive: Callable[[], bool] = lambda: True
    ):
        self.name = name
        self.service = service
        self.p4info = p4info
        self.alive = alive

    def _check_alive(self) -> None:
        if not self.alive():
            raise P4RuntimeError(f"switch {self.name}: no P4Runtime server (the switch is dead)")

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        raise P4RuntimeError(f"switch {self.name}: in-process switches run the program they were built with")

    def get_p4info(self) -> p4info_pb2.P4Info:
        return self.p4info

    def write(self, updates: Sequence[tuple[int, p4runtime_pb2.Entity]]) -> None:
        self._check_alive()
        messages = [p4runtime_pb2.Update(type=kind, entity=entity) for kind, entity in updates]
        failed = [error.message for error in self.service.write_updates(messages) if error is not None]
        if failed:
            raise P4RuntimeError(f"switch {self.name}: Write failed: {'; '.join(failed)}")

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        self._check_alive()
        try:
            return list(self.service.read_entities(entities))
        except P4RTError as exc:
            raise P4RuntimeError(f"switch {self.name}: Read failed: {exc.message}") from None

    def close(self) -> None:
        """Nothing to release: the switch belongs to the network."""


def network_installer(net: InProcessNetwork) -> Installer:
    """The controller's installer over ``net``'s switches (one ``InProcessClient`` each)."""
    p4info = build_p4info(net.program.info)

    def connect(name: str) -> InProcessClient:
        device_id = net.topo.switch(name).device_id
        service = P4RuntimeService(switch=net.switches[name], device_id=device_id)
        node = net.net.nodes[name]
        return InProcessClient(name, service, p4info, alive=lambda: bool(node.alive))

    return Installer(net.topo, p4info=p4info, connect=connect)
