"""Batched UDP I/O (native/udp.py): every datagram arrives whole, with its length and source, through the
native helper (sendmmsg, UDP segmentation, recvmmsg, UDP_GRO) and through the Python fallback."""

import socket
import struct
import time

import numpy as np
import pytest

from native import build, udp

MODES = ["native", "python"]


def _socket(checksum: bool = True) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    if not checksum:
        sock.setsockopt(socket.SOL_SOCKET, 11, 1)  # SO_NO_CHECK
    sock.bind(("127.0.0.1", 0))
    sock.setblocking(False)
    return sock


def _open(sock, mode, **kwargs):
    if mode == "native" and udp.native_library() is None:
        pytest.skip("no C compiler: the native helper cannot be built")
    return udp.open_batch_socket(sock, native=mode == "native", **kwargs)


def _receive_all(io, expected: int, seconds: float = 5.0):
    payloads, sources = [], []
    deadline = time.monotonic() + seconds
    while len(payloads) < expected and time.monotonic() < deadline:
        count = io.receive()
        for i in range(count):
            size = int(io.lengths[i])
            payloads.append(io.rows[i, : min(size, io.row_bytes)].tobytes() if size <= io.row_bytes else size)
            sources.append((udp.ip_text(int(io.source_ips[i])), socket.ntohs(int(io.source_ports[i]))))
        if not count:
            time.sleep(0.001)
    return payloads, sources


def _rows(n: int, size: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(n, size), dtype=np.uint8)


@pytest.mark.parametrize("mode", MODES)
def test_rows_of_their_own_lengths_arrive_whole_with_their_source(mode):
    sender, receiver = _socket(), _socket()
    try:
        out, into = _open(sender, mode), _open(receiver, mode, row_bytes=512, rows=64)
        rows = _rows(300, 400)
        lengths = np.random.default_rng(1).integers(1, 401, size=300).astype(np.uint32)
        port = receiver.getsockname()[1]
        assert out.send(rows, lengths, udp.ip_number("127.0.0.1"), port) == (300, 0)
        payloads, sources = _receive_all(into, 300)
        assert payloads == [rows[i, : lengths[i]].tobytes() for i in range(300)]
        assert set(sources) == {sender.getsockname()}
    finally:
        sender.close()
        receiver.close()


@pytest.mark.parametrize("mode", MODES)
def test_each_row_to_its_own_destination(mode):
    sender, first = _socket(), _socket()
    port = first.getsockname()[1]
    second = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        second.bind(("127.0.0.2", port))  # the same port on another loopback address
        second.setblocking(False)
        out = _open(sender, mode)
        rows = _rows(10, 32, seed=2)
        ips = np.array([udp.ip_number("127.0.0.2" if i % 2 else "127.0.0.1") for i in range(10)], dtype=np.uint32)
        assert out.send(rows, 32, ips, port) == (10, 0)
        for sock, odd in ((first, 0), (second, 1)):
            got, _ = _receive_all(_open(sock, mode), 5)
            assert got == [rows[i].tobytes() for i in range(10) if i % 2 == odd]
    finally:
        for sock in (sender, first, second):
            sock.close()


@pytest.mark.parametrize("mode", MODES)
def test_a_datagram_longer_than_a_row_is_marked_not_cut_silently(mode):
    sender, receiver = _socket(), _socket()
    try:
        out, into = _open(sender, mode), _open(receiver, mode, row_bytes=64, rows=8)
        rows = _rows(2, 100, seed=3)
        out.send(rows, np.array([64, 100], dtype=np.uint32), udp.ip_number("127.0.0.1"), receiver.getsockname()[1])
        payloads, _ = _receive_all(into, 2)
        assert payloads == [rows[0, :64].tobytes(), 65]  # length row_bytes + 1: too long for a row
    finally:
        sender.close()
        receiver.close()


@pytest.mark.parametrize("gro", [False, True])
def test_segmented_sends_arrive_as_separate_datagrams(gro):
    if udp.native_library() is None:
        pytest.skip("no C compiler: the native helper cannot be built")
    sender, receiver = _socket(checksum=True), _socket()
    try:
        out = udp.open_batch_socket(sender, native=True)
        into = udp.open_batch_socket(receiver, native=True, row_bytes=512, rows=256, gro=gro)
        rows = _rows(500, 280, seed=4)  # several segmentation sends of up to 64 rows
        sent, error = out.send_segments(rows, udp.ip_number("127.0.0.1"), receiver.getsockname()[1])
        assert (sent, error) == (500, 0)
        payloads, _ = _receive_all(into, 500)
        assert payloads == [row.tobytes() for row in rows]
    finally:
        sender.close()
        receiver.close()


def _send_one_gso(sock: socket.socket, rows: np.ndarray, address) -> None:
    """One UDP_SEGMENT send of every row (as many segments as the kernel allows in one send)."""
    segment = struct.pack("H", rows.shape[1])
    try:
        sock.sendmsg([rows.tobytes()], [(udp.SOL_UDP, udp.UDP_SEGMENT, segment)], 0, address)
    except OSError as exc:  # kernels before 6.x allow 64 segments per send
        pytest.skip(f"this kernel refuses a UDP_SEGMENT send of {len(rows)} segments: {exc}")


@pytest.mark.parametrize("receive_rows", [64, 100, 256])
def test_coalesced_segments_beyond_the_rows_left_wait_for_the_next_receive(receive_rows):
    """A GSO send of 128 segments reaches a UDP_GRO socket as one datagram: the segments the rows cannot
    hold come with the next receive, in order, before anything that arrived later."""
    if udp.native_library() is None:
        pytest.skip("no C compiler: the native helper cannot be built")
    sender, receiver = _socket(checksum=True), _socket()
    try:
        into = udp.open_batch_socket(receiver, native=True, row_bytes=512, rows=receive_rows, gro=True)
        address = receiver.getsockname()
        first, second, third = _rows(128, 100, seed=6), _rows(128, 100, seed=7), _rows(5, 100, seed=8)
        _send_one_gso(sender, first, address)
        _send_one_gso(sender, second, address)
        _send_one_gso(sender, third, address)
        payloads, sources = _receive_all(into, 261)
        assert payloads == [row.tobytes() for row in (*first, *second, *third)]
        assert set(sources) == {sender.getsockname()}
        time.sleep(0.05)
        assert into.receive() == 0  # nothing twice
    finally:
        sender.close()
        receiver.close()


def test_a_receive_socket_with_gro_needs_room_for_a_whole_coalesced_datagram():
    if udp.native_library() is None:
        pytest.skip("no C compiler: the native helper cannot be built")
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with pytest.raises(ValueError, match="at least 64 receive rows"):
            udp.open_batch_socket(sock, native=True, rows=16, gro=True)


def test_without_a_compiler_the_python_fallback_is_used_and_announced_once(monkeypatch, capsys):
    def no_compiler(*args, **kwargs):
        raise build.CompilerMissing("no C compiler found (tried $CC, cc, gcc)")

    monkeypatch.setattr(build, "load_library", no_compiler)
    monkeypatch.setattr(udp, "_library", None)
    monkeypatch.setattr(udp, "_library_error", None)
    sender, receiver = _socket(), _socket()
    try:
        out, into = udp.open_batch_socket(sender), udp.open_batch_socket(receiver)
        assert isinstance(out, udp.PythonBatchSocket) and isinstance(into, udp.PythonBatchSocket)
        err = capsys.readouterr().err
        assert err.count("\n") == 1
        assert "batched UDP falls back to Python socket calls (slower): no C compiler found" in err
        rows = _rows(3, 16, seed=5)
        assert out.send_segments(rows, udp.ip_number("127.0.0.1"), receiver.getsockname()[1]) == (3, 0)
        assert _receive_all(into, 3)[0] == [row.tobytes() for row in rows]
        with pytest.raises(build.NativeBuildError, match="not available"):
            udp.open_batch_socket(sender, native=True)
    finally:
        sender.close()
        receiver.close()


@pytest.mark.parametrize("gro", [False, True])
def test_each_datagram_keeps_the_ecn_codepoint_it_arrived_with(gro):
    """With IP_RECVTOS on the socket, every row gets its datagram's TOS byte (RFC 3168's ECN field in its
    low bits), coalesced segments included: the agents read congestion marks from it."""
    if udp.native_library() is None:
        pytest.skip("no C compiler: the native helper cannot be built")
    sender, receiver = _socket(checksum=True), _socket()
    try:
        receiver.setsockopt(socket.IPPROTO_IP, socket.IP_RECVTOS, 1)
        out = udp.open_batch_socket(sender, native=True)
        into = udp.open_batch_socket(receiver, native=True, row_bytes=512, rows=256, gro=gro)
        port = receiver.getsockname()[1]
        codepoints = [0b10, 0b11, 0b10, 0b01]  # ECT(0), CE, ECT(0), ECT(1)
        for code in codepoints:
            sender.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, code)
            assert out.send_segments(_rows(10, 200, seed=code), udp.ip_number("127.0.0.1"), port) == (10, 0)
        seen: list[int] = []
        deadline = time.monotonic() + 5.0
        while len(seen) < 40 and time.monotonic() < deadline:
            count = into.receive()
            seen += into.tos[:count].tolist()
        assert into.has_tos
        assert seen == [code for code in codepoints for _ in range(10)]
    finally:
        sender.close()
        receiver.close()
