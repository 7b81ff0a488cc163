"""The scapy layers, an independent reading of the format, against the same golden vectors."""

import pytest
from ina_golden import VALID
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from protocol import codec
from protocol import constants as C
from protocol.scapy_layers import INA, InaHop, InaMasks, InaValues


@pytest.mark.parametrize("vector", VALID, ids=lambda v: v["name"])
def test_scapy_dissects_golden(vector):
    pkt = INA(vector["bytes"])
    for name, value in vector["header"].items():
        assert int(pkt[INA].getfieldval(name)) == value, name
    layer = pkt
    for hop in vector["hops"]:
        layer = layer.payload
        assert isinstance(layer, InaHop)
        for name, value in hop.items():
            assert layer.getfieldval(name) == value, name
    assert pkt[InaValues].values == vector["values"]  # every layout carries its values in wire order
    if "masks" in vector:
        assert pkt[InaMasks].masks == vector["masks"]
    else:
        assert not pkt.haslayer(InaMasks)
    assert bytes(pkt) == vector["bytes"]


@pytest.mark.parametrize("vector", VALID, ids=lambda v: v["name"])
def test_scapy_builds_golden(vector):
    hops = [InaHop(**h) for h in vector["hops"]]
    pkt = INA(**vector["header"])
    for hop in hops:
        pkt = pkt / hop
    if "masks" in vector:
        pkt = pkt / InaMasks(masks=vector["masks"])
    pkt = pkt / InaValues(values=vector["values"])
    assert bytes(pkt) == vector["bytes"]


def test_udp_binding_and_codec_agree():
    vector = VALID[0]
    frame = codec.build_udp_frame(vector["bytes"], "02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2")
    pkt = Ether(frame)
    assert pkt[UDP].dport == C.INA_UDP_PORT and pkt.haslayer(INA)
    assert pkt[INA].job_id == vector["header"]["job_id"]
    built = (
        Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
        / IP(src="10.0.0.1", dst="10.0.0.2")
        / UDP(sport=C.INA_UDP_PORT, dport=C.INA_UDP_PORT, chksum=0)
        / INA(vector["bytes"])
    )
    info, back = codec.parse_frame(bytes(built))
    assert back == codec.decode(vector["bytes"])
