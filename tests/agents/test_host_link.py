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


def _results(link, start, end, packets, round_started=0.0):
    """Results of the round that started at ``round_started`` coming in from ``start`` to ``end`` (an
    update every 0.1 s: no idle gap), ``packets`` in all."""
    t = start
    while t < end:
        link.update(t, round_started, job_packets=packets, job_bytes=packets * (1100 - FRAME_OVERHEAD_BYTES))
        t += 0.1
    link.update(end, round_started, job_packets=packets, job_bytes=packets * (1100 - FRAME_OVERHEAD_BYTES))


def _a_round(link, counters, start, packets, foreign_share=0.0):
    """A round from ``start`` (results from SETTLE_S on, through one window) in which the job receives
    ``packets`` datagrams and the host ``foreign_share`` of the rate more; returns its end."""
    first = start + H.SETTLE_S
    _results(link, first, first, 0, start)  # the window opens: the counters read at first
    counters.received += packets * 1100 + int(foreign_share * RATE * H.WINDOW_S)
    end = first + H.WINDOW_S
    _results(link, first + 0.1, end, packets, start)
    return end


def test_the_jobs_own_traffic_does_not_share_the_link():
    counters = Counters()
    link = H.HostLink("h1-eth0", RATE, read=counters.read)
    packets = int(RATE * H.WINDOW_S) // 1100  # the job's results fill the link: 1,058-byte datagrams
    _results(link, H.SETTLE_S, H.SETTLE_S, 0)
    counters.received = packets * 1100
    _results(link, H.SETTLE_S + 0.1, H.WINDOW_S / 2, packets)
    assert link.foreign_share == 0.0  # not compared before a window has passed
    _results(link, H.WINDOW_S / 2, H.SETTLE_S + H.WINDOW_S, packets)
    assert link.foreign_share == 0.0 and not link.shared(H.SETTLE_S + H.WINDOW_S)


def test_traffic_between_rounds_does_not_share_the_link():
    """Rounds back to back, a few ms apart, with another process group's traffic (gloo, 3x the job's)
    between them: counted in no window, since a window never spans two rounds."""
    counters = Counters()
    link = H.HostLink("h1-eth0", RATE, read=counters.read)
    packets = int(RATE * H.WINDOW_S) // 1100 // 2
    start = 0.0
    for _ in range(4):
        end = _a_round(link, counters, start, packets)
        counters.received += 3 * packets * 1100  # the other traffic, 5 ms after the round
        start = end + 0.005
    assert link.foreign_share == 0.0 and not link.shared(start)


def test_a_round_shorter_than_a_window_never_reads_the_counters():
    reads = []
    link = H.HostLink("h1-eth0", RATE, read=lambda: reads.append(1) or _proc_net_dev(0))
    for start in (0.0, 0.01, 0.02):  # small all_reduces: their results within SETTLE_S of their start
        _results(link, start + 0.001, start + 0.004, 10, start)
    assert reads == []


def test_traffic_beyond_the_jobs_shares_the_link_for_a_while():
    counters = Counters()
    link = H.HostLink("h1-eth0", RATE, read=counters.read)
    packets = int(RATE * H.WINDOW_S / 2) // 1100  # the job at half the link, a TCP flow at 30% of it
    end = _a_round(link, counters, 0.0, packets, foreign_share=0.3)
    assert abs(link.foreign_share - 0.3) < 1e-3
    assert link.shared(end) and link.shared(end + H.HOLD_S - 0.01)
    assert not link.shared(end + H.HOLD_S)  # nothing more seen: the job may take the link back
    counters.received += int(0.05 * RATE * H.WINDOW_S) + packets * 1100  # a trickle below FOREIGN_SHARE
    _results(link, end + 0.1, end + H.WINDOW_S, 2 * packets)  # the same round goes on
    assert abs(link.foreign_share - 0.05) < 1e-2 and link.shared_until == end + H.HOLD_S


def test_an_interface_is_found_by_its_address():
    assert H.interface_of("127.0.0.1") == "lo"
    assert H.interface_of("0.0.0.0") is None
    assert H.interface_of(socket.inet_ntoa(bytes([192, 0, 2, 77]))) is None  # TEST-NET-1: on no interface
