"""A softswitch P4Runtime server with one program, driven through a real gRPC client (raw stubs: the
p4runtime-shell client only holds the primary arbitration)."""

from collections.abc import Iterator
from contextlib import contextmanager

import grpc
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from p4runtime_sh.p4runtime import P4RuntimeClient

from softswitch.compiler import compile_program
from softswitch.p4info import build_p4info
from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService
from softswitch.switch import Switch

A = p4runtime_pb2.SetForwardingPipelineConfigRequest


class Device:
    """The client side: ids by name, writes returning per-update errors, reads."""

    def __init__(self, stub, p4info, service):
        self.stub, self.p4info, self.service = stub, p4info, service

    def id_of(self, kind: str, name: str) -> int:
        return next(o.preamble.id for o in getattr(self.p4info, kind) if o.preamble.name == name)

    def write(self, *updates):
        """Applies (update type, entity field, message) updates: None if all passed, else one (canonical code
        name, message) per update."""
        request = p4runtime_pb2.WriteRequest(device_id=0)
        request.election_id.low = 1
        for update_type, field, msg in updates:
            getattr(request.updates.add(type=update_type).entity, field).CopyFrom(msg)
        try:
            self.stub.Write(request)
        except grpc.RpcError as err:
            [status_bin] = [v for k, v in err.trailing_metadata() if k == "grpc-status-details-bin"]
            errors = []
            for detail in status_pb2.Status.FromString(status_bin).details:
                error = p4runtime_pb2.Error()
                assert detail.Unpack(error)
                errors.append((code_pb2.Code.Name(error.canonical_code), error.message))
            return errors
        return None

    def read(self, field: str, msg) -> list:
        request = p4runtime_pb2.ReadRequest(device_id=0)
        getattr(request.entities.add(), field).CopyFrom(msg)
        return [getattr(e, field) for reply in self.stub.Read(request) for e in reply.entities]


@contextmanager
def running_device(program: str) -> Iterator[Device]:
    """A server on a free port whose pipeline is `program` (set by SetForwardingPipelineConfig)."""
    service = P4RuntimeService(None, device_id=0, make_switch=lambda prog: Switch(prog))
    server = P4RuntimeServer(service, "127.0.0.1:0").start()
    client = P4RuntimeClient(0, server.address, (0, 1))
    try:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(grpc.insecure_channel(server.address))
        p4info = build_p4info(compile_program(program).info)
        request = A(device_id=0, action=A.VERIFY_AND_COMMIT)
        request.election_id.low = 1
        request.config.p4info.CopyFrom(p4info)
        with open(program, "rb") as source:
            request.config.p4_device_config = source.read()
        stub.SetForwardingPipelineConfig(request)
        yield Device(stub, p4info, service)
    finally:
        client.tear_down()
        server.stop()
