"""A softswitch process forwards real frames between two network namespaces over veth ports.

Topology (all addresses live inside the test's own namespaces):
    ns h1: h1-eth0 10.0.1.1/24 --veth-- sw port 1 (root ns)   softswitch process (l2l3.p4)
    ns h2: h2-eth0 10.0.2.1/24 --veth-- sw port 2 (root ns)
Hosts route via a gateway address whose MAC is a static neighbour entry; the program routes by LPM,
rewrites MACs and decrements the TTL. Routes are installed over P4Runtime; then UDP datagrams must cross both
ways, `softswitch dump` must show the counted packets, the --stats-file written on SIGUSR1 the ports'
frames, and SIGTERM must stop the process with status 0.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from p4.v1 import p4runtime_pb2
from p4runtime_sh.p4runtime import P4RuntimeClient

from softswitch.dump import DumpClient

PROGRAM = Path(__file__).parent / "stf" / "l2l3.p4"
pytestmark = pytest.mark.skipif(
    os.geteuid() != 0
    or shutil.which("ip") is None
    or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0,
    reason="needs root and 'ip netns' (iproute2) to build namespaces and veth pairs",
)

TAG = os.getpid() % 100000
HOSTS = {  # name: (namespace, switch-side iface, port, host ip, host mac, gateway ip, gateway mac)
    "h1": (f"ssw{TAG}h1", f"ssw{TAG}p1", 1, "10.0.1.1", "02:00:00:00:01:01", "10.0.1.254", "02:00:00:00:01:fe"),
    "h2": (f"ssw{TAG}h2", f"ssw{TAG}p2", 2, "10.0.2.1", "02:00:00:00:02:01", "10.0.2.254", "02:00:00:00:02:fe"),
}


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), check=check, capture_output=True, text=True)


@pytest.fixture
def namespaces():
    created_ns, created_links = [], []
    try:
        for ns, sw_if, _, ip, mac, gw, gw_mac in HOSTS.values():
            sh("ip", "netns", "add", ns)
            created_ns.append(ns)
            sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", "eth0", "netns", ns)
            created_links.append(sw_if)
            sh("sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1", check=False)
            sh("ip", "link", "set", sw_if, "up")
            inside = ("ip", "netns", "exec", ns)
            sh(*inside, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", check=False)
            sh(*inside, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1", check=False)
            sh(*inside, "sysctl", "-qw", "net.ipv6.conf.eth0.disable_ipv6=1", check=False)
            sh(*inside, "ip", "link", "set", "lo", "up")
            sh(*inside, "ip", "link", "set", "eth0", "address", mac)
            sh(*inside, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
            sh(*inside, "ip", "link", "set", "eth0", "up")
            sh(*inside, "ip", "route", "add", "default", "via", gw, "dev", "eth0")
            sh(*inside, "ip", "neigh", "add", gw, "lladdr", gw_mac, "dev", "eth0", "nud", "permanent")
        yield HOSTS
    finally:
        for link in created_links:
            sh("ip", "link", "del", link, check=False)
        for ns in created_ns:
            sh("ip", "netns", "del", ns, check=False)


@pytest.fixture
def switch_process(namespaces, tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "softswitch",
        "--device-id",
        "5",
        "--grpc-server-addr",
        "127.0.0.1:0",
        "--cpu-port",
        "64",
        "--thrift-port",
        "9090",
        "--stats-file",
        str(tmp_path / "ports.json"),
    ]
    for _, sw_if, port, *_ in namespaces.values():
        cmd += ["-i", f"{port}@{sw_if}"]
    proc = subprocess.Popen(cmd + [str(PROGRAM)], stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in proc.stderr:
            lines.append(line)
            match = re.search(r"P4Runtime on (\S+),", line)
            if match:
                proc.address = match.group(1)
                break
        else:
            pytest.fail("softswitch did not start: " + "".join(lines))
        proc.startup = "".join(lines)
        proc.stats_file = tmp_path / "ports.json"
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def install_routes(address):
    index = DumpClient(address, 5).index
    table = index.named("tables", "MyIngress.ipv4_lpm")
    action = index.named("actions", "MyIngress.forward")
    client = P4RuntimeClient(5, address, (0, 1))
    try:
        for _, _, port, ip, mac, _, _ in HOSTS.values():
            update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
            entry = update.entity.table_entry
            entry.table_id = table.preamble.id
            fm = entry.match.add(field_id=table.match_fields[0].id)
            fm.lpm.value = bytes(int(x) for x in ip.split("."))
            fm.lpm.prefix_len = 32
            entry.action.action.action_id = action.preamble.id
            entry.action.action.params.add(param_id=1, value=bytes.fromhex(mac.replace(":", "")))
            entry.action.action.params.add(param_id=2, value=bytes([port]))
            client.write_update(update)
    finally:
        client.tear_down()


ECHO = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 11, 1)     # SO_NO_CHECK: UDP checksum 0, no offload left pending
s.bind(("10.0.2.1", 40001))
s.settimeout(10)
print("ready", flush=True)
for _ in range(3):
    data, peer = s.recvfrom(2048)
    s.sendto(data.upper(), peer)
"""
CLIENT = """
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, 11, 1)
s.bind(("10.0.1.1", 40002))
s.settimeout(3)
for i in range(3):
    s.sendto(b"hello-%d" % i, ("10.0.2.1", 40001))
    data, peer = s.recvfrom(2048)
    print(data.decode(), peer[0], peer[1])
"""


def test_udp_through_softswitch_process(switch_process):
    assert "--thrift-port 9090 ignored" in switch_process.startup
    install_routes(switch_process.address)
    h1_ns, h2_ns = HOSTS["h1"][0], HOSTS["h2"][0]
    echo = subprocess.Popen(
        ["ip", "netns", "exec", h2_ns, sys.executable, "-c", ECHO],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert echo.stdout.readline() == "ready\n", echo.stderr.read()
        client = sh("ip", "netns", "exec", h1_ns, sys.executable, "-c", CLIENT, check=False)
        assert client.returncode == 0, client.stderr
        assert client.stdout.splitlines() == [f"HELLO-{i} 10.0.2.1 40001" for i in range(3)]
        assert echo.wait(timeout=10) == 0
    finally:
        if echo.poll() is None:
            echo.kill()
            echo.wait()

    dump = sh(
        sys.executable, "-m", "softswitch", "dump", "--grpc-addr", switch_process.address, "--device-id", "5", "all"
    )
    text = dump.stdout
    # each direction: 3 frames of 14 + 20 + 8 + 7 = 49 bytes
    assert (
        "  hdr.ipv4.dst_addr=0xa000201/32 -> MyIngress.forward(dst_mac=0x20000000201, port=0x2) "
        "[packets=3 bytes=147]" in text
    ), text
    assert (
        "  hdr.ipv4.dst_addr=0xa000101/32 -> MyIngress.forward(dst_mac=0x20000000101, port=0x1) "
        "[packets=3 bytes=147]" in text
    ), text
    assert "  default -> MyIngress.drop()" in text
    assert "  [1] packets=3 bytes=147" in text and "  [2] packets=3 bytes=147" in text, text
    assert "  [1] = 0xa000101" in text and "  [2] = 0xa000201" in text, text

    # the ports' counters, asked with SIGUSR1: each port took 3 frames from its host and sent it 3
    switch_process.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 10
    while not switch_process.stats_file.exists():
        assert time.monotonic() < deadline, "no --stats-file written after SIGUSR1"
        time.sleep(0.05)
    stats = json.loads(switch_process.stats_file.read_text())
    assert stats["seq"] == 1
    for _, sw_if, port, *_ in HOSTS.values():
        assert stats["ports"][str(port)] == {
            "iface": sw_if,
            "rx": 3,
            "tx": 3,
            "tx_errors": 0,
            "kernel_drops": 0,
            "rx_truncated": 0,
            "rx_outgoing": 0,
        }

    switch_process.send_signal(signal.SIGTERM)
    assert switch_process.wait(timeout=10) == 0
    if "on the native back end" in switch_process.startup:  # each port says how it received, at exit
        log = switch_process.stderr.read()
        path = RECEIVE_PATH_LOGGED[os.environ.get("SOFTSWITCH_IO") or "ring"]
        for _, sw_if, port, *_ in HOSTS.values():  # 3 datagrams each way, nothing else sent to the switch
            assert (
                f"port {port} ({sw_if}): receive {path}, rx 3, tx 3, tx errors 0, kernel drops 0, "
                "own sends skipped 0" in log
            ), log


RECEIVE_PATH_LOGGED = {  # SOFTSWITCH_IO -> how the switch names it at exit (ss_io.c; ring: the default)
    "ring": "frame slots",
    "hybrid": "hybrid (0 moves between slots and blocks, 0 block rings opened)",
    "block": "blocks",
    "recvmmsg": "recvmmsg",
}
