"""The bench's drop accounting (topologies/lab_drops.py) reads the kernel's real counters: a flood into a
tiny tbf on a veth in a namespace of its own is reported as that qdisc's drops (and as sends refused to the sender), and datagrams left
unread in a small socket buffer as that namespace's UDP RcvbufErrors (not the root namespace's)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from topologies.lab_drops import drop_total, drops_between, drops_line, qdisc_stats, udp_errors

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("tc") is None or shutil.which("nsenter") is None,
    reason="needs root, tc and nsenter to shape a veth in a namespace",
)
TAG = os.getpid() % 100000

FLOOD = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(400):
    try:
        s.sendto(b"x" * 1200, ("10.9.0.2", 9))
    except OSError:
        pass
r = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # the kernel doubles it: a few datagrams fit
r.bind(("127.0.0.1", 40999))
for _ in range(200):
    s.sendto(b"y" * 1000, ("127.0.0.1", 40999))  # never read: the rest is dropped at the socket
"""


def sh(*cmd: str) -> subprocess.CompletedProcess:
    return subprocess.run(list(cmd), check=True, capture_output=True, text=True)


def wait_until_inside(pid: int, timeout_s: float = 10.0) -> None:
    """`ip netns exec` enters the namespace after Popen returns: until it has, its pid still names the root
    namespace, and a snapshot taken through it would read the wrong counters."""
    ours = os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + timeout_s
    while os.readlink(f"/proc/{pid}/ns/net") == ours:
        if time.monotonic() > deadline:
            raise TimeoutError(f"process {pid} did not enter its namespace within {timeout_s} s")
        time.sleep(0.01)


@pytest.fixture
def shaped_namespace():
    """A namespace with a veth to the root namespace whose inner end has a 1 Mbit/s tbf with a 3,000-byte
    queue, and a process living in it (its pid names the namespace, as a mininet host's shell does)."""
    ns, outer, inner = f"drops{TAG}", f"drops{TAG}o", f"drops{TAG}i"
    sh("ip", "netns", "add", ns)
    keeper = None
    try:
        sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns)
        sh("ip", "link", "set", outer, "up")
        inside = ("ip", "netns", "exec", ns)
        sh(*inside, "ip", "link", "set", "lo", "up")
        sh(*inside, "ip", "addr", "add", "10.9.0.1/24", "dev", inner)
        sh(*inside, "ip", "link", "set", inner, "up")
        sh(*inside, "ip", "neigh", "add", "10.9.0.2", "lladdr", "02:00:00:00:09:02", "dev", inner, "nud", "permanent")
        sh(
            *inside,
            "tc",
            "qdisc",
            "add",
            "dev",
            inner,
            "root",
            "tbf",
            "rate",
            "1mbit",
            "burst",
            "3000",
            "limit",
            "3000",
        )
        keeper = subprocess.Popen([*inside, "sleep", "60"])
        wait_until_inside(keeper.pid)
        yield ns, inner, keeper.pid
    finally:
        if keeper is not None:
            keeper.kill()
            keeper.wait()
        subprocess.run(["ip", "link", "del", outer], capture_output=True)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def snapshot(pid: int, inner: str) -> dict:
    with open(f"/proc/{pid}/net/snmp") as f:
        udp = udp_errors(f.read())
    return {"qdisc": {inner: qdisc_stats(pid)[inner]}, "veth": {}, "ring": {}, "softnet": {}, "udp": {"h": udp}}


def test_a_flood_into_a_small_tbf_and_an_unread_socket_are_counted_where_they_happened(shaped_namespace):
    ns, inner, pid = shaped_namespace
    with open("/proc/self/net/snmp") as f:
        root_before = udp_errors(f.read())["RcvbufErrors"]
    before = snapshot(pid, inner)
    assert before["qdisc"][inner]["kind"] == "tbf"
    sh("ip", "netns", "exec", ns, sys.executable, "-c", FLOOD)
    delta = drops_between(before, snapshot(pid, inner))

    # 400 x 1,242-byte frames into a 3,000-byte queue drained at 1 Mbit/s: all but a handful dropped
    dropped = delta["qdisc"][inner]["drops"]
    assert 300 < dropped < 400, delta
    rcvbuf = delta["udp"]["h"]["RcvbufErrors"]
    assert 150 < rcvbuf < 200, delta
    # the sender was told of every drop at its qdisc (ENOBUFS: SndbufErrors), InErrors counts RcvbufErrors
    assert delta["udp"]["h"] == {"RcvbufErrors": rcvbuf, "InErrors": rcvbuf, "SndbufErrors": dropped}
    assert (
        drops_line(delta) == f"drops: tbf {inner} {dropped}, udp h RcvbufErrors {rcvbuf}, udp h sends refused {dropped}"
    )
    assert drop_total(delta) == dropped + rcvbuf
    with open("/proc/self/net/snmp") as f:
        # the namespace's counter, not the root namespace's (which other processes may move, but not by these)
        assert udp_errors(f.read())["RcvbufErrors"] - root_before < rcvbuf


def test_nothing_lost_reads_none():
    empty = {"qdisc": {}, "veth": {}, "ring": {}, "softnet": {}, "udp": {}}
    assert drops_line(drops_between(empty, empty)) == "drops: none"
