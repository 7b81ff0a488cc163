"""The P4Runtime server under hostile and careless clients: pushed programs cannot read the host's files,
idle streams cannot starve other calls, pushes do not stop writes nor grow memory, per-update errors of
big batches reach a client with gRPC's default limits, malformed requests get a status code (never
UNKNOWN), a port in use and plaintext beyond loopback are refused (docs/security.md)."""

import os
import socket
import threading
import time
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from softswitch import p4runtime_server
from softswitch.cli import device_config_of
from softswitch.compiler import compile_program
from softswitch.p4info import build_p4info
from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService
from softswitch.switch import Switch

HERE = Path(__file__).parent
ROUTER = HERE / "programs" / "ipv4_router.p4"
ROUTER_SOURCE = ROUTER.read_bytes()
INA = HERE.parent.parent / "p4src" / "ina.p4"
A = p4runtime_pb2.SetForwardingPipelineConfigRequest
U = p4runtime_pb2.Update


class Device:
    """A server with a primary stream (election id 1) and a raw stub."""

    def __init__(self, include_dirs=(), address="127.0.0.1:0"):
        self.service = P4RuntimeService(
            None, device_id=0, include_dirs=include_dirs, make_switch=lambda prog: Switch(prog), backend="python"
        )
        self.server = P4RuntimeServer(self.service, address).start()
        self.channel = grpc.insecure_channel(self.server.address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.requests: list = []
        self.cond = threading.Condition()
        self.stream = self.stub.StreamChannel(self._requests())
        arbitration = p4runtime_pb2.StreamMessageRequest()
        arbitration.arbitration.device_id = 0
        arbitration.arbitration.election_id.low = 1
        self.send(arbitration)
        assert next(self.stream).arbitration.status.code == code_pb2.OK

    def _requests(self):
        while True:
            with self.cond:
                self.cond.wait_for(lambda: self.requests)
                item = self.requests.pop(0)
            if item is None:
                return
            yield item

    def send(self, item):
        with self.cond:
            self.requests.append(item)
            self.cond.notify()

    def push(self, source: bytes, p4info, action=A.VERIFY_AND_COMMIT):
        request = A(device_id=0, action=action)
        request.election_id.low = 1
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = source
        return self.stub.SetForwardingPipelineConfig(request)

    def close(self):
        self.send(None)
        self.channel.close()
        self.server.stop()


@pytest.fixture
def device():
    d = Device()
    yield d
    d.close()


@pytest.fixture(scope="module")
def router_p4info():
    return build_p4info(compile_program(str(ROUTER)).info)


def rpc_error(fn, *args, **kwargs) -> tuple[grpc.StatusCode, str]:
    with pytest.raises(grpc.RpcError) as err:
        fn(*args, **kwargs)
    return err.value.code(), err.value.details()


# ---------------------------------------------------------------- #include


def test_a_pushed_program_cannot_include_files_of_the_switch_host(tmp_path, router_p4info):
    secret = tmp_path / "secret.p4"
    secret.write_text("TOPSECRET_PASSWORD_LINE\n")
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    (allowed / "escape.p4").symlink_to(secret)
    d = Device(include_dirs=[str(allowed)])
    try:
        depth = "../" * len(Path(os.getcwd()).parts)
        for include, refusal in (
            (str(secret), "only relative paths under the include directories are allowed"),
            (f"{depth}{str(secret).lstrip('/')}", "'..' is not allowed in a pushed program"),
            ("allowed/../secret.p4", "'..' is not allowed in a pushed program"),
            ("escape.p4", "cannot find include file 'escape.p4'"),  # a link out of the include directory
            ("secret.p4", "cannot find include file 'secret.p4'"),  # not relative to the server's directory
        ):
            source = f'#include <core.p4>\n#include "{include}"\n'.encode() + ROUTER_SOURCE
            code, message = rpc_error(d.push, source, router_p4info)
            assert code == grpc.StatusCode.INVALID_ARGUMENT, include
            assert refusal in message and "TOPSECRET" not in message, message
        (allowed / "consts.p4").write_text("const bit<8> FROM_THE_INCLUDE_DIR = 1;\n")
        d.push(b'#include "consts.p4"\n' + ROUTER_SOURCE, router_p4info)  # the operator's --include-dir
    finally:
        d.close()


# ---------------------------------------------------------------- idle clients


def test_idle_streams_do_not_starve_other_calls(device):
    """40 streams that never send a message: past p4runtime_server.MAX_STREAMS they are answered RESOURCE_EXHAUSTED, and a
    unary call of another client is answered at once."""
    never = threading.Event()

    def idle():
        never.wait()
        yield from ()

    calls = [device.stub.StreamChannel(idle()) for _ in range(40)]
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # every stream accepted or refused by the server
            if len(device.service.clients) + sum(c.done() for c in calls) >= 41:
                break
            time.sleep(0.05)
        other = p4runtime_pb2_grpc.P4RuntimeStub(grpc.insecure_channel(device.server.address))
        reply = other.Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=1.0)
        assert reply.p4runtime_api_version
        refused = [c for c in calls if c.done()]
        assert len(refused) == 40 - (p4runtime_server.MAX_STREAMS - 1)  # the fixture's primary holds one stream
        assert {c.code() for c in refused} == {grpc.StatusCode.RESOURCE_EXHAUSTED}
        assert (
            refused[0].details()
            == f"too many StreamChannel connections: this switch takes {p4runtime_server.MAX_STREAMS}"
        )
    finally:
        never.set()
        for c in calls:
            c.cancel()


# ---------------------------------------------------------------- pushes


def _variant(n: int) -> bytes:
    """ina.p4's device config with one more constant: a program the compile cache has not seen."""
    return device_config_of(None, str(INA)) + f"const bit<32> PUSH_VARIANT_{n} = {n};\n".encode()


def _route(i: int) -> p4runtime_pb2.Entity:
    entity = p4runtime_pb2.Entity()
    entry = entity.table_entry
    entry.table_id = 0  # filled by the caller
    match = entry.match.add(field_id=1)
    match.lpm.value = (0x0A000000 + i).to_bytes(4, "big")
    match.lpm.prefix_len = 32
    return entity


def test_writes_keep_flowing_during_a_pipeline_push(device, router_p4info):
    device.push(ROUTER_SOURCE, router_p4info)
    table = next(t for t in router_p4info.tables if t.preamble.name.endswith("ipv4_lpm"))
    drop = next(a for a in router_p4info.actions if a.preamble.name.endswith("drop"))
    ina_p4info = build_p4info(compile_program(str(INA), backend="python").info)
    pushed = threading.Event()

    def push():
        try:
            device.push(_variant(time.time_ns()), ina_p4info, action=A.VERIFY_AND_SAVE)
        finally:
            pushed.set()

    def write(update_type):
        request = p4runtime_pb2.WriteRequest(device_id=0)
        request.election_id.low = 1
        entity = _route(1)
        entity.table_entry.table_id = table.preamble.id
        entity.table_entry.match[0].field_id = table.match_fields[0].id
        entity.table_entry.action.action.action_id = drop.preamble.id
        request.updates.add(type=update_type, entity=entity)
        device.stub.Write(request, timeout=5)

    write(U.INSERT)
    pusher = threading.Thread(target=push)
    pusher.start()
    done = 0
    while not pushed.is_set():
        write(U.MODIFY)
        done += 1
    pusher.join()
    assert done >= 5, f"only {done} writes completed while a pipeline was compiled"


def _rss_kib() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_memory_stays_flat_across_identical_pushes(device):
    config = device_config_of(None, str(INA))
    p4info = build_p4info(compile_program(str(INA), backend="python").info)
    device.push(config, p4info)
    after_first = _rss_kib()
    for _ in range(10):
        device.push(config, p4info)
    assert _rss_kib() <= after_first * 1.1


# ---------------------------------------------------------------- errors


def _expand(status: status_pb2.Status, count: int) -> list[int]:
    """One canonical code per update from a Write failure's details: one p4.v1.Error per update, or runs
    of updates (UPDATE_RUNS_SPACE: ``code`` = how many consecutive updates the error stands for)."""
    codes: list[int] = []
    for detail in status.details:
        error = p4runtime_pb2.Error()
        assert detail.Unpack(error)
        repeat = error.code if error.space == p4runtime_server.UPDATE_RUNS_SPACE else 1
        codes += [error.canonical_code] * repeat
    assert len(codes) == count
    return codes


def test_per_update_errors_of_a_10000_update_batch_reach_a_default_client(device, router_p4info):
    device.push(ROUTER_SOURCE, router_p4info)
    table = next(t for t in router_p4info.tables if t.preamble.name.endswith("ipv4_lpm"))
    drop = next(a for a in router_p4info.actions if a.preamble.name.endswith("drop"))

    def batch(indices, update_type=U.INSERT):
        request = p4runtime_pb2.WriteRequest(device_id=0)
        request.election_id.low = 1
        for i in indices:
            entity = _route(i)
            entity.table_entry.table_id = table.preamble.id
            entity.table_entry.match[0].field_id = table.match_fields[0].id
            entity.table_entry.action.action.action_id = drop.preamble.id
            request.updates.add(type=update_type, entity=entity)
        return request

    device.stub.Write(batch(range(0, 500, 100)))  # 5 entries exist
    with pytest.raises(grpc.RpcError) as err:  # a client channel with gRPC's default limits
        device.stub.Write(batch(range(10_000)))
    assert err.value.code() == grpc.StatusCode.UNKNOWN
    [raw] = [v for k, v in err.value.trailing_metadata() if k == "grpc-status-details-bin"]
    codes = _expand(status_pb2.Status.FromString(raw), 10_000)
    # the 5 existing entries are duplicates; the table (size 1024) is full after 1019 new ones
    expected = [code_pb2.ALREADY_EXISTS if i % 100 == 0 and i < 500 else code_pb2.OK for i in range(1024)]
    expected += [code_pb2.RESOURCE_EXHAUSTED] * (10_000 - 1024)
    assert codes == expected
    # a small batch keeps the plain form: one p4.v1.Error per update
    with pytest.raises(grpc.RpcError) as err:
        device.stub.Write(batch([0, 20_000], U.DELETE))
    [raw] = [v for k, v in err.value.trailing_metadata() if k == "grpc-status-details-bin"]
    status = status_pb2.Status.FromString(raw)
    assert len(status.details) == 2 and _expand(status, 2) == [code_pb2.OK, code_pb2.NOT_FOUND]


def test_malformed_requests_get_a_status_code_never_unknown(device, router_p4info):
    device.push(ROUTER_SOURCE, router_p4info)
    request = A(device_id=0, action=42)
    request.election_id.low = 1
    assert rpc_error(device.stub.SetForwardingPipelineConfig, request) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "unsupported action 42",
    )
    table = next(t for t in router_p4info.tables if t.preamble.name.endswith("ipv4_lpm"))
    write = p4runtime_pb2.WriteRequest(device_id=0)
    write.election_id.low = 1
    entity = _route(1)
    entity.table_entry.table_id = table.preamble.id
    entity.table_entry.match[0].field_id = table.match_fields[0].id
    write.updates.add(type=99, entity=entity)
    with pytest.raises(grpc.RpcError) as err:  # a per-update error: the batch's status is UNKNOWN by the spec
        device.stub.Write(write)
    [raw] = [v for k, v in err.value.trailing_metadata() if k == "grpc-status-details-bin"]
    [detail] = status_pb2.Status.FromString(raw).details
    error = p4runtime_pb2.Error()
    assert detail.Unpack(error)
    assert (error.canonical_code, error.message) == (code_pb2.INVALID_ARGUMENT, "unknown update type 99")
    write = p4runtime_pb2.WriteRequest(device_id=0, atomicity=7)
    write.election_id.low = 1
    assert rpc_error(device.stub.Write, write)[0] == grpc.StatusCode.UNIMPLEMENTED
    read = p4runtime_pb2.ReadRequest(device_id=0)
    read.entities.add()
    assert rpc_error(lambda r: list(device.stub.Read(r)), read)[0] == grpc.StatusCode.UNIMPLEMENTED
    get = p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=0, response_type=9)
    assert rpc_error(device.stub.GetForwardingPipelineConfig, get)[0] == grpc.StatusCode.INVALID_ARGUMENT


# ---------------------------------------------------------------- listening


def test_a_port_in_use_is_refused(device):
    address = device.server.address
    with pytest.raises(OSError, match=f"^address {address} is in use$"):
        P4RuntimeServer(P4RuntimeService(None), address)


def _outside_address() -> str | None:
    """An address of this host other than loopback (None: the host has none)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.1", 9))  # no packet is sent: picks the outgoing interface's address
            return s.getsockname()[0]
        except OSError:
            return None


def test_plaintext_beyond_loopback_needs_an_explicit_opt_in(capfd):
    with pytest.raises(ValueError, match="without TLS"):
        P4RuntimeServer(P4RuntimeService(None), "0.0.0.0:0")
    server = P4RuntimeServer(P4RuntimeService(None), "0.0.0.0:0", allow_plaintext=True).start()
    try:
        assert "without TLS: anyone who reaches it can program the switch" in capfd.readouterr().err
    finally:
        server.stop()


def test_an_outside_peer_cannot_reach_a_default_server():
    outside = _outside_address()
    if outside is None:
        pytest.skip("this host has no address other than loopback")
    host = p4runtime_server.DEFAULT_ADDRESS.rsplit(":", 1)[0]
    server = P4RuntimeServer(P4RuntimeService(None), f"{host}:0").start()  # the default host
    try:
        assert server.address.startswith("127.0.0.1:")
        port = server.address.rsplit(":", 1)[1]
        stub = p4runtime_pb2_grpc.P4RuntimeStub(grpc.insecure_channel(f"{outside}:{port}"))
        assert rpc_error(stub.Capabilities, p4runtime_pb2.CapabilitiesRequest(), timeout=2)[0] in (
            grpc.StatusCode.UNAVAILABLE,
            grpc.StatusCode.DEADLINE_EXCEEDED,
        )
    finally:
        server.stop()
