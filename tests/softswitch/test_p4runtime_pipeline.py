"""SetForwardingPipelineConfig actions, GetForwardingPipelineConfig response types, registers and counters
over raw P4Runtime (p4runtime-shell has no register entity)."""

from pathlib import Path

import grpc
import pytest
from p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc
from p4runtime_sh.p4runtime import P4RuntimeClient

from softswitch.compiler import compile_program
from softswitch.p4info import build_p4info
from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService
from softswitch.switch import Switch

PROGRAM = Path(__file__).parent / "stf" / "l2l3.p4"
SOURCE = PROGRAM.read_bytes()
A = p4runtime_pb2.SetForwardingPipelineConfigRequest
R = p4runtime_pb2.GetForwardingPipelineConfigRequest


@pytest.fixture
def primary():
    service = P4RuntimeService(None, device_id=0, make_switch=lambda prog: Switch(prog))
    server = P4RuntimeServer(service, "127.0.0.1:0").start()
    client = P4RuntimeClient(0, server.address, (0, 1))
    stub = p4runtime_pb2_grpc.P4RuntimeStub(grpc.insecure_channel(server.address))
    p4info = build_p4info(compile_program(str(PROGRAM)).info)
    yield stub, p4info
    client.tear_down()
    server.stop()


def set_config(stub, action, p4info, device_config=b"", cookie=None):
    request = A(device_id=0, action=action)
    request.election_id.low = 1
    request.config.p4info.CopyFrom(p4info)
    request.config.p4_device_config = device_config
    if cookie is not None:
        request.config.cookie.cookie = cookie
    return stub.SetForwardingPipelineConfig(request)


def rpc_error(fn, *args):
    with pytest.raises(grpc.RpcError) as err:
        fn(*args)
    return err.value.code(), err.value.details()


def test_pipeline_actions_and_get_response_types(primary):
    stub, p4info = primary
    set_config(stub, A.VERIFY, p4info)  # P4Info alone is enough to verify
    assert rpc_error(stub.GetForwardingPipelineConfig, R(device_id=0))[0] == grpc.StatusCode.FAILED_PRECONDITION
    assert rpc_error(set_config, stub, A.VERIFY_AND_COMMIT, p4info) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "p4_device_config is empty: softswitch needs the P4 program source there",
    )
    assert rpc_error(set_config, stub, A.COMMIT, p4info) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "COMMIT without a config saved by VERIFY_AND_SAVE",
    )
    code, message = rpc_error(set_config, stub, A.VERIFY_AND_COMMIT, p4info, b"control nonsense {")
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message.startswith("cannot compile p4_device_config: ")
    set_config(stub, A.VERIFY_AND_SAVE, p4info, SOURCE, cookie=7)
    set_config(stub, A.COMMIT, p4info)
    config = stub.GetForwardingPipelineConfig(R(device_id=0, response_type=R.ALL)).config
    assert (config.p4info, config.p4_device_config, config.cookie.cookie) == (p4info, SOURCE, 7)
    config = stub.GetForwardingPipelineConfig(R(device_id=0, response_type=R.COOKIE_ONLY)).config
    assert (config.HasField("p4info"), config.p4_device_config, config.cookie.cookie) == (False, b"", 7)
    config = stub.GetForwardingPipelineConfig(R(device_id=0, response_type=R.P4INFO_AND_COOKIE)).config
    assert (config.p4info, config.p4_device_config) == (p4info, b"")
    set_config(stub, A.RECONCILE_AND_COMMIT, p4info, SOURCE, cookie=8)
    assert stub.GetForwardingPipelineConfig(R(device_id=0, response_type=R.COOKIE_ONLY)).config.cookie.cookie == 8
    wrong = type(p4info)()
    wrong.CopyFrom(p4info)
    forward = next(a for a in wrong.actions if a.preamble.name == "MyIngress.forward")
    forward.params[1].bitwidth = 16
    code, message = rpc_error(set_config, stub, A.VERIFY_AND_COMMIT, wrong, SOURCE)
    assert code == grpc.StatusCode.INVALID_ARGUMENT and message == (
        "P4Info action MyIngress.forward: params [('dst_mac', 48), ('port', 16)] differ from the program's "
        "[('dst_mac', 48), ('port', 9)]"
    )


def write(stub, entity_field, msg, update_type=p4runtime_pb2.Update.MODIFY):
    request = p4runtime_pb2.WriteRequest(device_id=0)
    request.election_id.low = 1
    update = request.updates.add(type=update_type)
    getattr(update.entity, entity_field).CopyFrom(msg)
    stub.Write(request)


def read(stub, entity_field, msg):
    request = p4runtime_pb2.ReadRequest(device_id=0)
    getattr(request.entities.add(), entity_field).CopyFrom(msg)
    return [getattr(e, entity_field) for reply in stub.Read(request) for e in reply.entities]


def test_registers_and_counters_read_and_write(primary):
    stub, p4info = primary
    set_config(stub, A.VERIFY_AND_COMMIT, p4info, SOURCE)
    register = next(r for r in p4info.registers if r.preamble.name == "MyIngress.last_src")
    counter = next(c for c in p4info.counters if c.preamble.name == "MyIngress.port_stats")
    write(
        stub,
        "register_entry",
        p4runtime_pb2.RegisterEntry(
            register_id=register.preamble.id,
            index=p4runtime_pb2.Index(index=3),
            data=p4data_pb2.P4Data(bitstring=bytes([10, 0, 0, 3])),
        ),
    )
    [cell] = read(
        stub,
        "register_entry",
        p4runtime_pb2.RegisterEntry(register_id=register.preamble.id, index=p4runtime_pb2.Index(index=3)),
    )
    assert cell.data.bitstring == bytes([10, 0, 0, 3])
    cells = read(stub, "register_entry", p4runtime_pb2.RegisterEntry(register_id=register.preamble.id))
    assert [(c.index.index, c.data.bitstring) for c in cells] == [
        (i, bytes([10, 0, 0, 3]) if i == 3 else b"\x00") for i in range(8)
    ]
    code, message = rpc_error(
        read,
        stub,
        "register_entry",
        p4runtime_pb2.RegisterEntry(register_id=register.preamble.id, index=p4runtime_pb2.Index(index=8)),
    )
    assert (code, message) == (
        grpc.StatusCode.INVALID_ARGUMENT,
        "index 8 is out of range for register MyIngress.last_src of size 8",
    )
    write(
        stub,
        "counter_entry",
        p4runtime_pb2.CounterEntry(
            counter_id=counter.preamble.id,
            index=p4runtime_pb2.Index(index=2),
            data=p4runtime_pb2.CounterData(packet_count=5, byte_count=500),
        ),
    )
    everything = read(stub, "counter_entry", p4runtime_pb2.CounterEntry())  # counter_id 0: all counters
    assert [(c.index.index, c.data.packet_count, c.data.byte_count) for c in everything if c.data.packet_count] == [
        (2, 5, 500)
    ]
    assert len(everything) == 8
