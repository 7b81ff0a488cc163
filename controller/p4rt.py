"""P4Runtime clients of one switch (the ``P4RuntimeClient`` protocol; gRPC: ``SwitchConnection``), by P4 name.

grpcio + p4runtime_pb2 directly (p4runtime-shell's API keeps one global connection; the controller
talks to many switches at once). IDs are never hard-coded: they come from the P4Info the pipeline
was installed with, or from the switch (GetForwardingPipelineConfig).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from controller.errors import P4RuntimeError
from controller.tls import TlsFiles
from controller.tls import channel as tls_channel
from protocol.p4names import P4NameError, find_named

# seconds a switch may take to load a pipeline: it compiles the program first (see set_pipeline)
PIPELINE_PUSH_TIMEOUT = 180.0


def encode(value: int, bitwidth: int) -> bytes:
    """``value`` as a P4Runtime bytestring: big-endian, the shortest form (at least one byte).

    Raises
    ------
    P4RuntimeError
        ``value`` does not fit ``bitwidth`` bits.

    Examples
    --------
    >>> encode(5, 16), encode(0, 8)
    (b'\\x05', b'\\x00')
    """
    if value < 0 or value >> bitwidth:
        raise P4RuntimeError(f"value {value} does not fit in {bitwidth} bits")
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def decode(data: bytes) -> int:
    """A P4Runtime bytestring as an integer.

    Examples
    --------
    >>> decode(b"\\x00\\x05")
    5
    """
    return int.from_bytes(data, "big")


def load_p4info(path: str | Path) -> p4info_pb2.P4Info:
    """P4Info from a text (.txt/.p4info) or binary (.bin/.pb) file.

    Raises
    ------
    P4RuntimeError
        The file cannot be read or is neither form.
    """
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise P4RuntimeError(f"cannot read P4Info {path}: {exc.strerror}") from None
    info = p4info_pb2.P4Info()
    try:
        text_format.Parse(data.decode(), info)
    except (UnicodeDecodeError, text_format.ParseError):
        try:
            info.ParseFromString(data)
        except Exception:
            raise P4RuntimeError(f"{path} is not a P4Info file (text or binary)") from None
    return info


@dataclass
class _Table:
    id: int
    fields: dict[str, tuple[int, int, int]]  # name -> (id, bitwidth, match_type)
    actions: set[int]


ActionInfo = tuple[int, dict[str, tuple[int, int]]]  # action id, param name -> (id, bitwidth)
CounterInfo = tuple[int, int]  # counter id, size
_Named = TypeVar("_Named")


def _named(by_name: Mapping[str, _Named], kind: str, name: str) -> _Named:
    """The ``kind`` (table, action...) called ``name`` (full, or a short name one object has: protocol/p4names.py),
    or a P4RuntimeError that says the program has none, or which ones share the short name."""
    try:
        return find_named(by_name, name, kind)
    except P4NameError as exc:
        if exc.candidates:
            raise P4RuntimeError(
                f"the P4 program's {kind} name {name} is ambiguous: {', '.join(exc.candidates)}"
            ) from None
        raise P4RuntimeError(f"the P4 program has no {kind} {name}") from None


class P4Names:
    """Name -> ID (and bitwidth) lookups over one P4Info."""

    def __init__(self, info: p4info_pb2.P4Info):
        self.info = info
        self.tables = {
            t.preamble.name: _Table(
                t.preamble.id,
                {f.name: (f.id, f.bitwidth, f.match_type) for f in t.match_fields},
                {a.id for a in t.action_refs},
            )
            for t in info.tables
        }
        self.actions = {
            a.preamble.name: (a.preamble.id, {p.name: (p.id, p.bitwidth) for p in a.params}) for a in info.actions
        }
        self.counters = {c.preamble.name: (c.preamble.id, c.size) for c in info.counters}

    def table(self, name: str) -> _Table:
        """The table called ``name`` (full ``InaIngress.ina_jobs`` or short ``ina_jobs``): id, keys, actions.

        Raises
        ------
        P4RuntimeError
            The program has no such table.
        """
        return _named(self.tables, "table", name)

    def action(self, name: str) -> ActionInfo:
        """``(action id, {param: (id, bitwidth)})`` of the action called ``name``.

        Raises
        ------
        P4RuntimeError
            The program has no such action.
        """
        return _named(self.actions, "action", name)

    def counter(self, name: str) -> CounterInfo:
        """``(counter id, size)`` of the counter called ``name``.

        Raises
        ------
        P4RuntimeError
            The program has no such counter.
        """
        return _named(self.counters, "counter", name)

    def table_entry(
        self,
        table: str,
        match: Mapping[str, int | tuple[int, int]] | None,
        action: str,
        params: Mapping[str, int],
        default: bool = False,
        priority: int = 0,
    ) -> p4runtime_pb2.TableEntry:
        """A TableEntry built by P4 names: the ids and widths come from the P4Info.

        Parameters
        ----------
        table : str
        match : dict or None
            Key name -> value, or (value, prefix_len) for an lpm key, (value, mask) for a ternary key (a
            zero mask leaves the key out: a wildcard); None for a default action.
        action : str
        params : dict
            Action parameter name -> value.
        default : bool
            Build the table's default action instead of an entry.
        priority : int
            The entry's priority (tables with ternary keys: higher wins).

        Returns
        -------
        p4.v1.p4runtime_pb2.TableEntry

        Raises
        ------
        P4RuntimeError
            An unknown table, key, action or parameter, or a value too wide for its field.

        Examples
        --------
        >>> from p4.config.v1 import p4info_pb2
        >>> info = p4info_pb2.P4Info()
        >>> table = info.tables.add()
        >>> table.preamble.id, table.preamble.name = 7, "Ingress.t"
        >>> key = table.match_fields.add(id=1, name="hdr.x", bitwidth=8, match_type=p4info_pb2.MatchField.EXACT)
        >>> action = info.actions.add()
        >>> action.preamble.id, action.preamble.name = 9, "Ingress.a"
        >>> _ = action.params.add(id=1, name="port", bitwidth=9)
        >>> entry = P4Names(info).table_entry("t", {"hdr.x": 3}, "a", {"port": 2})
        >>> entry.table_id, entry.match[0].exact.value, entry.action.action.params[0].value
        (7, b'\\x03', b'\\x02')
        """
        t = self.table(table)
        entry = p4runtime_pb2.TableEntry(table_id=t.id, is_default_action=default, priority=priority)
        for name, value in (match or {}).items():
            if name not in t.fields:
                raise P4RuntimeError(f"table {table} has no key {name}")
            fid, width, kind = t.fields[name]
            if kind == p4info_pb2.MatchField.TERNARY:
                assert isinstance(value, tuple), f"{table}.{name} is ternary: give (value, mask)"
                if value[1]:  # P4Runtime leaves a wildcard ternary field out of the entry
                    m = entry.match.add(field_id=fid)
                    m.ternary.value, m.ternary.mask = encode(value[0] & value[1], width), encode(value[1], width)
                continue
            m = entry.match.add(field_id=fid)
            if kind == p4info_pb2.MatchField.LPM:
                assert isinstance(value, tuple), f"{table}.{name} is lpm: give (value, prefix_len)"
                m.lpm.value, m.lpm.prefix_len = encode(value[0], width), value[1]
            else:
                assert isinstance(value, int), f"{table}.{name}: give an integer"
                m.exact.value = encode(value, width)
        if action:
            aid, pinfo = self.action(action)
            entry.action.action.action_id = aid
            for pname, value in params.items():
                if pname not in pinfo:
                    raise P4RuntimeError(f"action {action} has no parameter {pname}")
                pid, width = pinfo[pname]
                entry.action.action.params.add(param_id=pid, value=encode(int(value), width))
        return entry


class P4RuntimeClient(Protocol):
    """What the controller needs of one switch: its pipeline, and P4Runtime entities read and written.

    Entities carry P4Info ids; ``P4Names`` turns the P4 program's names into them, so the installer
    works by P4 name whatever the client. ``SwitchConnection`` implements this over gRPC; the
    in-process network's switches implement it in process (``topologies.inprocess.install``).
    Every method raises ``P4RuntimeError`` naming the switch when the switch refuses.
    """

    name: str

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        """Load a P4 program (P4Info and the target's device config) into the switch."""
        ...

    def get_p4info(self) -> p4info_pb2.P4Info:
        """The P4Info of the program the switch runs."""
        ...

    def write(self, updates: Sequence[tuple[int, p4runtime_pb2.Entity]]) -> None:
        """Apply (Update type, entity) pairs in order; raise P4RuntimeError if any update failed."""
        ...

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        """The entities matching read queries (wildcards as P4Runtime defines them)."""
        ...

    def close(self) -> None:
        """Release the session (nothing to do for a client that holds none)."""
        ...


def read_counter(client: P4RuntimeClient, counter_id: int, indices: Iterable[int]) -> dict[int, tuple[int, int]]:
    """index -> (packets, bytes) of one indexed P4 counter, read through any P4RuntimeClient.

    Parameters
    ----------
    client : P4RuntimeClient
    counter_id : int
        From ``P4Names.counter``.
    indices : iterable of int

    Raises
    ------
    P4RuntimeError
        The switch refused the read.
    """
    query = []
    for i in indices:
        e = p4runtime_pb2.Entity()
        e.counter_entry.counter_id = counter_id
        e.counter_entry.index.index = i
        query.append(e)
    return {
        e.counter_entry.index.index: (e.counter_entry.data.packet_count, e.counter_entry.data.byte_count)
        for e in client.read(query)
    }


class SwitchConnection:
    """One P4Runtime session (stream + arbitration) with one device, over gRPC: a ``P4RuntimeClient``."""

    def __init__(
        self,
        address: str,
        device_id: int,
        election_id: int = 1,
        timeout: float = 10.0,
        name: str = "",
        tls: TlsFiles | None = None,
    ):
        self.address, self.device_id, self.election_id = address, device_id, election_id
        self.name = name or address
        self.timeout = timeout
        self.channel = tls_channel(address, tls)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._requests: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self._arbitrated = threading.Event()
        self._status: int | None = None
        self._stream: Any = None  # the StreamChannel call: an iterator of responses that can be cancelled
        self._reader: threading.Thread | None = None

    def open(self) -> SwitchConnection:
        """Connect and become primary controller (arbitration with ``election_id``); return self.

        Raises
        ------
        P4RuntimeError
            No server at the address within the timeout, no arbitration answer, or another controller
            is primary.
        """
        self._wait_for_server()
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        reader = self._reader = threading.Thread(target=self._read_stream, daemon=True, name=f"p4rt-{self.name}")
        reader.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.low = self.election_id
        self._requests.put(req)
        if not self._arbitrated.wait(self.timeout):
            raise P4RuntimeError(f"switch {self.name}: no arbitration answer from {self.address}")
        if self._status is not None and self._status != 0:
            raise P4RuntimeError(f"switch {self.name}: not primary controller (status {self._status})")
        return self

    def _wait_for_server(self) -> None:
        """Wait up to the timeout for a P4Runtime server to answer ``Capabilities``.

        An RPC that waits for the channel to be ready, rather than ``grpc.channel_ready_future``: that
        future polls the channel from a thread of its own, which can outlive a cancel and then raise
        "Channel closed" in the background once ``close()`` has run. A server that does not implement
        ``Capabilities`` (older P4Runtime) still answered, so it counts as present.
        """
        try:
            self.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=self.timeout, wait_for_ready=True)
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNIMPLEMENTED:
                raise P4RuntimeError(f"switch {self.name}: no P4Runtime server at {self.address}") from None

    def _read_stream(self) -> None:
        try:
            for msg in self._stream:
                if msg.HasField("arbitration"):
                    self._status = msg.arbitration.status.code
                    self._arbitrated.set()
        except grpc.RpcError:
            self._arbitrated.set()

    def close(self) -> None:
        """End the stream and close the channel."""
        self._requests.put(None)
        if self._stream is not None:
            self._stream.cancel()
        self.channel.close()

    def __enter__(self) -> SwitchConnection:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, what: str, fn: Callable[..., Any], request: Any, timeout: float | None = None) -> Any:
        try:
            return fn(request, timeout=self.timeout if timeout is None else timeout)
        except grpc.RpcError as exc:
            details = exc.details() or exc.code().name
            errors = _update_errors(exc)
            if errors:
                details = "; ".join(errors)
            raise P4RuntimeError(f"switch {self.name}: {what} failed: {details}") from None

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes) -> None:
        """SetForwardingPipelineConfig (VERIFY_AND_COMMIT) with ``p4info`` and ``device_config``."""
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        )
        req.election_id.low = self.election_id
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        # the switch compiles the program before it answers (softswitch's C back end: seconds of gcc on a cold
        # cache, longer when several switches of a lab compile at once), so the connection's timeout is too short
        timeout = max(self.timeout, PIPELINE_PUSH_TIMEOUT)
        self._call("SetForwardingPipelineConfig", self.stub.SetForwardingPipelineConfig, req, timeout)

    def get_p4info(self) -> p4info_pb2.P4Info:
        """The P4Info of the switch's pipeline (GetForwardingPipelineConfig).

        Raises
        ------
        P4RuntimeError
            The switch has no pipeline yet.
        """
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id, response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE
        )
        reply = self._call("GetForwardingPipelineConfig", self.stub.GetForwardingPipelineConfig, req)
        if not reply.config.HasField("p4info"):
            raise P4RuntimeError(f"switch {self.name}: has no pipeline (give the P4Info and device config)")
        return reply.config.p4info

    def write(self, updates: Sequence[tuple[int, p4runtime_pb2.Entity]]) -> None:
        """One Write request with ``updates``; raise P4RuntimeError with every failed update's message."""
        if not updates:
            return
        req = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        req.election_id.low = self.election_id
        for kind, entity in updates:
            req.updates.add(type=kind).entity.CopyFrom(entity)
        self._call("Write", self.stub.Write, req)

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        """One Read request; the entities of every reply."""
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        req.entities.extend(entities)
        try:
            return [e for reply in self.stub.Read(req, timeout=self.timeout) for e in reply.entities]
        except grpc.RpcError as exc:
            raise P4RuntimeError(f"switch {self.name}: Read failed: {exc.details() or exc.code().name}") from None

    def read_counter(self, counter_id: int, indices: Iterable[int]) -> dict[int, tuple[int, int]]:
        """index -> (packets, bytes) of one indexed P4 counter (``read_counter`` on this connection)."""
        return read_counter(self, counter_id, indices)


def _update_errors(exc: grpc.RpcError) -> list[str]:
    """Messages of the failed updates in a Write error's google.rpc.Status details."""
    try:
        from google.rpc import status_pb2

        for key, value in exc.trailing_metadata() or ():
            if key == "grpc-status-details-bin":
                status = status_pb2.Status.FromString(value)
                out = []
                for detail in status.details:
                    err = p4runtime_pb2.Error()
                    if detail.Unpack(err) and err.canonical_code != 0:
                        out.append(err.message or f"code {err.canonical_code}")
                return out
    except Exception:
        return []
    return []
