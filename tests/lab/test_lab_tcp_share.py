"""A TCP flow and an INA allreduce sharing one 100 Mbit/s worker link in the mininet lab: each gets at least
40% of it while the job runs (issue 27), whether the flow's congestion control slows on ECN marks (cubic:
it halves its window on a marked round trip) or ignores them (BBR, the default of some machines). The
worker sees the flow in its host's interface counters (bytes received beyond the job's) and paces at a fair
share of the link while the flow lasts; the switch marks both with ECN CE from its egress queue (softswitch
reads the port's tbf), TCP negotiates ECN in the hosts (docs/design-decisions.md, "Congestion control").

star_100m plus a host h6 outside the job: h6 sends TCP to worker h1, so the flow and the job's RESULTs to h1
share s1's port towards h1, and nothing else of the flow touches the job's links. Both shares are measured
over the job's own collective (its ranks' wall-clock start to their end), not the harness's making of
inputs and checking of sums, during which the flow has the link alone."""

import sys
import textwrap
import time

import pytest
from conftest import needs_mininet

pytestmark = needs_mininet

LINK_BYTES_PER_S = 100e6 / 8
VALUES = 16 * 1024 * 1024  # 64 MB of int32 per worker
RESULT_HEADER_BYTES = 14 + 20 + 8 + 16  # a multicast RESULT on the wire: Ethernet, IPv4, UDP, INA, no hops
TOPOLOGY = """\
name: star_100m_tcp
hosts:
  - {name: h1, ip: 10.0.0.1, mac: '02:00:00:00:00:01', role: worker}
  - {name: h2, ip: 10.0.0.2, mac: '02:00:00:00:00:02', role: worker}
  - {name: h3, ip: 10.0.0.3, mac: '02:00:00:00:00:03', role: worker}
  - {name: h4, ip: 10.0.0.4, mac: '02:00:00:00:00:04', role: worker}
  - {name: h5, ip: 10.0.0.5, mac: '02:00:00:00:00:05', role: server}
  - {name: h6, ip: 10.0.0.6, mac: '02:00:00:00:00:06'}
switches:
  - {name: s1, device_id: 1, grpc: '127.0.0.1:50001'}
links:
  - {ends: [h1, 's1:1'], bandwidth: 100.0, delay: 0.1}
  - {ends: [h2, 's1:2'], bandwidth: 100.0, delay: 0.1}
  - {ends: [h3, 's1:3'], bandwidth: 100.0, delay: 0.1}
  - {ends: [h4, 's1:4'], bandwidth: 100.0, delay: 0.1}
  - {ends: [h5, 's1:5'], bandwidth: 100.0, delay: 0.1}
  - {ends: [h6, 's1:6'], bandwidth: 100.0, delay: 0.1}
"""
RECEIVER = textwrap.dedent(
    """
    import socket, sys, time
    server = socket.socket(); server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", 5201)); server.listen(1)
    conn, _ = server.accept()
    total, last, out = 0, 0.0, open(sys.argv[1], "w")
    while True:
        data = conn.recv(1 << 20)
        if not data:
            break
        total += len(data)
        now = time.time()
        if now - last >= 0.05:
            out.write(f"{now} {total}\\n"); out.flush(); last = now
    """
)
SENDER = textwrap.dedent(
    """
    import socket, sys, time
    sock = socket.socket()
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, sys.argv[3].encode())
    sock.connect((sys.argv[1], 5201))
    block, end = b"x" * (1 << 16), time.time() + float(sys.argv[2])
    while time.time() < end:
        sock.sendall(block)
    """
)


def _received(path: str, start: float, end: float) -> float:
    """Bytes the TCP receiver counted between ``start`` and ``end`` (wall clock), from its samples."""
    samples = [tuple(map(float, line.split())) for line in open(path) if line.strip()]
    inside = [(t, b) for t, b in samples if start <= t <= end]
    assert len(inside) >= 2, f"the TCP flow did not run during the allreduce ({len(samples)} samples)"
    return inside[-1][1] - inside[0][1], inside[-1][0] - inside[0][0]


@pytest.mark.parametrize("congestion_control", ["cubic", "bbr"])
def test_tcp_and_a_64_mb_allreduce_share_a_worker_link(tmp_path, congestion_control):
    available = open("/proc/sys/net/ipv4/tcp_available_congestion_control").read().split()
    if congestion_control not in available:
        pytest.skip(f"this kernel has no TCP {congestion_control} (it has {' '.join(available)})")
    from topologies.mininet_lab import MininetLab

    topology = tmp_path / "star_100m_tcp.yaml"
    topology.write_text(TOPOLOGY)
    samples = str(tmp_path / "tcp.txt")
    lab = MininetLab(str(topology), ["h1", "h2", "h3", "h4"], server="h5", log=lambda m: None)  # the default program
    _share_link(lab, samples, congestion_control)  # the lab waits for the lab lock: one mininet lab at a time


def _share_link(lab, samples: str, congestion_control: str) -> None:
    try:
        lab.start()
        lab.allreduce(1, 256 * 1024)  # a warm-up round
        h1, h6 = lab.network.host("h1"), lab.network.host("h6")
        for host in (h1, h6):
            assert host.cmd("sysctl -n net.ipv4.tcp_ecn").strip() == "1"
        receiver = h1.popen([sys.executable, "-c", RECEIVER, samples])
        time.sleep(0.5)
        sender = h6.popen([sys.executable, "-c", SENDER, "10.0.0.1", "60", congestion_control])
        time.sleep(2.0)  # the flow at its pace before the job starts
        (result,) = lab.allreduce(1, VALUES, timeout=180.0)
        sender.terminate()
        sender.wait(timeout=10)
        receiver.wait(timeout=10)
        assert result.verified
        started = min(result.started_at.values())
        ended = max(result.started_at[rank] + result.per_rank[rank] for rank in result.started_at)
        tcp_bytes, tcp_span = _received(samples, started, ended)
        tcp_share = tcp_bytes / tcp_span / LINK_BYTES_PER_S
        value_bytes = 4 * lab.plan.value_count  # a RESULT's values at the program's K
        frame_per_value_byte = (RESULT_HEADER_BYTES + value_bytes) / value_bytes
        ina_share = VALUES * 4 * frame_per_value_byte / result.elapsed / LINK_BYTES_PER_S
        print(f"TCP {congestion_control} {tcp_share:.0%}, INA {ina_share:.0%} of h1's link ({result.elapsed:.2f} s)")
        assert tcp_share >= 0.4 and ina_share >= 0.4, (tcp_share, ina_share, lab.rounds.last_stats)
    finally:
        lab.stop()
