"""A worker's view of its own link from the host's interface counters (worker/host_link.py): traffic
beyond the job's datagrams shares the link. Counters come from a text in /proc/net/dev's format."""

import socket

from worker import host_link as H
from worker.pacing import FRAME_OVERHEAD_BYTES

RATE = 12.5e6 * 0.97  # bytes per second of frames the plan gives the worker


def _proc_net_dev(received: int) -> str:
    return (
        "Inter-|   Receive                                                |  Transmit\n"
        " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop\n"
        f"    lo:   4200      42    0    0    0     0          0         0     4200      42    0    0\n"
        f"h1-eth0: {received} 900    0    0    0     0          0         0   123456      99    0    0\n"
    )


class Counters:
    def __init__(self):
        self.received = 0

    def read(self) -> str:
        return _proc_net_dev(self.received)


def test_received_bytes_reads_the_named_interface():
    assert H.received_bytes(_proc_net_dev(987654), "h1-eth0") == 987654
    assert H.received_bytes(_proc_net_dev(987654), "lo") == 4200
    assert H.received_bytes(_proc_net_dev(987654), "h2-eth0") is None


def _results(link, start, end, packets):
    """Results coming in from ``start`` to ``end`` (an update every 0.1 s: no idle gap), ``packets`` in all."""
    t = start
    while t < end:
        link.update(t, job_packets=packets, job_bytes=packets * (1100 - FRAME_OVERHEAD_BYTES))
        t += 0.1
    link.update(end, job_packets=packets, job_bytes=packets * (1100 - FRAME_OVERHEAD_BYTES))


def test_the_jobs_own_traffic_does_not_share_the_link():
    counters = Counters()
    link = H.HostLink("h1-eth0", RATE, read=counters.read)
    link.update(0.0, job_packets=0, job_bytes=0)
    packets = int(RATE * H.WINDOW_S) // 1100  # the job's results fill the link: 1,058-byte datagrams
    counters.received = packets * 1100
    _results(link, 0.1, H.WINDOW_S / 2, packets)
    assert link.foreign_share == 0.0  # not compared before a window has passed
    _results(link, H.WINDOW_S / 2, H.WINDOW_S, packets)
    assert link.foreign_share == 0.0 and not link.shared(H.WINDOW_S)
    # between rounds (no results for longer than IDLE_S) the host receives other traffic: not counted
    counters.received += int(RATE * 2)
    _results(link, 3.0, 3.0 + 2 * H.WINDOW_S, packets)
    assert link.foreign_share == 0.0 and not link.shared(3.0 + 2 * H.WINDOW_S)


def test_traffic_beyond_the_jobs_shares_the_link_for_a_while():
    counters = Counters()
    link = H.HostLink("h1-eth0", RATE, read=counters.read)
    link.update(0.0, job_packets=0, job_bytes=0)
    packets = int(RATE * H.WINDOW_S / 2) // 1100  # the job at half the link, a TCP flow at 30% of it
    counters.received = packets * 1100 + int(0.3 * RATE * H.WINDOW_S)
    _results(link, 0.1, H.WINDOW_S, packets)
    assert abs(link.foreign_share - 0.3) < 1e-3
    assert link.shared(H.WINDOW_S) and link.shared(H.WINDOW_S + H.HOLD_S - 0.01)
    assert not link.shared(H.WINDOW_S + H.HOLD_S)  # nothing more seen: the job may take the link back
    counters.received += int(0.05 * RATE * H.WINDOW_S)  # a trickle below FOREIGN_SHARE does not share it
    _results(link, H.WINDOW_S + 0.1, 2 * H.WINDOW_S, packets)
    assert abs(link.foreign_share - 0.05) < 1e-3 and link.shared_until == H.WINDOW_S + H.HOLD_S


def test_an_interface_is_found_by_its_address():
    assert H.interface_of("127.0.0.1") == "lo"
    assert H.interface_of("0.0.0.0") is None
    assert H.interface_of(socket.inet_ntoa(bytes([192, 0, 2, 77]))) is None  # TEST-NET-1: on no interface
