"""The tutorial-style IPv4 router on softswitch, checked byte for byte against scapy-built packets."""

import pytest
from scapy.all import IP, TCP, UDP, Ether, Raw
from softswitch_testlib import switch

from softswitch.switch import EntryExists, EntryNotFound, InvalidEntry, Lpm, TableEntry

ROUTER_MAC = "00:00:00:00:01:00"


def routed_switch():
    sw = switch("ipv4_router.p4")
    t = sw.table("MyIngress.ipv4_lpm")
    t.insert(
        TableEntry(
            {"hdr.ipv4.dstAddr": Lpm(0x0A000100, 24)}, "MyIngress.ipv4_forward", {"dstAddr": 0x020000000001, "port": 3}
        )
    )
    t.insert(
        TableEntry(
            {"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, "MyIngress.ipv4_forward", {"dstAddr": 0x020000000002, "port": 4}
        )
    )
    t.insert(
        TableEntry(
            {"hdr.ipv4.dstAddr": Lpm(0x0A000105, 32)}, "MyIngress.ipv4_forward", {"dstAddr": 0x020000000003, "port": 5}
        )
    )
    return sw


def frame(dst_ip, ttl=64, payload=b"hello"):
    return (
        Ether(dst=ROUTER_MAC, src="00:00:00:00:00:bb")
        / IP(src="10.9.9.9", dst=dst_ip, ttl=ttl)
        / UDP(sport=1234, dport=5678)
        / Raw(payload)
    )


def expected(dst_mac, dst_ip, ttl, payload=b"hello"):
    return bytes(
        Ether(dst=dst_mac, src=ROUTER_MAC)
        / IP(src="10.9.9.9", dst=dst_ip, ttl=ttl)
        / UDP(sport=1234, dport=5678)
        / Raw(payload)
    )


@pytest.mark.parametrize(
    "dst_ip,port,mac",
    [
        ("10.0.1.7", 3, "02:00:00:00:00:01"),
        ("10.0.1.5", 5, "02:00:00:00:00:03"),
        ("10.200.0.1", 4, "02:00:00:00:00:02"),
    ],
)
def test_longest_prefix_wins_and_ttl_and_checksum_are_rewritten(dst_ip, port, mac):
    sw = routed_switch()
    out = sw.process(1, bytes(frame(dst_ip)))
    assert out == [(port, expected(mac, dst_ip, 63))]


def test_no_route_drops_by_default_action():
    sw = routed_switch()
    assert sw.process(1, bytes(frame("192.168.0.1"))) == []
    assert sw.stats["dropped"] == 1


def test_ttl_one_is_dropped_and_bad_checksum_is_dropped():
    sw = routed_switch()
    assert sw.process(1, bytes(frame("10.0.1.7", ttl=1))) == []
    bad = bytearray(bytes(frame("10.0.1.7")))
    bad[24] ^= 0xFF  # corrupt the IPv4 header checksum
    assert sw.process(1, bytes(bad)) == []


def test_tcp_payload_is_carried_through_unchanged():
    sw = routed_switch()
    pkt = (
        Ether(dst=ROUTER_MAC, src="00:00:00:00:00:bb")
        / IP(src="1.2.3.4", dst="10.0.1.9", ttl=9)
        / TCP(sport=80, dport=443, flags="S")
        / Raw(b"x" * 300)
    )
    out = sw.process(2, bytes(pkt))
    exp = (
        Ether(dst="02:00:00:00:00:01", src=ROUTER_MAC)
        / IP(src="1.2.3.4", dst="10.0.1.9", ttl=8)
        / TCP(sport=80, dport=443, flags="S")
        / Raw(b"x" * 300)
    )
    assert out == [(3, bytes(exp))]


def test_non_ipv4_and_truncated_and_garbage_frames_are_dropped_without_raising():
    sw = routed_switch()
    arp = bytes(Ether(dst="ff:ff:ff:ff:ff:ff", type=0x0806) / Raw(b"\0" * 28))
    assert sw.process(1, arp) == []
    assert sw.process(1, bytes(frame("10.0.1.7"))[:20]) == []
    assert sw.process(1, b"") == []
    assert sw.process(1, b"\xff") == []
    assert sw.process(1, None) == []
    assert sw.process(9999, bytes(frame("10.0.1.7"))) == []
    assert sw.stats["parser_errors"] == 3
    assert sw.stats["malformed"] == 2
    assert sw.stats["errors"] == 0


def test_entry_management_errors_name_the_problem():
    sw = routed_switch()
    t = sw.table("ipv4_lpm")
    with pytest.raises(EntryExists):
        t.insert(TableEntry({"hdr.ipv4.dstAddr": Lpm(0x0A000100, 24)}, "MyIngress.drop"))
    with pytest.raises(InvalidEntry, match="no match field named 'hdr.ipv4.dst'"):
        t.insert(TableEntry({"hdr.ipv4.dst": Lpm(0, 0)}, "MyIngress.drop"))
    with pytest.raises(InvalidEntry, match="parameter 'port' of action MyIngress.ipv4_forward does not fit bit<9>"):
        t.insert(
            TableEntry({"hdr.ipv4.dstAddr": Lpm(0x0B000000, 8)}, "MyIngress.ipv4_forward", {"dstAddr": 1, "port": 512})
        )
    with pytest.raises(InvalidEntry, match="needs parameter 'dstAddr'"):
        t.insert(TableEntry({"hdr.ipv4.dstAddr": Lpm(0x0B000000, 8)}, "MyIngress.ipv4_forward", {"port": 1}))
    with pytest.raises(InvalidEntry, match="bits set beyond its /8 prefix"):
        t.insert(TableEntry({"hdr.ipv4.dstAddr": Lpm(0x0B000001, 8)}, "MyIngress.drop"))
    with pytest.raises(InvalidEntry, match="action 'forward' is not one of its actions"):
        t.insert(TableEntry({"hdr.ipv4.dstAddr": Lpm(0x0B000000, 8)}, "forward"))
    with pytest.raises(EntryNotFound):
        t.delete(TableEntry({"hdr.ipv4.dstAddr": Lpm(0x0B000000, 8)}))
    t.modify(TableEntry({"hdr.ipv4.dstAddr": Lpm(0x0A000100, 24)}, "MyIngress.drop"))
    assert sw.process(1, bytes(frame("10.0.1.7"))) == []
    t.delete(TableEntry({"hdr.ipv4.dstAddr": Lpm(0x0A000100, 24)}))
    assert sw.process(1, bytes(frame("10.0.1.7"))) == [(4, expected("02:00:00:00:00:02", "10.0.1.7", 63))]
    assert len(t.entries()) == 2


def test_default_action_can_be_changed_and_reload_clears_state():
    sw = routed_switch()
    t = sw.table("MyIngress.ipv4_lpm")
    assert t.default == ("MyIngress.drop", {})
    t.set_default("MyIngress.ipv4_forward", {"dstAddr": 0x0A, "port": 7})
    out = sw.process(1, bytes(frame("172.16.0.1")))
    assert out == [(7, expected("00:00:00:00:00:0a", "172.16.0.1", 63))]
    sw.load(sw.prog)
    assert sw.table("MyIngress.ipv4_lpm").entries() == []
    assert sw.process(1, bytes(frame("10.0.1.7"))) == []
