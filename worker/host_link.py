"""Traffic from outside the job on a worker host's own link, from the host's interface counters.

A switch marks a worker's results ECN CE when the queue in front of the worker's link is deep, whether the
queue is a TCP flow to the same host taking its share or a burst of the job's own results after the switch
stalled on a busy machine; in the marks the two look the same (docs/design-decisions.md, "Congestion
control"). The host's interface counts every byte it received; the job's transport counts its own. What the
interface received beyond the job's datagrams is traffic from outside the job on the worker's link, and
while there is some the worker's pacer takes a fair share of the link instead of all of it
(worker/pacing.py). Linux only (``/proc/net/dev`` of the agent's network namespace); elsewhere, or where
the agent's address is on no interface, there is no host link and the pacer keeps to the marks alone.
"""

from __future__ import annotations

import fcntl
import socket
import struct
from collections.abc import Callable

from worker.pacing import FRAME_OVERHEAD_BYTES

PROC_NET_DEV = "/proc/net/dev"
SIOCGIFADDR = 0x8915  # Linux ioctl: an interface's IPv4 address
# the counters are compared over at least this long (a read of PROC_NET_DEV per window): the interface
# counts a datagram when it arrives, the job when its agent reads it, and an agent woken 50 ms late on a
# busy machine leaves 5% of a half-second window unread, not FOREIGN_SHARE
WINDOW_S = 0.5
FOREIGN_SHARE = 0.1  # traffic from outside the job at this share of the worker's rate or more shares the link
HOLD_S = 2.0  # the link counts as shared this long after such traffic was last seen (a TCP flow that just
# halved its window is still there)
# no results for this long: the job stalled, and the window starts again
IDLE_S = 0.2
# a window starts this long into a round, and never spans two: what the host receives between rounds (another
# process group's traffic, a training step's data, a baseline run beside the job) does not share the job's
# link, and rounds shorter than SETTLE_S + WINDOW_S (small all_reduces) never read the counters
SETTLE_S = 0.05


def interface_of(ip: str) -> str | None:
    """The name of the interface holding IPv4 address ``ip`` in this network namespace (None: none does)."""
    if not ip or ip == "0.0.0.0":
        return None
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        for _, name in socket.if_nameindex():
            try:
                answer = fcntl.ioctl(sock.fileno(), SIOCGIFADDR, struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue  # no IPv4 address
            if socket.inet_ntoa(answer[20:24]) == ip:
                return name
    return None


def received_bytes(text: str, interface: str) -> int | None:
    """Bytes ``interface`` received, from ``/proc/net/dev``'s text (None: no such interface).

    Examples
    --------
    >>> text = "Inter-|   Receive\\n face |bytes packets\\n  eth0: 1500 3 0 0 0 0 0 0 900 2 0 0 0 0 0 0\\n"
    >>> received_bytes(text, "eth0"), received_bytes(text, "eth1")
    (1500, None)
    """
    for line in text.splitlines():
        name, sep, counters = line.partition(":")
        if sep and name.strip() == interface:
            return int(counters.split()[0])
    return None


class HostLink:
    """Whether a worker's link carries traffic from outside the job now.

    Parameters
    ----------
    interface : str
        The worker's interface (``interface_of`` its address).
    rate : float
        Bytes per second of frames the plan gives the worker on its link (its trees' send rates together).
    read : callable, optional
        Returns the text of ``/proc/net/dev`` (tests give their own).
    """

    def __init__(self, interface: str, rate: float, read: Callable[[], str] | None = None):
        self.interface = interface
        self.rate = float(rate)
        self._read = read or _read_proc_net_dev
        self._last: tuple[float, int, int, int] | None = None  # (time, interface bytes, job datagrams, job bytes)
        self._called = float("-inf")  # the last update: results were coming then
        self._round = float("-inf")  # the start of the round the window belongs to
        self.shared_until = float("-inf")
        self.foreign_share = 0.0  # of the worker's rate, over the last window

    def update(self, now: float, round_started: float, job_packets: int, job_bytes: int) -> None:
        """Compare the interface's counter with the job's (datagrams and payload bytes received so far)
        once a window has passed; called as results of the round that started at ``round_started`` come in."""
        if now - self._called > IDLE_S or round_started != self._round:
            self._last = None
        self._called, self._round = now, round_started
        if now - round_started < SETTLE_S:
            return
        if self._last is not None and now - self._last[0] < WINDOW_S:
            return
        total = received_bytes(self._read(), self.interface)
        if total is None:
            return
        if self._last is not None:
            then, total_then, packets_then, bytes_then = self._last
            job = job_bytes - bytes_then + (job_packets - packets_then) * FRAME_OVERHEAD_BYTES
            self.foreign_share = max(0, total - total_then - job) / (self.rate * (now - then))
            if self.foreign_share >= FOREIGN_SHARE:
                self.shared_until = now + HOLD_S
        self._last = (now, total, job_packets, job_bytes)

    def shared(self, now: float) -> bool:
        """Traffic from outside the job crossed the worker's link within the last HOLD_S."""
        return now < self.shared_until


def _read_proc_net_dev() -> str:
    with open(PROC_NET_DEV) as f:
        return f.read()
