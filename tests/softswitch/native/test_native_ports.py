"""Native port I/O on veth pairs: frames through the native thread from port 1 to port 2 byte for byte,
own transmissions ignored, packet-ins and digests delivered to Python from the event queue, sends from
Python, control writes while traffic flows, a reload with ports running, and a prompt stop."""

from __future__ import annotations

import os
import queue
import shutil
import socket
import struct
import subprocess
import threading
import time
from contextlib import contextmanager

import pytest
from native_fixture import DIGEST, FORWARD, LOOKUP, MULTICAST, fixture_program, fixture_switch, make_frame

from softswitch.native.ports import NativePortStats as PortStats
from softswitch.native.switch import NativeSwitch
from softswitch.runtime.tables import Exact, TableEntry

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None, reason="needs root and iproute2 to create veth pairs"
)
ETH_P_ALL = 0x0003
SOL_PACKET, PACKET_STATISTICS = 263, 6  # <linux/if_packet.h>: struct tpacket_stats {tp_packets, tp_drops}


@pytest.fixture(params=["hybrid", "ring", "block", "recvmmsg"])
def receive_path(request, monkeypatch):
    """How a test's ports receive: both rings with frames moved between them by rate (SOFTSWITCH_IO=hybrid),
    a ring of frame slots (TPACKET_V2, the default, SOFTSWITCH_IO unset), a ring of blocks (TPACKET_V3,
    SOFTSWITCH_IO=block), or no ring at all (recvmmsg on the socket, what a kernel without rings gets;
    SOFTSWITCH_IO=recvmmsg). Read by the runtime when the ports are set up."""
    if request.param == "ring":
        monkeypatch.delenv("SOFTSWITCH_IO", raising=False)
    else:
        monkeypatch.setenv("SOFTSWITCH_IO", request.param)
    return request.param


def assert_receive_path(ports, path: str) -> None:
    stats = ports.port_stats(1)
    assert stats.ring == (path != "recvmmsg") and stats.rx_blocks == (path == "block")
    assert stats.hybrid == (path == "hybrid")


@pytest.fixture
def veths():
    """Two veth pairs: (switch end, host end) for ports 1 and 2."""
    tag = os.getpid() % 100000
    pairs = [(f"ssn{tag}s{i}", f"ssn{tag}h{i}") for i in (1, 2)]
    try:
        for a, b in pairs:
            subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
            for name in (a, b):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"], check=False)
                subprocess.run(["ip", "link", "set", name, "up"], check=True)
        yield pairs
    finally:
        for a, _ in pairs:
            subprocess.run(["ip", "link", "del", a], check=False, capture_output=True)


def host_socket(iface: str) -> socket.socket:
    """A raw socket on `iface` alone: opened for no protocol and bound with ETH_P_ALL, since a socket
    opened for ETH_P_ALL queues the frames of every interface until it is bound (another test or bench
    running beside this one had its frames read here)."""
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    s.bind((iface, ETH_P_ALL))
    s.setsockopt(socket.SOL_SOCKET, 33, 16 << 20)  # SO_RCVBUFFORCE: hold every frame of a test
    s.settimeout(3)
    return s


def tagged(command: int, a1: int, number: int, size: int = 100, **kw) -> bytes:
    """A fixture frame whose payload carries `number` (so the receiver can check order and content)."""
    payload = b"NATIVE" + number.to_bytes(4, "big")
    return make_frame(command, a1, payload=payload.ljust(size - 16, bytes([number % 251])), **kw)


def receive_tagged(sock: socket.socket, count: int, timeout: float = 20.0) -> list[bytes]:
    got, deadline = [], time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        try:
            frame = sock.recv(1 << 17)
        except TimeoutError:
            break
        if frame[16:22] == b"NATIVE":
            got.append(frame)
    return got


def backlog_drops() -> int:
    """Frames the kernel dropped so far, on every CPU, because a CPU's input backlog was full
    (netdev_max_backlog; /proc/net/softnet_stat's second column): where a veth pair loses frames."""
    with open("/proc/net/softnet_stat") as f:
        return sum(int(row.split()[1], 16) for row in f.read().splitlines() if row.strip())


def watch_drops(sock: socket.socket) -> None:
    """Starts counting the frames `sock`'s buffer drops from now (reading the counters resets them)."""
    sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8)


def harness_drops(sock: socket.socket, backlog_before: int) -> tuple[int, int]:
    """Frames lost outside the switch since `watch_drops(sock)`: (by `sock`'s buffer, by the kernel's
    input backlogs since `backlog_before`, on either veth pair)."""
    _, dropped = struct.unpack("II", sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
    return dropped, backlog_drops() - backlog_before


def settled_port_stats(ports, number: int, forwarded: int):
    """Port `number`'s counters once its tx count has reached `forwarded` (or 3 s): a frame can reach the
    far host before the I/O thread has counted its send."""
    settled(lambda: ports.port_stats(number).tx, forwarded)
    return ports.port_stats(number)


def settled(read, expected, timeout: float = 3.0):
    """``read()`` once it equals ``expected``, else its last value after ``timeout`` seconds: a frame can
    reach the far host before the switch's I/O thread has counted its send, so counters are read settled."""
    deadline = time.monotonic() + timeout
    value = read()
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.005)
        value = read()
    return value


@contextmanager
def running_switch(veths, switch=None):
    """The switch (default: a fresh fixture switch) with ports 1 and 2 on the veths' switch ends,
    started; yields (switch, ports, socket on port 1's host end, socket on port 2's host end)."""
    (s1, h1), (s2, h2) = veths
    sw = switch or fixture_switch()
    ports = sw.ports()
    ports.add(1, s1)
    ports.add(2, s2)
    ports.start()
    tx, rx = host_socket(h1), host_socket(h2)
    try:
        yield sw, ports, tx, rx
    finally:
        t0 = time.monotonic()
        ports.stop()
        assert time.monotonic() - t0 < 5  # the I/O thread ends promptly (generous for a loaded CI machine)
        tx.close()
        rx.close()
        sw.close()


def test_frames_cross_the_native_thread_exactly_and_in_order(veths, receive_path):
    """3,000 frames of every size cross port 1 -> port 2 byte for byte, in order, none twice; on a starved
    machine the kernel may drop some before the switch or the receiver reads them, and counts each."""
    with running_switch(veths) as (sw, ports, tx, rx):
        watch_drops(rx)
        backlog_before = backlog_drops()
        assert_receive_path(ports, receive_path)
        frames = [tagged(FORWARD, 2, i, size=60 + i % 1400) for i in range(3000)]
        for i, f in enumerate(frames):
            tx.send(f)
            if i % 200 == 0:
                time.sleep(0.002)  # stay under the socket buffers: this test is about exactness
        expected = [f[:12] + bytes([0, 2, 0, 0]) + f[16:] for f in frames]  # egress writes bytes 12..15
        got = receive_tagged(rx, len(frames), timeout=5.0)
        arrived = set(got)
        assert got == [f for f in expected if f in arrived], "frames changed, out of order or twice"
        lost = len(frames) - len(got)  # the kernel may drop on a starved machine; it counts what it drops
        assert lost <= ports.port_stats(1).kernel_drops + sum(harness_drops(rx, backlog_before)), lost
        forwarded = sw.stats["received"]  # the switch's own sends on port 2 are not input
        assert settled(lambda: sw.stats["transmitted"], forwarded) == forwarded
        assert settled(lambda: ports.port_stats(2).tx, forwarded) == forwarded
        assert ports.port_stats(1).rx == forwarded
        assert ports.port_stats(2).tx_ring == (os.environ.get("SOFTSWITCH_IO_TX") != "sendmmsg")
        assert ports.send(2, tagged(FORWARD, 0, 99999)) is True
        assert receive_tagged(rx, 1)[0][16:26] == b"NATIVE" + (99999).to_bytes(4, "big")
        assert ports.send(7, b"x" * 60) is False


def test_packet_ins_and_digests_reach_python_from_the_io_thread(veths):
    sw = fixture_switch(cpu_port=64)
    packet_ins, digests = queue.Queue(), queue.Queue()
    sw.on_packet_in = packet_ins.put
    sw.on_digest = lambda name, values: digests.put((name, values))
    with running_switch(veths, sw) as (_, _, tx, _):
        tx.send(tagged(FORWARD, 64, 1))
        frame = packet_ins.get(timeout=3)
        assert frame[16:26] == b"NATIVE" + (1).to_bytes(4, "big")
        tx.send(make_frame(DIGEST, 0x42, 0x01, 0x02, payload=bytes(50)))
        assert digests.get(timeout=3) == ("learn_t", {"a": 0x42, "b": 0x0102})
        assert sw.stats["to_cpu"] == 1 and sw.stats["digests"] == 1


def test_control_writes_while_traffic_flows_and_reload(veths):
    with running_switch(veths, NativeSwitch(fixture_program())) as (sw, _, tx, rx):
        churn_while_forwarding(sw, tx, rx)


def churn_while_forwarding(sw, tx, rx):
    table = sw.table("Fixture.exact16")
    stop = threading.Event()

    def churn():
        k = 0
        while not stop.is_set():
            entry = TableEntry({"hdr.k16": Exact(100 + k % 2)}, "Fixture.fwd", {"port": 1})
            table.insert(entry)
            table.delete(entry)
            k += 1

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        table.insert(TableEntry({"hdr.k16": Exact(7)}, "Fixture.fwd", {"port": 2}))
        for i in range(500):
            tx.send(tagged(LOOKUP, 0, i, body=b"\x00\x07"))
        assert len(receive_tagged(rx, 500)) == 500
        stop.set()
        writer.join()
        sw.load(fixture_program())  # a new pipeline: state cleared, the ports reopened on it
        assert len(sw.table("Fixture.exact16")) == 0
        tx.send(tagged(FORWARD, 2, 1))
        assert len(receive_tagged(rx, 1)) == 1
        assert sw.stats["received"] == 1
    finally:
        stop.set()
        writer.join()


def set_mtu(veths, mtu: int) -> None:
    for pair in veths:
        for name in pair:
            subprocess.run(["ip", "link", "set", name, "mtu", str(mtu)], check=True)


def forward_sizes_in_order(tx, rx, sizes: list[int]) -> None:
    """Frames of these sizes sent at port 1 leave port 2 whole and in order (egress writes bytes 12..15)."""
    frames = [tagged(FORWARD, 2, i, size=size) for i, size in enumerate(sizes)]
    for f in frames:
        tx.send(f)
    assert receive_tagged(rx, len(frames)) == [f[:12] + bytes([0, 2, 0, 0]) + f[16:] for f in frames]


def test_frames_longer_than_a_ring_slot_arrive_whole(veths, receive_path):
    """Frames of every size up to a jumbo MTU arrive whole and in order: the ring's slots follow the MTU
    (16 KB at 9000), and a block holds them whole."""
    set_mtu(veths, 9000)
    with running_switch(veths) as (_, ports, tx, rx):
        assert_receive_path(ports, receive_path)
        forward_sizes_in_order(tx, rx, [100, 3000, 9000, 60, 2049, 2048, 5000])


def test_a_frame_longer_than_its_receive_buffer_is_dropped_and_counted_never_run_cut(veths, receive_path):
    """At a veth's largest MTU (65535) a frame is up to 65549 bytes: more than the 64 KB that a frame slot,
    the long-frame read behind it or recvmmsg's buffer holds (a block holds it whole). Where it does not
    fit it is dropped and counted (rx_truncated), never run through the pipeline cut; the frames before
    and after it pass."""
    set_mtu(veths, 65535)
    with running_switch(veths) as (sw, ports, tx, rx):
        assert_receive_path(ports, receive_path)
        frames = [tagged(FORWARD, 2, i, size=size) for i, size in enumerate([100, 65549, 65536, 200])]
        for f in frames:
            tx.send(f)
        whole = receive_path == "block"
        passed = [f for f in frames if whole or len(f) <= 65536]
        assert receive_tagged(rx, len(passed)) == [f[:12] + bytes([0, 2, 0, 0]) + f[16:] for f in passed]
        assert settled(lambda: ports.port_stats(1).rx_truncated, 0 if whole else 1) == (0 if whole else 1)
        assert sw.stats["received"] == ports.port_stats(1).rx == len(passed)


def test_an_mtu_raised_after_the_ports_opened_still_passes_whole_frames(veths, receive_path):
    """Ring slots are sized when a port opens (2 KB at MTU 1500). Raised to 9000 afterwards, a frame larger
    than a slot still arrives whole and in its place (the kernel marks it as cut, the thread reads it from
    the socket) and leaves with send() past the transmit ring (tx_long counts it)."""
    with running_switch(veths) as (_, ports, tx, rx):
        assert_receive_path(ports, receive_path)
        set_mtu(veths, 9000)
        sizes = [100, 3000, 9000, 60, 2049, 5000, 1500]
        forward_sizes_in_order(tx, rx, sizes)
        if ports.port_stats(2).tx_ring:  # the ring takes what the MTU at opening allowed: 1500 + 14 bytes
            longer = sum(size > 1514 for size in sizes)
            assert settled(lambda: ports.port_stats(2).tx_long, longer) == longer


def test_frames_up_to_the_mtu_leave_through_the_ring_in_order_and_longer_ones_are_counted(veths):
    """Transmit slots follow the interface's MTU (4 KB slots at 3000): every frame the MTU allows leaves
    through the ring, in its place among the others; one longer than the MTU is dropped and counted, as the
    kernel refuses it."""
    (s1, h1), (s2, h2) = veths
    for name in (s1, h1):
        subprocess.run(["ip", "link", "set", name, "mtu", "4000"], check=True)
    for name in (s2, h2):
        subprocess.run(["ip", "link", "set", name, "mtu", "3000"], check=True)
    with running_switch(veths) as (sw, ports, tx, rx):
        sizes = [100, 2900, 120, 3500, 140, 2500, 160]  # 3500 > 3000 + the 14-byte Ethernet header
        frames = [tagged(FORWARD, 2, i, size=size) for i, size in enumerate(sizes)]
        for f in frames:
            tx.send(f)
        got = receive_tagged(rx, len(sizes) - 1, timeout=5.0)
        assert got == [f[:12] + bytes([0, 2, 0, 0]) + f[16:] for f in frames if len(f) <= 3014]
        counted = settled(lambda: (ports.port_stats(2).tx, ports.port_stats(2).tx_errors), (len(sizes) - 1, 1))
        assert sw.stats["received"] == len(sizes)
        assert counted == (len(sizes) - 1, 1)
        stats = ports.port_stats(2)
        if stats.tx_ring:
            assert stats.tx_long == 0  # none took the long-frame path (the 3500 bytes, past the MTU, failed)


def test_a_rate_limit_on_a_switch_interface_applies_to_the_switch_output(veths, receive_path):
    """The lab shapes links with tc on the switch's interfaces too: the switch's sends go through the
    qdisc, and what the qdisc refuses is dropped and counted, without stalling the switch."""
    (_, _), (s2, _) = veths
    subprocess.run(
        ["tc", "qdisc", "add", "dev", s2, "root", "tbf", "rate", "8mbit", "burst", "20kb", "latency", "20ms"],
        check=True,
    )
    with running_switch(veths) as (sw, ports, tx, rx):
        assert_receive_path(ports, receive_path)
        frames = [tagged(FORWARD, 2, i, size=1000) for i in range(2000)]  # 16 Mbit, sent in well under 1 s
        t0 = time.monotonic()
        for f in frames:
            tx.send(f)
        got = receive_tagged(rx, len(frames), timeout=3.0)
        elapsed = time.monotonic() - t0
        stats = ports.port_stats(2)
        assert sw.stats["received"] == len(frames)
        assert stats.tx + stats.tx_errors == len(frames) and stats.tx_errors > 0
        assert len(got) == stats.tx
        assert len(got) * 1000 * 8 <= 8e6 * elapsed + 8 * 20 * 1024 + 8 * 1000 * 10  # the rate, the burst


def test_multicast_replicas_leave_in_order_through_full_send_batches(veths):
    """Replicas of a multicast group on one port (rid in the frame), more outputs than one sendmmsg
    batch holds: every replica arrives, in order."""
    sw = fixture_switch()
    sw.set_multicast_group(9, [(2, 1), (2, 2), (2, 3)])
    with running_switch(veths, sw) as (_, ports, tx, rx):
        for i in range(100):
            tx.send(tagged(MULTICAST, 0, i, size=76, a2=9))
        got = receive_tagged(rx, 300)
        assert [(int.from_bytes(f[22:26], "big"), f[14]) for f in got] == [
            (i, rid) for i in range(100) for rid in (1, 2, 3)
        ]
        assert settled(lambda: ports.port_stats(2).tx, 300) == 300


def test_a_full_receive_ring_drops_and_counts_what_it_cannot_hold(veths, receive_path):
    """Frames arriving while the ring (or, without one, the socket buffer) is full (the switch too slow,
    here paused) are lost at the kernel and counted in kernel_drops; every frame is either forwarded, in
    order, or counted."""
    with running_switch(veths) as (sw, ports, tx, rx):
        assert_receive_path(ports, receive_path)
        ports.pause()
        sent = 12000  # more than any path holds: 4096 slots, 64 blocks of 128 KB at ~1 KB a frame, 4 MB socket buffer
        for i in range(sent):
            tx.send(tagged(FORWARD, 2, i, size=1000))
        ports.pause(False)
        got = receive_tagged(rx, sent, timeout=5.0)
        stats = ports.port_stats(1)
        assert 0 < stats.kernel_drops < sent
        assert stats.rx + stats.kernel_drops == sent
        assert sw.stats["received"] == stats.rx == len(got)
        numbers = [int.from_bytes(f[22:26], "big") for f in got]
        assert numbers == sorted(numbers) and numbers[0] == 0  # the first frames, in order, then a gap


def test_short_frames_are_counted_as_parser_errors_and_the_rest_pass(veths, receive_path):
    """Frames too short for the program's header go through the parser's error path (counted) between
    well-formed ones, which all arrive in order; a 14-byte frame (a bare Ethernet header) included."""
    with running_switch(veths) as (sw, ports, tx, rx):
        assert_receive_path(ports, receive_path)
        good = [tagged(FORWARD, 2, i, size=100) for i in range(200)]
        runts = 0
        for i, frame in enumerate(good):
            tx.send(frame)
            if i % 10 == 0:
                tx.send(bytes([0, 2]) + bytes(12 + i % 2))  # 14 or 15 bytes: shorter than the 16-byte header
                runts += 1
        got = receive_tagged(rx, len(good))
        assert got == [f[:12] + bytes([0, 2, 0, 0]) + f[16:] for f in good]
        deadline = time.monotonic() + 3
        while sw.stats["received"] < len(good) + runts and time.monotonic() < deadline:
            time.sleep(0.01)
        assert sw.stats["received"] == len(good) + runts
        assert sw.stats["parser_errors"] == runts


def test_frames_arriving_on_both_ports_at_once_all_get_through_in_order_per_port(veths, receive_path):
    """Both ports receive at once (port 1's frames go to port 2 and port 2's to port 1, each host sending
    from its own thread): every frame arrives exactly and in order per port."""
    (s1, h1), (s2, h2) = veths
    sw = fixture_switch()
    ports = sw.ports()
    ports.add(1, s1)
    ports.add(2, s2)
    ports.start()
    host1, host2 = host_socket(h1), host_socket(h2)  # each host sends and receives on one socket
    try:
        assert_receive_path(ports, receive_path)
        to_port2 = [tagged(FORWARD, 2, i, size=60 + i % 700) for i in range(2000)]
        to_port1 = [tagged(FORWARD, 1, 100000 + i, size=60 + i % 900) for i in range(2000)]

        def send_all(sock: socket.socket, frames: list[bytes]) -> None:
            for i, frame in enumerate(frames):
                sock.send(frame)
                if i % 200 == 0:
                    time.sleep(0.002)  # stay under the socket buffers: this test is about exactness

        senders = [
            threading.Thread(target=send_all, args=(host1, to_port2)),
            threading.Thread(target=send_all, args=(host2, to_port1)),
        ]
        for thread in senders:
            thread.start()
        for thread in senders:
            thread.join()
        assert receive_tagged(host2, len(to_port2)) == [f[:12] + bytes([0, 2, 0, 0]) + f[16:] for f in to_port2]
        assert receive_tagged(host1, len(to_port1)) == [f[:12] + bytes([0, 1, 0, 0]) + f[16:] for f in to_port1]
        assert ports.port_stats(1).rx == len(to_port2) and ports.port_stats(2).rx == len(to_port1)
        assert sw.stats["received"] == len(to_port2) + len(to_port1)
    finally:
        ports.stop()
        host1.close()
        host2.close()
        sw.close()


def test_a_port_that_stays_busy_does_not_starve_another(veths, receive_path):
    """A burst waiting at port 1 and a few frames waiting at port 2, all for port 2: the I/O thread takes
    one batch from each port in turn (one block with the block ring), so port 2's frames leave after the
    first batch (or block) of port 1's, not after the whole burst."""
    with running_switch(veths) as (sw, ports, tx, rx):
        assert_receive_path(ports, receive_path)
        ports.pause()
        burst, few = 3000, 10
        for i in range(burst):
            tx.send(tagged(FORWARD, 2, i, size=100))
        for i in range(few):
            rx.send(tagged(FORWARD, 2, 100000 + i, size=100))  # port 2's host: out of port 2 again
        time.sleep(0.01)  # the block ring hands over its last block 1 ms after its first frame
        ports.reset_stats()
        ports.pause(False)
        got = receive_tagged(rx, burst + few)
        assert len(got) == burst + few, (ports.port_stats(1), ports.port_stats(2), ports.stats(), sw.stats)
        numbers = [int.from_bytes(f[22:26], "big") for f in got]
        positions = [at for at, number in enumerate(numbers) if number >= 100000]
        assert [numbers[at] for at in positions] == list(range(100000, 100000 + few))  # in order
        # frame slots and recvmmsg: port 1's first batch of 64 goes first; blocks: its first block (128 KB, about 900
        # of these frames); either way far less than the burst
        first_turn = 1000 if receive_path == "block" else 64  # recvmmsg also takes 64 per call
        assert positions[-1] < first_turn + few, positions
        # the thread swept the ports while frames waited (no poll() per batch): once done, it slept twice
        # at most (the resume's wake-up is still pending in its eventfd the first time)
        stats = ports.stats()
        assert stats.frames_in_batches == burst + few and stats.batches >= burst // 64
        assert settled(lambda: ports.stats().sleeps, 2) <= 2


def test_a_link_that_goes_down_and_up_does_not_keep_the_thread_awake(veths, receive_path):
    """Taking a port's link down leaves an error (ENETDOWN) on its packet socket that poll() reports until
    someone reads it. A ring port never reads its socket, so the I/O thread must clear it, or every poll()
    returns at once and the thread spins at full CPU; once the link is back the port forwards again."""
    (s1, _), _ = veths
    with running_switch(veths) as (sw, ports, tx, rx):
        assert_receive_path(ports, receive_path)
        ports.reset_stats()
        subprocess.run(["ip", "link", "set", s1, "down"], check=True)
        time.sleep(0.3)
        subprocess.run(["ip", "link", "set", s1, "up"], check=True)
        time.sleep(0.3)
        assert ports.stats().sleeps < 50  # a spinning thread counts a sleep per poll(): hundreds of thousands
        frames = [tagged(FORWARD, 2, i) for i in range(20)]
        for f in frames:
            tx.send(f)
        assert [g[16:] for g in receive_tagged(rx, len(frames))] == [f[16:] for f in frames]


def burst_to_blocks(ports, tx, count: int, first: int = 0) -> list[bytes]:
    """Sends `count` 1000-byte frames to port 1 while the thread is paused, then lets it go: it reads them
    at full batches, far more than a block's worth (128 KB) within a millisecond, so a hybrid port moves
    to its block ring. Returns the frames sent."""
    frames = [tagged(FORWARD, 2, first + i, size=1000) for i in range(count)]
    ports.pause()
    for frame in frames:
        tx.send(frame)
    ports.pause(False)
    return frames


@pytest.fixture
def hybrid(monkeypatch):
    """The hybrid receive path (opt-in: SOFTSWITCH_IO=hybrid)."""
    monkeypatch.setenv("SOFTSWITCH_IO", "hybrid")


def test_a_hybrid_port_moves_to_blocks_in_a_burst_and_back_in_a_trickle_losing_nothing(veths, hybrid):
    """The hybrid receive path: a burst moves port 1 to its block ring while frames keep coming (some
    of them on their way while the fanout's program is replaced), a trickle moves it back to frame
    slots; every frame arrives exactly once and in order across both moves."""
    with running_switch(veths) as (sw, ports, tx, rx):
        assert_receive_path(ports, "hybrid")
        frames = burst_to_blocks(ports, tx, 2000)
        for i in range(2000, 6000):  # as fast as Python sends, pausing now and then: blocks fill or time out
            frames.append(tagged(FORWARD, 2, i, size=1000))
            tx.send(frames[-1])
            if i % 100 == 0:
                time.sleep(0.001)
        assert ports.port_stats(1).rx_switches >= 1
        for i in range(6000, 6030):  # a trickle: a block would wait for its timeout, so back to slots
            frames.append(tagged(FORWARD, 2, i, size=1000))
            tx.send(frames[-1])
            time.sleep(0.004)
        got = receive_tagged(rx, len(frames))
        numbers = [int.from_bytes(f[22:26], "big") for f in got]
        assert numbers == list(range(len(frames)))  # each exactly once, in order
        assert got == [f[:12] + bytes([0, 2, 0, 0]) + f[16:] for f in frames]
        stats = ports.port_stats(1)
        assert stats.rx == len(frames) and stats.kernel_drops == 0
        assert stats.rx_switches >= 2 and not stats.on_blocks


def test_a_lone_frame_after_a_burst_is_not_held_in_a_half_full_block(veths, hybrid):
    """After a burst has moved port 1 to blocks, a lone frame comes out within a few milliseconds (the
    block's timeout retires it and the port goes back to slots), and the lone frames after it take the
    frame slots' path: well under the block ring's 1 ms timeout each."""
    with running_switch(veths) as (sw, ports, tx, rx):
        frames = burst_to_blocks(ports, tx, 2000)
        # the port starts on slots, so its first move is to blocks; counted, not sampled (it may be back already)
        assert settled(lambda: ports.port_stats(1).rx_switches >= 1, True)
        assert len(receive_tagged(rx, len(frames))) == len(frames)
        delays = []
        for i in range(21):
            time.sleep(0.003)
            t0 = time.monotonic()
            tx.send(tagged(FORWARD, 2, 100000 + i, size=100))
            assert len(receive_tagged(rx, 1)) == 1
            delays.append(time.monotonic() - t0)
        assert delays[0] < 0.02, delays  # the first: at most the block's timeout, then the move back
        assert sorted(delays[1:])[10] < 0.0008, delays  # then frame slots: no timeout to wait for
        assert not ports.port_stats(1).on_blocks


class Collector:
    """Reads port 2's host end in a thread while a test sends (frames the switch forwards faster than a
    socket buffer holds); `numbers()` and `check_whole()` judge what came."""

    def __init__(self, rx: socket.socket) -> None:
        self.rx, self.frames, self.done = rx, [], threading.Event()
        self.rx.setsockopt(socket.SOL_SOCKET, 33, 256 << 20)  # SO_RCVBUFFORCE: this thread shares the GIL
        self.rx.settimeout(0.05)
        watch_drops(self.rx)
        self.backlog_drops_before = backlog_drops()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while not self.done.is_set():
            try:
                frame = self.rx.recv(65535)
            except TimeoutError:
                continue
            if frame[16:22] == b"NATIVE":
                self.frames.append(frame)

    def stop(self, quiet: float = 0.3) -> None:
        """Stops once nothing has come for `quiet` seconds."""
        count = -1
        while count != len(self.frames):
            count = len(self.frames)
            time.sleep(quiet)
        self.done.set()
        self.thread.join()

    def numbers(self) -> list[int]:
        return [int.from_bytes(f[22:26], "big") for f in self.frames]

    def harness_drops(self) -> tuple[int, int]:
        """Frames lost outside the switch since the collector started: (by this socket, whose thread a
        loaded machine can starve; by the kernel's input backlogs, on either veth pair)."""
        return harness_drops(self.rx, self.backlog_drops_before)

    def check_every_frame_once_in_order(self, sent: int, port1: PortStats, port2: PortStats) -> None:
        """Frames 0..sent-1 went to port 1; what came out of port 2 is each of them once, in order. A frame
        the harness lost (this socket or a kernel backlog, counted) is excused, and so is one the kernel
        found no room for in port 1's ring (counted in its kernel_drops: the bursts run at full speed, and
        a loaded machine can starve the switch's thread); one the switch read and lost is not."""
        numbers = self.numbers()
        assert numbers == sorted(set(numbers)), "frames out of order or twice"
        by_socket, by_backlog = self.harness_drops()
        # backlog drops are counted per machine, not per interface: each may have been one of ours
        assert sent - by_backlog - port1.kernel_drops <= port1.rx <= sent, (port1, by_backlog)
        assert port2.tx == port1.rx, (port1, port2)  # the switch forwarded every frame it read
        assert len(numbers) + by_socket == port2.tx, (len(numbers), by_socket, port2)
        if by_socket == 0 and port1.rx == sent:
            assert numbers == list(range(sent))

    def check_whole(self, size: int) -> None:
        """Every frame is the one sent with its number, byte for byte (the switch sets bytes 12..15)."""
        for frame, number in zip(self.frames, self.numbers(), strict=True):
            sent = tagged(FORWARD, 2, number, size=size)
            assert frame == sent[:12] + bytes([0, 2, 0, 0]) + sent[16:], number


def send_until_on_blocks(ports, tx, first: int, size: int) -> int:
    """Moves port 1 to its block ring with a burst and keeps sending at full speed until it is there (the
    burst may be read before the switcher is done); returns the next frame number."""
    number = first + len(burst_to_blocks(ports, tx, 2000, first))
    deadline = time.monotonic() + 5
    while not ports.port_stats(1).on_blocks:
        assert time.monotonic() < deadline, ports.port_stats(1)
        for _ in range(100):
            tx.send(tagged(FORWARD, 2, number, size=size))
            number += 1
    return number


def trickle(tx, first: int, count: int = 20, size: int = 1000) -> list[int]:
    """Frames one by one (frame slots' rate); their numbers."""
    for number in range(first, first + count):
        tx.send(tagged(FORWARD, 2, number, size=size))
        time.sleep(0.003)
    return list(range(first, first + count))


def all_protocol_sockets(iface: str) -> int:
    """AF_PACKET sockets bound to `iface` for all protocols, as the kernel lists them (/proc/net/packet:
    Proto in hex, Iface the interface's index): a hybrid port's slot socket, and its block socket while
    it has one (its transmit socket is bound for no protocol)."""
    ifindex = socket.if_nametoindex(iface)
    with open("/proc/net/packet") as f:
        rows = [line.split() for line in f.read().splitlines()[1:]]
    return sum(1 for row in rows if int(row[3], 16) == ETH_P_ALL and int(row[4]) == ifindex)


def test_a_quiet_hybrid_port_has_no_block_ring_until_a_burst_and_closes_it_when_quiet_again(veths, hybrid):
    """A hybrid port opens its block ring (whose retire timer fires every millisecond, traffic or not) only
    on its first move to blocks, and closes it once it has been back on slots for 2 s (ss_io.c
    SS_HYBRID_RETIRE_NS); a second burst opens a new one. Every frame crosses the switch once, in order,
    across the openings, moves and closing."""
    (s1, _), _ = veths
    with running_switch(veths) as (sw, ports, tx, rx):
        time.sleep(0.1)  # a frame or two of the kernel's own (none expected: IPv6 is off) would not move it
        assert all_protocol_sockets(s1) == 1  # the kernel's view: the slot socket alone
        stats = ports.port_stats(1)
        assert stats.hybrid and not stats.block_ring and stats.block_rings == 0
        collector = Collector(rx)
        number = send_until_on_blocks(ports, tx, 0, 1000)
        assert all_protocol_sockets(s1) == 2 and ports.port_stats(1).block_ring
        last = trickle(tx, number)  # back to slots
        assert not settled(lambda: ports.port_stats(1).on_blocks, False)
        assert ports.port_stats(1).block_ring  # kept a while: traffic may come back
        assert settled(lambda: all_protocol_sockets(s1), 1, timeout=5) == 1
        stats = ports.port_stats(1)
        assert not stats.block_ring and stats.block_rings == 1
        number = send_until_on_blocks(ports, tx, last[-1] + 1, 1000)
        last = trickle(tx, number)
        collector.stop()
        stats = ports.port_stats(1)
        assert stats.block_rings == 2 and stats.rx_switches >= 4
        collector.check_every_frame_once_in_order(last[-1] + 1, stats, settled_port_stats(ports, 2, stats.rx))
        collector.check_whole(1000)


def test_a_hybrid_port_on_blocks_survives_link_bounces_under_load(veths, hybrid):
    """Smoke test: port 1's link goes down and up ten times while a sender keeps it on blocks: a link
    bounce unlinks both of its sockets from the fanout group and relinks them, maybe in the other order,
    so frames can go to the other ring without a switch (and its grace period). Every frame that comes out
    is whole and in order, none twice; the switch keeps running and forwards afterwards. The race it guards
    against (reading the block being filled, git 99ab285) is not reproduced here: this passed on the code
    before that fix (this kernel relinks the sockets in their old order)."""
    (s1, _), _ = veths
    with running_switch(veths) as (sw, ports, tx, rx):
        collector = Collector(rx)
        number = send_until_on_blocks(ports, tx, 0, 1000)
        stop, sent = threading.Event(), [number]

        def send() -> None:
            while not stop.is_set():
                try:
                    tx.send(tagged(FORWARD, 2, sent[0], size=1000))
                except OSError:
                    pass  # the link is down (ENOBUFS, ENETDOWN): this number is never sent
                sent[0] += 1

        sender = threading.Thread(target=send)
        sender.start()
        try:
            for _ in range(10):
                time.sleep(0.02)
                subprocess.run(["ip", "link", "set", s1, "down"], check=True)
                subprocess.run(["ip", "link", "set", s1, "up"], check=True)
            time.sleep(0.1)
        finally:
            stop.set()
            sender.join()
        time.sleep(0.05)
        last = trickle(tx, sent[0])
        collector.stop()
        numbers = collector.numbers()
        assert numbers == sorted(set(numbers)), "frames out of order or twice"
        assert numbers[-len(last) :] == last  # forwarding again after the bounces
        collector.check_whole(1000)
        assert sw.stats["received"] == ports.port_stats(1).rx


def test_a_hybrid_port_whose_block_ring_filled_up_loses_no_frame_and_repeats_none(veths, hybrid):
    """Port 1 on blocks while the switch stops reading (paused): the ring fills (64 blocks), the kernel
    drops and counts the rest. The switch then reads every block back, goes idle and moves back to slots:
    the block the kernel has not opened again since still shows its earlier fill's header, and must not be
    read as new frames. Every frame sent is forwarded once, in order, or counted as dropped. Smoke test:
    the race it guards against (a stale block header read as new, git a8494a2) is not reproduced here;
    this passed on the code before that fix (the thread rarely reads all 64 blocks within a timer tick)."""
    with running_switch(veths) as (sw, ports, tx, rx):
        collector = Collector(rx)
        number = send_until_on_blocks(ports, tx, 0, 1000)
        ports.pause()
        for _ in range(9000):  # more than 64 blocks of 128 KB hold at ~1 KB a frame
            tx.send(tagged(FORWARD, 2, number, size=1000))
            number += 1
        ports.pause(False)
        time.sleep(0.05)  # read back, idle, moved to slots
        last = trickle(tx, number)
        collector.stop()
        numbers = collector.numbers()
        stats = ports.port_stats(1)
        assert numbers == sorted(set(numbers)), "frames out of order or twice"
        assert numbers[-len(last) :] == last
        by_socket, by_backlog = collector.harness_drops()  # frames the harness lost (a loaded machine)
        sent = last[-1] + 1
        assert stats.kernel_drops > 0 and sent - by_backlog <= stats.rx + stats.kernel_drops <= sent
        assert len(numbers) + by_socket == stats.rx == sw.stats["received"]
        collector.check_whole(1000)
        assert not stats.on_blocks


def test_the_io_thread_reads_an_output_ports_qdisc_length_while_frames_flow_and_never_when_idle(veths):
    """Egress sees a port's real queue (its root qdisc's length, the ECN marks' input): the I/O thread
    reads it before a batch runs, at most once per interval, and not at all while nothing arrives (an
    idle switch costs the machine nothing)."""
    (_, _), (s2, _) = veths
    # 1 Mbit/s with a 2 s queue: the frames the switch forwards at once wait there
    subprocess.run(
        ["tc", "qdisc", "add", "dev", s2, "root", "tbf", "rate", "1mbit", "burst", "1600", "latency", "2s"],
        check=True,
    )
    sw = fixture_switch()
    ports = sw.ports()
    ports.add(1, veths[0][0])
    ports.add(2, s2)
    ports.read_queue_depths(0.001)
    ports.start()
    tx = host_socket(veths[0][1])
    try:
        idle = ports.queue_depth_readings()
        time.sleep(0.05)  # the interval passes 50 times over without a frame
        assert ports.queue_depth_readings() == idle
        for i in range(40):
            tx.send(tagged(FORWARD, 2, i, size=1000))
        # one frame at a time until a batch runs after the interval and sees the backlog (about 0.3 s long)
        for i in range(200):
            if sw.queue_depth(2) > 0:
                break
            tx.send(tagged(FORWARD, 2, 40 + i, size=1000))
            time.sleep(0.002)
        assert 10 <= sw.queue_depth(2) <= 40 + 200
        assert sw.queue_depth(1) == 0 and ports.queue_depth_readings() > idle
    finally:
        ports.stop()
        tx.close()
        sw.close()
