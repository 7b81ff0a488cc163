"""Switch ports on Linux interfaces: one AF_PACKET raw socket per port, one reader thread for all of them.

Each socket is bound to its interface for all protocols (ETH_P_ALL), put in promiscuous mode, and
ignores the frames the host itself transmits on that interface (PACKET_OUTGOING, which includes our
own sends: the kernel drops them with PACKET_IGNORE_OUTGOING where it has that option, else the reader
checks each frame's packet type). A received frame goes to ``handler(port, frame)``; ``send(port,
frame)`` writes one frame. The reader waits in one ``poll`` on every socket and a wake-up pipe (so
``stop()`` ends it promptly) and then takes up to READ_BATCH waiting frames from each ready port in
turn: one thread, so ports do not compete for the interpreter lock, and one wake-up per burst.

Note for veth tests: frames the kernel hands over with checksum offload pending carry partial
checksums; disable offload (``ethtool -K IFACE tx off``) on the hosts' ends when forwarding TCP/UDP.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import struct
import threading
from dataclasses import dataclass

ETH_P_ALL = 0x0003
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_PROMISC = 1
PACKET_OUTGOING = getattr(socket, "PACKET_OUTGOING", 4)
PACKET_IGNORE_OUTGOING = 23  # Linux >= 4.20
PACKET_STATISTICS = 6  # struct tpacket_stats {packets, drops} since the last read (linux/if_packet.h)
MAX_FRAME = 65536  # bytes of the longest frame a port takes (also the native runtime's SS_IO_FRAME: library.py)
READ_BATCH = 64  # frames taken from one port before the next ready port gets its turn
# Bursts of many hosts into one port overflow the kernel's default socket buffer (about 212 KB);
# a switch port should queue a burst rather than drop it, as a hardware switch's buffer would.
PORT_SOCKET_BUFFER = 4 << 20
SO_RCVBUFFORCE = getattr(socket, "SO_RCVBUFFORCE", 33)
SO_SNDBUFFORCE = getattr(socket, "SO_SNDBUFFORCE", 32)

log = logging.getLogger("softswitch.ports")


def parse_port_spec(text: str) -> tuple[int, str]:
    """'PORT@IFACE' (simple_switch's -i syntax) -> (port, iface)."""
    port, sep, iface = text.partition("@")
    if not sep or not iface or not port.isdigit():
        raise ValueError(f"bad interface spec {text!r}: expected PORT@IFACE, e.g. 1@veth0")
    return int(port), iface


@dataclass
class PortStats:
    rx: int = 0
    tx: int = 0
    tx_errors: int = 0
    rx_truncated: int = 0  # frames longer than the receive buffer (MAX_FRAME, a ring slot): dropped, never run cut
    kernel_drops: int = 0  # frames the kernel dropped before the switch read them (full ring or socket buffer)
    rx_outgoing: int = 0  # frames the host itself sent on the interface, seen and skipped (a kernel that
    # cannot leave them out: no PACKET_IGNORE_OUTGOING, or the native block ring before Linux 6.2)


class Port:
    """One switch port on one Linux interface."""

    def __init__(self, number: int, iface: str):
        self.number = number
        self.iface = iface
        self.stats = PortStats()
        try:
            # protocol 0 until bind: a socket opened for ETH_P_ALL queues frames of every interface
            # until it is bound to one, and the reader would take them as this port's
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
        except PermissionError:
            raise PermissionError(
                f"port {number}: opening a raw socket on {iface} needs root (or CAP_NET_RAW)"
            ) from None
        try:
            self.sock.bind((iface, ETH_P_ALL))
            ifindex = socket.if_nametoindex(iface)
            mreq = struct.pack("iHH8s", ifindex, PACKET_MR_PROMISC, 0, b"")
            self.sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            _enlarge_buffers(self.sock)
        except OSError as e:
            self.sock.close()
            raise OSError(f"port {number}: cannot use interface {iface!r}: {e.strerror or e}") from None
        try:
            self.sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            self._kernel_ignores_outgoing = True
        except OSError:
            self._kernel_ignores_outgoing = False

    def send(self, frame: bytes) -> None:
        try:
            self.sock.send(frame)
            self.stats.tx += 1
        except OSError as e:
            self.stats.tx_errors += 1
            log.warning("port %d (%s): send failed: %s", self.number, self.iface, e)

    def receive(self, flags: int = 0) -> bytes | None:
        """One frame from the wire, or None for a frame the host transmitted itself or one longer than
        MAX_FRAME (dropped, counted in rx_truncated). With
        ``socket.MSG_DONTWAIT`` raises BlockingIOError when no frame is waiting."""
        data, _, msg_flags, addr = self.sock.recvmsg(MAX_FRAME, 0, flags)
        if not self._kernel_ignores_outgoing and addr[2] == PACKET_OUTGOING:
            self.stats.rx_outgoing += 1
            return None
        if msg_flags & socket.MSG_TRUNC:  # longer than MAX_FRAME: what was read is not the frame
            self.stats.rx_truncated += 1
            return None
        self.stats.rx += 1
        return data

    def read_stats(self) -> PortStats:
        """The port's counters, with the kernel's drops (PACKET_STATISTICS resets on read: summed here)."""
        try:
            _, drops = struct.unpack("II", self.sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
            self.stats.kernel_drops += drops
        except OSError:
            pass
        return self.stats

    def close(self) -> None:
        self.sock.close()


def _enlarge_buffers(sock: socket.socket) -> None:
    """Ask for PORT_SOCKET_BUFFER each way; the *FORCE options pass the sysctl caps (root only)."""
    for force, plain in ((SO_RCVBUFFORCE, socket.SO_RCVBUF), (SO_SNDBUFFORCE, socket.SO_SNDBUF)):
        try:
            sock.setsockopt(socket.SOL_SOCKET, force, PORT_SOCKET_BUFFER)
        except OSError:
            sock.setsockopt(socket.SOL_SOCKET, plain, PORT_SOCKET_BUFFER)


class PortSet:
    """All ports of one switch, with their reader thread (``threads``: a list, empty until start())."""

    def __init__(self, handler):
        self.handler = handler
        self.ports: dict[int, Port] = {}
        self.threads: list[threading.Thread] = []
        self._wake_r, self._wake_w = os.pipe()
        self._stopping = False
        self.unknown_port_drops = 0

    def add(self, number: int, iface: str) -> Port:
        if number in self.ports:
            raise ValueError(f"port {number} is given twice ({self.ports[number].iface} and {iface})")
        port = Port(number, iface)
        self.ports[number] = port
        return port

    def start(self) -> None:
        if self.threads or not self.ports:
            return
        thread = threading.Thread(
            target=self._reader,
            name="ports-" + ",".join(f"{p.number}@{p.iface}" for p in self.ports.values()),
            daemon=True,
        )
        thread.start()
        self.threads.append(thread)

    def send(self, number: int, frame: bytes) -> bool:
        port = self.ports.get(number)
        if port is None:
            self.unknown_port_drops += 1
            return False
        port.send(frame)
        return True

    def port_stats(self, number: int) -> PortStats:
        port = self.ports.get(number)
        if port is None:
            raise KeyError(f"no port {number}")
        return port.read_stats()

    def _reader(self) -> None:
        poller = select.poll()
        by_fd = {}
        for port in self.ports.values():
            by_fd[port.sock.fileno()] = port
            poller.register(port.sock, select.POLLIN)
        poller.register(self._wake_r, select.POLLIN)
        dontwait = socket.MSG_DONTWAIT
        while not self._stopping:
            events = poller.poll()
            if self._stopping:
                break
            handler = self.handler
            for fd, _ in events:
                port = by_fd.get(fd)
                if port is None:
                    continue
                number = port.number
                for _ in range(READ_BATCH):
                    try:
                        frame = port.receive(dontwait)
                    except BlockingIOError:
                        break
                    except OSError as e:
                        if self._stopping:
                            return
                        log.warning("port %d (%s): receive failed: %s", number, port.iface, e)
                        break
                    if frame is None:
                        continue
                    try:
                        handler(number, frame)
                    except Exception:  # a packet must never kill its port
                        log.exception("port %d: processing a %d-byte frame failed", number, len(frame))

    def stop(self) -> None:
        if self._stopping:
            return
        self._stopping = True
        os.write(self._wake_w, b"x")
        for thread in self.threads:
            thread.join(timeout=2)
        for port in self.ports.values():
            port.close()
        os.close(self._wake_r)
        os.close(self._wake_w)
