"""Transports: the one interface agents use to exchange UDP payloads, on any network.

An agent sees ``bind(port, handler)``, ``sendto(payload, dst_ip, port)`` and ``loop`` (clock and
timers). Underneath:

- :class:`UdpTransport`: kernel UDP sockets (mininet, network namespaces, real hosts). The payload is
  the codec's UDP payload; the kernel adds Ethernet/IPv4/UDP.
- :class:`FrameTransport` subclasses build whole Ethernet frames with the codec and exchange them
  with a network that forwards frames: the in-process network
  (``topologies.inprocess.InProcessTransport``) or, from another OS process, the in-process
  network's attach endpoint (:class:`AttachTransport`).
"""

from __future__ import annotations

import socket
from collections.abc import Callable

from protocol import codec
from protocol.constants import INA_UDP_PORT
from worker.loop import EventLoop, RealTimeLoop

Handler = Callable[[bytes, str], None]  # (UDP payload, source IP)
BROADCAST_MAC = "ff:ff:ff:ff:ff:ff"
SO_NO_CHECK = getattr(socket, "SO_NO_CHECK", 11)  # Linux
SOCKET_BUFFER = 4 << 20  # bytes asked for each way (the kernel caps it at net.core.[rw]mem_max)


class Transport:
    """Send and receive UDP payloads; ``loop`` is the clock and timer source agents use."""

    loop: EventLoop
    ip: str

    def __init__(self):
        self._handlers: dict[int, list[Handler]] = {}
        self.sent_packets = 0
        self.sent_bytes = 0
        self.send_buffer_full = 0  # sends the kernel refused (full socket buffer): lost packets
        self.received_packets = 0
        self.malformed = 0

    def bind(self, port: int, handler: Handler) -> None:
        """Deliver payloads to ``port`` to ``handler`` (several agents of different jobs may share a
        port: each gets every payload and keeps its own job's)."""
        self._handlers.setdefault(port, []).append(handler)

    def unbind(self, port: int, handler: Handler | None = None) -> None:
        handlers = self._handlers.get(port, [])
        if handler is None:
            handlers.clear()
        elif handler in handlers:
            handlers.remove(handler)

    def sendto(self, payload: bytes, dst_ip: str, port: int = INA_UDP_PORT) -> None:
        raise NotImplementedError

    def _deliver(self, port: int, payload: bytes, src_ip: str) -> None:
        handlers = self._handlers.get(port)
        if handlers:
            self.received_packets += 1
            for handler in list(handlers):
                handler(payload, src_ip)

    def close(self) -> None:
        self._handlers.clear()


class FrameTransport(Transport):
    """Builds and parses whole Ethernet/IPv4/UDP frames; subclasses move the frames."""

    def __init__(self, loop: EventLoop, ip: str, mac: str, neighbours: dict[str, str] | None = None):
        super().__init__()
        self.loop = loop
        self.ip = ip
        self.mac = mac
        self.neighbours = dict(neighbours or {})  # ip -> mac of the other hosts (static ARP)

    def sendto(self, payload: bytes, dst_ip: str, port: int = INA_UDP_PORT) -> None:
        frame = codec.build_udp_frame(
            payload, self.mac, self.neighbours.get(dst_ip, BROADCAST_MAC), self.ip, dst_ip, src_port=port, dst_port=port
        )
        self.sent_packets += 1
        self.sent_bytes += len(frame)
        self.send_frame(frame)

    def send_frame(self, frame: bytes) -> None:
        raise NotImplementedError

    def receive_frame(self, frame: bytes) -> None:
        """A frame arrived at this host: hand its UDP payload to the bound handler."""
        try:
            info, payload = codec.split_udp_frame(frame)
        except codec.ProtocolError:
            self.malformed += 1
            return
        if info.dst_ip != self.ip:
            return
        self._deliver(info.dst_port, payload, info.src_ip)


class AttachTransport(FrameTransport):
    """A host living in another OS process, joined to an in-process network over loopback UDP.

    Each datagram to or from the network process's endpoint is one whole Ethernet frame; the network
    injects it at this host's port (``topologies.inprocess.AttachServer``). The first datagram (an
    empty "hello") tells the network where this process listens.
    """

    def __init__(
        self,
        endpoint: tuple[str, int],
        ip: str,
        mac: str,
        neighbours: dict[str, str] | None = None,
        loop: RealTimeLoop | None = None,
    ):
        super().__init__(loop or RealTimeLoop(), ip, mac, neighbours)
        self.endpoint = endpoint
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.loop.add_reader(self.sock, self._readable)
        self.sock.sendto(b"", endpoint)

    def send_frame(self, frame: bytes) -> None:
        self.sock.sendto(frame, self.endpoint)

    def _readable(self) -> None:
        while True:
            try:
                frame, _ = self.sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            if frame:
                self.receive_frame(frame)

    def close(self) -> None:
        super().close()
        self.loop.remove_reader(self.sock)
        self.sock.close()


class UdpTransport(Transport):
    """Kernel UDP sockets, one per bound port, on a wall-clock loop."""

    def __init__(self, ip: str = "0.0.0.0", loop: RealTimeLoop | None = None, bind_ip: str | None = None):
        super().__init__()
        self.loop = loop or RealTimeLoop()
        self.ip = ip
        self._bind_ip = bind_ip if bind_ip is not None else "0.0.0.0"
        self._socks: dict[int, socket.socket] = {}

    def _socket(self, port: int) -> socket.socket:
        sock = self._socks.get(port)
        if sock is None:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, SOCKET_BUFFER)
            # a server answering N workers with unicast results sends N packets per chunk at once; a
            # send that finds the buffer full is a lost packet (the kernel's default is ~208 KiB, and
            # a network namespace cannot raise net.core.wmem_default)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SOCKET_BUFFER)
            try:  # no UDP checksum: switches rewrite payloads (sums, popped hops) and zero it anyway
                sock.setsockopt(socket.SOL_SOCKET, SO_NO_CHECK, 1)
            except OSError:
                pass
            try:
                sock.bind((self._bind_ip, port))
            except OSError as exc:
                sock.close()
                raise OSError(f"cannot bind UDP port {port} on {self._bind_ip}: {exc.strerror}") from None
            sock.setblocking(False)
            self._socks[port] = sock
            self.loop.add_reader(sock, lambda: self._readable(port, sock))
        return sock

    def bind(self, port: int, handler: Handler) -> None:
        super().bind(port, handler)
        self._socket(port)

    def sendto(self, payload: bytes, dst_ip: str, port: int = INA_UDP_PORT) -> None:
        self.sent_packets += 1
        self.sent_bytes += len(payload)
        try:
            self._socket(port).sendto(payload, (dst_ip, port))
        except (BlockingIOError, InterruptedError):
            self.send_buffer_full += 1  # a lost packet: retransmission recovers it

    def _readable(self, port: int, sock: socket.socket) -> None:
        while True:
            try:
                payload, (src_ip, _) = sock.recvfrom(65535)
            except (BlockingIOError, InterruptedError):
                return
            self._deliver(port, payload, src_ip)

    def close(self) -> None:
        super().close()
        for sock in self._socks.values():
            self.loop.remove_reader(sock)
            sock.close()
        self._socks.clear()
