"""Transports: the one interface agents use to exchange UDP payloads, on any network.

An agent sees ``bind(port, handler)``, ``sendto(payload, dst_ip, port)`` and ``loop`` (clock and
timers), and for its hot path the batch forms: ``bind_batch(port, handler)`` delivers a
:class:`ReceivedBatch` (many datagrams in one numpy buffer) and ``send_rows(rows, dst_ip, port)``
sends every row of an ``(n, size)`` byte array as one datagram. Every transport offers both forms: a
transport that moves one datagram at a time delivers batches of one and sends rows one by one.
Underneath:

- :class:`UdpTransport`: kernel UDP sockets (mininet, network namespaces, real hosts). The payload is
  the codec's UDP payload; the kernel adds Ethernet/IPv4/UDP. Batches go through
  ``native/udp.py`` (sendmmsg or UDP segmentation offload out, recvmmsg and UDP_GRO in).
- :class:`FrameTransport` subclasses build whole Ethernet frames with the codec and exchange them
  with a network that forwards frames: the in-process network
  (``topologies.inprocess.InProcessTransport``) or, from another OS process, the in-process
  network's attach endpoint (:class:`AttachTransport`).
"""

from __future__ import annotations

import errno
import socket
import sys
from collections.abc import Callable

import numpy as np

from native import heap, udp
from protocol import codec
from protocol.constants import ECN_MASK, ECN_NOT_ECT, INA_UDP_PORT
from worker.loop import EventLoop, RealTimeLoop
from worker.timeline import Timeline

BROADCAST_MAC = "ff:ff:ff:ff:ff:ff"
SO_NO_CHECK = getattr(socket, "SO_NO_CHECK", 11)  # Linux
IP_RECVTOS = getattr(socket, "IP_RECVTOS", 13)  # Linux
SOCKET_BUFFER = 4 << 20  # bytes asked for each way (the kernel caps it at net.core.[rw]mem_max)
# errors of a send that say the call itself is wrong (raised), and those that say the kernel cannot
# segment datagrams for this socket or route (the transport then sends them one by one)
SEND_BUGS = {errno.EBADF, errno.EFAULT, errno.ENOTSOCK, errno.EDESTADDRREQ, errno.EMSGSIZE}
SEGMENTATION_REFUSED = {errno.EINVAL, errno.EIO, errno.ENOPROTOOPT, errno.EOPNOTSUPP}
RECEIVE_ROW_BYTES = 4352  # larger than any INA payload (dense K = 1024: 16 + 8 * 8 + 4 * 1024 = 4176)
RECEIVE_ROWS = 256  # datagrams taken from a socket per system call
# Receive coalescing: a port that took at least STREAM_PACKETS datagrams within STREAM_SPAN_S streams;
# after each batch it is left unread (until a wait gathers nothing) for as long as BATCH_ROWS datagrams
# take to arrive at its rate (or the number its handler expects: ``expect_batches``), at most
# BATCH_WAIT_S, so that the next call takes them at once. An agent's work per batch (wake-up, system
# call, decode, window update, encode, send) costs about the same for 1 datagram as for 50: without
# the wait, a 100 Mbit/s stream of 1 KB results wakes a worker every 90 us for one or two datagrams,
# and batches of 110-130 instead of 60-70 cut the hosts' CPU per value by a fifth (docs/design-decisions.md,
# "Receive batches of half the chunks in flight").
# A short exchange (fewer datagrams) is never held. The waits lengthen the round trip of a windowed
# stream, so a batch must stay below what the window lets out meanwhile: a worker asks for half of its
# chunks in flight, or of its window's room while a paced round's sends left take HOLD_LEAD_S
# (worker/stream.py, Round.receive_batch), up to MAX_BATCH_ROWS; the server for an eighth of its jobs'
# smallest pool; others get BATCH_ROWS.
# A handler that expects batches of fewer than MIN_HOLD_ROWS is never held: a worker with a few chunks
# in flight (a small model's all_reduce every few ms, which counts as a stream; the tail of a round)
# would only wait longer for its last results. Nor is a port whose datagrams come in bursts too far
# apart to fill a batch within SLOW_STREAM_WAITS waits (the server's port under such a job).
BATCH_WAIT_S = 0.016
BATCH_ROWS = 16
MAX_BATCH_ROWS = 160
MIN_HOLD_ROWS = 8
SLOW_STREAM_WAITS = 2  # a stream that needs longer than this many BATCH_WAIT_S to fill a batch is not held
# A hold lasts at most this share of the time the port has streamed so far: a burst of a few ms (an
# all_reduce of some 10k values, whose sums reach the server in 3-4 ms) was held for a whole batch wait
# after it ended (5-8 ms, more than the burst itself: bench/allreduce_latency.py), while a long stream
# reaches the full wait within its first 32 ms.
MAX_HOLD_SHARE = 0.25
MIN_WAIT_S = 0.0002  # a shorter wait saves less than it costs (two epoll_ctl calls and a timer)
STREAM_PACKETS = 32
STREAM_SPAN_S = 0.02


class ReceivedBatch:
    """Datagrams received together: ``rows[i, :lengths[i]]`` is payload i (``(n, stride)`` uint8; a
    length above stride marks one that did not fit a row), ``source_ips[i]`` its source as
    ``native.udp.ip_number``, ``ecn[i]`` the ECN codepoint its IPv4 header arrived with (``protocol.constants``
    ECN_*; None: the transport cannot tell). The rows may be reused once the handler returns: copy what you
    keep."""

    __slots__ = ("rows", "lengths", "source_ips", "ecn")

    def __init__(self, rows: np.ndarray, lengths: np.ndarray, source_ips: np.ndarray, ecn: np.ndarray | None = None):
        self.rows = rows
        self.lengths = lengths
        self.source_ips = source_ips
        self.ecn = ecn

    @classmethod
    def single(cls, payload: bytes, src_ip: str, ecn: int | None = None) -> ReceivedBatch:
        """A batch of one datagram (what one-at-a-time transports deliver)."""
        return cls(
            np.frombuffer(payload, dtype=np.uint8).reshape(1, len(payload)),
            np.array([len(payload)], dtype=np.uint32),
            np.array([udp.ip_number(src_ip)], dtype=np.uint32),
            None if ecn is None else np.array([ecn], dtype=np.uint8),
        )

    def __len__(self) -> int:
        return len(self.lengths)

    def payload(self, i: int) -> bytes:
        """Datagram ``i``'s bytes."""
        return self.rows[i, : min(int(self.lengths[i]), self.rows.shape[1])].tobytes()

    def source_ip(self, i: int) -> str:
        """Datagram ``i``'s sender, dotted."""
        return udp.ip_text(int(self.source_ips[i]))


Handler = Callable[[bytes, str], None]  # (UDP payload, source IP)
BatchHandler = Callable[[ReceivedBatch], None]


class Transport:
    """Send and receive UDP payloads; ``loop`` is the clock and timer source agents use."""

    loop: EventLoop
    ip: str

    def __init__(self) -> None:
        self._handlers: dict[int, list[Handler]] = {}
        self._batch_handlers: dict[int, list[BatchHandler]] = {}
        self.sent_packets = 0
        self.sent_bytes = 0
        self.send_buffer_full = 0  # sends the kernel refused (full socket buffer): lost packets
        self.send_errors = 0  # sends the kernel refused for another reason (no route...): lost packets
        self.last_send_error: str | None = None
        self.received_packets = 0
        self.received_batches = 0  # handler calls: one per datagram, or per batch of them (the wake-ups' work)
        self.received_bytes = 0  # payload bytes of the datagrams received (worker/host_link.py)
        self.malformed = 0
        self.timeline: Timeline | None = None  # stamps of sends and receives (worker/timeline.py), when attached
        self._ecn = ECN_NOT_ECT

    @property
    def ecn(self) -> int:
        """The ECN codepoint of the datagrams this transport sends (agents send ECT(0): switches may mark
        them CE instead of dropping them when a queue grows, docs/protocol.md, "Congestion marks")."""
        return self._ecn

    @ecn.setter
    def ecn(self, codepoint: int) -> None:
        self._ecn = int(codepoint) & ECN_MASK
        self._apply_ecn()

    def _apply_ecn(self) -> None:
        """The sending codepoint changed (transports whose kernel sockets hold it set it there)."""

    def bind(self, port: int, handler: Handler) -> None:
        """Deliver payloads to ``port`` to ``handler`` (several agents of different jobs may share a
        port: each gets every payload and keeps its own job's)."""
        self._handlers.setdefault(port, []).append(handler)

    def bind_batch(self, port: int, handler: BatchHandler) -> None:
        """Deliver what arrives at ``port`` to ``handler`` as :class:`ReceivedBatch` objects."""
        self._batch_handlers.setdefault(port, []).append(handler)

    def expect_batches(self, port: int, rows: int) -> None:
        """A hint for transports that coalesce received datagrams (UdpTransport): the handler of ``port``
        can take batches of ``rows`` without slowing its stream. Others ignore it."""

    def unbind(self, port: int, handler: Handler | BatchHandler | None = None) -> None:
        """Stop delivering ``port`` to ``handler`` (every handler of the port when None)."""
        for table in (self._handlers, self._batch_handlers):
            handlers = table.get(port, [])
            if handler is None:
                handlers.clear()
            elif handler in handlers:
                handlers.remove(handler)  # type: ignore[arg-type]  # in the list, so of its type

    def sendto(self, payload: bytes, dst_ip: str, port: int = INA_UDP_PORT) -> None:
        """Send one UDP payload to ``dst_ip:port``."""
        raise NotImplementedError

    def send_rows(self, rows: np.ndarray, dst_ip: str, port: int = INA_UDP_PORT, ecn: np.ndarray | None = None) -> int:
        """Send each row of ``rows`` (``(n, size)`` uint8) as one datagram to ``dst_ip``; returns how
        many left (the rest found the socket buffer full: lost, as a lost packet is). ``ecn``: each row's
        ECN codepoint, when they differ from ``self.ecn`` (the server echoing a congestion mark); rows of
        one codepoint leave together."""
        if ecn is None or not np.any(ecn != self._ecn):
            return self._send_rows(rows, dst_ip, port)
        base, sent = self._ecn, 0
        try:
            for codepoint in np.unique(ecn).tolist():
                self.ecn = codepoint
                sent += self._send_rows(rows[ecn == codepoint], dst_ip, port)
        finally:
            self.ecn = base
        return sent

    def _send_rows(self, rows: np.ndarray, dst_ip: str, port: int) -> int:
        """``send_rows`` at the transport's codepoint."""
        for row in rows:
            self.sendto(row.tobytes(), dst_ip, port)
        self._stamp_send()
        return len(rows)

    def _stamp_send(self) -> None:
        """A batch of the active collective went to the kernel or the network (``timeline``, if attached)."""
        if self.timeline is not None:
            self.timeline.first("first_send")
            self.timeline.last("last_send")

    def _stamp_receive(self) -> None:
        """Datagrams of the active collective were taken and go to the handlers (``timeline``, if attached)."""
        if self.timeline is not None:
            self.timeline.first("first_receive")
            self.timeline.last("last_receive")

    def _deliver(self, port: int, payload: bytes, src_ip: str, ecn: int | None = None) -> None:
        handlers = self._handlers.get(port)
        batch_handlers = self._batch_handlers.get(port)
        if handlers or batch_handlers:
            self._stamp_receive()
            self.received_packets += 1
            self.received_batches += 1
            self.received_bytes += len(payload)
            for handler in list(handlers or ()):
                handler(payload, src_ip)
            if batch_handlers:
                batch = ReceivedBatch.single(payload, src_ip, ecn)
                for batch_handler in list(batch_handlers):
                    batch_handler(batch)

    def _deliver_batch(self, port: int, batch: ReceivedBatch) -> None:
        handlers = self._handlers.get(port)
        batch_handlers = self._batch_handlers.get(port)
        if handlers or batch_handlers:
            self._stamp_receive()
            self.received_packets += len(batch)
            self.received_batches += 1
            self.received_bytes += int(batch.lengths.sum())
            for batch_handler in list(batch_handlers or ()):
                batch_handler(batch)
            for handler in list(handlers or ()):
                for i in range(len(batch)):
                    handler(batch.payload(i), batch.source_ip(i))

    def interface(self) -> str | None:
        """The host interface holding the transport's address, whose counters see all the host's traffic
        (worker/host_link.py); None: no such interface (a modelled network)."""
        return None

    def close(self) -> None:
        """Release the transport's sockets (nothing for frame transports)."""
        self._handlers.clear()
        self._batch_handlers.clear()


class FrameTransport(Transport):
    """Builds and parses whole Ethernet/IPv4/UDP frames; subclasses move the frames."""

    def __init__(self, loop: EventLoop, ip: str, mac: str, neighbours: dict[str, str] | None = None):
        super().__init__()
        self.loop = loop
        self.ip = ip
        self.mac = mac
        self.neighbours = dict(neighbours or {})  # ip -> mac of the other hosts (static ARP)

    def sendto(self, payload: bytes, dst_ip: str, port: int = INA_UDP_PORT) -> None:
        """Wrap ``payload`` in an Ethernet/IPv4/UDP frame to the neighbour ``dst_ip`` and send it."""
        frame = codec.build_udp_frame(
            payload,
            self.mac,
            self.neighbours.get(dst_ip, BROADCAST_MAC),
            self.ip,
            dst_ip,
            src_port=port,
            dst_port=port,
            tos=self._ecn,
        )
        self.sent_packets += 1
        self.sent_bytes += len(frame)
        self.send_frame(frame)

    def send_frame(self, frame: bytes) -> None:
        """Move one whole Ethernet frame (the subclass's medium)."""
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
        self._deliver(info.dst_port, payload, info.src_ip, info.tos & ECN_MASK)


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
        self.loop: RealTimeLoop = loop or RealTimeLoop()  # readers need the wall-clock loop
        super().__init__(self.loop, ip, mac, neighbours)
        self.endpoint = endpoint
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setblocking(False)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        self.loop.add_reader(self.sock, self._readable)
        self.sock.sendto(b"", endpoint)

    def send_frame(self, frame: bytes) -> None:
        """Send the frame to the in-process network's endpoint as one datagram."""
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
        """Stop reading the endpoint's socket and close it."""
        super().close()
        self.loop.remove_reader(self.sock)
        self.sock.close()


class UdpTransport(Transport):
    """Kernel UDP sockets, one per bound port, on a wall-clock loop, moving datagrams in batches.

    ``segmentation`` (default: whenever the native helper is built) sends a batch of equal rows to one
    destination as UDP_SEGMENT sends: the kernel builds the datagrams, crossing the stack once per up to
    64 of them. It needs UDP checksums on (the kernel refuses GSO without them), so such sockets compute
    them; without it, sockets send with no checksum (switches rewrite payloads and zero it anyway).
    A host whose interface faces a software switch must have UDP segmentation offload off (``ethtool -K
    IFACE tx off``, as the lab and the namespace tests do), so that the kernel cuts the datagrams before
    the wire and the switch reads ordinary frames. ``send_wait_ms``: how long a send waits for room in a
    full socket buffer before the rest of the batch counts as lost (``send_buffer_full``).
    ``batch_wait``: the longest a streaming port is left unread after each batch (receive coalescing,
    see BATCH_WAIT_S; 0: read every datagram as soon as it arrives).
    """

    def __init__(
        self,
        ip: str = "0.0.0.0",
        loop: RealTimeLoop | None = None,
        bind_ip: str | None = None,
        *,
        native: bool | None = None,
        segmentation: bool | None = None,
        send_wait_ms: int = 5,
        batch_wait: float = BATCH_WAIT_S,
    ):
        super().__init__()
        heap.keep_freed_memory()  # per-batch temporaries reuse the heap instead of fresh zeroed pages
        self.loop: RealTimeLoop = loop or RealTimeLoop()
        self.batch_wait = float(batch_wait)
        self.held_batches = 0  # times a streaming port was left unread for batch_wait
        self._stream: dict[int, tuple[float, int]] = {}  # port -> (start of its span, datagrams since)
        self._rate: dict[int, tuple[float, float]] = {}  # port -> (its last read, datagrams/s it streams at)
        self._batch_rows: dict[int, int] = {}  # port -> datagrams a batch wait aims at (expect_batches)
        self.ip = ip
        self._bind_ip = bind_ip if bind_ip is not None else "0.0.0.0"
        self._native = native
        native_ready = native is not False and udp.native_library() is not None
        self.segmentation = native_ready if segmentation is None else bool(segmentation and native_ready)
        self.send_wait_ms = send_wait_ms
        self._socks: dict[int, socket.socket] = {}
        self._io: dict[int, udp.BatchSocket] = {}

    def _apply_ecn(self) -> None:
        for sock in self._socks.values():
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, self._ecn)

    def interface(self) -> str | None:
        from worker.host_link import interface_of

        return interface_of(self.ip)

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
            sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, self._ecn)  # the ECN codepoint it sends
            sock.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)  # and each datagram's, received (ReceivedBatch.ecn)
            if not self.segmentation:
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
            self._io[port] = udp.open_batch_socket(
                sock, RECEIVE_ROW_BYTES, RECEIVE_ROWS, native=self._native, gro=self.segmentation
            )
            self.loop.add_reader(sock, lambda: self._readable(port))
        return sock

    def bind(self, port: int, handler: Handler) -> None:
        """Open (once) a socket on ``port`` and deliver its datagrams one by one to ``handler``."""
        super().bind(port, handler)
        self._socket(port)

    def bind_batch(self, port: int, handler: BatchHandler) -> None:
        """Open (once) a socket on ``port`` and deliver its datagrams in batches to ``handler``."""
        super().bind_batch(port, handler)
        self._socket(port)

    def sendto(self, payload: bytes, dst_ip: str, port: int = INA_UDP_PORT) -> None:
        """Send one datagram (counted as lost when the kernel refuses it)."""
        self.sent_packets += 1
        self.sent_bytes += len(payload)
        try:
            self._socket(port).sendto(payload, (dst_ip, port))
        except (BlockingIOError, InterruptedError):
            self.send_buffer_full += 1  # a lost packet: retransmission recovers it

    def _send_rows(self, rows: np.ndarray, dst_ip: str, port: int) -> int:
        """Send ``rows`` (one datagram each) to ``dst_ip:port`` in batches; return how many the kernel took."""
        n = len(rows)
        if n == 0:
            return 0
        self._socket(port)
        io = self._io[port]
        ip = udp.ip_number(dst_ip)
        sent, error = 0, 0
        if self.segmentation:
            sent, error = io.send_segments(rows, ip, port, self.send_wait_ms)
            if sent == 0 and error in SEGMENTATION_REFUSED:
                self.segmentation = False  # this kernel or route cannot segment: send them one by one
                print(
                    f"ina: UDP segmentation refused ({errno.errorcode.get(error, error)}); sending datagrams "
                    f"one by one with sendmmsg",
                    file=sys.stderr,
                    flush=True,
                )
        if not self.segmentation:
            sent, error = io.send(rows, rows.shape[1], ip, port, self.send_wait_ms)
        self._stamp_send()
        self.sent_packets += sent
        self.sent_bytes += sent * rows.shape[1]
        if sent < n:
            if error in SEND_BUGS:
                raise OSError(error, f"sending {n} datagrams to {dst_ip}:{port}: {errno.errorcode.get(error, error)}")
            # lost packets (a full buffer, no route...): retransmission recovers them or times out
            if error in (errno.EAGAIN, errno.EWOULDBLOCK, errno.ENOBUFS, errno.EINTR):
                self.send_buffer_full += n - sent
            else:
                self.send_errors += n - sent
                self.last_send_error = f"{errno.errorcode.get(error, error)} sending to {dst_ip}"
        return sent

    def _readable(self, port: int, resumed: bool = False) -> None:
        io = self._io[port]
        taken = 0
        while True:
            count = io.receive()
            if count:
                taken += count
                ecn = (io.tos[:count] & ECN_MASK) if io.has_tos else None
                self._deliver_batch(
                    port, ReceivedBatch(io.rows[:count], io.lengths[:count], io.source_ips[:count], ecn)
                )
            if count < io.capacity - udp.GRO_SEGMENTS_MAX:
                break  # drained (a full batch may have more behind it)
        if self.batch_wait > 0 and self._streaming(port, taken, resumed):
            sock = self._socks.get(port)
            wait = self._wait(port, taken)
            if sock is not None and wait >= MIN_WAIT_S:  # (a handler may have closed the transport)
                self.held_batches += 1
                self.loop.remove_reader(sock)
                self.loop.call_later(wait, self._resume, port, sock)

    def _wait(self, port: int, taken: int) -> float:
        """How long to leave a streaming port unread: the time a batch (``expect_batches``, else
        BATCH_ROWS datagrams) takes to arrive at the port's recent rate, at most ``batch_wait`` and at most
        MAX_HOLD_SHARE of the time the port has streamed; 0 (not held) while the rate is unknown, or when a
        batch would take more than SLOW_STREAM_WAITS waits to gather (bursts far apart, as a small
        model's all_reduce every few ms: the hold would only delay them)."""
        now = self.loop.now()
        last, rate = self._rate.get(port, (now, 0.0))
        if now > last:
            sample = taken / (now - last)
            rate = sample if rate <= 0 else 0.5 * (rate + sample)
        self._rate[port] = (now, rate)
        rows = self._batch_rows.get(port, BATCH_ROWS)
        if rate <= 0 or rows / rate > SLOW_STREAM_WAITS * self.batch_wait:
            return 0.0
        age = now - self._stream.get(port, (now, 0))[0]
        return min(self.batch_wait, rows / rate, MAX_HOLD_SHARE * age)

    def expect_batches(self, port: int, rows: int) -> None:
        """The handler of ``port`` can take batches of ``rows`` datagrams without slowing its stream
        (a worker: ``Round.receive_batch``): a streaming port waits for that many, and is not
        held at all while ``rows`` is below MIN_HOLD_ROWS."""
        self._batch_rows[port] = max(1, min(MAX_BATCH_ROWS, rows))

    def _streaming(self, port: int, taken: int, resumed: bool) -> bool:
        """Whether ``port`` streams (hold it): it took STREAM_PACKETS datagrams within STREAM_SPAN_S, and
        it stays streaming until a batch wait gathers nothing. A port whose handler expects batches below
        MIN_HOLD_ROWS never streams, and its detection starts afresh once it expects more (a worker at the
        tail of a round): the next exchange is not held from its first datagram on, nor aged from the last."""
        if self._batch_rows.get(port, BATCH_ROWS) < MIN_HOLD_ROWS:
            self._stream.pop(port, None)
            return False
        now = self.loop.now()
        start, count = self._stream.get(port, (now, 0))
        if count < 0:  # streaming: held after every batch until a wait gathered nothing
            if taken:
                return True
            if resumed:
                self._stream[port] = (now, 0)
            return False
        if count == 0 or now - start > STREAM_SPAN_S:  # a span starts at its first datagram
            start, count = now, 0
        count += taken
        self._stream[port] = (start, -1 if count >= STREAM_PACKETS else count)
        return count >= STREAM_PACKETS

    def _resume(self, port: int, sock: socket.socket) -> None:
        """The batch wait of a held port is over: watch its socket again and take what gathered."""
        if self._socks.get(port) is not sock:
            return  # closed meanwhile
        self.loop.add_reader(sock, lambda: self._readable(port))
        self._readable(port, resumed=True)

    def close(self) -> None:
        """Close every socket."""
        super().close()
        for sock in self._socks.values():
            self.loop.remove_reader(sock)
            sock.close()
        self._socks.clear()
        self._io.clear()
