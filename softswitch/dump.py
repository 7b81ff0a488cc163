"""``softswitch dump``: print a running switch's tables, counters and registers by name.

A read-only P4Runtime client: it fetches the P4Info with GetForwardingPipelineConfig and issues wildcard
Reads; it opens no stream, so it never takes part in arbitration and needs no primary role.
Counters and registers print only their non-zero cells (and how many cells are zero).
"""

from __future__ import annotations

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch.errors import SwitchError
from softswitch.p4info import MATCH_KIND_OF, P4InfoIndex


class DumpError(SwitchError):
    """A switch that could not be read back (the message says which and why)."""


def _int(data: bytes) -> int:
    return int.from_bytes(data, "big")


def format_match(mf, fm) -> str:
    kind = MATCH_KIND_OF.get(mf.match_type)
    if kind == "exact":
        return f"{mf.name}=0x{_int(fm.exact.value):x}"
    if kind == "lpm":
        return f"{mf.name}=0x{_int(fm.lpm.value):x}/{fm.lpm.prefix_len}"
    if kind == "ternary":
        return f"{mf.name}=0x{_int(fm.ternary.value):x}&&&0x{_int(fm.ternary.mask):x}"
    if kind == "range":
        return f"{mf.name}={_int(fm.range.low)}->{_int(fm.range.high)}"
    return f"{mf.name}=0x{_int(fm.optional.value):x}"


def format_action(index: P4InfoIndex, action_msg) -> str:
    action = index.get("actions", action_msg.action_id)
    if action is None:
        return f"<action id {action_msg.action_id}>()"
    names = {p.id: p.name for p in action.params}
    args = ", ".join(f"{names.get(p.param_id, p.param_id)}=0x{_int(p.value):x}" for p in action_msg.params)
    return f"{action.preamble.name}({args})"


class DumpClient:
    def __init__(self, address: str, device_id: int, timeout: float = 5.0):
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.device_id = device_id
        self.timeout = timeout
        self.address = address
        request = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=device_id, response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE
        )
        try:
            reply = self.stub.GetForwardingPipelineConfig(request, timeout=timeout)
        except grpc.RpcError as e:
            raise DumpError(self._describe(e)) from None
        self.index = P4InfoIndex(reply.config.p4info)

    def _describe(self, e: grpc.RpcError) -> str:
        if e.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return f"cannot reach a P4Runtime server at {self.address}"
        return f"{e.code().name}: {e.details()}"

    def read(self, entity) -> list:
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        request.entities.append(entity)
        try:
            return [e for reply in self.stub.Read(request, timeout=self.timeout) for e in reply.entities]
        except grpc.RpcError as e:
            raise DumpError(self._describe(e)) from None

    def close(self):
        self.channel.close()


def dump_tables(client: DumpClient, out) -> None:
    for table in client.index.p4info.tables:
        fields = {m.id: m for m in table.match_fields}
        entity = p4runtime_pb2.Entity()
        entity.table_entry.table_id = table.preamble.id
        if len(table.direct_resource_ids):
            entity.table_entry.counter_data.SetInParent()
        entries = [e.table_entry for e in client.read(entity)]
        default = p4runtime_pb2.Entity()
        default.table_entry.table_id = table.preamble.id
        default.table_entry.is_default_action = True
        defaults = [e.table_entry for e in client.read(default)]
        print(f"table {table.preamble.name} ({len(entries)} entr{'y' if len(entries) == 1 else 'ies'})", file=out)
        for entry in entries:
            key = " ".join(format_match(fields[fm.field_id], fm) for fm in entry.match) or "(match all)"
            prio = f" priority={entry.priority}" if entry.priority else ""
            counted = (
                f" [packets={entry.counter_data.packet_count} bytes={entry.counter_data.byte_count}]"
                if entry.HasField("counter_data")
                else ""
            )
            print(f"  {key}{prio} -> {format_action(client.index, entry.action.action)}{counted}", file=out)
        for entry in defaults:
            print(f"  default -> {format_action(client.index, entry.action.action)}", file=out)


def dump_counters(client: DumpClient, out) -> None:
    for counter in client.index.p4info.counters:
        entity = p4runtime_pb2.Entity()
        entity.counter_entry.counter_id = counter.preamble.id
        cells = [e.counter_entry for e in client.read(entity)]
        nonzero = [c for c in cells if c.data.packet_count or c.data.byte_count]
        print(f"counter {counter.preamble.name} (size {counter.size}, {len(cells) - len(nonzero)} zero)", file=out)
        for c in nonzero:
            print(f"  [{c.index.index}] packets={c.data.packet_count} bytes={c.data.byte_count}", file=out)


def dump_registers(client: DumpClient, out) -> None:
    for register in client.index.p4info.registers:
        entity = p4runtime_pb2.Entity()
        entity.register_entry.register_id = register.preamble.id
        cells = [e.register_entry for e in client.read(entity)]
        nonzero = [c for c in cells if _int(c.data.bitstring)]
        print(f"register {register.preamble.name} (size {register.size}, {len(cells) - len(nonzero)} zero)", file=out)
        for c in nonzero:
            print(f"  [{c.index.index}] = 0x{_int(c.data.bitstring):x}", file=out)


def dump(address: str, device_id: int, what: str, out) -> int:
    """Print the requested state; returns the exit status (1 with a one-line error on failure)."""
    import sys

    try:
        client = DumpClient(address, device_id)
        try:
            if what in ("tables", "all"):
                dump_tables(client, out)
            if what in ("counters", "all"):
                dump_counters(client, out)
            if what in ("registers", "all"):
                dump_registers(client, out)
        finally:
            client.close()
    except DumpError as e:
        print(f"softswitch: error: {e}", file=sys.stderr)
        return 1
    return 0
