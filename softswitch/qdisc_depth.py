"""Queue depth of a switch's ports from their real queues: the kernel qdisc in front of each interface.

A softswitch's egress hands frames to the kernel at once; the queue a frame waits in is the qdisc of the
port's interface (in the mininet lab, the tbf shaping the link to the file's bandwidth). BMv2 reports its
own queues' depth as standard_metadata.enq_qdepth / deq_qdepth; softswitch reports this one: a thread
asks the kernel (rtnetlink RTM_GETQDISC, one request per port, all in one send) for every port's root
qdisc every ``interval_s`` and tells the switch its queue length in packets and bytes (``set_queue_depth``),
which egress reads for the packets it sends next (the ECN marks of p4src/ina.p4 and p4src/tna/ina_tna.p4;
v1model counts packets, TNA 80-byte cells). A sample is at most one
interval old: short against the queues it watches (the lab's tbf holds 50 ms).

This poller serves the Python back end. A native switch's I/O thread sends the same requests itself
(softswitch/native/src/ss_qdepth.c) before it runs a batch, when the last reading is an interval old:
a timer thread waking every 2 ms in each of the lab's switch processes cost more CPU than their
forwarding at rest (softswitch/native/README.md, "CPU per packet in the lab").
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
from collections.abc import Callable
from typing import NamedTuple

NETLINK_ROUTE = 0
RTM_NEWQDISC, RTM_GETQDISC = 36, 38
NLM_F_REQUEST, NLM_F_ECHO = 0x1, 0x8  # ECHO: kernels before 6.x answer a get only to the asker that asks for an echo
NLMSG_ERROR = 2
TC_H_ROOT = 0xFFFFFFFF
TCA_STATS = 3  # struct tc_stats: bytes u64, packets, drops, overlimits, bps, pps, qlen, backlog (u32 each)
TC_STATS_QLEN_AT = 28
TC_STATS_BACKLOG_AT = 32
_NLMSGHDR = struct.Struct("=IHHII")
_TCMSG = struct.Struct("=BxxxiIII")
_RTA = struct.Struct("=HH")
DEFAULT_INTERVAL_S = 0.002

log = logging.getLogger("softswitch")


def _align(n: int) -> int:
    return (n + 3) & ~3


def qdisc_requests(ifindexes: list[int]) -> bytes:
    """One RTM_GETQDISC request per interface (its root qdisc), sequence number = position."""
    out = bytearray()
    for seq, ifindex in enumerate(ifindexes):
        body = _TCMSG.pack(socket.AF_UNSPEC, ifindex, 0, TC_H_ROOT, 0)
        out += _NLMSGHDR.pack(_NLMSGHDR.size + len(body), RTM_GETQDISC, NLM_F_REQUEST | NLM_F_ECHO, seq, 0) + body
    return bytes(out)


class QueueDepth(NamedTuple):
    """What a qdisc holds: frames and their bytes (tc_stats qlen and backlog)."""

    packets: int
    bytes: int


def parse_qlens(data: bytes) -> dict[int, QueueDepth]:
    """sequence number -> qlen and backlog of the RTM_NEWQDISC answers in ``data`` (errors are left out)."""
    out: dict[int, QueueDepth] = {}
    at = 0
    while at + _NLMSGHDR.size <= len(data):
        length, kind, _flags, seq, _pid = _NLMSGHDR.unpack_from(data, at)
        if length < _NLMSGHDR.size:
            break
        if kind == RTM_NEWQDISC:
            attr = at + _NLMSGHDR.size + _TCMSG.size
            end = at + length
            while attr + _RTA.size <= end:
                rta_len, rta_type = _RTA.unpack_from(data, attr)
                if rta_len < _RTA.size:
                    break
                if rta_type == TCA_STATS and rta_len >= _RTA.size + TC_STATS_BACKLOG_AT + 4:
                    at_stats = attr + _RTA.size
                    (qlen,) = struct.unpack_from("=I", data, at_stats + TC_STATS_QLEN_AT)
                    (backlog,) = struct.unpack_from("=I", data, at_stats + TC_STATS_BACKLOG_AT)
                    out[seq] = QueueDepth(qlen, backlog)
                attr += _align(rta_len)
        at += _align(length)
    return out


class QdiscDepthPoller:
    """A thread reporting each port's qdisc length and backlog to the switch ``switch()`` returns (None: no pipeline
    yet) every ``interval_s``."""

    def __init__(
        self,
        interfaces: list[tuple[int, str]],
        switch: Callable[[], object | None],
        interval_s: float = DEFAULT_INTERVAL_S,
    ):
        self.ports = [port for port, _ in interfaces]
        self.ifindexes = [socket.if_nametoindex(iface) for _, iface in interfaces]
        self.switch = switch
        self.interval_s = interval_s
        self.samples = 0
        self._stop = threading.Event()
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, NETLINK_ROUTE)
        self._sock.settimeout(0.1)
        self._requests = qdisc_requests(self.ifindexes)
        self._thread = threading.Thread(target=self._run, name="qdisc-depth", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)
        self._sock.close()

    def sample(self) -> dict[int, QueueDepth]:
        """Port -> packets and bytes queued in its root qdisc now."""
        self._sock.send(self._requests)
        got: dict[int, QueueDepth] = {}
        answers = 0
        while answers < len(self.ports):
            data = self._sock.recv(65536)
            if not data:
                break
            got.update(parse_qlens(data))
            answers += self._messages(data)
        return {self.ports[seq]: qlen for seq, qlen in got.items() if seq < len(self.ports)}

    @staticmethod
    def _messages(data: bytes) -> int:
        count, at = 0, 0
        while at + _NLMSGHDR.size <= len(data):
            length = _NLMSGHDR.unpack_from(data, at)[0]
            if length < _NLMSGHDR.size:
                break
            count += 1
            at += _align(length)
        return count

    def _run(self) -> None:
        last: dict[int, QueueDepth] = {}
        while not self._stop.wait(self.interval_s):
            switch = self.switch()
            if switch is None:
                continue
            try:
                depths = self.sample()
            except OSError as exc:  # an interface gone (the lab stopping): stop asking
                log.warning("queue depth of the ports no longer readable (%s): ECN marks stop", exc)
                return
            self.samples += 1
            for port, depth in depths.items():
                if last.get(port) != depth:
                    last[port] = depth
                    switch.set_queue_depth(port, depth.packets, depth.bytes)  # type: ignore[attr-defined]
