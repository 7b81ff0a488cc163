"""The P4Runtime server driven by p4runtime-shell, on the l2l3.p4 test program (real Switch, real gRPC)."""

import queue
import subprocess
import sys
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2
from p4runtime_sh import shell as sh
from p4runtime_sh.p4runtime import P4RuntimeWriteException

from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService
from softswitch.switch import Switch

HERE = Path(__file__).parent
PROGRAM = HERE / "stf" / "l2l3.p4"
DEVICE = 1
CPU_PORT = 64
ROUTED_IN = bytes.fromhex("02000000000102000000009908004500001800010000401164c80a0000090a010203deadbeef")
ROUTED_OUT = bytes.fromhex("0a0000000005020000000001080045000018000100003f1165c80a0000090a010203deadbeef")


@pytest.fixture(scope="module")
def pipeline_files(tmp_path_factory):
    out = tmp_path_factory.mktemp("pipeline")
    p4info, config = out / "l2l3.p4info.txtpb", out / "l2l3.p4"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "softswitch",
            "compile",
            str(PROGRAM),
            "--p4runtime-files",
            str(p4info),
            "--device-config",
            str(config),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    return p4info, config


class Wire:
    """Collects what the switch transmits on its ports."""

    def __init__(self):
        self.frames = queue.Queue()

    def __call__(self, port, frame):
        self.frames.put((port, bytes(frame)))

    def get(self, timeout=2):
        return self.frames.get(timeout=timeout)


@pytest.fixture
def server():
    """A server that starts without a pipeline (like softswitch --no-p4)."""
    wire = Wire()
    service = P4RuntimeService(
        None,
        device_id=DEVICE,
        cpu_port=CPU_PORT,
        transmit=wire,
        make_switch=lambda prog: Switch(prog, device_id=DEVICE, cpu_port=CPU_PORT),
    )
    srv = P4RuntimeServer(service, "127.0.0.1:0").start()
    srv.wire = wire
    yield srv
    srv.stop()


@pytest.fixture
def shell(server, pipeline_files):
    p4info, config = pipeline_files
    sh.setup(
        device_id=DEVICE,
        grpc_addr=server.address,
        election_id=(0, 1),
        config=sh.FwdPipeConfig(str(p4info), str(config)),
        verbose=False,
    )
    yield server
    sh.teardown()


def write_error(excinfo):
    """(code name, message) of the single per-update error of a P4RuntimeWriteException."""
    [(index, error)] = excinfo.value.errors
    return code_pb2.Code.Name(error.canonical_code), error.message


def route(prefix="10.1.0.0/16", mac="0a:00:00:00:00:05", port="2"):
    te = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.forward")
    te.match["hdr.ipv4.dst_addr"] = prefix
    te.action["dst_mac"] = mac
    te.action["port"] = port
    return te


def test_insert_read_forward_and_direct_counter(shell):
    route().insert()
    [entry] = list(sh.TableEntry("MyIngress.ipv4_lpm").read())
    assert entry.match["hdr.ipv4.dst_addr"].lpm.prefix_len == 16
    assert int.from_bytes(entry.match["hdr.ipv4.dst_addr"].lpm.value, "big") == 0x0A010000
    assert int.from_bytes(entry.action["dst_mac"].value, "big") == 0x0A0000000005
    assert int.from_bytes(entry.action["port"].value, "big") == 2
    outputs = shell.service.process(1, ROUTED_IN)
    assert outputs == [(2, ROUTED_OUT)]
    assert shell.wire.get() == (2, ROUTED_OUT)
    te = sh.TableEntry("MyIngress.ipv4_lpm")
    te.counter_data.packet_count = 0
    [counted] = list(te.read())
    assert (counted.counter_data.packet_count, counted.counter_data.byte_count) == (1, len(ROUTED_IN))
    [cell] = [c for c in sh.CounterEntry("MyIngress.port_stats").read() if c.index == 1]
    assert (cell.packet_count, cell.byte_count) == (1, len(ROUTED_IN))


def raw_write(te, update_type, mutate):
    """Write ``te`` after ``mutate`` edited its protobuf (p4runtime-shell itself refuses bad values)."""
    te._update_msg()
    mutate(te._entry)
    update = p4runtime_pb2.Update(type=update_type)
    update.entity.table_entry.CopyFrom(te._entry)
    sh.client.write_update(update)


def test_write_errors_carry_canonical_codes_and_messages(shell):
    route().insert()
    with pytest.raises(P4RuntimeWriteException) as err:
        route().insert()
    assert write_error(err) == ("ALREADY_EXISTS", "table MyIngress.ipv4_lpm: an entry with this key already exists")
    with pytest.raises(P4RuntimeWriteException) as err:
        route(prefix="10.9.0.0/16").delete()
    assert write_error(err)[0] == "NOT_FOUND"
    with pytest.raises(P4RuntimeWriteException) as err:
        raw_write(
            route(prefix="10.9.0.0/16"),
            p4runtime_pb2.Update.INSERT,
            lambda e: setattr(e.match[0].lpm, "value", bytes([10, 9, 0, 1])),
        )
    assert write_error(err) == (
        "INVALID_ARGUMENT",
        "table MyIngress.ipv4_lpm match field hdr.ipv4.dst_addr: value has bits set beyond the /16 prefix",
    )
    with pytest.raises(P4RuntimeWriteException) as err:
        raw_write(
            route(prefix="10.2.0.0/16"),
            p4runtime_pb2.Update.INSERT,
            lambda e: setattr(e.action.action.params[1], "value", b"\x02\x00"),
        )  # 512 > bit<9>
    assert write_error(err) == (
        "INVALID_ARGUMENT",
        "action MyIngress.forward parameter port: value 0x200 does not fit in 9 bits",
    )
    with pytest.raises(P4RuntimeWriteException) as err:
        raw_write(
            route(prefix="10.2.0.0/16"),
            p4runtime_pb2.Update.INSERT,
            lambda e: setattr(e.action.action, "action_id", 0x01000001),
        )
    assert write_error(err) == ("INVALID_ARGUMENT", "action id 16777217 is not an action of table MyIngress.ipv4_lpm")
    # A batch: the good update is applied, the bad one reported at its index, one p4.v1.Error per update.
    # (Raw stub: p4runtime-shell 0.0.6's error iterator loops forever on the OK entries of a batch.)
    request = p4runtime_pb2.WriteRequest(device_id=DEVICE)
    request.election_id.low = 1
    for te in (route(prefix="10.3.0.0/16"), route()):
        te._update_msg()
        request.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry.CopyFrom(te._entry)
    with pytest.raises(grpc.RpcError) as err:
        sh.client.stub.Write(request)
    assert (err.value.code(), err.value.details()) == (grpc.StatusCode.UNKNOWN, "Write failure.")
    [status_bin] = [v for k, v in err.value.trailing_metadata() if k == "grpc-status-details-bin"]
    status = status_pb2.Status.FromString(status_bin)
    errors = []
    for detail in status.details:
        error = p4runtime_pb2.Error()
        assert detail.Unpack(error)
        errors.append((code_pb2.Code.Name(error.canonical_code), error.message))
    assert errors == [("OK", ""), ("ALREADY_EXISTS", "table MyIngress.ipv4_lpm: an entry with this key already exists")]
    assert len(list(sh.TableEntry("MyIngress.ipv4_lpm").read())) == 2


def test_modify_delete_and_default_action(shell):
    route().insert()
    route(mac="0a:00:00:00:00:06", port="3").modify()
    [entry] = list(sh.TableEntry("MyIngress.ipv4_lpm").read())
    assert int.from_bytes(entry.action["port"].value, "big") == 3
    default = sh.TableEntry("MyIngress.ipv4_lpm")(action="MyIngress.forward", is_default=True)
    default.action["dst_mac"] = "0a:00:00:00:00:07"
    default.action["port"] = "4"
    default.modify()
    route().delete()
    assert list(sh.TableEntry("MyIngress.ipv4_lpm").read()) == []
    out = shell.service.process(1, ROUTED_IN)
    assert [port for port, _ in out] == [4]
    assert out[0][1][:6] == bytes.fromhex("0a0000000007")
    [entry] = list(sh.TableEntry("MyIngress.ipv4_lpm")(is_default=True).read())
    assert entry.is_default and int.from_bytes(entry.action["port"].value, "big") == 4


def test_multicast_groups_and_ternary_entries(shell):
    group = sh.MulticastGroupEntry(7)
    group.add(3, 1).add(4, 2)
    group.insert()
    [read] = list(sh.MulticastGroupEntry(7).read())
    assert [(r._msg.egress_port, r._msg.instance) for r in read.replicas] == [(3, 1), (4, 2)]
    with pytest.raises(P4RuntimeWriteException) as err:
        sh.MulticastGroupEntry(7).add(5, 0).insert()
    assert write_error(err) == ("ALREADY_EXISTS", "multicast group 7 already exists")
    te = sh.TableEntry("MyIngress.l2")(action="MyIngress.set_mcast")
    te.match["hdr.ethernet.dst_addr"] = "01:00:00:00:00:00&&&01:00:00:00:00:00"
    te.match["std.ingress_port"] = "1"
    te.action["grp"] = "7"
    te.priority = 10
    te.insert()
    frame = bytes.fromhex("ffffffffffff02000000009988b500010203")
    assert sorted(shell.service.process(1, frame)) == [(3, frame), (4, frame)]


def test_packet_out_and_packet_in(shell):
    sh.PacketOut(payload=bytes.fromhex("ffffffffffff02000000009988b5cafe"), egress_port="5").send()
    assert shell.wire.get() == (5, bytes.fromhex("ffffffffffff02000000009988b5cafe"))
    te = sh.TableEntry("MyIngress.l2")(action="MyIngress.to_cpu")
    te.match["hdr.ethernet.dst_addr"] = "02:00:00:00:00:42&&&ff:ff:ff:ff:ff:ff"
    te.priority = 1
    te.match["std.ingress_port"] = "2"
    te.insert()
    packet_in = sh.PacketIn()
    frame = bytes.fromhex("02000000004202000000009988b5beef")
    shell.service.process(2, frame)
    [msg] = list(packet_in.sniff(timeout=2))
    assert msg.packet.payload == frame
    assert [(m.metadata_id, m.value) for m in msg.packet.metadata] == [(1, b"\x02"), (2, b"\x00")]
