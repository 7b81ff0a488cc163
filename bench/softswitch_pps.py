"""Packets per second of softswitch on both back ends, side by side, in process and through veth ports.

Two programs: a plain IPv4 router (tests/softswitch/programs/ipv4_router.p4: LPM, MAC rewrite, TTL,
checksum check and update) and p4src/ina.p4 with K = 64 values per packet. ina.p4 runs one job with
fan-in 4 at one switch: per chunk 3 GRADs are absorbed, the 4th completes the sum and leaves, then 4
unicast RESULTs release the slot and go down; also GRADs on a pass-through hop and plain UDP on its
ipv4_lpm. In process, the same chunks also run on ina_k256.p4 (K = 256) and on the TNA program
p4src/tna/ina_tna.p4 (the same frames and entries).

* In process, per back end: the Python back end runs `Switch.process` on each frame (each call
  timed); the native back end runs `process_batch` on batches of prepared frames (64 chunks of 4 GRADs,
  their RESULTs, 256 router frames), each batch timed: what a port's batch costs without the ports.
  The time is the calling thread's CPU time (the switch's code runs in it): other work on the machine
  does not count against the switch, as it did with the wall clock. Median over the repetitions;
  outputs checked (frame counts per kind, and one chunk's sum).
* Through veth ports (root only), per back end: two network namespaces, one veth pair each; a
  `softswitch --backend B` process on the switch-side ends, alone on the last CPU (taskset), entries
  installed over P4Runtime; a native sender (bench/native_io_traffic.c: sendmmsg, or with --sender ring
  a PACKET_MMAP transmit ring past the qdisc; as fast as it can or at --rate, each chunk with the next
  sequence number) in one namespace on the first CPU; what leaves the switch
  is counted by the receiving interface in the other namespace (no receiving socket: counting costs
  nothing). The switch's own counters (ina_stats over P4Runtime) give the GRADs it processed. Each row
  also gives the CPU time per frame of the switch process and of the sender (system time includes the
  kernel's veth delivery, which runs in the sending thread). On two or more CPUs the native cases also
  run with a second sender on the switch's CPU (aggregating its own job): one sender alone cannot
  offer more than about one core's worth of frames. The native back end runs once per transmit path
  (--native-tx: its PACKET_MMAP ring, and sendmmsg as before, side by side); "sw/core" is what one core
  would sustain at the switch's measured CPU per frame (1 / CPU per frame: on 2 shared CPUs the
  senders and the kernel's veth delivery take the rest, so the measured rate stays below it).
  --native-rx picks the native switch's receive paths: hybrid (SOFTSWITCH_IO=hybrid: frame slots at low
  rates, TPACKET_V3 blocks while a block's worth arrives within a millisecond), ring (frame slots only,
  the default) and block (blocks only), side by side. Each case also says where its CPU time went (per
  frame: the senders, each switch thread, ksoftirqd, the rest of the machine; each CPU's user/system/softirq/idle
  share; backlog drops; the I/O thread's sleeps; the rate those costs allow), and --rps off,in runs it
  again with the switch's input port's receive work on the switch's CPU (RPS, restored after the case).
* Baselines (--baselines, root): the router case's frames without the switch, in the same run and with
  the same senders: into a veth with nothing behind it (what a frame costs its sender before any switch
  reads it), and through the kernel as the router (a namespace forwarding between two veths, the same
  receiving interface counting), once without RPS (its forwarding on the sender's CPU alone: one CPU
  against the switch's two) and once with RPS (on the other CPU too). They say what this machine allows
  whatever the switch does.

Prints a table (with progress lines as cases finish), the native/Python ratios and the machine's load,
and saves bench/results/softswitch_pps.json and .png.

    .venv/bin/python bench/softswitch_pps.py [--quick] [--seconds 3] [--no-veth] [--backends native,python]
    .venv/bin/python bench/softswitch_pps.py --no-in-process --backends native --cases ipv4_router_forward \
        --senders 1 --native-tx ring --baselines     (the router's 500k question alone)
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import platform
import re
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench.cpu_time import (  # noqa: E402
    cpu_seconds_by_kind,
    irq_time_accounting,
    ksoftirqd_seconds,
    process_cpu_seconds,
    softnet_counts,
    threads_by_name,
)
from controller.cli_options import add_deprecated  # noqa: E402

RESULTS = ROOT / "bench" / "results"
INA_P4 = ROOT / "p4src" / "ina.p4"
INA_K256_P4 = ROOT / "p4src" / "ina_k256.p4"  # the same program with K = 256 (the allreduce's build)
INA_TNA_P4 = ROOT / "p4src" / "tna" / "ina_tna.p4"  # the Tofino program (K = 64, the same entries)
WIDE_K = 256
ROUTER_P4 = ROOT / "tests" / "softswitch" / "programs" / "ipv4_router.p4"
BACKENDS = ("native", "python")

BMV2_REFERENCE_PPS = 100_000
REFERENCE_NOTE = (
    "BMv2's maintainers quote ~100k packets/s for simple programs in an optimised build (simple_switch, "
    f"native C++, port I/O included). Figures here are softswitch's on this {os.cpu_count()}-core machine; "
    "compare the veth rates with it (in-process rates leave out port I/O)."
)
# issue 10's targets for the native back end
TARGETS = {
    "in_process_grad_aggregation_pps": 1_000_000,
    "veth_grad_aggregation_pps": 300_000,
    "veth_router_pps": 500_000,
    "native_over_python": 20,
}

# Addresses: only inside the benchmark's own namespaces (and in process).
SENDER_MAC, RECEIVER_MAC, ROUTER_MAC = "02:00:00:00:0a:01", "02:00:00:00:0b:01", "02:00:00:00:00:fe"
SENDER_IP, RECEIVER_IP = "10.0.1.1", "10.0.2.1"
IN_PORT, OUT_PORT = 1, 2  # workers (sender) on port 1, server side (receiver) on port 2
SWITCH_ID, AGG_JOB, PASS_JOB, SECOND_AGG_JOB = 1, 7, 8, 9  # a second sender aggregates its own job
FAN_IN, POOL = 4, 64
PLAIN_SRC_PORT, PLAIN_DST_PORT = 5000, 5001

# Byte offsets in an Ethernet/IPv4(no options)/UDP/INA frame: seq (32 bits) then shadow:1 slot:15.
INA_AT = 14 + 20 + 8
SEQ_AT = INA_AT + 6
SLOT_AT = SEQ_AT + 4
_SEQ_SLOT = struct.Struct("!IH")
PLAIN_TAG_AT = INA_AT  # the router's frames carry their sequence number in the UDP payload


class BenchError(RuntimeError):
    """Something the benchmark needs did not work; the message says what."""


def patch_chunk(template: bytes, seq: int, pool: int) -> bytearray:
    """``template`` with INA seq = ``seq`` and (slot, shadow) = (seq mod pool, (seq div pool) mod 2), the
    agents' choice. Neither the IPv4 checksum (header only) nor the UDP checksum (0) covers them."""
    frame = bytearray(template)
    _SEQ_SLOT.pack_into(frame, SEQ_AT, seq, (((seq // pool) % 2) << 15) | (seq % pool))
    return frame


# ------------------------------------------------------------------------------------------ frames


class Frames:
    """Templates of every packet kind, built with protocol/codec.py (seq 0, patched per chunk), with
    ``values_per_packet`` values (K; default the protocol's)."""

    def __init__(self, values_per_packet: int | None = None):
        import numpy as np

        from protocol import codec
        from protocol import constants as C
        from protocol.codec import Hop

        self.codec, self.C = codec, C
        server = C.HOST_NODE_ID_BASE + 1
        k = self.values_per_packet = values_per_packet or C.VALUES_PER_PACKET
        self.values = [np.arange(k, dtype=np.int32) * 3 + child for child in range(FAN_IN)]
        self.sum = sum(v.astype(np.int64) for v in self.values)
        up = dict(src_mac=SENDER_MAC, dst_mac=RECEIVER_MAC, src_ip=SENDER_IP, dst_ip=RECEIVER_IP)
        down = dict(src_mac=RECEIVER_MAC, dst_mac=SENDER_MAC, src_ip=RECEIVER_IP, dst_ip=SENDER_IP)
        self.grads_of = {
            job: [
                codec.build_frame(
                    codec.grad(
                        job,
                        0,
                        [Hop(SWITCH_ID, True, FAN_IN, child, OUT_PORT), Hop(server, True, 1, 0, 0)],
                        self.values[child],
                        contributor=child,
                    ),
                    **up,
                    values_per_packet=k,
                )
                for child in range(FAN_IN)
            ]
            for job in (AGG_JOB, SECOND_AGG_JOB)
        }
        self.grads = self.grads_of[AGG_JOB]
        self.results = [
            codec.build_frame(
                codec.result(
                    AGG_JOB,
                    0,
                    [Hop(SWITCH_ID, True, FAN_IN, child, IN_PORT)],
                    self.sum.astype(np.int32),
                    contributor=server,
                ),
                **down,
                values_per_packet=k,
            )
            for child in range(FAN_IN)
        ]
        self.passthrough = codec.build_frame(
            codec.grad(
                PASS_JOB, 0, [Hop(SWITCH_ID, False, 0, 0, OUT_PORT), Hop(server, True, 1, 0, 0)], self.values[0]
            ),
            **up,
            values_per_packet=k,
        )
        # plain UDP of the same frame size as a GRAD with its two hops
        self.plain_to_router = codec.build_udp_frame(
            bytes(len(self.grads[0]) - INA_AT),
            SENDER_MAC,
            ROUTER_MAC,
            SENDER_IP,
            RECEIVER_IP,
            src_port=PLAIN_SRC_PORT,
            dst_port=PLAIN_DST_PORT,
        )
        self._check_patching()

    def _check_patching(self) -> None:
        """The byte patching must give exactly what the codec builds for that seq/slot/shadow."""
        codec = self.codec
        seq = 3 * POOL + 5
        _, pkt = codec.parse_frame(bytes(patch_chunk(self.grads[2], seq, POOL)))
        if (pkt.header.seq, pkt.header.slot, pkt.header.shadow) != (seq, 5, 1):
            raise BenchError(
                f"patched frame decodes to seq={pkt.header.seq} slot={pkt.header.slot} "
                f"shadow={pkt.header.shadow}, expected {seq}, 5, 1"
            )

    def frame_bytes(self) -> dict[str, int]:
        return {
            "grad": len(self.grads[0]),
            "result": len(self.results[0]),
            "passthrough": len(self.passthrough),
            "plain": len(self.plain_to_router),
        }


def ina_job_entries() -> list[dict]:
    """The aggregating jobs (fan-in 4, pool 64: job_index 1, and 3 for a second sender) and the
    pass-through job (job_index 2)."""
    return [
        {
            "job": AGG_JOB,
            "args": {
                "job_index": 1,
                "slot_base": 0,
                "pool_size": POOL,
                "max_fan_in": FAN_IN,
                "aggregates": 1,
                "result_group": 0,
            },
        },
        {
            "job": SECOND_AGG_JOB,
            "args": {
                "job_index": 3,
                "slot_base": 2 * POOL,
                "pool_size": POOL,
                "max_fan_in": FAN_IN,
                "aggregates": 1,
                "result_group": 0,
            },
        },
        {
            "job": PASS_JOB,
            "args": {
                "job_index": 2,
                "slot_base": 0,
                "pool_size": 0,
                "max_fan_in": 1,
                "aggregates": 0,
                "result_group": 0,
            },
        },
    ]


def _mac(text: str) -> int:
    return int(text.replace(":", ""), 16)


def _ip(text: str) -> int:
    return int.from_bytes(socket.inet_aton(text), "big")


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise BenchError(f"'{' '.join(cmd)}' failed: {(proc.stderr or proc.stdout).strip()}")
    return proc


def veth_unavailable() -> str | None:
    """Why the veth part cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth pairs, AF_PACKET sockets)"
    if shutil.which("ip") is None:
        return "needs iproute2's 'ip' command"
    if sh("ip", "netns", "list", check=False).returncode != 0:
        return "'ip netns' does not work here"
    return None


class VethLab:
    """Two namespaces (sender, receiver), each with eth0 peered to a switch-side veth in this namespace."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.sender_ns, self.receiver_ns = f"ppstx{tag}", f"ppsrx{tag}"
        self.ports = {IN_PORT: f"pps{tag}p{IN_PORT}", OUT_PORT: f"pps{tag}p{OUT_PORT}"}
        self.ns_of = {IN_PORT: self.sender_ns, OUT_PORT: self.receiver_ns}
        self._namespaces: list[str] = []
        self._links: list[str] = []

    def __enter__(self) -> VethLab:
        try:
            for port, sw_if in self.ports.items():
                ns = self.ns_of[port]
                sh("ip", "netns", "add", ns)
                self._namespaces.append(ns)
                sh("ip", "link", "add", sw_if, "type", "veth", "peer", "name", "eth0", "netns", ns)
                self._links.append(sw_if)
                sh("sysctl", "-qw", f"net.ipv6.conf.{sw_if}.disable_ipv6=1", check=False)
                sh("ip", "link", "set", sw_if, "up")
                inside = ("ip", "netns", "exec", ns)
                for conf in ("all", "default", "eth0"):
                    sh(*inside, "sysctl", "-qw", f"net.ipv6.conf.{conf}.disable_ipv6=1", check=False)
                sh(*inside, "ip", "link", "set", "eth0", "up")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        for link in self._links:
            sh("ip", "link", "del", link, check=False)
        for ns in self._namespaces:
            sh("ip", "netns", "del", ns, check=False)
        self._links, self._namespaces = [], []

    def __exit__(self, *exc) -> None:
        self.close()

    def in_ns(self, port: int, *args: str) -> list[str]:
        return ["ip", "netns", "exec", self.ns_of[port], *args]

    def delivered(self) -> int:
        """Frames the switch-side end of the sender's link has received (with no switch reading it, its
        stack drops them as not for the host)."""
        return int(Path(f"/sys/class/net/{self.ports[IN_PORT]}/statistics/rx_packets").read_text())

    def link_drops(self) -> int:
        """Frames the sender's veth dropped instead of handing them over (its tx_dropped: the other end
        down, or its backlog full)."""
        return int(sh(*self.in_ns(IN_PORT, "cat", "/sys/class/net/eth0/statistics/tx_dropped")).stdout)


class SoftswitchProcess:
    """A `softswitch` process on the lab's switch-side ends; P4Runtime on a free local port."""

    def __init__(
        self, lab: VethLab, program: Path, backend: str, cpu: int | None, tx: str = "ring", rx: str = "hybrid"
    ):
        self.log = tempfile.NamedTemporaryFile("w+", prefix="softswitch-pps-", suffix=".log")
        cmd = [sys.executable, "-m", "softswitch", "--device-id", str(SWITCH_ID), "--grpc-server-addr", "127.0.0.1:0"]
        cmd += ["--backend", backend]
        for port, iface in lab.ports.items():
            cmd += ["-i", f"{port}@{iface}"]
        if cpu is not None:  # the whole switch process on its own CPU
            cmd = ["taskset", "-c", str(cpu), *cmd]
        env = dict(os.environ, SOFTSWITCH_IO_TX=tx, SOFTSWITCH_IO=rx)  # the native back end's I/O paths
        self.tx, self.rx = tx, rx
        self.proc = subprocess.Popen(
            cmd + [str(program)], stdout=subprocess.DEVNULL, stderr=self.log, cwd=ROOT, env=env
        )
        self.conn = None
        try:
            self.address = self._wait_address(timeout=60)
        except BaseException:
            self.stop()
            raise

    def _wait_address(self, timeout: float) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = Path(self.log.name).read_text()
            match = re.search(r"P4Runtime on (\S+),", text)
            if match:
                return match.group(1)
            if self.proc.poll() is not None:
                raise BenchError(f"softswitch exited with status {self.proc.returncode}: {text.strip()[-400:]}")
            time.sleep(0.05)
        raise BenchError(f"softswitch did not report its P4Runtime address within {timeout:.0f} s")

    def connect(self):
        from controller.p4rt import P4Names, SwitchConnection

        self.conn = SwitchConnection(self.address, SWITCH_ID, name="softswitch").open()
        self.names = P4Names(self.conn.get_p4info())
        return self

    def write(self, entries) -> None:
        from p4.v1 import p4runtime_pb2

        updates = []
        for entry in entries:
            entity = p4runtime_pb2.Entity()
            entity.table_entry.CopyFrom(entry)
            kind = p4runtime_pb2.Update.MODIFY if entry.is_default_action else p4runtime_pb2.Update.INSERT
            updates.append((kind, entity))
        self.conn.write(updates)

    def counter_packets(self, counter: str, indices: list[int]) -> dict[int, int]:
        cid, _ = self.names.counter(counter)
        return {i: packets for i, (packets, _bytes) in self.conn.read_counter(cid, indices).items()}

    def cpu_seconds(self) -> float:
        """CPU time of every thread of the switch process so far (bench/cpu_time.py)."""
        return process_cpu_seconds(self.proc.pid)

    def running_backend(self) -> str:
        """The back end the process reports it runs ("native" or "python")."""
        match = re.search(r"on the (\w+) back end", Path(self.log.name).read_text())
        return match.group(1) if match else "unknown"

    def stop(self) -> None:
        if self.conn is not None:
            self.conn.close()
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def install_router(switch: SoftswitchProcess) -> None:
    n = switch.names
    switch.write(
        [
            n.table_entry(
                "MyIngress.ipv4_lpm",
                {"hdr.ipv4.dstAddr": (_ip(RECEIVER_IP) & 0xFFFFFF00, 24)},
                "MyIngress.ipv4_forward",
                {"dstAddr": _mac(RECEIVER_MAC), "port": OUT_PORT},
            )
        ]
    )


def install_ina(switch: SoftswitchProcess) -> None:
    n = switch.names
    entries = [
        n.table_entry(
            "InaIngress.switch_identity", None, "InaIngress.set_switch_id", {"switch_id": SWITCH_ID}, default=True
        )
    ]
    entries += [
        n.table_entry(
            "InaIngress.ina_jobs", {"hdr.ina.job_id": e["job"], "hdr.ina.tree_id": 0}, "InaIngress.set_job", e["args"]
        )
        for e in ina_job_entries()
    ]
    switch.write(entries)


def _git_state() -> dict:
    head = sh("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD", check=False).stdout.strip()
    dirty = sh("git", "-C", str(ROOT), "status", "--porcelain", "--", "softswitch", "p4src", check=False).stdout
    return {"head": head, "softswitch_or_p4src_uncommitted_changes": bool(dirty.strip())}


# ------------------------------------------------------------------------------------ in process

KIND_LABELS = {
    "ipv4_router_forward": "IPv4 forward (ipv4_router.p4)",
    "ina_ipv4_forward": "non-INA UDP, ipv4_lpm (ina.p4)",
    "grad_absorbed": "GRAD absorbed, 3 of 4 (ina.p4)",
    "grad_completing": "GRAD completing, 4th leaves (ina.p4)",
    "grad_aggregation": "GRAD aggregation, per GRAD (ina.p4)",
    "result_release": "RESULT release + forward (ina.p4)",
    "grad_passthrough": "GRAD pass-through hop (ina.p4)",
    "grad_aggregation_k256": f"GRAD aggregation, per GRAD (K = {WIDE_K})",
    "result_release_k256": f"RESULT release + forward (K = {WIDE_K})",
    "grad_aggregation_tna": "GRAD aggregation, per GRAD (ina_tna.p4)",
    "result_release_tna": "RESULT release + forward (ina_tna.p4)",
}
KIND_FRAMES = {
    "ipv4_router_forward": "plain",
    "ina_ipv4_forward": "plain",
    "grad_absorbed": "grad",
    "grad_completing": "grad",
    "grad_aggregation": "grad",
    "result_release": "result",
    "grad_passthrough": "passthrough",
    "grad_aggregation_k256": "grad",
    "result_release_k256": "result",
    "grad_aggregation_tna": "grad",
    "result_release_tna": "result",
}
WIDE_KINDS = {  # K = 256 kinds: what a round of ina_k256.p4's workload counts into them
    "grad_aggregation_k256": ("grad_absorbed", "grad_completing"),
    "result_release_k256": ("result_release",),
}
TNA_KINDS = {  # kinds of the TNA program (p4src/tna/ina_tna.p4) on ina.p4's frames and entries
    "grad_aggregation_tna": ("grad_absorbed", "grad_completing"),
    "result_release_tna": ("result_release",),
}
CHUNKS_PER_ROUND = POOL  # chunks aggregated together: each its own slot


def router_switch(backend: str):
    from softswitch.compiler import compile_program
    from softswitch.switch import Lpm, Switch, TableEntry

    sw = Switch(compile_program(str(ROUTER_P4), backend=backend), device_id=1)
    sw.table("MyIngress.ipv4_lpm").insert(
        TableEntry(
            {"hdr.ipv4.dstAddr": Lpm(_ip(RECEIVER_IP) & 0xFFFFFF00, 24)},
            "MyIngress.ipv4_forward",
            {"dstAddr": _mac(RECEIVER_MAC), "port": OUT_PORT},
        )
    )
    return sw


def ina_switch(backend: str, program: Path = INA_P4):
    from softswitch.compiler import compile_program
    from softswitch.switch import Exact, Lpm, Switch, TableEntry

    sw = Switch(compile_program(str(program), backend=backend), device_id=SWITCH_ID)
    sw.table("InaIngress.switch_identity").set_default("InaIngress.set_switch_id", {"switch_id": SWITCH_ID})
    for entry in ina_job_entries():
        sw.table("InaIngress.ina_jobs").insert(
            TableEntry(
                {"hdr.ina.job_id": Exact(entry["job"]), "hdr.ina.tree_id": Exact(0)},
                "InaIngress.set_job",
                entry["args"],
            )
        )
    sw.table("InaIngress.ipv4_lpm").insert(
        TableEntry(
            {"hdr.ipv4.dst_addr": Lpm(_ip(RECEIVER_IP), 32)},
            "InaIngress.ipv4_forward",
            {"dst_mac": _mac(RECEIVER_MAC), "port": OUT_PORT},
        )
    )
    return sw


class Workload:
    """Frames of every kind, in rounds: a round is CHUNKS_PER_ROUND chunks (each 3 absorbed GRADs, a
    completing GRAD, 4 RESULTs) with fresh sequence numbers, and batches of the one-frame kinds.
    Each entry: kind -> (port, frames, outputs expected in all)."""

    def __init__(self, frames: Frames):
        self.frames = frames
        self.seq = 0

    def round(self) -> dict[str, tuple[int, list[bytes], int]]:
        f = self.frames
        seqs = range(self.seq + 1, self.seq + 1 + CHUNKS_PER_ROUND)
        self.seq += CHUNKS_PER_ROUND
        absorbed = [bytes(patch_chunk(f.grads[c], s, POOL)) for s in seqs for c in range(FAN_IN - 1)]
        completing = [bytes(patch_chunk(f.grads[-1], s, POOL)) for s in seqs]
        results = [bytes(patch_chunk(r, s, POOL)) for s in seqs for r in f.results]
        n = 4 * CHUNKS_PER_ROUND
        return {
            "grad_absorbed": (IN_PORT, absorbed, 0),
            "grad_completing": (IN_PORT, completing, len(completing)),
            "result_release": (OUT_PORT, results, len(results)),
            "grad_passthrough": (IN_PORT, [f.passthrough] * n, n),
            "ina_ipv4_forward": (IN_PORT, [f.plain_to_router] * n, n),  # ina.p4 routing the router's frame
        }

    def router(self) -> tuple[int, list[bytes], int]:
        n = 4 * CHUNKS_PER_ROUND
        return IN_PORT, [self.frames.plain_to_router] * n, n

    def check_one_chunk(self, ina) -> None:
        """One more chunk frame by frame: the sum leaves on the up port with exact values, results go down."""
        f = self.frames
        self.seq += 1
        s = self.seq
        for c in range(FAN_IN - 1):
            if ina.process(IN_PORT, bytes(patch_chunk(f.grads[c], s, POOL))):
                raise BenchError("ina.p4: a GRAD that should be absorbed left the switch")
        done = ina.process(IN_PORT, bytes(patch_chunk(f.grads[-1], s, POOL)))
        if len(done) != 1 or done[0][0] != OUT_PORT:
            raise BenchError(f"ina.p4: the completing GRAD gave {[(p, len(x)) for p, x in done]}")
        _, pkt = f.codec.parse_frame(done[0][1])
        if [int(v) for v in pkt.values] != [int(v) for v in f.sum]:
            raise BenchError("ina.p4: the completed sum differs from the sum of the 4 contributions")
        for r in f.results:
            out = ina.process(OUT_PORT, bytes(patch_chunk(r, s, POOL)))
            if len(out) != 1 or out[0][0] != IN_PORT:
                raise BenchError(f"ina.p4: a RESULT did not leave on port {IN_PORT}: {out}")


def _time_python(sw, port: int, frames: list[bytes], expected: int) -> float:
    """CPU seconds to run frames one by one with Switch.process (each call timed, the sum returned)."""
    process, clock = sw.process, time.thread_time
    total, outputs = 0.0, 0
    for frame in frames:
        t0 = clock()
        outputs += len(process(port, frame))
        total += clock() - t0
    if outputs != expected:
        raise BenchError(f"{len(frames)} frames gave {outputs} outputs, expected {expected}")
    return total


def _time_native(sw, port: int, frames: list[bytes], expected: int) -> float:
    """CPU seconds of one process_batch call on the frames (packed before the clock starts)."""
    from softswitch.native.switch import FrameBatch

    batch = FrameBatch([(port, f) for f in frames])
    t0 = time.thread_time()
    outputs = sw.process_batch(batch, outputs=False)
    elapsed = time.thread_time() - t0
    if outputs != expected:
        raise BenchError(f"{len(frames)} frames gave {outputs} outputs, expected {expected}")
    return elapsed


def measure_in_process(
    backend: str, frames: Frames, wide_frames: Frames, seconds: float, reps: int, progress
) -> list[dict]:
    """Per kind, `reps` rates (frames / time spent in the switch), each from about seconds / reps of
    work; the native back end warms up its library first (compilation is not timed). The K = 256 kinds
    run the same rounds on ina_k256.p4 (`wide_frames`), the TNA kinds on ina_tna.p4."""
    timer = _time_native if backend == "native" else _time_python
    router, ina, wide = router_switch(backend), ina_switch(backend), ina_switch(backend, INA_K256_P4)
    tna = ina_switch(backend, INA_TNA_P4)
    work, wide_work, tna_work = Workload(frames), Workload(wide_frames), Workload(frames)
    rates: dict[str, list[float]] = {k: [] for k in KIND_LABELS}
    for rep in range(reps + 1):  # round 0 warms up
        spent = {k: [0, 0.0] for k in KIND_LABELS}
        t_end = time.monotonic() + seconds / reps
        while True:
            port, batch, expected = work.router()
            spent["ipv4_router_forward"][0] += len(batch)
            spent["ipv4_router_forward"][1] += timer(router, port, batch, expected)
            for kind, (port, batch, expected) in work.round().items():
                spent[kind][0] += len(batch)
                spent[kind][1] += timer(ina, port, batch, expected)
            wide_round = wide_work.round()
            for wide_kind, kinds in WIDE_KINDS.items():
                for kind in kinds:
                    port, batch, expected = wide_round[kind]
                    spent[wide_kind][0] += len(batch)
                    spent[wide_kind][1] += timer(wide, port, batch, expected)
            tna_round = tna_work.round()
            for tna_kind, kinds in TNA_KINDS.items():
                for kind in kinds:
                    port, batch, expected = tna_round[kind]
                    spent[tna_kind][0] += len(batch)
                    spent[tna_kind][1] += timer(tna, port, batch, expected)
            if time.monotonic() >= t_end:
                break
        if rep == 0:
            continue
        for kind in ("grad_absorbed", "grad_completing"):
            spent["grad_aggregation"][0] += spent[kind][0]
            spent["grad_aggregation"][1] += spent[kind][1]
        for kind, (count, secs) in spent.items():
            rates[kind].append(count / secs)
    work.check_one_chunk(ina)
    wide_work.check_one_chunk(wide)
    tna_work.check_one_chunk(tna)
    if backend == "native":
        router.close()
        ina.close()
        wide.close()
        tna.close()
    rows = []
    for kind, values in rates.items():
        median = statistics.median(values)
        row = {
            "backend": backend,
            "kind": kind,
            "label": KIND_LABELS[kind],
            "frame_bytes": (wide_frames if kind in WIDE_KINDS else frames).frame_bytes()[KIND_FRAMES[kind]],
            "repetitions": reps,
            "pps_median": median,
            "pps_min": min(values),
            "pps_max": max(values),
            "pps_reps": values,
            "us_per_packet": 1e6 / median,
            "ratio_to_bmv2_reference": median / BMV2_REFERENCE_PPS,
            "method": (
                "process_batch, batches of 192-256 frames" if backend == "native" else "Switch.process per frame"
            )
            + ", CPU time of the calling thread",
        }
        rows.append(row)
        progress(row)
    return rows


# ------------------------------------------------------------------------------- veth: the traffic


def traffic_library():
    sys.path.insert(0, str(ROOT))
    from native.build import load_library

    lib = load_library("native-io-traffic", [ROOT / "bench" / "native_io_traffic.c"])
    u32, u64, double = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_double
    lib.traffic_send_chunks.restype = ctypes.c_int64
    lib.traffic_send_chunks.argtypes = [
        ctypes.c_char_p, ctypes.c_char_p, u32, u32, u32, u32, u32, u64, double, u64, double, ctypes.c_int,
        ctypes.POINTER(u64), ctypes.POINTER(u64), ctypes.POINTER(u32),
    ]  # fmt: skip
    return lib


def role_send(
    iface: str,
    templates: list[bytes],
    seq_at: int,
    pool: int,
    seq0: int,
    seconds: float,
    mode: str = "sendmmsg",
    rate: float = 0.0,
) -> dict:
    """The sender (run inside the sender's namespace): whole chunks as fast as the kernel takes them."""
    lib = traffic_library()
    errors, next_seq, used_ring = ctypes.c_uint64(), ctypes.c_uint64(), ctypes.c_uint32()
    blob = b"".join(templates)
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.monotonic()
    sent = lib.traffic_send_chunks(
        iface.encode(), blob, len(templates), len(templates[0]), seq_at, SLOT_AT, pool, seq0, seconds, 0, rate,
        int(mode == "ring"), ctypes.byref(errors), ctypes.byref(next_seq), ctypes.byref(used_ring),
    )  # fmt: skip
    end = time.monotonic()
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    if sent < 0:
        raise BenchError(f"the sender could not open {iface}")
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    return {"sent": sent, "send_errors": errors.value, "t_start": start, "t_end": end, "next_seq": next_seq.value,
            "cpu_seconds": cpu, "sender_path": "ring" if used_ring.value else "sendmmsg"}  # fmt: skip


class VethCase:
    def __init__(self, name: str, key: str, program: Path, templates: list[list[bytes]], seq_at: int, pool: int,
                 outputs_per_chunk: int, counted_stats: tuple[int, ...] = ()):  # fmt: skip
        self.name, self.key, self.program = name, key, program
        self.templates = templates  # per sender (a second sender aggregates its own job)
        self.seq_at, self.pool, self.outputs_per_chunk = seq_at, pool, outputs_per_chunk
        self.counted_stats = counted_stats  # ina_stats indices whose packet counts sum to GRADs processed


VETH_CASE_KEYS = ("ipv4_router_forward", "grad_aggregation", "grad_passthrough")


def veth_cases(frames: Frames) -> list[VethCase]:
    from protocol import constants as C

    grad_stats = [C.STAT_GRAD_AGGREGATED, C.STAT_GRAD_PASSED, C.STAT_GRAD_DUPLICATE, C.STAT_GRAD_STORED_ANSWER,
                  C.STAT_GRAD_RELEASED_FORWARD, C.STAT_GRAD_STALE]  # fmt: skip

    def stats(*job_indices: int) -> tuple[int, ...]:
        return tuple(j * C.NUM_STATS + s for j in job_indices for s in grad_stats)

    plain, grads, passing = [frames.plain_to_router], frames.grads_of, [frames.passthrough]
    return [
        VethCase("plain IPv4 forward", "ipv4_router_forward", ROUTER_P4, [plain, plain], PLAIN_TAG_AT, 0, 1),
        VethCase(
            "GRAD aggregation, fan-in 4",
            "grad_aggregation",
            INA_P4,
            [grads[AGG_JOB], grads[SECOND_AGG_JOB]],
            SEQ_AT,
            POOL,
            1,
            stats(1, 3),
        ),  # fmt: skip
        VethCase("GRAD pass-through hop", "grad_passthrough", INA_P4, [passing, passing], SEQ_AT, 0, 1, stats(2)),
    ]


def _rx_packets(lab: VethLab, port: int) -> int:
    """Frames the host-side interface behind a switch port has received (in its namespace)."""
    out = sh(*lab.in_ns(port, "cat", "/sys/class/net/eth0/statistics/rx_packets")).stdout
    return int(out.strip())


def run_senders(namespace: str, case: VethCase, seconds: float, seqs: list[int], sender_cpus: list[int | None],
                workdir: Path, sender_mode: str = "ring", rate: float = 0.0) -> dict:  # fmt: skip
    """len(sender_cpus) senders at once on eth0 in `namespace` (sender i on sender_cpus[i], its own chunks
    from seqs[i], which it advances); what they sent together."""
    senders = []
    for i, cpu in enumerate(sender_cpus):
        templates_file = workdir / f"templates{i}.json"
        templates_file.write_text(json.dumps([t.hex() for t in case.templates[i]]))
        pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
        command = [*pin, sys.executable, str(Path(__file__).resolve()), "--role", "send", "--iface", "eth0",
                   "--templates", str(templates_file), "--seq-at", str(case.seq_at), "--pool-size", str(case.pool),
                   "--seq0", str(seqs[i]), "--seconds", str(seconds), "--sender", sender_mode,
                   "--rate", str(rate)]  # fmt: skip
        senders.append(
            subprocess.Popen(
                ["ip", "netns", "exec", namespace, *command], stdout=subprocess.PIPE, stderr=subprocess.PIPE
            )
        )
    results = []
    for proc in senders:
        out, err = proc.communicate(timeout=seconds + 60)
        if proc.returncode != 0:
            raise BenchError(f"a sender failed: {err.decode(errors='replace').strip()[-300:]}")
        results.append(json.loads(out))
    for i, r in enumerate(results):
        seqs[i] = r["next_seq"]
    return {
        "sent": sum(r["sent"] for r in results),
        "send_errors": sum(r["send_errors"] for r in results),
        "t_start": min(r["t_start"] for r in results),
        "t_end": max(r["t_end"] for r in results),
        "cpu_seconds": sum(r["cpu_seconds"] for r in results),
        "chunks": sum(r["sent"] // len(case.templates[i]) for i, r in enumerate(results)),
        "sender_path": results[0]["sender_path"],
    }


class CpuSnapshot:
    """What the machine's CPUs, the switch's threads and the kernel's receive backlogs have done so far;
    two of them (before and after a case) say where the CPU time of the case went."""

    def __init__(self, switch_pid: int | None):
        self.cpus = {cpu: cpu_seconds_by_kind(cpu) for cpu in sorted(os.sched_getaffinity(0))}
        self.threads = threads_by_name(switch_pid) if switch_pid else {}
        self.softnet = softnet_counts()
        self.ksoftirqd = ksoftirqd_seconds()

    def busy_pct(self, before: CpuSnapshot) -> float:
        """How busy these CPUs were between `before` and this snapshot, in percent (all but idle)."""
        spent = [now[kind] - before.cpus[cpu][kind] for cpu, now in self.cpus.items() for kind in now]
        idle = sum(now["idle"] - before.cpus[cpu]["idle"] for cpu, now in self.cpus.items())
        return 100.0 * (sum(spent) - idle) / max(1e-9, sum(spent))

    def accounting(self, before: CpuSnapshot, processed: int, sent: int, sender_cpu_seconds: float) -> dict:
        """Per frame (µs): the senders per frame they sent; each thread of the switch (by name), ksoftirqd
        and the rest of the machine (other processes, the senders' start-up, and softirq work no task was
        charged for: on an idle CPU, or all of it with IRQ_TIME_ACCOUNTING, see irq_time_accounting) per
        frame the switch processed; each CPU's share in user code, the kernel for tasks, softirqs and idle;
        backlog drops; how often the switch's I/O thread slept; and the rate the senders', the switch's and
        ksoftirqd's CPU per frame allow on these CPUs at best (all of them busy with nothing else, no frame
        lost)."""
        per_processed = 1e6 / processed if processed else 0.0
        per_sent = 1e6 / sent if sent else 0.0
        cpus = {}
        for cpu, now in self.cpus.items():
            spent = {kind: now[kind] - before.cpus[cpu][kind] for kind in now}
            total = sum(spent.values()) or 1e-9
            cpus[cpu] = {f"{kind}_pct": round(100.0 * value / total, 1) for kind, value in spent.items()}
        threads = {
            name: (seconds - before.threads.get(name, (0.0, 0))[0], sleeps - before.threads.get(name, (0.0, 0))[1])
            for name, (seconds, sleeps) in self.threads.items()
        }
        switch_seconds = sum(seconds for seconds, _ in threads.values())
        busy = sum(
            sum(v for k, v in now.items() if k != "idle") - sum(v for k, v in before.cpus[cpu].items() if k != "idle")
            for cpu, now in self.cpus.items()
        )
        io_sleeps = threads.get("softswitch-io", (0.0, 0))[1]
        deferred = self.ksoftirqd - before.ksoftirqd
        sender_us = sender_cpu_seconds * per_sent
        cost = sender_us + (switch_seconds + deferred) * per_processed
        return {
            "sender_us_per_frame": round(sender_us, 3),
            "switch_threads_us_per_frame": {
                name: round(seconds * per_processed, 3)
                for name, (seconds, _) in threads.items()
                if seconds * per_processed >= 0.005
            },
            "ksoftirqd_us_per_frame": round(deferred * per_processed, 3),
            "rest_of_machine_us_per_frame": round(
                max(0.0, busy - sender_cpu_seconds - switch_seconds - deferred) * per_processed, 3
            ),
            "cpus": cpus,
            "backlog_drops": sum(n[1] - b[1] for n, b in zip(self.softnet, before.softnet, strict=True)),
            "backlog_frames_per_cpu": [n[0] - b[0] for n, b in zip(self.softnet, before.softnet, strict=True)],
            "io_thread_sleeps_per_1000_frames": round(1000.0 * io_sleeps / processed, 2) if processed else None,
            "bound_pps": round(len(self.cpus) * 1e6 / cost) if cost else None,
            # the senders' CPU alone (their core: their own sending and, on veth, the delivery into the
            # switch's ring in their softirq)
            "sender_core_pps": round(1e6 / sender_us) if sender_us else None,
        }


def run_veth_case(lab: VethLab, switch: SoftswitchProcess, case: VethCase, seconds: float, seqs: list[int],
                  sender_cpus: list[int | None], workdir: Path, sender_mode: str = "ring",
                  rate: float = 0.0) -> dict:  # fmt: skip
    """One case with len(sender_cpus) senders at once (sender i on sender_cpus[i], its own chunks from
    seqs[i], which it advances)."""
    before = switch.counter_packets("InaIngress.ina_stats", list(case.counted_stats)) if case.counted_stats else {}
    delivered0 = _rx_packets(lab, OUT_PORT)
    switch_cpu0 = switch.cpu_seconds()
    snapshot0 = CpuSnapshot(switch.proc.pid)
    sent = run_senders(lab.sender_ns, case, seconds, seqs, sender_cpus, workdir, sender_mode, rate)

    def progress() -> int:  # the switch's counters, or what it delivers
        if case.counted_stats:
            now = switch.counter_packets("InaIngress.ina_stats", list(case.counted_stats))
            return sum(now[i] - before.get(i, 0) for i in case.counted_stats)
        return _rx_packets(lab, OUT_PORT) - delivered0

    last, t_done = _settled(progress)  # wait until the switch has worked off what it received
    snapshot1 = CpuSnapshot(switch.proc.pid)
    switch_cpu = switch.cpu_seconds() - switch_cpu0
    delivered = _rx_packets(lab, OUT_PORT) - delivered0
    processed = last if case.counted_stats else delivered
    send_time = sent["t_end"] - sent["t_start"]
    row = {
        "backend": switch.running_backend(),
        "switch_tx": switch.tx if switch.running_backend() == "native" else None,
        "switch_rx": switch.rx if switch.running_backend() == "native" else None,
        "sender_path": sent["sender_path"],
        "case": case.name,
        "kind": case.key,
        "program": str(case.program.relative_to(ROOT)),
        "senders": len(sender_cpus),
        "sender_cpus": sender_cpus,
        "offered_pps": sent["sent"] / send_time if send_time > 0 else 0.0,
        "send_seconds": send_time,
        "sent": sent["sent"],
        "send_errors": sent["send_errors"],
        "delivered": delivered,
        "expected_delivered": sent["chunks"] * case.outputs_per_chunk,
        "processed": processed,
        # from the first frame sent to the last poll (0.05 s apart) at which the switch's count still moved
        "processed_pps": processed / (t_done - sent["t_start"]) if t_done > sent["t_start"] else 0.0,
        "input_loss_pct": 100.0 * (1 - processed / sent["sent"]) if sent["sent"] else 0.0,
        "switch_cpu_us_per_frame": 1e6 * switch_cpu / processed if processed else None,
        "sender_cpu_us_per_frame": 1e6 * sent["cpu_seconds"] / sent["sent"] if sent["sent"] else None,
        "machine_busy_pct": snapshot1.busy_pct(snapshot0),
        "cpu_accounting": snapshot1.accounting(snapshot0, processed, sent["sent"], sent["cpu_seconds"]),
    }
    cpu_per_frame = row["switch_cpu_us_per_frame"]
    row["switch_core_pps"] = 1e6 / cpu_per_frame if cpu_per_frame else None  # one core at that CPU per frame
    row["saturated"] = row["input_loss_pct"] > 1.0  # frames were lost before the switch: its capacity
    row["ratio_to_bmv2_reference"] = row["processed_pps"] / BMV2_REFERENCE_PPS
    return row


DEFAULT_RX = "ring"  # the native back end's default receive path (SOFTSWITCH_IO unset)
RPS_SETTINGS = ("off", "in")  # --rps: no RPS; the input port's receive work on the forwarding CPU


class ReceiveSteering:
    """RPS on one interface for the length of a case (bench-side tuning): with `cpu`, the kernel's receive
    work for its frames (the backlog, the packet taps that fill the switch's ring, the stack) runs on that
    CPU instead of the CPU that handed the frame over (veth: the sender's); with None, RPS is off (mask 0)
    whatever it was before. The interface's previous mask is put back when the case ends. `namespace`:
    where the interface is (None: this one)."""

    def __init__(self, namespace: str | None, iface: str, cpu: int | None):
        self.inside = ["ip", "netns", "exec", namespace] if namespace else []
        self.file, self.cpu = f"/sys/class/net/{iface}/queues/rx-0/rps_cpus", cpu
        self.previous: int | None = None

    def read(self) -> int:
        """The interface's RPS mask now (the file holds it in hex, 32-bit groups separated by commas)."""
        return int(sh(*self.inside, "cat", self.file).stdout.strip().replace(",", ""), 16)

    def _write(self, mask: int) -> None:
        sh(*self.inside, "sh", "-c", f"echo {mask:x} > {self.file}")

    def __enter__(self) -> ReceiveSteering:
        self.previous = self.read()
        self._write(0 if self.cpu is None else 1 << self.cpu)
        return self

    def __exit__(self, *exc) -> None:
        if self.previous is not None:
            self._write(self.previous)


def measure_veth(frames: Frames, backends: list[str], seconds: float, sender_counts: list[int], progress,
                 native_tx: tuple[str, ...] = ("ring",), sender_mode: str = "ring", rate: float = 0.0,
                 cases: tuple[str, ...] = (), native_rx: tuple[str, ...] = ("hybrid",),
                 rps: tuple[str, ...] = ("off",)) -> list[dict]:  # fmt: skip
    """Every case on every back end (the native one once per transmit path in native_tx, and once per
    other receive path in native_rx: ring, frame slots, the default; hybrid; block, TPACKET_V3 blocks), once per number of
    senders in sender_counts (native back end; the Python back end with one sender: a second one only
    adds loss), once per RPS setting in rps (off; in: the switch's input port's receive work on the
    switch's CPU, see ReceiveSteering). cases: the keys of the cases to run (empty: all)."""
    rows = []
    installers = {ROUTER_P4: install_router, INA_P4: install_ina}
    cpus = sorted(os.sched_getaffinity(0))
    switch_cpu = cpus[-1] if len(cpus) > 1 else None
    with VethLab() as lab, tempfile.TemporaryDirectory(prefix="softswitch-pps-") as tmp:
        # the native back end: every transmit path with the frame-slot receive ring, the other receive
        # rings with the first transmit path only
        native = [(tx, rx) for rx in native_rx for tx in (native_tx if rx == native_rx[0] else native_tx[:1])]
        runs = [(b, tx, rx) for b in backends for tx, rx in (native if b == "native" else [("ring", "ring")])]
        selected = [c for c in veth_cases(frames) if not cases or c.key in cases]
        for backend, tx, rx in runs:
            for program in dict.fromkeys(c.program for c in selected):
                switch = SoftswitchProcess(lab, program, backend, switch_cpu, tx, rx)
                try:
                    switch.connect()
                    installers[program](switch)
                    seqs = [1, 1]
                    for case in selected:
                        if case.program != program:
                            continue
                        for count in sender_counts if backend == "native" else [1]:
                            # the first sender on the first CPU, a second one shares the switch's
                            sender_cpus = [cpus[i % len(cpus)] if len(cpus) > 1 else None for i in range(count)]
                            for steer in rps:
                                if steer == "in" and switch_cpu is None:
                                    raise BenchError("--rps in needs two CPUs: the switch's and the sender's")
                                with ReceiveSteering(None, lab.ports[IN_PORT], switch_cpu if steer == "in" else None):
                                    row = run_veth_case(
                                        lab, switch, case, seconds, seqs, sender_cpus, Path(tmp), sender_mode, rate
                                    )
                                row["switch_cpu"], row["rps"] = switch_cpu, steer
                                rows.append(row)
                                progress(row)
                finally:
                    switch.stop()
    return rows


# ------------------------------------------------------------------------ veth: what the machine allows


KERNEL_ROUTER = "kernel router"  # RPS off: the forwarding runs in the senders' softirq, on their CPU
KERNEL_ROUTER_RPS = "kernel router, rps in"  # its input's receive work on the other CPU: two CPUs, as the switch


class KernelRouterLab:
    """The kernel as the IPv4 router, for comparison with the switch: sender namespace -- veth -- router
    namespace (ip_forward, an address on each side, the router's MAC on its input, a permanent neighbour
    entry for the receiver) -- veth -- receiver namespace. The router case's frames cross it unchanged
    and the receiving interface counts them, as behind the switch."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.sender_ns, self.router_ns, self.receiver_ns = f"ppsks{tag}", f"ppskr{tag}", f"ppskx{tag}"
        self._namespaces: list[str] = []

    def __enter__(self) -> KernelRouterLab:
        try:
            for ns in (self.sender_ns, self.router_ns, self.receiver_ns):
                sh("ip", "netns", "add", ns)
                self._namespaces.append(ns)
                for conf in ("all", "default"):  # no IPv6 chatter (router solicitations, MLD) to count
                    sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{conf}.disable_ipv6=1", check=False)
            router = ("ip", "netns", "exec", self.router_ns)
            for ns, inside in ((self.sender_ns, "in0"), (self.receiver_ns, "out0")):
                sh(*router, "ip", "link", "add", inside, "type", "veth", "peer", "name", "eth0", "netns", ns)
                sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
            sh(*router, "ip", "link", "set", "in0", "address", ROUTER_MAC)
            sh(*router, "ip", "addr", "add", f"{SENDER_IP.rsplit('.', 1)[0]}.254/24", "dev", "in0")
            sh(*router, "ip", "addr", "add", f"{RECEIVER_IP.rsplit('.', 1)[0]}.254/24", "dev", "out0")
            for link in ("in0", "out0"):
                sh(*router, "ip", "link", "set", link, "up")
            for conf in ("all", "default", "in0"):
                sh(*router, "sysctl", "-qw", f"net.ipv4.conf.{conf}.rp_filter=0")
            sh(*router, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            sh(*router, "ip", "neigh", "add", RECEIVER_IP, "lladdr", RECEIVER_MAC, "dev", "out0", "nud", "permanent")
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        for ns in self._namespaces:  # deleting a namespace deletes its veths
            sh("ip", "netns", "del", ns, check=False)
        self._namespaces = []

    def __exit__(self, *exc) -> None:
        self.close()

    def delivered(self) -> int:
        out = sh("ip", "netns", "exec", self.receiver_ns, "cat", "/sys/class/net/eth0/statistics/rx_packets").stdout
        return int(out.strip())


def _settled(count, poll: float = 0.05) -> tuple[int, float]:
    """Polls count() until it stops moving; returns its last value and when it last moved."""
    last, t_done = None, time.monotonic()
    while True:
        value = count()
        if value == last:
            return last, t_done
        last, t_done = value, time.monotonic()
        time.sleep(poll)


def measure_baselines(frames: Frames, seconds: float, sender_counts: list[int], progress,
                      sender_mode: str = "ring") -> list[dict]:  # fmt: skip
    """The router case's frames without the switch, on the same machine in the same run: the senders
    alone into the switch-side veth with no switch behind it (the peer's stack drops every frame as not
    for the host: what a frame costs its sender before any switch reads it); the same with that veth
    down (the sender's qdisc drops each frame: the difference is what delivering a frame into a host
    that drops it costs, as the switch's output costs it behind the switch); and the kernel forwarding
    them as the router (its forwarding runs in the senders' softirq). `delivered`: what the switch-side
    veth received (the two sender-alone cases; `link_drops`: what the sender's veth dropped instead) or
    the receiver got (the router). Once per number of senders (the
    first on the first CPU, a second on the last, where the switch would run); the peer-down case
    always with sendmmsg (a transmit ring past the qdisc would see each frame refused), and so the
    senders alone with sendmmsg too. The kernel router twice: RPS off (its forwarding in the senders'
    softirq, on their CPU: one CPU, where the switch has two) and, with two CPUs, RPS in (its input's
    receive work, the forwarding, on the last CPU, where the switch runs: two CPUs, as the switch)."""
    case = next(c for c in veth_cases(frames) if c.key == "ipv4_router_forward")
    cpus = sorted(os.sched_getaffinity(0))
    rows = []
    with tempfile.TemporaryDirectory(prefix="softswitch-pps-") as tmp:
        runs = [("sender alone", sender_mode)]
        if sender_mode != "sendmmsg":  # the peer-down case's sender, for the difference
            runs.append(("sender alone", "sendmmsg"))
        runs += [("sender alone, peer down", "sendmmsg")]
        runs += [(KERNEL_ROUTER, sender_mode)] + ([(KERNEL_ROUTER_RPS, sender_mode)] if len(cpus) > 1 else [])
        for name, mode in runs:
            router = name.startswith(KERNEL_ROUTER)
            lab = KernelRouterLab() if router else VethLab()
            steer_cpu = cpus[-1] if name == KERNEL_ROUTER_RPS else None
            steering = ReceiveSteering(lab.router_ns, "in0", steer_cpu) if isinstance(lab, KernelRouterLab) else None
            with lab, steering or contextlib.nullcontext():
                if name.endswith("peer down"):
                    sh("ip", "link", "set", lab.ports[IN_PORT], "down")
                for count in sender_counts:
                    sender_cpus = [cpus[i % len(cpus)] if len(cpus) > 1 else None for i in range(count)]
                    delivered0, drops0 = lab.delivered(), lab.link_drops() if not router else 0
                    snapshot0 = CpuSnapshot(None)
                    sent = run_senders(lab.sender_ns, case, seconds, [1, 1], sender_cpus, Path(tmp), mode)
                    delivered, t_done = _settled(lambda lab=lab, base=delivered0: lab.delivered() - base)
                    link_drops = lab.link_drops() - drops0 if not router else None
                    snapshot1 = CpuSnapshot(None)
                    send_time = sent["t_end"] - sent["t_start"]
                    row = {
                        "baseline": name,
                        # how many CPUs the kernel router could forward on: 1 (RPS off: the senders'), 2 (RPS in)
                        "router_cpus": (2 if steer_cpu is not None else 1) if router else None,
                        "senders": count,
                        "sender_cpus": sender_cpus,
                        "sender_path": sent["sender_path"],
                        "sent": sent["sent"],
                        "send_errors": sent["send_errors"],
                        "offered_pps": sent["sent"] / send_time if send_time > 0 else 0.0,
                        "delivered": delivered,
                        "delivered_pps": delivered / (t_done - sent["t_start"]) if delivered else None,
                        "link_drops": link_drops,
                        "sender_cpu_us_per_frame": 1e6 * sent["cpu_seconds"] / sent["sent"] if sent["sent"] else None,
                        "machine_busy_pct": snapshot1.busy_pct(snapshot0),
                        "cpu_accounting": snapshot1.accounting(
                            snapshot0, delivered or sent["sent"], sent["sent"], sent["cpu_seconds"]
                        ),
                    }
                    rows.append(row)
                    progress(row)
    return rows


ROUTER_CPUS = {1: ", forwarding on the senders' CPU only", 2: ", forwarding on the other CPU too (RPS)"}


def print_baseline_row(row: dict) -> None:
    delivered = f", delivered {row['delivered']:,} at {row['delivered_pps']:,.0f} pps" if row["delivered"] else ""
    where = ROUTER_CPUS.get(row.get("router_cpus"), "")
    print(
        f"  [baseline] {row['baseline']} ({row['senders']} sender(s), {row['sender_path']}{where}): offered "
        f"{row['offered_pps']:,.0f} pps{delivered}; sender CPU {_fmt(row['sender_cpu_us_per_frame'], '.2f')} us per "
        f"frame; machine {row['machine_busy_pct']:.0f}% busy",
        flush=True,
    )


# ---------------------------------------------------------------------------------- reporting


def _fmt(value, spec: str = ",.0f") -> str:
    return "-" if value is None else format(value, spec)


def print_accounting(label: str, acct: dict) -> None:
    """Where a case's CPU time went, per frame, and what it allows."""
    threads = ", ".join(f"{name} {us:.2f}" for name, us in sorted(acct["switch_threads_us_per_frame"].items()))
    cpus = "; ".join(
        f"cpu{cpu} busy {100 - c['idle_pct']:.0f}% (user {c['user_pct']:.0f}, system {c['system_pct']:.0f}, "
        f"softirq {c['softirq_pct']:.0f})"
        for cpu, c in acct["cpus"].items()
    )
    sleeps = acct["io_thread_sleeps_per_1000_frames"]
    print(
        f"  {label}: us per frame: sender {acct['sender_us_per_frame']:.2f}"
        + (f", switch threads: {threads}" if threads else "")
        + f", ksoftirqd {acct['ksoftirqd_us_per_frame']:.2f}, rest of the machine "
        f"{acct['rest_of_machine_us_per_frame']:.2f}; {cpus}; backlog drops "
        f"{acct['backlog_drops']:,}"
        + (f"; I/O thread slept {sleeps:.2f} times per 1000 frames" if sleeps is not None and threads else "")
        + f"; these CPU costs allow at most {_fmt(acct['bound_pps'])} frames/s on {len(acct['cpus'])} CPUs, the "
        f"senders' alone {_fmt(acct['sender_core_pps'])} per core"
    )


# where softirq time lands, by irq_time_accounting() (CONFIG_IRQ_TIME_ACCOUNTING set, unset, unknown)
SOFTIRQ_SHARE = {
    False: "softirqs run in their context included (IRQ_TIME_ACCOUNTING unset; a softirq on an idle CPU lands "
    "in the rest of the machine)",
    True: "softirqs excluded (IRQ_TIME_ACCOUNTING set: all softirq time lands in the rest of the machine)",
    None: "softirqs in their context included unless the kernel has IRQ_TIME_ACCOUNTING (its config unreadable)",
}


def print_in_process_row(row: dict) -> None:
    print(
        f"  [{row['backend']:>6}] {row['label']:<40} {row['pps_median']:>11,.0f} pps  (min {row['pps_min']:,.0f}, "
        f"max {row['pps_max']:,.0f}, {row['us_per_packet']:.2f} us/pkt)",
        flush=True,
    )


def _backend_label(row: dict) -> str:
    """native/ring, native/sendmmsg or python (native/ring/rx-block with the block receive ring, rx-ring with
    the hybrid; no suffix: the default, frame slots)."""
    if not row.get("switch_tx"):
        return row["backend"]
    rx = f"/rx-{row['switch_rx']}" if row.get("switch_rx") not in (None, DEFAULT_RX) else ""
    rps = "/rps-in" if row.get("rps") == "in" else ""
    return f"{row['backend']}/{row['switch_tx']}{rx}{rps}"


def print_veth_row(row: dict) -> None:
    print(
        f"  [{_backend_label(row)}] {row['case']} ({row['senders']} sender(s)): offered {row['offered_pps']:,.0f} pps, switch processed "
        f"{row['processed']:,} at {row['processed_pps']:,.0f} pps, delivered {row['delivered']:,} of "
        f"{row['expected_delivered']:,}; CPU per frame: switch {_fmt(row['switch_cpu_us_per_frame'], '.2f')} us, "
        f"sender {_fmt(row['sender_cpu_us_per_frame'], '.2f')} us; machine {row['machine_busy_pct']:.0f}% busy",
        flush=True,
    )


def comparisons(result: dict) -> dict:
    """native / python per kind, in process and through veth, and the issue's targets met or not."""
    out: dict = {"in_process": {}, "veth": {}, "targets": {}}
    by = {(r["backend"], r["kind"]): r["pps_median"] for r in result["in_process"]}
    for kind in KIND_LABELS:
        if ("native", kind) in by and ("python", kind) in by:
            out["in_process"][kind] = by[("native", kind)] / by[("python", kind)]
    veth: dict = {}
    tx_cpu: dict = {}
    rx_cpu: dict = {}  # the native switch's CPU per frame with the transmit ring, by receive ring
    rx_pps: dict = {}  # what each receive path processed, with the transmit ring
    for r in result["veth"]["cases"]:  # the best of the sender counts; native: its default paths; RPS off
        if r.get("rps", "off") != "off":
            continue
        if r.get("switch_tx") == "ring" and r["switch_cpu_us_per_frame"]:
            rx_cpu.setdefault((r.get("switch_rx") or "ring", r["kind"]), []).append(r["switch_cpu_us_per_frame"])
        if r.get("switch_tx") == "ring":
            path = rx_pps.setdefault(r.get("switch_rx") or "ring", {})
            path[r["kind"]] = max(path.get(r["kind"], 0.0), r["processed_pps"])
        if (r.get("switch_rx") or DEFAULT_RX) != DEFAULT_RX:
            continue
        if r.get("switch_tx") and r["switch_tx"] != "ring":
            if r["switch_cpu_us_per_frame"]:
                tx_cpu.setdefault(("sendmmsg", r["kind"]), []).append(r["switch_cpu_us_per_frame"])
            continue
        key = (r["backend"], r["kind"])
        veth[key] = max(veth.get(key, 0.0), r["processed_pps"])
        if r.get("switch_tx") and r["switch_cpu_us_per_frame"]:
            tx_cpu.setdefault(("ring", r["kind"]), []).append(r["switch_cpu_us_per_frame"])
    # the native switch's CPU per frame, ring over sendmmsg (mean over the sender counts): below 1 is cheaper
    out["veth_ring_over_sendmmsg_cpu"] = {
        kind: statistics.mean(tx_cpu[("ring", kind)]) / statistics.mean(tx_cpu[("sendmmsg", kind)])
        for (path, kind) in tx_cpu
        if path == "ring" and ("sendmmsg", kind) in tx_cpu
    }
    # ... and with the block ring and the hybrid over the frame-slot ring, and what each processed
    for other in ("block", "hybrid"):
        out[f"veth_{other}_over_ring_cpu"] = {
            kind: statistics.mean(rx_cpu[(other, kind)]) / statistics.mean(rx_cpu[("ring", kind)])
            for (path, kind) in rx_cpu
            if path == other and ("ring", kind) in rx_cpu
        }
        out[f"veth_{other}_rx_pps"] = rx_pps.get(other, {})
    out["veth_ring_rx_pps"] = rx_pps.get("ring", {})
    # what delivering a frame into a host that drops it costs the sending thread (the sink's share)
    alone = {
        (b["senders"], b["sender_path"], b["baseline"]): b["sender_cpu_us_per_frame"]
        for b in result["veth"].get("baselines", [])
    }
    out["sink_us_per_frame"] = {
        senders: alone[(senders, path, "sender alone")] - cpu
        for (senders, path, name), cpu in alone.items()
        if name.endswith("peer down") and (senders, path, "sender alone") in alone
    }
    # the native switch's router rate over the kernel router's, each way the kernel ran (one CPU, two)
    routers = {b["baseline"]: b["delivered_pps"] for b in result["veth"].get("baselines", []) if b.get("router_cpus")}
    out["veth_router_over_kernel_router"] = {
        name: veth[("native", "ipv4_router_forward")] / pps
        for name, pps in routers.items()
        if pps and veth.get(("native", "ipv4_router_forward"))
    }
    for case in ("ipv4_router_forward", "grad_aggregation", "grad_passthrough"):
        if veth.get(("native", case)) and veth.get(("python", case)):
            out["veth"][case] = veth[("native", case)] / veth[("python", case)]
    t = out["targets"]
    if ("native", "grad_aggregation") in by:
        t["in_process_grad_aggregation_pps"] = by[("native", "grad_aggregation")]
    if veth.get(("native", "grad_aggregation")):
        t["veth_grad_aggregation_pps"] = veth[("native", "grad_aggregation")]
    if veth.get(("native", "ipv4_router_forward")):
        t["veth_router_pps"] = veth[("native", "ipv4_router_forward")]
    ratios = [out["in_process"].get("grad_aggregation"), out["veth"].get("grad_aggregation")]
    if all(ratios):
        t["native_over_python"] = min(ratios)
    out["targets_met"] = {k: v >= TARGETS[k] for k, v in t.items()}
    return out


def print_tables(result: dict) -> None:
    print()
    print(
        f"softswitch packets per second, K = {result['values_per_packet']} values per INA packet, "
        f"{result['machine']['cpus']} CPUs, load average {result['machine']['load_average_at_start'][0]:.2f} at "
        f"start and {result['machine']['load_average_at_end'][0]:.2f} at the end, git {result['git']['head']}"
        + (" (softswitch/ or p4src/ modified)" if result["git"]["softswitch_or_p4src_uncommitted_changes"] else "")
    )
    print()
    print(
        "In process (median of the repetitions; python: Switch.process per frame, native: process_batch; "
        "CPU time of the calling thread)"
    )
    print(f"{'packet kind':<40} {'bytes':>5} {'python pps':>11} {'native pps':>11} {'native/python':>13}")
    rows = {(r["backend"], r["kind"]): r for r in result["in_process"]}
    for kind, label in KIND_LABELS.items():
        p, n = rows.get(("python", kind)), rows.get(("native", kind))
        ratio = result["comparison"]["in_process"].get(kind)
        size = (p or n)["frame_bytes"] if (p or n) else 0
        print(
            f"{label:<40} {size:>5} {_fmt(p and p['pps_median']):>11} {_fmt(n and n['pps_median']):>11} "
            f"{_fmt(ratio, '.1f'):>12}x"
        )
    print()
    veth = result["veth"]
    if veth["skipped"]:
        print(f"Through veth ports: skipped: {veth['skipped']}")
    else:
        print(
            "Through veth ports (softswitch process on the last CPU, native: ring or sendmmsg transmit path; tx = "
            "native senders as fast as they can, the first on the first CPU, a second on the switch's; proc pps = "
            "frames the switch processed per second; CPU us per frame of the switch process (sw) and of the senders "
            "(tx); sw/core = 1 / sw us, what one core would sustain)"
        )
        print(
            f"{'case':<28} {'backend':<20} {'tx':>2} {'offered':>9} {'proc pps':>9} {'delivered':>9} {'expected':>9} "
            f"{'in loss%':>8} {'sw us':>6} {'sw/core':>9} {'tx us':>6} {'busy%':>6}"
        )
        for row in veth["cases"]:
            print(
                f"{row['case']:<28} {_backend_label(row):<20} {row['senders']:>2} {row['offered_pps']:>9,.0f} "
                f"{row['processed_pps']:>9,.0f} {row['delivered']:>9,} {row['expected_delivered']:>9,} "
                f"{row['input_loss_pct']:>8.1f} {_fmt(row['switch_cpu_us_per_frame'], '.2f'):>6} "
                f"{_fmt(row.get('switch_core_pps')):>9} {_fmt(row['sender_cpu_us_per_frame'], '.2f'):>6} "
                f"{row['machine_busy_pct']:>6.0f}"
            )
        print(
            "Where the CPU went (us per frame: the senders per frame sent, the rest per frame processed; senders "
            f"and switch threads: their CPU time, {SOFTIRQ_SHARE[result['machine'].get('irq_time_accounting')]}; "
            "rest of the machine: every other busy CPU second; ksoftirqd: softirq work the kernel put off to its "
            "threads; bound: CPUs / (sender + switch + ksoftirqd us per frame))"
        )
        for row in veth["cases"]:
            if "cpu_accounting" in row:
                print_accounting(
                    f"{row['case']}, {_backend_label(row)}, {row['senders']} sender(s)", row["cpu_accounting"]
                )
        if veth.get("baselines"):
            print("Baselines: the router case's frames without the switch (same senders, same run)")
            for row in veth["baselines"]:
                print_baseline_row(row)
            for row in veth["baselines"]:
                if "cpu_accounting" in row:
                    print_accounting(f"{row['baseline']}, {row['senders']} sender(s)", row["cpu_accounting"])
            for name, ratio in result["comparison"].get("veth_router_over_kernel_router", {}).items():
                cpus = next(b["router_cpus"] for b in veth["baselines"] if b["baseline"] == name)
                print(
                    f"  native switch (two CPUs) / {name} ({'one CPU' if cpus == 1 else 'two CPUs'}), router "
                    f"frames/s: {ratio:.2f}"
                )
            for senders, cost in result["comparison"].get("sink_us_per_frame", {}).items():
                print(
                    f"  delivering a frame into a host that drops it (sender alone, peer up minus peer down, "
                    f"sendmmsg, {senders} sender(s)): {cost:.2f} us of the sending thread's CPU"
                )
        for kind, ratio in result["comparison"].get("veth_ring_over_sendmmsg_cpu", {}).items():
            print(f"  native switch CPU per frame, transmit ring / sendmmsg, {kind}: {ratio:.2f}")
        for other, name in (("block", "block receive ring"), ("hybrid", "hybrid receive path")):
            for kind, ratio in result["comparison"].get(f"veth_{other}_over_ring_cpu", {}).items():
                print(
                    f"  native switch CPU per frame, {name} / frame-slot ring, {kind}: {ratio:.2f} ({other} processed "
                    f"{result['comparison'][f'veth_{other}_rx_pps'].get(kind, 0):,.0f} pps, frame slots "
                    f"{result['comparison']['veth_ring_rx_pps'].get(kind, 0):,.0f})"
                )
        print(
            "  delivered = frames counted by the receiving interface (for aggregation one per complete chunk of 4 "
            "GRADs). in loss% = frames sent that the switch never processed (its ring was full: the rate is its "
            "capacity, or the sender's when there is no loss)."
        )
    print()
    targets = result["comparison"]["targets"]
    for key, value in targets.items():
        met = "met" if result["comparison"]["targets_met"][key] else "NOT met"
        unit = "x" if key == "native_over_python" else " pps"
        print(f"target {key}: {value:,.1f}{unit} (issue 10 asks {TARGETS[key]:,}{unit}): {met}")
    print(REFERENCE_NOTE)


def save(result: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, png_path = out_dir / "softswitch_pps.json", out_dir / "softswitch_pps.png"
    json_path.write_text(json.dumps(result, indent=2))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    veth_rows = result["veth"]["cases"]
    fig, axes = plt.subplots(1, 2 if veth_rows else 1, figsize=(14 if veth_rows else 7, 5.5), squeeze=False)
    colors = {"python": "#4c72b0", "native": "#dd8452"}

    def bars(ax, labels, values_by_backend, title):
        ys = range(len(labels))
        for i, backend in enumerate(BACKENDS):
            values = values_by_backend.get(backend)
            if values:
                ax.barh(
                    [y + (i - 0.5) * 0.4 for y in ys], values, 0.4, label=f"{backend} back end", color=colors[backend]
                )
        ax.set_yticks(list(ys), labels, fontsize=8)
        ax.set_xscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # decades only: minor labels overlap
        ax.set_xlabel("packets per second (log)")
        ax.set_title(title, fontsize=10)
        ax.axvline(BMV2_REFERENCE_PPS, color="k", linestyle="--", linewidth=1)
        ax.invert_yaxis()
        ax.legend(fontsize=8)

    kinds = list(KIND_LABELS)
    rows = {(r["backend"], r["kind"]): r["pps_median"] for r in result["in_process"]}
    bars(
        axes[0][0],
        [KIND_LABELS[k].replace(" (", "\n(") for k in kinds],
        {b: [rows.get((b, k), 0) for k in kinds] for b in BACKENDS if any((b, k) in rows for k in kinds)},
        "In process (dashed: BMv2's ~100k pps reference)",
    )
    if veth_rows:
        cases = list(dict.fromkeys(r["case"] for r in veth_rows))
        v: dict = {}
        for r in veth_rows:
            if r.get("switch_tx") not in (None, "ring") or r.get("switch_rx") not in (None, DEFAULT_RX):
                continue  # the native back end's default path only
            v[(r["backend"], r["case"])] = max(v.get((r["backend"], r["case"]), 0.0), r["processed_pps"])
        bars(
            axes[0][1],
            cases,
            {b: [v.get((b, c), 0) for c in cases] for b in BACKENDS if any((b, c) in v for c in cases)},
            "Through veth ports: frames the switch processed per second",
        )
    load = result["machine"]["load_average_at_start"][0]
    fig.suptitle(
        f"softswitch, both back ends, K = {result['values_per_packet']}, {result['machine']['cpus']} CPUs "
        f"(load {load:.1f}), git {result['git']['head']}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return json_path, png_path


# --------------------------------------------------------------------------------------- main


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="softswitch packets per second on both back ends, in process and via veth.")
    p.add_argument("--quick", action="store_true", help="a fast run (short cases, fewer repetitions)")
    p.add_argument("--seconds", type=float, default=None,
                   help="duration of each case: in-process repetitions together, each veth case's sending "
                   "(default 3, quick 0.3)")  # fmt: skip
    p.add_argument("--repeats", type=int, default=None, help="in-process repetitions (default 5, quick 2)")
    add_deprecated(p, "--repetitions", "--repeats", "repeats", type=int)
    p.add_argument("--backends", default="native,python", help="comma-separated back ends (default native,python)")
    p.add_argument("--no-veth", action="store_true", help="skip the veth part")
    p.add_argument("--no-in-process", action="store_true", help="skip the in-process part")
    p.add_argument(
        "--cases",
        default=None,
        help=f"veth cases to run, comma-separated (default all: {','.join(VETH_CASE_KEYS)})",
    )
    p.add_argument(
        "--senders",
        default=None,
        help="numbers of sender processes to run the native veth cases with, e.g. 1,2 (default: 1,2 on 2+ CPUs, "
        "quick: 1); a second sender shares the switch's CPU and aggregates its own job",
    )
    p.add_argument(
        "--native-tx",
        default=None,
        help="the native back end's transmit paths to run side by side: ring (PACKET_MMAP, the default path) "
        "and/or sendmmsg (default ring,sendmmsg; quick: ring)",
    )
    p.add_argument(
        "--native-rx",
        default=None,
        help="the native back end's receive paths to run side by side: hybrid (frame slots, moved to blocks while "
        "the rate fills them), ring (frame slots only, TPACKET_V2: the default path) and/or block (TPACKET_V3 blocks "
        "handed over when full or after 1 ms) (default hybrid,ring,block; quick: ring)",
    )
    p.add_argument(
        "--rps",
        default="off",
        help="RPS settings to run side by side: off (the default) and/or in (the receive work of the switch's input "
        "port on the switch's CPU instead of the sender's; the interface's setting is restored after each case; --baselines "
        "runs the kernel router both ways whatever this says)",
    )
    p.add_argument(
        "--sender",
        choices=("ring", "sendmmsg"),
        default="sendmmsg",
        help="how the senders write frames: sendmmsg (default: on a quiet machine it offers 445k frames/s against "
        "the ring's 390k, side by side), or a transmit ring past the qdisc, its frames built once, 256 per system call",
    )
    p.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="frames/s per sender (default 0: as fast as it can); a paced run shows the switch's CPU per frame "
        "when frames arrive in small batches, as in an allreduce on shaped links",
    )
    p.add_argument(
        "--baselines",
        action="store_true",
        help="also measure the router case's frames without the switch, in the same run: the senders alone into "
        "a veth with nothing behind it, and the kernel as the router (namespaces; root)",
    )
    p.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON and PNG (bench/results)")
    # internal: the sender process inside the sender's namespace
    p.add_argument("--role", choices=("send",), help=argparse.SUPPRESS)
    p.add_argument("--iface", help=argparse.SUPPRESS)
    p.add_argument("--templates", help=argparse.SUPPRESS)
    p.add_argument("--seq-at", type=int, default=SEQ_AT, help=argparse.SUPPRESS)
    p.add_argument("--pool-size", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--seq0", type=int, default=1, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.seconds is not None and args.seconds <= 0:
        p.error(f"--seconds must be positive, got {args.seconds}")
    if args.repeats is not None and args.repeats < 1:
        p.error(f"--repeats must be at least 1, got {args.repeats}")
    if args.native_tx is None:
        args.native_tx = "ring" if args.quick else "ring,sendmmsg"
    args.native_tx = tuple(t.strip() for t in args.native_tx.split(",") if t.strip())
    if not args.native_tx or any(t not in ("ring", "sendmmsg") for t in args.native_tx):
        p.error(f"--native-tx takes ring and/or sendmmsg, got {args.native_tx}")
    if args.native_rx is None:
        args.native_rx = DEFAULT_RX if args.quick else "hybrid,ring,block"
    args.native_rx = tuple(t.strip() for t in args.native_rx.split(",") if t.strip())
    if not args.native_rx or any(t not in ("hybrid", "ring", "block") for t in args.native_rx):
        p.error(f"--native-rx takes hybrid, ring and/or block, got {args.native_rx}")
    args.rps = tuple(t.strip() for t in args.rps.split(",") if t.strip())
    if not args.rps or any(t not in RPS_SETTINGS for t in args.rps):
        p.error(f"--rps takes off and/or in, got {','.join(args.rps)}")
    if "in" in args.rps and len(os.sched_getaffinity(0)) < 2:
        p.error("--rps in moves the switch's input receive work to the switch's CPU, away from the sender's: it "
                "needs two CPUs, and this process may use one")  # fmt: skip
    args.cases = tuple(c.strip() for c in (args.cases or ",".join(VETH_CASE_KEYS)).split(",") if c.strip())
    if not args.cases or any(c not in VETH_CASE_KEYS for c in args.cases):
        p.error(f"--cases takes some of {','.join(VETH_CASE_KEYS)}, got {','.join(args.cases)}")
    args.backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    unknown = [b for b in args.backends if b not in BACKENDS]
    if unknown or not args.backends:
        p.error(f"--backends takes native and/or python, got {args.backends}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.role == "send":
        templates = [bytes.fromhex(h) for h in json.loads(Path(args.templates).read_text())]
        print(
            json.dumps(
                role_send(
                    args.iface, templates, args.seq_at, args.pool_size, args.seq0, args.seconds, args.sender, args.rate
                )
            )
        )
        return 0

    sys.path.insert(0, str(ROOT))
    seconds = args.seconds if args.seconds is not None else (0.3 if args.quick else 3.0)
    reps = args.repeats or (2 if args.quick else 5)
    if args.senders:
        senders = [int(x) for x in args.senders.split(",")]
    else:
        senders = [1] if args.quick or (os.cpu_count() or 1) < 2 else [1, 2]
    load = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start "
        "(other work on the machine lowers every figure)"
    )
    try:
        frames, wide_frames = Frames(), Frames(WIDE_K)
        result = {
            "bench": "softswitch_pps",
            "mode": "quick" if args.quick else "full",
            "seconds": seconds,
            "backends": args.backends,
            "native_tx": list(args.native_tx),
            "native_rx": list(args.native_rx),
            "rps": list(args.rps),
            "sender": args.sender,
            "sender_rate": args.rate,
            "values_per_packet": frames.C.VALUES_PER_PACKET,
            "fan_in": FAN_IN,
            "pool_size": POOL,
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "load_average_at_start": os.getloadavg(),
                # where softirq time lands in the CPU accounting (SOFTIRQ_SHARE)
                "irq_time_accounting": irq_time_accounting(),
            },
            "git": _git_state(),
            "bmv2_reference_pps": BMV2_REFERENCE_PPS,
            "reference_note": REFERENCE_NOTE,
            "targets": TARGETS,
            "in_process": [],
            "veth": {"skipped": None, "cases": [], "baselines": []},
        }
        for backend in [] if args.no_in_process else args.backends:
            print(f"[in process] {backend} back end: {seconds:g} s per repetition set, {reps} repetitions", flush=True)
            result["in_process"] += measure_in_process(
                backend, frames, wide_frames, seconds, reps, print_in_process_row
            )
        why = "disabled with --no-veth" if args.no_veth else veth_unavailable()
        if why:
            result["veth"]["skipped"] = why
            print(f"[veth] skipped: {why}")
        else:
            print(f"[veth] {seconds:g} s per case, two namespaces, a softswitch process per program ...", flush=True)
            try:
                result["veth"]["cases"] = measure_veth(
                    frames,
                    args.backends,
                    seconds,
                    senders,
                    print_veth_row,
                    args.native_tx,
                    args.sender,
                    args.rate,
                    args.cases,
                    args.native_rx,
                    args.rps,
                )
            except (BenchError, OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
                result["veth"]["skipped"] = f"failed: {e}"
                print(f"[veth] failed: {e}")
            if args.baselines and not result["veth"]["skipped"]:
                print("[veth] baselines: the same frames without the switch ...", flush=True)
                try:
                    result["veth"]["baselines"] = measure_baselines(
                        frames, seconds, senders, print_baseline_row, args.sender
                    )
                except (BenchError, OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
                    print(f"[veth] baselines failed: {e}")
        result["machine"]["load_average_at_end"] = os.getloadavg()
        result["comparison"] = comparisons(result)
        print_tables(result)
        json_path, png_path = save(result, args.out)
        print(f"saved {json_path} and {png_path}")
    except BenchError as e:
        print(f"softswitch_pps: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("softswitch_pps: interrupted", file=sys.stderr)
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
