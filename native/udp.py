"""Batched UDP send and receive for the agents: many datagrams per system call.

Python's socket module sends and receives one datagram per call (3-5 us each, plus a bytes object per
packet). :class:`BatchSocket` moves whole batches between a numpy buffer (one row per datagram) and a
non-blocking UDP socket:

    io = open_batch_socket(sock, row_bytes=2048, rows=256)
    sent, error = io.send(rows, lengths_or_length, dst_ips, dst_port)   # rows: (n, stride) uint8
    count = io.receive()              # io.rows[:count], io.lengths[:count], io.source_ips[:count]

Underneath, ``native/udp_batch.c`` (sendmmsg, UDP_SEGMENT, recvmmsg; built by ``native.build``) when a C
compiler is present, else plain ``socket.sendto``/``recvfrom_into`` loops with the same interface (the
switch to them is announced once on stderr). Addresses are IPv4 as ``uint32`` in network byte order
(:func:`ip_number`), so a batch never builds per-packet strings.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import socket
import sys
from pathlib import Path

import numpy as np

from native import build

__all__ = [
    "BatchSocket",
    "NativeBatchSocket",
    "PythonBatchSocket",
    "ip_number",
    "ip_text",
    "native_library",
    "open_batch_socket",
]

SOURCE = Path(__file__).with_name("udp_batch.c")
GRO_SEGMENTS_MAX = 64  # as in udp_batch.c: rows a UDP_GRO socket needs free for one coalesced datagram
SOL_UDP = 17
UDP_SEGMENT = 103
UDP_GRO = 104
_u8p = ctypes.c_void_p


@functools.cache
def ip_number(ip: str) -> int:
    """An IPv4 address as the uint32 whose bytes in memory are the address in network order."""
    return int(np.frombuffer(socket.inet_aton(ip), dtype=np.uint32)[0])


@functools.cache
def ip_text(number: int) -> str:
    return socket.inet_ntoa(np.uint32(number).tobytes())


def port_number(port: int) -> int:
    """A UDP port as the uint16 whose bytes in memory are the port in network order."""
    return socket.htons(port)


_library: ctypes.CDLL | None = None
_library_error: str | None = None


def native_library() -> ctypes.CDLL | None:
    """The compiled helper, or None (the reason is announced once on stderr) when it cannot be built."""
    global _library, _library_error
    if _library is not None or _library_error is not None:
        return _library
    try:
        lib = build.load_library("udp_batch", [SOURCE])
    except build.NativeBuildError as exc:
        _library_error = str(exc).splitlines()[0]
        print(
            f"ina: batched UDP falls back to Python socket calls (slower): {_library_error}",
            file=sys.stderr,
            flush=True,
        )
        return None
    i32p = ctypes.POINTER(ctypes.c_int)
    lib.ina_udp_send.argtypes = [
        ctypes.c_int,
        _u8p,
        ctypes.c_size_t,
        _u8p,
        ctypes.c_uint32,
        ctypes.c_int,
        _u8p,
        _u8p,
        ctypes.c_uint32,
        ctypes.c_uint16,
        ctypes.c_int,
        i32p,
    ]
    lib.ina_udp_send.restype = ctypes.c_int
    lib.ina_udp_send_segments.argtypes = [
        ctypes.c_int,
        _u8p,
        ctypes.c_uint32,
        ctypes.c_int,
        ctypes.c_uint32,
        ctypes.c_uint16,
        ctypes.c_int,
        i32p,
    ]
    lib.ina_udp_send_segments.restype = ctypes.c_int
    lib.ina_udp_recv.argtypes = [ctypes.c_int, _u8p, ctypes.c_size_t, ctypes.c_int, _u8p, _u8p, _u8p, _u8p, _u8p, i32p]
    lib.ina_udp_recv.restype = ctypes.c_int
    lib.ina_udp_gro_scratch_bytes.restype = ctypes.c_int
    _library = lib
    return lib


class BatchSocket:
    """Batched I/O on one non-blocking UDP socket; receive rows are reused by the next ``receive``."""

    native = False

    def __init__(self, sock: socket.socket, row_bytes: int = 2048, rows: int = 256):
        self.sock = sock
        self.row_bytes = row_bytes
        self.capacity = rows
        self.rows = np.zeros((rows, row_bytes), dtype=np.uint8)
        self.lengths = np.zeros(rows, dtype=np.uint32)
        self.source_ips = np.zeros(rows, dtype=np.uint32)
        self.source_ports = np.zeros(rows, dtype=np.uint16)
        self.tos = np.zeros(rows, dtype=np.uint8)  # each datagram's IPv4 TOS byte, where ``has_tos``
        self.has_tos = False

    def send(
        self,
        rows: np.ndarray,
        lengths: int | np.ndarray,
        ips: int | np.ndarray,
        port: int,
        wait_ms: int = 0,
    ) -> tuple[int, int]:
        """Send each row of ``rows`` ((n, stride) uint8, C-contiguous) as one datagram of ``lengths``
        bytes (one length or one per row) to ``ips`` (one :func:`ip_number` or one per row) at UDP
        ``port``. A full socket buffer is waited on for up to ``wait_ms``. Returns (datagrams sent,
        errno that stopped the rest or 0)."""
        raise NotImplementedError

    def send_segments(self, rows: np.ndarray, ip: int, port: int, wait_ms: int = 0) -> tuple[int, int]:
        """Like ``send`` for rows that are whole datagrams of one size to one destination; the native
        helper hands them to the kernel as UDP_SEGMENT (GSO) sends, needing UDP checksums on."""
        return self.send(rows, rows.shape[1], ip, port, wait_ms)

    def receive(self) -> int:
        """Datagrams waiting now, up to the capacity, into ``rows[:count]`` (``lengths`` > row_bytes
        marks one that was longer than a row)."""
        raise NotImplementedError


class NativeBatchSocket(BatchSocket):
    """sendmmsg / UDP_SEGMENT / recvmmsg through native/udp_batch.c."""

    native = True

    def __init__(
        self, sock: socket.socket, lib: ctypes.CDLL, row_bytes: int = 2048, rows: int = 256, gro: bool = False
    ) -> None:
        if gro and rows < GRO_SEGMENTS_MAX:
            raise ValueError(f"a UDP_GRO socket needs at least {GRO_SEGMENTS_MAX} receive rows, not {rows}")
        super().__init__(sock, row_bytes, rows)
        self._lib = lib
        self._fd = sock.fileno()
        self._error = ctypes.c_int(0)
        self._error_ref = ctypes.byref(self._error)
        self._scratch = np.zeros(lib.ina_udp_gro_scratch_bytes(), dtype=np.uint8) if gro else None
        self.has_tos = True  # the kernel's IP_TOS message (a socket with IP_RECVTOS), else 0
        self._receive_args = (
            self._fd,
            self.rows.ctypes.data,
            row_bytes,
            rows,
            self.lengths.ctypes.data,
            self.source_ips.ctypes.data,
            self.source_ports.ctypes.data,
            self.tos.ctypes.data,
            None if self._scratch is None else self._scratch.ctypes.data,
            self._error_ref,
        )

    def send(
        self, rows: np.ndarray, lengths: int | np.ndarray, ips: int | np.ndarray, port: int, wait_ms: int = 0
    ) -> tuple[int, int]:
        n = len(rows)
        if n == 0:
            return 0, 0
        if not rows.flags.c_contiguous:
            rows = np.ascontiguousarray(rows)
        stride = rows.strides[0] if rows.ndim == 2 else rows.itemsize
        if isinstance(lengths, np.ndarray):
            lengths = np.ascontiguousarray(lengths, dtype=np.uint32)
            lens_ptr, length = lengths.ctypes.data, 0
        else:
            lens_ptr, length = None, int(lengths)
        if isinstance(ips, np.ndarray):
            ips = np.ascontiguousarray(ips, dtype=np.uint32)
            ports = np.full(n, port_number(port), dtype=np.uint16)
            ips_ptr, ports_ptr, ip = ips.ctypes.data, ports.ctypes.data, 0
        else:
            ips_ptr, ports_ptr, ip = None, None, int(ips)
        sent = self._lib.ina_udp_send(
            self._fd,
            rows.ctypes.data,
            stride,
            lens_ptr,
            length,
            n,
            ips_ptr,
            ports_ptr,
            ip,
            port_number(port),
            wait_ms,
            self._error_ref,
        )
        return sent, self._error.value

    def send_segments(self, rows: np.ndarray, ip: int, port: int, wait_ms: int = 0) -> tuple[int, int]:
        n = len(rows)
        if n == 0:
            return 0, 0
        rows = np.ascontiguousarray(rows)
        sent = self._lib.ina_udp_send_segments(
            self._fd, rows.ctypes.data, rows.shape[1], n, int(ip), port_number(port), wait_ms, self._error_ref
        )
        return sent, self._error.value

    def receive(self) -> int:
        count: int = self._lib.ina_udp_recv(*self._receive_args)
        if count == 0 and self._error.value not in (0, errno.EAGAIN, errno.EWOULDBLOCK):
            raise OSError(self._error.value, f"recvmmsg: {errno.errorcode.get(self._error.value, '?')}")
        return count


class PythonBatchSocket(BatchSocket):
    """The same interface with one socket call per datagram (no C compiler)."""

    def send(
        self, rows: np.ndarray, lengths: int | np.ndarray, ips: int | np.ndarray, port: int, wait_ms: int = 0
    ) -> tuple[int, int]:
        n = len(rows)
        rows = np.ascontiguousarray(rows)
        stride = rows.shape[1] if rows.ndim == 2 else rows.itemsize
        view = rows.reshape(-1).view(np.uint8).data  # a flat memoryview of the rows
        sizes = [int(x) for x in lengths] if isinstance(lengths, np.ndarray) else [lengths] * n
        hosts = [ip_text(int(x)) for x in ips] if isinstance(ips, np.ndarray) else [ip_text(int(ips))] * n
        sendto = self.sock.sendto
        for i in range(n):
            size, address = sizes[i], (hosts[i], port)
            try:
                sendto(view[i * stride : i * stride + size], address)
            except (BlockingIOError, InterruptedError):
                return i, errno.EAGAIN
            except OSError as exc:
                return i, exc.errno or errno.EIO
        return n, 0

    def receive(self) -> int:
        recvfrom_into = self.sock.recvfrom_into
        rows = self.rows.reshape(-1).data
        stride = self.row_bytes
        count = 0
        while count < self.capacity:
            try:
                size, (ip, port) = recvfrom_into(rows[count * stride :], stride, socket.MSG_TRUNC)
            except (BlockingIOError, InterruptedError):
                break
            self.lengths[count] = size if size <= self.row_bytes else self.row_bytes + 1
            self.source_ips[count] = ip_number(ip)
            self.source_ports[count] = port_number(port)
            count += 1
        return count


def open_batch_socket(
    sock: socket.socket, row_bytes: int = 2048, rows: int = 256, *, native: bool | None = None, gro: bool = False
) -> BatchSocket:
    """Batched I/O on ``sock`` (non-blocking UDP): native when the helper builds (or ``native=True``
    demands it), else the Python fallback. ``gro`` (native only) asks the kernel to coalesce
    received datagrams (UDP_GRO) and splits them back into rows."""
    lib = native_library() if native is not False else None
    if lib is None:
        if native:
            raise build.NativeBuildError(f"the native UDP helper is not available: {_library_error}")
        return PythonBatchSocket(sock, row_bytes, rows)
    if gro:
        sock.setsockopt(SOL_UDP, UDP_GRO, 1)
    return NativeBatchSocket(sock, lib, row_bytes, rows, gro=gro)
