"""softswitch's queue depth comes from the port's real queue: the root qdisc of its interface, read over
rtnetlink (softswitch/qdisc_depth.py). A tbf that cannot send fast enough holds frames; the poller reports
them, and the switch (here a recorder) is told the new depth."""

import os
import shutil
import socket
import subprocess

import pytest

from softswitch.qdisc_depth import QdiscDepthPoller

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("ip") is None or shutil.which("tc") is None,
    reason="needs root, iproute2 and tc (a veth with a qdisc)",
)


class Recorder:
    def __init__(self):
        self.depths: dict[int, int] = {}
        self.bytes: dict[int, int | None] = {}

    def set_queue_depth(self, port: int, packets: int, queued_bytes: int | None = None) -> None:
        self.depths[port] = packets
        self.bytes[port] = queued_bytes


@pytest.fixture
def slow_veth():
    name = f"qd{os.getpid() % 100000}"
    subprocess.run(["ip", "link", "add", f"{name}a", "type", "veth", "peer", "name", f"{name}b"], check=True)
    try:
        for end in "ab":
            subprocess.run(["ip", "link", "set", f"{name}{end}", "up"], check=True)
        # 1 Mbit/s, a queue of 2 s: frames sent at once wait there
        subprocess.run(
            ["tc", "qdisc", "add", "dev", f"{name}a", "root", "tbf", "rate", "1mbit", "burst", "1600", "latency", "2s"],
            check=True,
        )
        yield f"{name}a"
    finally:
        subprocess.run(["ip", "link", "del", f"{name}a"], check=False)


def test_frames_waiting_in_a_ports_qdisc_are_its_queue_depth(slow_veth):
    poller = QdiscDepthPoller([(3, slow_veth), (4, "lo")], lambda: None)
    try:
        assert poller.sample() == {3: (0, 0), 4: (0, 0)}
        raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        raw.bind((slow_veth, 0))
        frame = b"\xff" * 6 + b"\x02" * 6 + b"\x08\x00" + bytes(1000)
        for _ in range(40):
            raw.send(frame)
        raw.close()
        depth = poller.sample()[3]
        assert 30 <= depth.packets <= 40  # a 1600-byte bucket lets one or two leave at once; the rest wait
        # the backlog, what TNA's enq_qdepth counts in cells: about the frames' bytes (the kernel reads the
        # qdisc's length and backlog counters at slightly different moments while frames leave)
        assert (depth.packets - 2) * len(frame) <= depth.bytes <= depth.packets * len(frame)
        assert poller.sample()[4] == (0, 0)
    finally:
        poller._sock.close()


def test_the_thread_tells_the_switch_each_new_depth(slow_veth):
    switch = Recorder()
    poller = QdiscDepthPoller([(3, slow_veth)], lambda: switch, interval_s=0.001)
    poller.start()
    try:
        raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        raw.bind((slow_veth, 0))
        for _ in range(20):
            raw.send(b"\xff" * 6 + b"\x02" * 6 + b"\x08\x00" + bytes(1000))
        raw.close()
        for _ in range(2000):  # until the thread has sampled the backlog (no timing asserted)
            if switch.depths.get(3, 0) > 0:
                break
            poller._stop.wait(0.001)
        assert switch.depths.get(3, 0) > 0
        assert 0 < switch.bytes[3] <= switch.depths[3] * 1014
    finally:
        poller.stop()
