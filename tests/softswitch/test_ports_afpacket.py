"""AF_PACKET ports on a veth pair: exact frames both ways, own transmissions ignored, clean stop."""

import os
import queue
import shutil
import socket
import subprocess

import pytest

from softswitch.ports import PACKET_IGNORE_OUTGOING, SOL_PACKET, PortSet, parse_port_spec

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2 to create a veth pair"
)
ETHERTYPE = b"\x88\xb5"  # IEEE local experimental: nothing else on the link uses it


@pytest.fixture
def veth():
    a, b = f"sswp{os.getpid() % 100000}a", f"sswp{os.getpid() % 100000}b"
    subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
    try:
        for name in (a, b):
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"], check=False, capture_output=True)
            subprocess.run(["ip", "link", "set", name, "up"], check=True)
        yield a, b
    finally:
        subprocess.run(["ip", "link", "del", a], check=False, capture_output=True)


def raw_socket(iface):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # no protocol until bound to iface:
    s.bind((iface, 0x88B5))  # opened for one it would queue that protocol's frames of every interface
    s.settimeout(2)
    return s


def frame(tag: bytes) -> bytes:
    return b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02" + ETHERTYPE + tag.ljust(46, b"\0")


def test_port_spec_parsing():
    assert parse_port_spec("3@veth1") == (3, "veth1")
    for bad in ("veth1", "x@veth1", "3@"):
        with pytest.raises(ValueError, match="expected PORT@IFACE"):
            parse_port_spec(bad)


def test_frames_in_and_out_exactly_and_own_sends_ignored(veth):
    switch_end, host_end = veth
    got = queue.Queue()
    ports = PortSet(lambda port, data: got.put((port, data)) if data[12:14] == ETHERTYPE else None)
    ports.add(5, switch_end)
    ports.start()
    host = raw_socket(host_end)
    try:
        host.send(frame(b"hello"))
        assert got.get(timeout=2) == (5, frame(b"hello"))
        assert ports.send(5, frame(b"reply")) is True
        assert host.recv(2048) == frame(b"reply")
        assert ports.send(9, frame(b"nowhere")) is False and ports.unknown_port_drops == 1
        host.send(frame(b"second"))
        # the reply we sent is PACKET_OUTGOING on the switch end: the next frame seen is "second"
        assert got.get(timeout=2) == (5, frame(b"second"))
        assert got.empty()
        assert ports.ports[5].stats.tx == 1
    finally:
        host.close()
        ports.stop()
    assert all(not t.is_alive() for t in ports.threads)


def test_host_sends_a_kernel_still_delivers_are_skipped_and_counted_in_rx_outgoing(veth):
    """A kernel without PACKET_IGNORE_OUTGOING (emulated: the option turned off) gives the port's socket the
    frames the host sends on the switch's interface (PACKET_OUTGOING; the port's own sends never come back to
    it): they never reach the switch and are counted in rx_outgoing."""
    switch_end, host_end = veth
    got = queue.Queue()
    ports = PortSet(lambda port, data: got.put((port, data)) if data[12:14] == ETHERTYPE else None)
    ports.add(5, switch_end)
    ports.ports[5].sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 0)
    ports.ports[5]._kernel_ignores_outgoing = False
    ports.start()
    host, on_switch_end = raw_socket(host_end), raw_socket(switch_end)
    try:
        assert ports.send(5, frame(b"reply")) is True
        assert host.recv(2048) == frame(b"reply")
        on_switch_end.send(frame(b"host's own"))
        assert host.recv(2048) == frame(b"host's own")
        host.send(frame(b"next"))
        assert got.get(timeout=2) == (5, frame(b"next"))
        assert got.empty()
        stats = ports.port_stats(5)
        assert (stats.rx_outgoing, stats.rx, stats.tx) == (1, 1, 1)
    finally:
        host.close()
        on_switch_end.close()
        ports.stop()


def test_a_frame_longer_than_a_port_takes_is_dropped_and_counted_never_handled_cut(veth):
    """At a veth's largest MTU (65535) a frame is up to 65549 bytes, more than MAX_FRAME (64 KB): such a
    frame is dropped and counted in rx_truncated, never handed to the switch cut; the ones around it pass."""
    switch_end, host_end = veth
    for name in veth:
        subprocess.run(["ip", "link", "set", name, "mtu", "65535"], check=True)
    got = queue.Queue()
    ports = PortSet(lambda port, data: got.put(data) if data[12:14] == ETHERTYPE else None)
    ports.add(5, switch_end)
    ports.start()
    host = raw_socket(host_end)
    try:
        frames = [frame(b"before"), frame(b"long").ljust(65549, b"\x01"), frame(b"64k").ljust(65536, b"\x02")]
        for f in frames + [frame(b"after")]:
            host.send(f)
        assert [got.get(timeout=2) for _ in range(3)] == [frames[0], frames[2], frame(b"after")]
        assert got.empty()
        assert (ports.ports[5].stats.rx_truncated, ports.ports[5].stats.rx) == (1, 3)
    finally:
        host.close()
        ports.stop()


def test_unknown_interface_is_a_clear_error():
    with pytest.raises(OSError, match="port 1: cannot use interface 'nosuchif0'"):
        PortSet(lambda p, d: None).add(1, "nosuchif0")


def test_duplicate_port_number_rejected(veth):
    ports = PortSet(lambda p, d: None)
    ports.add(1, veth[0])
    try:
        with pytest.raises(ValueError, match="port 1 is given twice"):
            ports.add(1, veth[1])
    finally:
        ports.stop()
