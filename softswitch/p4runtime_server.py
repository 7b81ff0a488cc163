"""P4Runtime (v1, package p4runtime 1.4.1) gRPC service over one softswitch ``Switch``.

The device config of a softswitch pipeline (``ForwardingPipelineConfig.p4_device_config``) is the P4
program's source text (UTF-8), as ``softswitch compile --device-config`` writes it. Relative
``#include``s are resolved against ``include_dirs`` (the server's ``--include-dir`` options and the
directory of the program the switch was started with), so a self-contained program is the safest.
The P4Info given by the client is used for every ID <-> name translation (so a P4Info produced by p4c
works too); it must describe the program (``P4InfoIndex.check_against``).

Arbitration: per role name, the connected client with the highest election ID is primary. Every change
of primary is announced to all clients of the role (status OK to the primary, ALREADY_EXISTS to backups,
NOT_FOUND when nobody can be primary). Writes and SetForwardingPipelineConfig need the primary's
election ID (else PERMISSION_DENIED); reads do not. Role configs are not supported (all roles see all).

Write follows the P4Runtime error convention: request-level problems (device id, election id, no
pipeline, atomicity) are the RPC's status; per-update problems make the RPC fail with UNKNOWN and a
``google.rpc.Status`` whose details hold one ``p4.v1.Error`` per update (OK for those that were applied).
That report travels in the call's trailing metadata, which a client with gRPC's default limits reads up
to 8-16 KB: a report bigger than ``ERROR_REPORT_BUDGET`` is sent as runs instead, one ``p4.v1.Error``
per run of consecutive updates with the same outcome, its ``space`` ``UPDATE_RUNS_SPACE`` and its
``code`` the number of updates it stands for (docs/security.md). Only CONTINUE_ON_ERROR atomicity is
supported.

Limits against clients that hold resources (docs/security.md): at most ``MAX_STREAMS`` StreamChannels
at once (more are answered RESOURCE_EXHAUSTED), and their threads are apart from the ones that answer
the other calls. A pipeline is compiled outside the service's lock: writes to the running pipeline go on
during a push, and the new one replaces it at once.
"""

from __future__ import annotations

import errno
import itertools
import logging
import queue
import socket
import sys
import threading
import time
from concurrent import futures
from dataclasses import dataclass, field
from importlib import metadata

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc

from protocol.addresses import is_loopback_host
from softswitch.errors import SwitchError
from softswitch.p4info import MATCH_KIND_OF, P4InfoError, P4InfoIndex, build_p4info

log = logging.getLogger("softswitch.p4runtime")
P4RUNTIME_VERSION = metadata.version("p4runtime")
Code = grpc.StatusCode

DEFAULT_ADDRESS = "127.0.0.1:9559"  # loopback: P4Runtime trusts the highest election id, TLS is the only guard
MAX_STREAMS = 16  # StreamChannels at once; each holds a server thread while it is open
UNARY_WORKERS = 8  # threads for every other call, which StreamChannels never take
ERROR_REPORT_BUDGET = 6000  # bytes of a Write's error report: below gRPC's default 8 KB metadata limit
UPDATE_RUNS_SPACE = "softswitch.update-runs"  # p4.v1.Error.space of a run: its code = updates in the run
DEVICE_CONFIG_NAME = "p4_device_config.p4"  # the file name a pushed program's messages carry


class P4RTError(SwitchError):
    """An error with a canonical code, for one update or one whole RPC."""

    def __init__(self, code: Code, message: str):
        super().__init__(message)
        self.code = code
        self.message = message


# Switch exceptions, by class name so this module does not depend on where the runtime defines them
SWITCH_ERROR_CODES = {
    "InvalidEntry": Code.INVALID_ARGUMENT,
    "EntryExists": Code.ALREADY_EXISTS,
    "EntryNotFound": Code.NOT_FOUND,
    "ConstDefaultAction": Code.PERMISSION_DENIED,
    "TableFull": Code.RESOURCE_EXHAUSTED,
    "InUse": Code.FAILED_PRECONDITION,
}


def switch_error(exc: Exception) -> P4RTError:
    for cls in type(exc).__mro__:
        if cls.__name__ in SWITCH_ERROR_CODES:
            return P4RTError(SWITCH_ERROR_CODES[cls.__name__], str(exc))
    if isinstance(exc, (KeyError, IndexError, ValueError)):
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        return P4RTError(Code.INVALID_ARGUMENT, str(message))
    return P4RTError(Code.INTERNAL, f"{type(exc).__name__}: {exc}")


# ---------------------------------------------------------------- value encoding


def decode_value(data: bytes, bitwidth: int, what: str) -> int:
    """A P4Runtime bytestring (canonical or padded) -> int, checked against the bitwidth."""
    if len(data) == 0:
        raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: empty bytestring")
    if len(data) > (bitwidth + 7) // 8:
        raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: {len(data)} bytes is too long for a {bitwidth}-bit value")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: value 0x{value:x} does not fit in {bitwidth} bits")
    return value


def encode_value(value: int, bitwidth: int | None = None) -> bytes:
    """int -> canonical P4Runtime bytestring (no leading zero bytes, at least one byte)."""
    if bitwidth is not None:
        value &= (1 << bitwidth) - 1
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def pack_fields(fields, values: list[int]) -> bytes:
    """Header fields (name, bitwidth) with values -> the header's bytes, MSB first."""
    total = sum(f.bitwidth for f in fields)
    acc = 0
    for f, v in zip(fields, values, strict=True):
        acc = (acc << f.bitwidth) | (v & ((1 << f.bitwidth) - 1))
    return acc.to_bytes((total + 7) // 8, "big") if total else b""


def unpack_fields(fields, data: bytes) -> list[int]:
    total = sum(f.bitwidth for f in fields)
    nbytes = (total + 7) // 8
    acc = int.from_bytes(data[:nbytes], "big") >> (nbytes * 8 - total)
    values = []
    shift = total
    for f in fields:
        shift -= f.bitwidth
        values.append((acc >> shift) & ((1 << f.bitwidth) - 1))
    return values


# ---------------------------------------------------------------- pipeline


@dataclass
class Pipeline:
    """One forwarding pipeline config: P4Info (+ its index), device config, cookie, compiled program."""

    p4info: object
    index: P4InfoIndex
    device_config: bytes
    cookie: int | None
    program: object = None


@dataclass(eq=False)
class StreamClient:
    """One StreamChannel connection."""

    peer: str
    out: queue.Queue = field(default_factory=queue.Queue)
    role: str | None = None
    election_id: tuple[int, int] | None = None
    arbitrated: bool = False


class P4RuntimeService(p4runtime_pb2_grpc.P4RuntimeServicer):
    """The P4Runtime service for one device. ``switch`` may be None until a pipeline is set."""

    def __init__(
        self,
        switch=None,
        device_id: int = 0,
        cpu_port: int | None = None,
        include_dirs=(),
        device_config: bytes = b"",
        make_switch=None,
        transmit=None,
        backend: str | None = None,
    ):
        self.device_id = device_id
        self.backend = backend  # the back end new pipelines compile for (None: softswitch's default)
        self.cpu_port = cpu_port
        self.include_dirs = tuple(include_dirs)
        self.make_switch = make_switch  # program -> Switch, for a device started with --no-p4
        self.transmit = transmit or (lambda port, frame: None)
        self.lock = threading.RLock()  # state the calls share; never held through a compile
        self.push_lock = threading.Lock()  # one SetForwardingPipelineConfig at a time
        self.max_streams = MAX_STREAMS
        self.clients: list[StreamClient] = []
        self.saved: Pipeline | None = None  # VERIFY_AND_SAVE
        self.pipeline: Pipeline | None = None
        self.switch = None
        self.clone_sessions: dict[int, tuple[list, int, int]] = {}
        self.digest_configs: dict[int, object] = {}
        self.digest_list_ids = itertools.count(1)
        self.stats = {"packet_in": 0, "packet_out": 0, "packet_in_dropped": 0, "digests": 0}
        if switch is not None:
            p4info = build_p4info(switch.info)
            self._attach(
                switch, Pipeline(p4info, P4InfoIndex(p4info), device_config, None, getattr(switch, "program", None))
            )

    # ------------------------------------------------------------ data plane glue

    def _attach(self, switch, pipeline: Pipeline):
        self.switch = switch
        self.pipeline = pipeline
        switch.on_packet_in = self._packet_in
        switch.on_digest = self._digest
        self.clone_sessions.clear()

    def process(self, port: int, frame: bytes):
        """A frame from a port: run the pipeline, transmit what it emits. No pipeline: dropped."""
        switch = self.switch
        if switch is None:
            return []
        outputs = switch.process(port, frame)
        for egress, data in outputs:
            if egress != self.cpu_port:
                self.transmit(egress, data)
        return outputs

    def _primaries(self):
        with self.lock:
            roles = {c.role for c in self.clients if c.arbitrated}
            return [p for p in (self._primary(r) for r in roles) if p is not None]

    def _packet_in(self, frame: bytes):
        pipeline = self.pipeline
        msg = p4runtime_pb2.StreamMessageResponse()
        header = pipeline.index.controller_header("packet_in") if pipeline else None
        if header is not None and len(header.metadata):
            size = (sum(m.bitwidth for m in header.metadata) + 7) // 8
            for m, value in zip(header.metadata, unpack_fields(header.metadata, frame), strict=True):
                md = msg.packet.metadata.add()
                md.metadata_id = m.id
                md.value = encode_value(value)
            msg.packet.payload = frame[size:]
        else:
            msg.packet.payload = frame
        primaries = self._primaries()
        if not primaries:
            self.stats["packet_in_dropped"] += 1
        for client in primaries:
            self.stats["packet_in"] += 1
            client.out.put(msg)

    def _digest(self, name: str, values: dict):
        pipeline = self.pipeline
        digest = pipeline.index.named("digests", name) if pipeline else None
        if digest is None or digest.preamble.id not in self.digest_configs:
            return
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.digest.digest_id = digest.preamble.id
        msg.digest.list_id = next(self.digest_list_ids)
        msg.digest.timestamp = time.time_ns()
        struct = pipeline.p4info.type_info.structs[digest.type_spec.struct.name]
        data = msg.digest.data.add()
        for member in struct.members:
            width = member.type_spec.bitstring.bit.bitwidth or member.type_spec.bitstring.int.bitwidth
            data.struct.members.add().bitstring = encode_value(values.get(member.name, 0), width)
        self.stats["digests"] += 1
        for client in self._primaries():
            client.out.put(msg)

    def _packet_out(self, client: StreamClient, packet) -> None:
        if self._primary(client.role) is not client:
            raise P4RTError(Code.PERMISSION_DENIED, "packet-out from a client that is not primary")
        switch, pipeline = self.switch, self.pipeline
        if switch is None:
            raise P4RTError(Code.FAILED_PRECONDITION, "no forwarding pipeline config set")
        if self.cpu_port is None:
            raise P4RTError(Code.FAILED_PRECONDITION, "packet-out needs a CPU port (--cpu-port)")
        header = pipeline.index.controller_header("packet_out")
        prefix = b""
        if header is not None:
            by_id = {m.id: m for m in header.metadata}
            values = {m.id: 0 for m in header.metadata}
            for md in packet.metadata:
                m = by_id.get(md.metadata_id)
                if m is None:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"packet_out has no metadata id {md.metadata_id}")
                values[m.id] = decode_value(md.value, m.bitwidth, f"packet_out metadata {m.name}")
            prefix = pack_fields(header.metadata, [values[m.id] for m in header.metadata])
        elif len(packet.metadata):
            raise P4RTError(Code.INVALID_ARGUMENT, 'the program has no @controller_header("packet_out")')
        self.stats["packet_out"] += 1
        outputs = switch.packet_out(prefix + packet.payload) or []
        for egress, data in outputs:
            if egress != self.cpu_port:
                self.transmit(egress, data)

    # ------------------------------------------------------------ arbitration

    def _primary(self, role):
        candidates = [c for c in self.clients if c.arbitrated and c.role == role and c.election_id is not None]
        return max(candidates, key=lambda c: c.election_id, default=None)

    def _arbitration_message(self, client: StreamClient, primary):
        msg = p4runtime_pb2.StreamMessageResponse()
        arb = msg.arbitration
        arb.device_id = self.device_id
        if client.role:
            arb.role.name = client.role
        if primary is not None:
            arb.election_id.high, arb.election_id.low = primary.election_id
        if primary is client:
            arb.status.code = code_pb2.OK
            arb.status.message = "primary"
        elif primary is not None:
            arb.status.code = code_pb2.ALREADY_EXISTS
            arb.status.message = "backup: another client is primary"
        else:
            arb.status.code = code_pb2.NOT_FOUND
            arb.status.message = "backup: no primary client"
        return msg

    def _arbitrate(self, client: StreamClient, update) -> None:
        if update.device_id != self.device_id:
            raise P4RTError(
                Code.NOT_FOUND, f"device id {update.device_id} does not exist (this switch is device {self.device_id})"
            )
        role = update.role.name
        election = (update.election_id.high, update.election_id.low) if update.HasField("election_id") else None
        with self.lock:
            if client.arbitrated and role != client.role:
                raise P4RTError(Code.FAILED_PRECONDITION, "a stream cannot change its role")
            for other in self.clients:
                if (
                    other is not client
                    and other.arbitrated
                    and other.role == role
                    and election is not None
                    and other.election_id == election
                ):
                    raise P4RTError(
                        Code.INVALID_ARGUMENT,
                        f"election id {election} is already used by another client of role {role!r}",
                    )
            before = self._primary(role)
            client.role, client.election_id, client.arbitrated = role, election, True
            after = self._primary(role)
            if after is not before:
                for other in self.clients:
                    if other.arbitrated and other.role == role:
                        other.out.put(self._arbitration_message(other, after))
            else:
                client.out.put(self._arbitration_message(client, after))

    def _disconnect(self, client: StreamClient) -> None:
        with self.lock:
            if client not in self.clients:
                return
            before = self._primary(client.role) if client.arbitrated else None
            self.clients.remove(client)
            if before is client:
                after = self._primary(client.role)
                for other in self.clients:
                    if other.arbitrated and other.role == client.role:
                        other.out.put(self._arbitration_message(other, after))
        client.out.put(None)

    def _check_primary(self, device_id, role, election_id) -> None:
        if device_id != self.device_id:
            raise P4RTError(Code.NOT_FOUND, f"device id {device_id} does not exist")
        with self.lock:
            primary = self._primary(role)
            given = (election_id.high, election_id.low)
            if primary is None or primary.election_id != given:
                who = f"primary has election id {primary.election_id}" if primary else "there is no primary"
                raise P4RTError(
                    Code.PERMISSION_DENIED, f"election id {given} is not the primary's for role {role!r} ({who})"
                )

    def StreamChannel(self, request_iterator, context):
        client = StreamClient(context.peer())
        with self.lock:
            full = len(self.clients) >= self.max_streams
            if not full:
                self.clients.append(client)
        if full:
            context.abort(
                Code.RESOURCE_EXHAUSTED, f"too many StreamChannel connections: this switch takes {self.max_streams}"
            )

        def read_requests():
            try:
                for request in request_iterator:
                    kind = request.WhichOneof("update")
                    try:
                        if kind == "arbitration":
                            self._arbitrate(client, request.arbitration)
                        elif not client.arbitrated:
                            raise P4RTError(
                                Code.FAILED_PRECONDITION, "the first stream message must be a MasterArbitrationUpdate"
                            )
                        elif kind == "packet":
                            try:
                                self._packet_out(client, request.packet)
                            except P4RTError as e:
                                error = p4runtime_pb2.StreamMessageResponse()
                                error.error.canonical_code = e.code.value[0]
                                error.error.message = e.message
                                error.error.packet_out.packet_out.CopyFrom(request.packet)
                                client.out.put(error)
                        elif kind == "digest_ack":
                            pass
                    except P4RTError as e:
                        if kind == "arbitration" or not client.arbitrated:
                            client.out.put(e)
                            return
                        raise
            except Exception as e:  # noqa: BLE001 - client went away or sent garbage
                if not isinstance(e, grpc.RpcError):
                    log.warning("stream from %s: %s", client.peer, e)
            finally:
                self._disconnect(client)

        context.add_callback(lambda: self._disconnect(client))
        reader = threading.Thread(target=read_requests, name="p4rt-stream", daemon=True)
        reader.start()
        while True:
            item = client.out.get()
            if item is None:
                break
            if isinstance(item, P4RTError):
                self._disconnect(client)
                context.abort(item.code, item.message)
            yield item

    # ------------------------------------------------------------ pipeline config

    def _compile(self, device_config: bytes):
        """Compile a device config (the program source); raise INVALID_ARGUMENT with the compiler's message.

        Its ``#include``s reach only the include directories (confined: no absolute path, no ``..``), and
        it compiles under one fixed name, so pushing the same program again is a compile-cache hit."""
        from softswitch.compiler import compile_source

        try:
            source = device_config.decode("utf-8")
        except UnicodeDecodeError:
            raise P4RTError(
                Code.INVALID_ARGUMENT, "p4_device_config must be the P4 program source (UTF-8 text)"
            ) from None
        try:
            return compile_source(
                source, DEVICE_CONFIG_NAME, include_dirs=self.include_dirs, backend=self.backend, confined_includes=True
            )
        except Exception as e:
            raise P4RTError(Code.INVALID_ARGUMENT, f"cannot compile p4_device_config: {e}") from None

    def _verify(self, config, need_program: bool) -> Pipeline:
        try:
            index = P4InfoIndex(config.p4info)
        except P4InfoError as e:
            raise P4RTError(Code.INVALID_ARGUMENT, f"invalid P4Info: {e}") from None
        if not index.by_id:  # (a program may have no tables: a value set, registers... are enough)
            raise P4RTError(Code.INVALID_ARGUMENT, "invalid P4Info: it describes no object at all")
        cookie = config.cookie.cookie if config.HasField("cookie") else None
        pipeline = Pipeline(config.p4info, index, config.p4_device_config, cookie)
        if config.p4_device_config:
            pipeline.program = self._compile(config.p4_device_config)
            try:
                index.check_against(pipeline.program.info)
            except P4InfoError as e:
                raise P4RTError(Code.INVALID_ARGUMENT, str(e)) from None
        elif need_program:
            raise P4RTError(
                Code.INVALID_ARGUMENT, "p4_device_config is empty: softswitch needs the P4 program source there"
            )
        return pipeline

    def _commit(self, pipeline: Pipeline) -> None:
        program = pipeline.program
        switch = self.switch
        if switch is None or (switch.backend != program.backend and self.make_switch is not None):
            # no device yet, or the new program runs on the other back end (the native one cannot run
            # it, or it is the first that can): a new device of the right kind
            if self.make_switch is None:
                raise P4RTError(Code.INTERNAL, "this server cannot create a switch")
            switch = self.make_switch(program)
            if self.switch is not None and hasattr(self.switch, "close"):
                self.switch.close()
        else:
            try:
                switch.load(program)
            except SwitchError as e:  # BackendUnavailable: a native device given a program it cannot run
                raise P4RTError(Code.INVALID_ARGUMENT, f"cannot load the program: {e}") from None
        self._attach(switch, pipeline)
        self.digest_configs.clear()

    def SetForwardingPipelineConfig(self, request, context):
        try:
            with self.push_lock:
                self._set_pipeline(request)
        except P4RTError as e:
            context.abort(e.code, e.message)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def _set_pipeline(self, request) -> None:
        """One push: verify (compile) without the service's lock, then change what runs under it, the
        primary checked again (it may have changed during the compile)."""
        A = p4runtime_pb2.SetForwardingPipelineConfigRequest
        action = request.action
        if action not in (A.VERIFY, A.VERIFY_AND_SAVE, A.VERIFY_AND_COMMIT, A.COMMIT, A.RECONCILE_AND_COMMIT):
            name = A.Action.Name(action) if action in A.Action.values() else str(action)
            raise P4RTError(Code.INVALID_ARGUMENT, f"unsupported action {name}")
        self._check_primary(request.device_id, request.role, request.election_id)
        pipeline = None
        if action != A.COMMIT:
            pipeline = self._verify(request.config, need_program=action != A.VERIFY)
        with self.lock:
            self._check_primary(request.device_id, request.role, request.election_id)
            if action == A.VERIFY_AND_SAVE:
                self.saved = pipeline
            elif action == A.VERIFY_AND_COMMIT:
                self._commit(pipeline)
            elif action == A.COMMIT:
                if self.saved is None:
                    raise P4RTError(Code.FAILED_PRECONDITION, "COMMIT without a config saved by VERIFY_AND_SAVE")
                self._commit(self.saved)
                self.saved = None
            elif action == A.RECONCILE_AND_COMMIT:
                current = self.pipeline
                if (
                    current is None
                    or current.program is None
                    or pipeline.program.source_hash != current.program.source_hash
                ):
                    raise P4RTError(
                        Code.UNIMPLEMENTED,
                        "RECONCILE_AND_COMMIT only accepts the running program (state cannot "
                        "be carried over to a different one); use VERIFY_AND_COMMIT",
                    )
                pipeline.program = current.program
                self.pipeline = pipeline  # same program: keep all state, adopt the new P4Info/cookie

    def GetForwardingPipelineConfig(self, request, context):
        R = p4runtime_pb2.GetForwardingPipelineConfigRequest
        if request.device_id != self.device_id:
            context.abort(Code.NOT_FOUND, f"device id {request.device_id} does not exist")
        if request.response_type not in R.ResponseType.values():
            context.abort(Code.INVALID_ARGUMENT, f"unknown response_type {request.response_type}")
        pipeline = self.pipeline
        if pipeline is None:
            context.abort(Code.FAILED_PRECONDITION, "no forwarding pipeline config set")
        response = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        config = response.config
        if pipeline.cookie is not None:
            config.cookie.cookie = pipeline.cookie
        if request.response_type in (R.ALL, R.P4INFO_AND_COOKIE):
            config.p4info.CopyFrom(pipeline.p4info)
        if request.response_type in (R.ALL, R.DEVICE_CONFIG_AND_COOKIE):
            config.p4_device_config = pipeline.device_config
        return response

    def Capabilities(self, request, context):
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=P4RUNTIME_VERSION)

    # ------------------------------------------------------------ write

    def Write(self, request, context):
        try:
            self._check_primary(request.device_id, request.role, request.election_id)
            if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                raise P4RTError(Code.UNIMPLEMENTED, "only CONTINUE_ON_ERROR atomicity is supported")
            if self.switch is None:
                raise P4RTError(Code.FAILED_PRECONDITION, "no forwarding pipeline config set")
        except P4RTError as e:
            context.abort(e.code, e.message)
        with self.lock:  # a pipeline commit swaps the switch between batches, never inside one
            errors = self.write_updates(request.updates)
        if any(errors):
            status = error_report(errors)
            context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
            context.abort(Code.UNKNOWN, "Write failure.")
        return p4runtime_pb2.WriteResponse()

    def write_updates(self, updates) -> list[P4RTError | None]:
        """Apply P4Runtime updates in order (CONTINUE_ON_ERROR): one error or None per update.

        What a gRPC Write does after its checks of device, role and election id; the in-process network's
        controller client calls it directly (the caller is the only controller there is)."""
        errors: list[P4RTError | None] = []
        for update in updates:
            try:
                self._write_one(update)
                errors.append(None)
            except P4RTError as e:
                errors.append(e)
            except Exception as e:  # noqa: BLE001 - mapped to a canonical code
                errors.append(switch_error(e))
        return errors

    def _write_one(self, update):
        U = p4runtime_pb2.Update
        if update.type == U.UNSPECIFIED:
            raise P4RTError(Code.INVALID_ARGUMENT, "update type is UNSPECIFIED")
        if update.type not in (U.INSERT, U.MODIFY, U.DELETE):
            raise P4RTError(Code.INVALID_ARGUMENT, f"unknown update type {update.type}")
        kind = update.entity.WhichOneof("entity")
        entity = getattr(update.entity, kind) if kind else None
        if kind == "table_entry":
            self._write_table_entry(update.type, entity)
        elif kind == "counter_entry":
            self._write_counter(update.type, entity)
        elif kind == "register_entry":
            self._write_register(update.type, entity)
        elif kind == "direct_counter_entry":
            self._write_direct_counter(update.type, entity)
        elif kind == "packet_replication_engine_entry":
            self._write_pre(update.type, entity)
        elif kind == "digest_entry":
            self._write_digest(update.type, entity)
        elif kind == "meter_entry":
            self._write_meter(update.type, entity)
        elif kind == "direct_meter_entry":
            self._write_direct_meter(update.type, entity)
        elif kind == "value_set_entry":
            self._write_value_set(update.type, entity)
        elif kind == "action_profile_member":
            self._write_member(update.type, entity)
        elif kind == "action_profile_group":
            self._write_group(update.type, entity)
        else:
            raise P4RTError(Code.UNIMPLEMENTED, f"writing {kind or 'an empty entity'} is not supported")

    # -- tables

    def _p4info_entity(self, kind, entity_id):
        """The running P4Info's tables/counters/registers/digests entry with that id (else NOT_FOUND)."""
        found = self.pipeline.index.get(kind, entity_id)
        if found is None:
            raise P4RTError(Code.NOT_FOUND, f"no {kind[:-1]} with id {entity_id}")
        return found

    def _table(self, table_id):
        return self._p4info_entity("tables", table_id)

    def _entry_from_p4(self, table, entry, default: bool = False):
        """p4.v1.TableEntry -> (Switch TableEntry | None for matches-only, action name, args)."""
        from softswitch.switch import Exact, Lpm, Optional, Range, TableEntry, Ternary

        tname = table.preamble.name
        fields = {m.id: m for m in table.match_fields}
        matches = {}
        needs_priority = False
        for m in table.match_fields:
            kind = MATCH_KIND_OF.get(m.match_type)
            needs_priority |= kind in ("ternary", "range", "optional")
        for fm in entry.match:
            mf = fields.get(fm.field_id)
            if mf is None:
                raise P4RTError(Code.INVALID_ARGUMENT, f"table {tname} has no match field id {fm.field_id}")
            if mf.name in matches:
                raise P4RTError(Code.INVALID_ARGUMENT, f"table {tname}: match field {mf.name} given twice")
            kind = MATCH_KIND_OF.get(mf.match_type)
            given = fm.WhichOneof("field_match_type")
            if given != kind:
                raise P4RTError(Code.INVALID_ARGUMENT, f"table {tname}: match field {mf.name} is {kind}, got {given}")
            what = f"table {tname} match field {mf.name}"
            w = mf.bitwidth
            if kind == "exact":
                matches[mf.name] = Exact(decode_value(fm.exact.value, w, what))
            elif kind == "lpm":
                value = decode_value(fm.lpm.value, w, what)
                plen = fm.lpm.prefix_len
                if not 0 < plen <= w:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: prefix length {plen} is not in 1..{w}")
                if value & ((1 << (w - plen)) - 1):
                    raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: value has bits set beyond the /{plen} prefix")
                matches[mf.name] = Lpm(value, plen)
            elif kind == "ternary":
                value = decode_value(fm.ternary.value, w, what)
                mask = decode_value(fm.ternary.mask, w, what + " mask")
                if mask == 0:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: a zero mask must be omitted (don't care)")
                if value & ~mask:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: value has bits set outside the mask")
                matches[mf.name] = Ternary(value, mask)
            elif kind == "range":
                low = decode_value(fm.range.low, w, what + " low")
                high = decode_value(fm.range.high, w, what + " high")
                if low > high:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: low {low} is above high {high}")
                matches[mf.name] = Range(low, high)
            elif kind == "optional":
                matches[mf.name] = Optional(decode_value(fm.optional.value, w, what))
            else:
                raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: unsupported match type")
        if not default:
            for m in table.match_fields:
                if MATCH_KIND_OF.get(m.match_type) == "exact" and m.name not in matches:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"table {tname}: exact match field {m.name} is missing")
            if needs_priority and entry.priority <= 0:
                raise P4RTError(
                    Code.INVALID_ARGUMENT,
                    f"table {tname} needs a priority > 0 (it has ternary, range or optional fields)",
                )
            if not needs_priority and entry.priority != 0:
                raise P4RTError(Code.INVALID_ARGUMENT, f"table {tname} has only exact/lpm fields: priority must be 0")
        action, args, member, group = None, {}, None, None
        one_shot: list[tuple[str, dict, int]] = []
        if entry.HasField("action"):
            kind = entry.action.WhichOneof("type")
            if kind == "action":
                if table.implementation_id and not default:
                    raise P4RTError(
                        Code.INVALID_ARGUMENT,
                        f"table {tname} is implemented by an action profile: an entry gives a member or group id",
                    )
                action, args = self._action_from_p4(table, entry.action.action, default)
            elif kind in ("action_profile_member_id", "action_profile_group_id"):
                if not table.implementation_id or default:
                    what = "the default entry" if default else f"table {tname} (it has no implementation)"
                    raise P4RTError(Code.INVALID_ARGUMENT, f"{what} cannot point at an action profile member or group")
                if kind == "action_profile_member_id":
                    member = entry.action.action_profile_member_id
                else:
                    group = entry.action.action_profile_group_id
                action = ""
            else:  # action_profile_action_set: one-shot programming of a selector table
                if not table.implementation_id or default:
                    what = "the default entry" if default else f"table {tname} (it has no implementation)"
                    raise P4RTError(Code.INVALID_ARGUMENT, f"{what} cannot take an action profile action set")
                action = ""
                for a in entry.action.action_profile_action_set.action_profile_actions:
                    if a.weight < 1:
                        raise P4RTError(Code.INVALID_ARGUMENT, f"table {tname}: an action set's weights must be >= 1")
                    one_shot.append((*self._action_from_p4(table, a.action, False), a.weight))
                if not one_shot:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"table {tname}: the action profile action set is empty")
        priority = entry.priority if needs_priority else None
        parsed = TableEntry(matches=matches, action=action, args=args, priority=priority, member=member, group=group)
        parsed.one_shot = one_shot  # type: ignore[attr-defined]
        return parsed

    def _action_from_p4(self, table, action_msg, default: bool):
        from p4.config.v1 import p4info_pb2

        tname = table.preamble.name
        ref = next((r for r in table.action_refs if r.id == action_msg.action_id), None)
        action = self.pipeline.index.get("actions", action_msg.action_id)
        if ref is None or action is None:
            raise P4RTError(
                Code.INVALID_ARGUMENT, f"action id {action_msg.action_id} is not an action of table {tname}"
            )
        if default and ref.scope == p4info_pb2.ActionRef.TABLE_ONLY:
            raise P4RTError(
                Code.INVALID_ARGUMENT,
                f"action {action.preamble.name} cannot be the default action of table {tname} (@tableonly)",
            )
        if not default and ref.scope == p4info_pb2.ActionRef.DEFAULT_ONLY:
            raise P4RTError(
                Code.INVALID_ARGUMENT,
                f"action {action.preamble.name} can only be the default action of table {tname} (@defaultonly)",
            )
        params = {p.id: p for p in action.params}
        args = {}
        for given in action_msg.params:
            p = params.get(given.param_id)
            if p is None:
                raise P4RTError(
                    Code.INVALID_ARGUMENT, f"action {action.preamble.name} has no parameter id {given.param_id}"
                )
            args[p.name] = decode_value(given.value, p.bitwidth, f"action {action.preamble.name} parameter {p.name}")
        missing = [p.name for p in action.params if p.name not in args]
        if missing:
            raise P4RTError(
                Code.INVALID_ARGUMENT, f"action {action.preamble.name} is missing parameter(s) {', '.join(missing)}"
            )
        return action.preamble.name, args

    def _write_table_entry(self, update_type, entry):
        U = p4runtime_pb2.Update
        table = self._table(entry.table_id)
        tname = table.preamble.name
        state = self.switch.table(tname)
        if entry.is_default_action:
            if update_type != U.MODIFY:
                raise P4RTError(Code.INVALID_ARGUMENT, f"the default entry of table {tname} can only be modified")
            if len(entry.match):
                raise P4RTError(Code.INVALID_ARGUMENT, "a default entry has no match fields")
            if table.const_default_action_id:
                raise P4RTError(Code.PERMISSION_DENIED, f"the default action of table {tname} is const")
            if entry.HasField("action"):
                parsed = self._entry_from_p4(table, entry, default=True)
                state.set_default(parsed.action, parsed.args)
            else:  # no action: back to the program's initial default
                info = self.switch.info.table(tname)
                action = self.switch.info.action(info.default_action)
                state.set_default(
                    action.name, {p.name: v for p, v in zip(action.params, info.default_args, strict=True)}
                )
            return
        if table.is_const_table:
            raise P4RTError(Code.PERMISSION_DENIED, f"table {tname} is const (its entries are fixed)")
        parsed = self._entry_from_p4(table, entry)
        if update_type in (U.INSERT, U.MODIFY) and parsed.action is None:
            raise P4RTError(Code.INVALID_ARGUMENT, f"table {tname}: entry has no action")
        stored = state.find(parsed) if table.implementation_id and update_type in (U.MODIFY, U.DELETE) else None
        old_group = stored.group if stored is not None and stored.group is not None and stored.group < 0 else None
        new_group = None
        if parsed.one_shot and update_type in (U.INSERT, U.MODIFY):
            new_group = self._one_shot_group(table, parsed.one_shot)
        if new_group is not None:
            parsed.group = new_group
        try:
            if update_type == U.INSERT:
                state.insert(parsed)
            elif update_type == U.MODIFY:
                state.modify(parsed)
            elif update_type == U.DELETE:
                state.delete(parsed)
        except Exception:
            if new_group is not None:
                self._drop_one_shot_group(table, new_group)
            raise
        if old_group is not None:
            self._drop_one_shot_group(table, old_group)

    # One-shot programming: an entry's action set becomes a group of members the controller does not see
    # (negative ids, which P4Runtime's unsigned ids never take), made before the entry and removed with it.
    def _implementing_profile(self, table):
        return self.switch.action_profile(self._p4info_entity("action_profiles", table.implementation_id).preamble.name)

    def _one_shot_group(self, table, actions) -> int:
        profile = self._implementing_profile(table)
        next_id = min((i for i in (*profile.members, *profile.groups) if i < 0), default=0) - 1
        members: dict[int, int] = {}
        try:
            for action, args, weight in actions:
                profile.add_member(next_id, action, args)
                members[next_id] = weight
                next_id -= 1
            profile.set_group(next_id, members, create=True)
        except Exception:
            for member_id in members:
                profile.delete_member(member_id)
            raise
        return next_id

    def _drop_one_shot_group(self, table, group_id: int) -> None:
        profile = self._implementing_profile(table)
        members = list(profile.groups[group_id])
        profile.delete_group(group_id)
        for member_id in members:
            profile.delete_member(member_id)

    # -- action profiles

    def _profile(self, profile_id):
        profile = self._p4info_entity("action_profiles", profile_id)
        return profile, self.switch.action_profile(profile.preamble.name)

    def _profile_table(self, profile):
        """A table the profile implements (its actions are the ones a member may run)."""
        if not profile.table_ids:
            raise P4RTError(Code.INTERNAL, f"action profile {profile.preamble.name} implements no table")
        return self._table(profile.table_ids[0])

    def _write_member(self, update_type, entry):
        U = p4runtime_pb2.Update
        profile, state = self._profile(entry.action_profile_id)
        if update_type == U.DELETE:
            state.delete_member(entry.member_id)
            return
        if not entry.HasField("action"):
            raise P4RTError(Code.INVALID_ARGUMENT, f"action profile {profile.preamble.name}: a member needs an action")
        action, args = self._action_from_p4(self._profile_table(profile), entry.action, default=False)
        if update_type == U.INSERT:
            state.add_member(entry.member_id, action, args)
        else:
            state.modify_member(entry.member_id, action, args)

    def _write_group(self, update_type, entry):
        U = p4runtime_pb2.Update
        profile, state = self._profile(entry.action_profile_id)
        name = profile.preamble.name
        if not profile.with_selector:
            raise P4RTError(Code.INVALID_ARGUMENT, f"action profile {name} has no selector: it has no groups")
        if update_type == U.DELETE:
            state.delete_group(entry.group_id)
            return
        members: dict[int, int] = {}
        for m in entry.members:
            if m.member_id in members:
                raise P4RTError(Code.INVALID_ARGUMENT, f"action profile {name}: member {m.member_id} listed twice")
            if m.weight < 1:
                raise P4RTError(
                    Code.INVALID_ARGUMENT, f"action profile {name}: weight of member {m.member_id} must be >= 1"
                )
            members[m.member_id] = m.weight
        # a MODIFY must give the group's max_size again, 0 included (P4Runtime spec, ActionProfileGroup)
        state.set_group(entry.group_id, members, create=update_type == U.INSERT, max_size=entry.max_size)

    # -- meters

    @staticmethod
    def _meter_config(config):
        """(cir, cburst, pir, pburst) of a MeterConfig, or None when the entry has none (reset)."""
        return None if config is None else (config.cir, config.cburst, config.pir, config.pburst)

    @staticmethod
    def _set_meter(config, set_config, clear_config):
        if config is None:
            clear_config()
            return
        cir, cburst, pir, pburst = config
        if min(config) < 0:
            raise P4RTError(Code.INVALID_ARGUMENT, "meter rates and bursts must not be negative")
        set_config(cir, cburst, pir, pburst)

    def _write_meter(self, update_type, entry):
        meter = self._p4info_entity("meters", entry.meter_id)
        name = meter.preamble.name
        if update_type != p4runtime_pb2.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, f"meter {name}: only MODIFY is allowed")
        config = self._meter_config(entry.config if entry.HasField("config") else None)
        state = self.switch.meter(name)
        if entry.HasField("index"):
            self._check_index(entry.index.index, meter.size, f"meter {name}")
            indexes = [entry.index.index]
        else:  # no index: every cell
            indexes = list(range(meter.size))
        for i in indexes:
            self._set_meter(
                config,
                lambda *c, i=i: state.set_config(i, *c),
                lambda i=i: state.clear_config(i),
            )

    def _direct_meter_table(self, entry):
        table = self._table(entry.table_entry.table_id)
        if not any(self.pipeline.index.get("direct_meters", i) is not None for i in table.direct_resource_ids):
            raise P4RTError(Code.INVALID_ARGUMENT, f"table {table.preamble.name} has no direct meter")
        return table

    def _write_direct_meter(self, update_type, entry):
        table = self._direct_meter_table(entry)
        if update_type != p4runtime_pb2.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, "direct meter entries can only be modified")
        found = self._find_entry(table, entry.table_entry)
        name = table.preamble.name
        self._set_meter(
            self._meter_config(entry.config if entry.HasField("config") else None),
            lambda *c: self.switch.direct_meter_config(name, found, *c),
            lambda: self.switch.clear_direct_meter_config(name, found),
        )

    # -- parser value sets

    def _write_value_set(self, update_type, entry):
        """A ValueSetEntry MODIFY replaces all members of the value set (the specification's only update)."""
        value_set = self._p4info_entity("value_sets", entry.value_set_id)
        name = value_set.preamble.name
        if update_type != p4runtime_pb2.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, f"value set {name}: only MODIFY is allowed")
        if len(entry.members) > value_set.size:
            raise P4RTError(
                Code.RESOURCE_EXHAUSTED, f"value set {name}: {len(entry.members)} members, its size is {value_set.size}"
            )
        members = []
        for member in entry.members:
            value = mask = 0
            given = {fm.field_id: fm for fm in member.match}
            for mf in value_set.match:  # fields in P4Info order, the first one highest
                fm = given.pop(mf.id, None)
                full = (1 << mf.bitwidth) - 1
                what = f"value set {name} match field {mf.id}"
                kind = fm.WhichOneof("field_match_type") if fm is not None else None
                if kind is None:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"{what} is missing")
                if kind == "exact":
                    v, m = decode_value(fm.exact.value, mf.bitwidth, what), full
                elif kind == "ternary":
                    v = decode_value(fm.ternary.value, mf.bitwidth, what)
                    m = decode_value(fm.ternary.mask, mf.bitwidth, what + " mask")
                    if v & ~m:
                        raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: value has bits set outside the mask")
                else:
                    raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: {kind} matches are not supported (exact, ternary)")
                value, mask = (value << mf.bitwidth) | v, (mask << mf.bitwidth) | m
            if given:
                raise P4RTError(Code.INVALID_ARGUMENT, f"value set {name} has no match field id {min(given)}")
            members.append((value, mask))
        state = self.switch.value_set(name)
        state.clear()
        for value, mask in members:
            state.add(value, mask)

    # -- counters, registers

    def _counter(self, counter_id):
        return self._p4info_entity("counters", counter_id)

    @staticmethod
    def _check_index(index, size, what):
        if not 0 <= index < size:
            raise P4RTError(Code.INVALID_ARGUMENT, f"index {index} is out of range for {what} of size {size}")

    def _check_indexed_write(self, update_type, entry, size, what):
        """Counter and register cells can only be modified, one index at a time."""
        if update_type != p4runtime_pb2.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: only MODIFY is allowed")
        if not entry.HasField("index"):
            raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: writing needs an index")
        self._check_index(entry.index.index, size, what)

    def _write_counter(self, update_type, entry):
        counter = self._counter(entry.counter_id)
        name = counter.preamble.name
        self._check_indexed_write(update_type, entry, counter.size, f"counter {name}")
        self.switch.counter(name).write(entry.index.index, entry.data.packet_count, entry.data.byte_count)

    def _register(self, register_id):
        return self._p4info_entity("registers", register_id)

    @staticmethod
    def _register_width(register):
        bits = register.type_spec.bitstring
        return (bits.bit.bitwidth or bits.int.bitwidth), bits.HasField("int")

    def _write_register(self, update_type, entry):
        register = self._register(entry.register_id)
        name = register.preamble.name
        self._check_indexed_write(update_type, entry, register.size, f"register {name}")
        if entry.data.WhichOneof("data") != "bitstring":
            raise P4RTError(Code.INVALID_ARGUMENT, f"register {name}: data must be a bitstring")
        width, signed = self._register_width(register)
        value = decode_value(entry.data.bitstring, width, f"register {name} data")
        if signed and value >> (width - 1):
            value -= 1 << width
        self.switch.register(name).write(entry.index.index, value)

    def _direct_counter_table(self, entry):
        table = self._table(entry.table_entry.table_id)
        if not len(table.direct_resource_ids) or self.pipeline.index.direct_counter_of(table.preamble.id) is None:
            raise P4RTError(Code.INVALID_ARGUMENT, f"table {table.preamble.name} has no direct counter")
        return table

    def _find_entry(self, table, p4entry):
        """The Switch's entry with the key of ``p4entry`` (NOT_FOUND if none)."""
        wanted = self._entry_from_p4(table, p4entry)
        for entry in self.switch.table(table.preamble.name).entries():
            if entry.matches == wanted.matches and (wanted.priority is None or entry.priority == wanted.priority):
                return entry
        raise P4RTError(Code.NOT_FOUND, f"table {table.preamble.name}: no entry with this key")

    def _write_direct_counter(self, update_type, entry):
        table = self._direct_counter_table(entry)
        if update_type != p4runtime_pb2.Update.MODIFY:
            raise P4RTError(Code.INVALID_ARGUMENT, "direct counter entries can only be modified")
        found = self._find_entry(table, entry.table_entry)
        setter = getattr(self.switch, "set_direct_counter", None)
        if setter is None:
            raise P4RTError(Code.UNIMPLEMENTED, "this switch cannot write direct counters")
        setter(table.preamble.name, found, entry.data.packet_count, entry.data.byte_count)

    # -- packet replication engine

    @staticmethod
    def _replicas(replicas, what):
        result = []
        for r in replicas:
            if r.WhichOneof("port_kind") == "port":
                port = int.from_bytes(r.port, "big") if r.port else 0
            else:
                port = r.egress_port
            result.append((port, r.instance))
        if len(set(result)) != len(result):
            raise P4RTError(Code.INVALID_ARGUMENT, f"{what}: duplicate replica")
        return result

    def _write_pre(self, update_type, entry):
        U = p4runtime_pb2.Update
        kind = entry.WhichOneof("type")
        if kind == "multicast_group_entry":
            group = entry.multicast_group_entry
            gid = group.multicast_group_id
            if gid == 0:
                raise P4RTError(Code.INVALID_ARGUMENT, "multicast group id 0 is reserved")
            exists = gid in dict(self._multicast_groups())
            if update_type == U.INSERT and exists:
                raise P4RTError(Code.ALREADY_EXISTS, f"multicast group {gid} already exists")
            if update_type in (U.MODIFY, U.DELETE) and not exists:
                raise P4RTError(Code.NOT_FOUND, f"multicast group {gid} does not exist")
            if update_type == U.DELETE:
                self.switch.delete_multicast_group(gid)
            else:
                self.switch.set_multicast_group(gid, self._replicas(group.replicas, f"multicast group {gid}"))
        elif kind == "clone_session_entry":
            session = entry.clone_session_entry
            sid = session.session_id
            if sid == 0:
                raise P4RTError(Code.INVALID_ARGUMENT, "clone session id 0 is reserved")
            exists = sid in self.clone_sessions
            if update_type == U.INSERT and exists:
                raise P4RTError(Code.ALREADY_EXISTS, f"clone session {sid} already exists")
            if update_type in (U.MODIFY, U.DELETE) and not exists:
                raise P4RTError(Code.NOT_FOUND, f"clone session {sid} does not exist")
            if update_type == U.DELETE:
                self.switch.delete_clone_session(sid)
                del self.clone_sessions[sid]
            else:
                replicas = self._replicas(session.replicas, f"clone session {sid}")
                self.switch.set_clone_session(sid, replicas, truncate=session.packet_length_bytes)
                self.clone_sessions[sid] = (replicas, session.class_of_service, session.packet_length_bytes)
        else:
            raise P4RTError(Code.INVALID_ARGUMENT, "empty packet replication engine entry")

    def _multicast_groups(self):
        groups = self.switch.multicast_groups()
        return sorted(groups.items() if isinstance(groups, dict) else groups)

    def _write_digest(self, update_type, entry):
        U = p4runtime_pb2.Update
        digest = self._p4info_entity("digests", entry.digest_id)
        exists = entry.digest_id in self.digest_configs
        if update_type == U.INSERT and exists:
            raise P4RTError(Code.ALREADY_EXISTS, f"digest {digest.preamble.name} is already configured")
        if update_type in (U.MODIFY, U.DELETE) and not exists:
            raise P4RTError(Code.NOT_FOUND, f"digest {digest.preamble.name} is not configured")
        if update_type == U.DELETE:
            del self.digest_configs[entry.digest_id]
        else:
            self.digest_configs[entry.digest_id] = entry.config

    # ------------------------------------------------------------ read

    def Read(self, request, context):
        if request.device_id != self.device_id:
            context.abort(Code.NOT_FOUND, f"device id {request.device_id} does not exist")
        if self.switch is None:
            context.abort(Code.FAILED_PRECONDITION, "no forwarding pipeline config set")
        response = p4runtime_pb2.ReadResponse()
        try:
            response.entities.extend(self.read_entities(request.entities))
        except P4RTError as e:
            context.abort(e.code, e.message)
        yield response

    def read_entities(self, entities) -> list:
        """The entities matching P4Runtime read queries (what a gRPC Read answers); raises P4RTError."""
        if self.switch is None:
            raise P4RTError(Code.FAILED_PRECONDITION, "no forwarding pipeline config set")
        out = []
        try:
            for entity in entities:
                kind = entity.WhichOneof("entity")
                reader = {
                    "table_entry": self._read_tables,
                    "counter_entry": self._read_counters,
                    "register_entry": self._read_registers,
                    "direct_counter_entry": self._read_direct_counters,
                    "packet_replication_engine_entry": self._read_pre,
                    "digest_entry": self._read_digests,
                    "meter_entry": self._read_meters,
                    "direct_meter_entry": self._read_direct_meters,
                    "value_set_entry": self._read_value_sets,
                    "action_profile_member": self._read_members,
                    "action_profile_group": self._read_groups,
                }.get(kind)
                if reader is None:
                    raise P4RTError(Code.UNIMPLEMENTED, f"reading {kind or 'an empty entity'} is not supported")
                out.extend(reader(getattr(entity, kind)))
        except P4RTError:
            raise
        except Exception as e:  # noqa: BLE001
            raise switch_error(e) from None
        return out

    def _entry_to_p4(self, table, entry, with_counter: bool):
        msg = p4runtime_pb2.TableEntry(table_id=table.preamble.id)
        for mf in table.match_fields:
            match = entry.matches.get(mf.name)
            if match is None:
                continue
            fm = msg.match.add(field_id=mf.id)
            kind = MATCH_KIND_OF.get(mf.match_type)
            if kind == "exact":
                fm.exact.value = encode_value(match.value)
            elif kind == "lpm":
                fm.lpm.value = encode_value(match.value)
                fm.lpm.prefix_len = match.prefix_len
            elif kind == "ternary":
                fm.ternary.value = encode_value(match.value)
                fm.ternary.mask = encode_value(match.mask)
            elif kind == "range":
                fm.range.low = encode_value(match.low)
                fm.range.high = encode_value(match.high)
            elif kind == "optional":
                fm.optional.value = encode_value(match.value)
        if entry.priority is not None:
            msg.priority = entry.priority
        group = getattr(entry, "group", None)
        if getattr(entry, "member", None) is not None:
            msg.action.action_profile_member_id = entry.member
        elif group is not None and group < 0:  # one-shot: its action set, in the order it was given
            profile = self._implementing_profile(table)
            for member_id in sorted(profile.groups[group], reverse=True):
                action, args = profile.member(member_id)
                item = msg.action.action_profile_action_set.action_profile_actions.add()
                item.weight = profile.groups[group][member_id]
                self._action_to_p4(item.action, action, args)
        elif group is not None:
            msg.action.action_profile_group_id = group
        else:
            self._action_to_p4(msg.action.action, entry.action, entry.args)
        if table.is_const_table:
            msg.is_const = True
        if with_counter:
            msg.counter_data.packet_count = getattr(entry, "packets", 0) or 0
            msg.counter_data.byte_count = getattr(entry, "bytes", 0) or 0
        return msg

    def _action_to_p4(self, msg, action_name, args):
        action = self.pipeline.index.named("actions", action_name)
        if action is None:
            raise P4RTError(Code.INTERNAL, f"action {action_name} is not in the P4Info")
        msg.action_id = action.preamble.id
        for p in action.params:
            msg.params.add(param_id=p.id, value=encode_value(args.get(p.name, 0), p.bitwidth))

    def _read_tables(self, query):
        tables = [self._table(query.table_id)] if query.table_id else list(self.pipeline.p4info.tables)
        for table in tables:
            has_counter = bool(len(table.direct_resource_ids)) and query.HasField("counter_data")
            state = self.switch.table(table.preamble.name)
            if query.is_default_action:
                action, args = state.default
                msg = p4runtime_pb2.TableEntry(table_id=table.preamble.id, is_default_action=True)
                self._action_to_p4(msg.action.action, action, args)
                yield p4runtime_pb2.Entity(table_entry=msg)
                continue
            wanted = self._entry_from_p4(table, query) if len(query.match) else None
            for entry in state.entries():
                if wanted is not None and (
                    entry.matches != wanted.matches or (query.priority and entry.priority != query.priority)
                ):
                    continue
                yield p4runtime_pb2.Entity(table_entry=self._entry_to_p4(table, entry, has_counter))

    @staticmethod
    def _config_to_p4(msg, config):
        if config is not None:
            cir, cburst, pir, pburst = config
            msg.config.cir, msg.config.cburst, msg.config.pir, msg.config.pburst = (
                int(cir),
                int(cburst),
                int(pir),
                int(pburst),
            )

    def _read_meters(self, query):
        meters = (
            [self._p4info_entity("meters", query.meter_id)] if query.meter_id else list(self.pipeline.p4info.meters)
        )
        for meter in meters:
            state = self.switch.meter(meter.preamble.name)
            if query.HasField("index"):
                self._check_index(query.index.index, meter.size, f"meter {meter.preamble.name}")
                indexes = [query.index.index]
            else:
                indexes = range(meter.size)
            for i in indexes:
                msg = p4runtime_pb2.MeterEntry(meter_id=meter.preamble.id, index=p4runtime_pb2.Index(index=i))
                self._config_to_p4(msg, state.config(i))
                yield p4runtime_pb2.Entity(meter_entry=msg)

    def _read_direct_meters(self, query):
        if query.table_entry.table_id:
            tables = [self._direct_meter_table(query)]
        else:
            tables = [
                t
                for t in self.pipeline.p4info.tables
                if any(self.pipeline.index.get("direct_meters", i) is not None for i in t.direct_resource_ids)
            ]
        for table in tables:
            name = table.preamble.name
            if len(query.table_entry.match):
                entries = [self._find_entry(table, query.table_entry)]
            else:
                entries = self.switch.table(name).entries()
            for entry in entries:
                msg = p4runtime_pb2.DirectMeterEntry()
                msg.table_entry.CopyFrom(self._entry_to_p4(table, entry, with_counter=False))
                msg.table_entry.ClearField("action")
                self._config_to_p4(msg, self.switch.direct_meter_config_of(name, entry))
                yield p4runtime_pb2.Entity(direct_meter_entry=msg)

    def _read_value_sets(self, query):
        if query.value_set_id:
            value_sets = [self._p4info_entity("value_sets", query.value_set_id)]
        else:
            value_sets = list(self.pipeline.p4info.value_sets)
        for value_set in value_sets:
            msg = p4runtime_pb2.ValueSetEntry(value_set_id=value_set.preamble.id)
            for value, mask in self.switch.value_set(value_set.preamble.name).members:
                member = msg.members.add()
                shift = sum(mf.bitwidth for mf in value_set.match)
                for mf in value_set.match:
                    shift -= mf.bitwidth
                    full = (1 << mf.bitwidth) - 1
                    v, m = (value >> shift) & full, (mask >> shift) & full
                    fm = member.match.add(field_id=mf.id)
                    if m == full:
                        fm.exact.value = encode_value(v)
                    else:
                        fm.ternary.value = encode_value(v)
                        fm.ternary.mask = encode_value(m)
            yield p4runtime_pb2.Entity(value_set_entry=msg)

    def _queried_profiles(self, profile_id):
        profiles = [self._profile(profile_id)[0]] if profile_id else list(self.pipeline.p4info.action_profiles)
        return [(p, self.switch.action_profile(p.preamble.name)) for p in profiles]

    def _read_members(self, query):
        for profile, state in self._queried_profiles(query.action_profile_id):
            ids = [query.member_id] if query.member_id else sorted(m for m in state.members if m >= 0)
            for member_id in ids:
                action, args = state.member(member_id)
                msg = p4runtime_pb2.ActionProfileMember(action_profile_id=profile.preamble.id, member_id=member_id)
                self._action_to_p4(msg.action, action, args)
                yield p4runtime_pb2.Entity(action_profile_member=msg)

    def _read_groups(self, query):
        for profile, state in self._queried_profiles(query.action_profile_id):
            groups = {g: m for g, m in state.groups.items() if g >= 0} if profile.with_selector else {}
            if query.group_id and query.group_id not in groups:
                raise P4RTError(Code.NOT_FOUND, f"action profile {profile.preamble.name}: no group {query.group_id}")
            for group_id in [query.group_id] if query.group_id else sorted(groups):
                msg = p4runtime_pb2.ActionProfileGroup(
                    action_profile_id=profile.preamble.id,
                    group_id=group_id,
                    max_size=state.group_max_sizes.get(group_id, 0),
                )
                for member_id, weight in sorted(groups[group_id].items()):
                    msg.members.add(member_id=member_id, weight=weight)
                yield p4runtime_pb2.Entity(action_profile_group=msg)

    def _read_counters(self, query):
        counters = [self._counter(query.counter_id)] if query.counter_id else list(self.pipeline.p4info.counters)
        for counter in counters:
            state = self.switch.counter(counter.preamble.name)
            if query.HasField("index"):
                self._check_index(query.index.index, counter.size, f"counter {counter.preamble.name}")
                indexes = [query.index.index]
            else:
                indexes = range(counter.size)
            for i in indexes:
                packets, nbytes = state.read(i)
                yield p4runtime_pb2.Entity(
                    counter_entry=p4runtime_pb2.CounterEntry(
                        counter_id=counter.preamble.id,
                        index=p4runtime_pb2.Index(index=i),
                        data=p4runtime_pb2.CounterData(packet_count=packets, byte_count=nbytes),
                    )
                )

    def _read_registers(self, query):
        registers = [self._register(query.register_id)] if query.register_id else list(self.pipeline.p4info.registers)
        for register in registers:
            state = self.switch.register(register.preamble.name)
            width, _ = self._register_width(register)
            if query.HasField("index"):
                self._check_index(query.index.index, register.size, f"register {register.preamble.name}")
                indexes = [query.index.index]
            else:
                indexes = range(register.size)
            for i in indexes:
                yield p4runtime_pb2.Entity(
                    register_entry=p4runtime_pb2.RegisterEntry(
                        register_id=register.preamble.id,
                        index=p4runtime_pb2.Index(index=i),
                        data=p4data_pb2.P4Data(bitstring=encode_value(state.read(i), width)),
                    )
                )

    def _read_direct_counters(self, query):
        if query.table_entry.table_id:
            tables = [self._direct_counter_table(query)]
        else:
            tables = [t for t in self.pipeline.p4info.tables if len(t.direct_resource_ids)]
        for table in tables:
            if len(query.table_entry.match):
                entries = [self._find_entry(table, query.table_entry)]
            else:
                entries = self.switch.table(table.preamble.name).entries()
            for entry in entries:
                packets, nbytes = self.switch.direct_counter_of(table.preamble.name, entry)
                msg = p4runtime_pb2.DirectCounterEntry(
                    data=p4runtime_pb2.CounterData(packet_count=packets, byte_count=nbytes)
                )
                msg.table_entry.CopyFrom(self._entry_to_p4(table, entry, with_counter=False))
                yield p4runtime_pb2.Entity(direct_counter_entry=msg)

    def _read_pre(self, query):
        kind = query.WhichOneof("type")
        if kind == "multicast_group_entry":
            gid = query.multicast_group_entry.multicast_group_id
            groups = self._multicast_groups()
            if gid:
                groups = [(g, r) for g, r in groups if g == gid]
                if not groups:
                    raise P4RTError(Code.NOT_FOUND, f"multicast group {gid} does not exist")
            for g, replicas in groups:
                msg = p4runtime_pb2.PacketReplicationEngineEntry()
                msg.multicast_group_entry.multicast_group_id = g
                for port, rid in replicas:
                    msg.multicast_group_entry.replicas.add(egress_port=port, instance=rid)
                yield p4runtime_pb2.Entity(packet_replication_engine_entry=msg)
        elif kind == "clone_session_entry":
            sid = query.clone_session_entry.session_id
            sessions = sorted(self.clone_sessions.items())
            if sid:
                sessions = [(s, v) for s, v in sessions if s == sid]
                if not sessions:
                    raise P4RTError(Code.NOT_FOUND, f"clone session {sid} does not exist")
            for s, (replicas, cos, truncate) in sessions:
                msg = p4runtime_pb2.PacketReplicationEngineEntry()
                cs = msg.clone_session_entry
                cs.session_id, cs.class_of_service, cs.packet_length_bytes = s, cos, truncate
                for port, rid in replicas:
                    cs.replicas.add(egress_port=port, instance=rid)
                yield p4runtime_pb2.Entity(packet_replication_engine_entry=msg)
        else:
            raise P4RTError(Code.INVALID_ARGUMENT, "empty packet replication engine entry")

    def _read_digests(self, query):
        ids = [query.digest_id] if query.digest_id else sorted(self.digest_configs)
        for digest_id in ids:
            if digest_id in self.digest_configs:
                msg = p4runtime_pb2.DigestEntry(digest_id=digest_id)
                msg.config.CopyFrom(self.digest_configs[digest_id])
                yield p4runtime_pb2.Entity(digest_entry=msg)


def _packed(error: p4runtime_pb2.Error) -> any_pb2.Any:
    detail = any_pb2.Any()
    detail.Pack(error)
    return detail


def error_report(errors: list[P4RTError | None], budget: int = ERROR_REPORT_BUDGET) -> status_pb2.Status:
    """A failed Write's ``google.rpc.Status``: one ``p4.v1.Error`` per update when that fits in ``budget``
    bytes, else one per run of consecutive updates with the same outcome (``UPDATE_RUNS_SPACE``, ``code``
    = the run's length), messages shortened, and if even that does not fit, a last run saying the outcome
    of the remaining updates was left out (read them back). The runs always cover every update."""

    def outcome(e: P4RTError | None) -> tuple[int, str]:
        return (code_pb2.OK, "") if e is None else (e.code.value[0], e.message)

    status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure.")
    for e in errors:
        code, message = outcome(e)
        status.details.append(_packed(p4runtime_pb2.Error(canonical_code=code, message=message)))
    if status.ByteSize() <= budget:
        return status
    runs: list[list] = []
    for e in errors:
        code, message = outcome(e)
        if runs and runs[-1][:2] == [code, message]:
            runs[-1][2] += 1
        else:
            runs.append([code, message, 1])
    status = status_pb2.Status(code=code_pb2.UNKNOWN, message="Write failure.")
    reported = 0
    for code, message, count in runs:
        detail = _packed(
            p4runtime_pb2.Error(canonical_code=code, message=message[:120], space=UPDATE_RUNS_SPACE, code=count)
        )
        if status.ByteSize() + detail.ByteSize() + 200 > budget:  # room for the closing run
            rest = len(errors) - reported
            status.details.append(
                _packed(
                    p4runtime_pb2.Error(
                        canonical_code=code_pb2.UNKNOWN,
                        message=f"the outcome of the last {rest} updates does not fit in the error report: "
                        "read the entities back",
                        space=UPDATE_RUNS_SPACE,
                        code=rest,
                    )
                )
            )
            break
        status.details.append(detail)
        reported += count
    return status


def server_credentials(cert: str, key: str, ca: str | None = None, client_auth: bool = False):
    """TLS credentials of the P4Runtime server from PEM files (simple_switch_grpc's --grpc-server-cert,
    --grpc-server-key, --grpc-server-cacert, --grpc-server-with-client-auth).

    Raises
    ------
    ValueError
        A file that cannot be read, or client authentication without a CA.
    """
    if client_auth and not ca:
        raise ValueError(
            "--grpc-server-with-client-auth needs --grpc-server-cacert (the CA of the clients' certificates)"
        )

    def read(path, flag):
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError as exc:
            raise ValueError(f"{flag} {path}: {exc.strerror}") from None

    pair = (read(key, "--grpc-server-key"), read(cert, "--grpc-server-cert"))
    root = read(ca, "--grpc-server-cacert") if ca else None
    return grpc.ssl_server_credentials([pair], root_certificates=root, require_client_auth=client_auth)


def port_in_use(address: str) -> OSError | None:
    """An OSError naming ``address`` when another socket listens there (None: free, or not a host:port).
    Checked before gRPC binds, which would log a line of its own and say only that it failed."""
    host, _, port = address.rpartition(":")
    host = host.strip("[]")
    if not port.isdigit() or int(port) == 0:
        return None
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a closed socket's TIME_WAIT is no user
            probe.bind((host, int(port)))
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return OSError(f"address {address} is in use")
    return None


class P4RuntimeServer:
    """A gRPC server running one P4RuntimeService; TLS with ``credentials`` (``server_credentials``).

    Plaintext on an address other than loopback is refused (ValueError) unless ``allow_plaintext``, and
    then prints a warning on stderr. A port another process listens on is an OSError ("address ... is in
    use"): gRPC's SO_REUSEPORT, which would let two switches share it, is off."""

    def __init__(
        self,
        service: P4RuntimeService,
        address: str = DEFAULT_ADDRESS,
        credentials=None,
        allow_plaintext: bool = False,
    ):
        self.service = service
        workers = service.max_streams + UNARY_WORKERS
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=workers, thread_name_prefix="p4rt"),
            options=[("grpc.so_reuseport", 0)],
        )
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(service, self.server)
        host = address.rsplit(":", 1)[0]
        if credentials is None and not is_loopback_host(host):
            if not allow_plaintext:
                raise ValueError(
                    f"refusing to serve P4Runtime on {address} without TLS: anyone who reaches it could program "
                    "the switch (give --grpc-server-ssl with a certificate and key, or --grpc-server-insecure "
                    "to accept that)"
                )
            print(
                f"warning: the P4Runtime server listens on {address} without TLS: anyone who reaches it "
                f"can program the switch (--grpc-server-ssl with a certificate and key)",
                file=sys.stderr,
            )
        in_use = port_in_use(address)
        if in_use is not None:
            raise in_use
        try:
            if credentials is not None:
                self.port = self.server.add_secure_port(address, credentials)
            else:
                self.port = self.server.add_insecure_port(address)
        except RuntimeError:
            self.port = 0
        if self.port == 0:
            raise port_in_use(address) or OSError(f"cannot listen on {address} for gRPC")
        self.address = f"{host}:{self.port}"

    def start(self):
        self.server.start()
        return self

    def stop(self, grace: float = 0.5):
        with self.service.lock:
            clients = list(self.service.clients)
        for client in clients:
            self.service._disconnect(client)
        self.server.stop(grace).wait()
