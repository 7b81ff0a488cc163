"""P4Runtime arbitration, capabilities and request-level errors (no pipeline needed)."""

import queue

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from p4runtime_sh.p4runtime import P4RuntimeClient

from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService

DEVICE = 3


@pytest.fixture
def server():
    srv = P4RuntimeServer(P4RuntimeService(switch=None, device_id=DEVICE), "127.0.0.1:0").start()
    yield srv
    srv.stop()


def next_arbitration(client, timeout=2):
    msg = client.get_stream_packet("arbitration", timeout=timeout)
    assert msg is not None, "no arbitration message"
    arb = msg.arbitration
    return arb.status.code, (arb.election_id.high, arb.election_id.low)


def test_primary_backup_and_primary_change_notifications(server):
    a = P4RuntimeClient(DEVICE, server.address, (0, 1))  # handshake consumed: a is primary
    try:
        b = P4RuntimeClient(DEVICE, server.address, (0, 5))  # b takes over
        try:
            assert next_arbitration(a) == (code_pb2.ALREADY_EXISTS, (0, 5))
            c = P4RuntimeClient(DEVICE, server.address, (0, 2))  # a backup that changes nothing
            try:
                assert a.get_stream_packet("arbitration", timeout=0.3) is None
                assert b.get_stream_packet("arbitration", timeout=0.3) is None
            finally:
                c.tear_down()
        finally:
            b.tear_down()
        # b left: the highest remaining client (a, election id 1) is primary again
        assert next_arbitration(a) == (code_pb2.OK, (0, 1))
    finally:
        a.tear_down()


def raw_stream(address, *requests):
    channel = grpc.insecure_channel(address)
    out = queue.Queue()
    for r in requests:
        out.put(r)
    stream = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel(iter(out.get, None))
    return channel, out, stream


def arbitration(device_id, low):
    req = p4runtime_pb2.StreamMessageRequest()
    req.arbitration.device_id = device_id
    req.arbitration.election_id.low = low
    return req


def test_backup_gets_already_exists_in_its_own_response(server):
    a = P4RuntimeClient(DEVICE, server.address, (0, 9))
    channel, out, stream = raw_stream(server.address, arbitration(DEVICE, 4))
    try:
        reply = next(stream)
        assert reply.arbitration.status.code == code_pb2.ALREADY_EXISTS
        assert (reply.arbitration.election_id.high, reply.arbitration.election_id.low) == (0, 9)
    finally:
        out.put(None)
        channel.close()
        a.tear_down()


def test_duplicate_election_id_and_wrong_device_end_the_stream(server):
    a = P4RuntimeClient(DEVICE, server.address, (0, 7))
    try:
        channel, out, stream = raw_stream(server.address, arbitration(DEVICE, 7))
        with pytest.raises(grpc.RpcError) as err:
            next(stream)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert err.value.details() == "election id (0, 7) is already used by another client of role ''"
        channel.close()
        channel, out, stream = raw_stream(server.address, arbitration(DEVICE + 1, 8))
        with pytest.raises(grpc.RpcError) as err:
            next(stream)
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
        assert err.value.details() == f"device id {DEVICE + 1} does not exist (this switch is device {DEVICE})"
        channel.close()
    finally:
        a.tear_down()


def test_capabilities_and_no_pipeline_errors(server):
    stub = p4runtime_pb2_grpc.P4RuntimeStub(grpc.insecure_channel(server.address))
    assert stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version == "1.4.1"
    with pytest.raises(grpc.RpcError) as err:
        stub.GetForwardingPipelineConfig(p4runtime_pb2.GetForwardingPipelineConfigRequest(device_id=DEVICE))
    assert (err.value.code(), err.value.details()) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "no forwarding pipeline config set",
    )
    a = P4RuntimeClient(DEVICE, server.address, (0, 1))
    try:
        write = p4runtime_pb2.WriteRequest(device_id=DEVICE)
        write.election_id.low = 1
        with pytest.raises(grpc.RpcError) as err:
            stub.Write(write)
        assert (err.value.code(), err.value.details()) == (
            grpc.StatusCode.FAILED_PRECONDITION,
            "no forwarding pipeline config set",
        )
        write.election_id.low = 2
        with pytest.raises(grpc.RpcError) as err:
            stub.Write(write)
        assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
        assert err.value.details() == (
            "election id (0, 2) is not the primary's for role '' (primary has election id (0, 1))"
        )
        with pytest.raises(grpc.RpcError) as err:
            list(stub.Read(p4runtime_pb2.ReadRequest(device_id=DEVICE + 1)))
        assert err.value.code() == grpc.StatusCode.NOT_FOUND
    finally:
        a.tear_down()
