"""Hosts in another thread of control join a wall-clock in-process network through its attach
endpoint (loopback UDP, one whole Ethernet frame per datagram)."""

import threading

from topologies.inprocess.fabric import AttachServer
from topologies.inprocess.network import LinkParams, Network
from worker.loop import RealTimeLoop
from worker.transport import AttachTransport


class _TwoHostNet:
    """Duck-typed stand-in for InProcessNetwork's host table: two hosts on one link, no switch."""

    def __init__(self):
        self.loop = RealTimeLoop()
        self.net = Network(self.loop)
        self.hosts = {
            "a": self.net.add_host("a", "10.0.0.1", "02:00:00:00:00:01"),
            "b": self.net.add_host("b", "10.0.0.2", "02:00:00:00:00:02"),
        }
        self.net.connect("a", 0, "b", 0, LinkParams(bandwidth_bps=1e9, delay_s=1e-3))


def test_frames_cross_the_network_between_attached_processes():
    net = _TwoHostNet()
    server = AttachServer(net)
    thread = threading.Thread(target=net.loop.run_forever, daemon=True)
    thread.start()
    try:
        loop = RealTimeLoop()
        neighbours = {"10.0.0.1": "02:00:00:00:00:01", "10.0.0.2": "02:00:00:00:00:02"}
        ta = AttachTransport(server.endpoints["a"], "10.0.0.1", "02:00:00:00:00:01", neighbours, loop)
        tb = AttachTransport(server.endpoints["b"], "10.0.0.2", "02:00:00:00:00:02", neighbours, loop)
        got = []
        tb.bind(40000, lambda payload, src: got.append((payload, src)))
        loop.run_until(lambda: False, 0.2)  # hellos reach the network first
        for i in range(5):
            ta.sendto(b"hello %d" % i, "10.0.0.2")
        assert loop.run_until(lambda: len(got) == 5, 5.0)
        assert got[0] == (b"hello 0", "10.0.0.1")
        assert net.net.channel("a", "b").stats.packets == 5
        ta.close()
        tb.close()
        loop.close()
    finally:
        net.loop.stop()
        thread.join(5)
        server.close()
