"""Packets per second of softswitch, in process and through veth ports.

Two programs: a plain IPv4 router (tests/softswitch/programs/ipv4_router.p4: LPM, MAC rewrite, TTL,
checksum check and update) and p4src/ina.p4 with K = 64 values per packet.

* In process: ``Switch.process`` on pre-built frames, each call timed, warm-up excluded, a few
  repetitions, median. ina.p4 runs one job with fan-in 4 at one switch: per chunk 3 GRADs are
  absorbed, the 4th completes the sum and leaves, then 4 unicast RESULTs release the slot and go down.
  Also GRADs on a pass-through hop (another job, aggregates=0) and non-INA UDP on ina.p4's ipv4_lpm.
* Through veth ports (root only): two network namespaces, one veth pair each; a ``softswitch`` process
  on the switch-side ends (-i 1@... -i 2@...), entries installed over P4Runtime (controller/p4rt.py);
  a sender in one namespace writes frames with an AF_PACKET socket for --seconds, paced at half the
  in-process rate and then as fast as it can, a receiver in the other counts what comes out.

Prints a table (with progress lines as cases finish) and saves bench/results/softswitch_pps.json and
.png. BMv2's maintainers quote about 100k packets/s for simple programs on an optimised build; the
ratios printed are against that figure, for a Python target on this machine.

    .venv/bin/python bench/softswitch_pps.py [--quick] [--seconds 3] [--no-veth] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import select
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
RESULTS = ROOT / "bench" / "results"
INA_P4 = ROOT / "p4src" / "ina.p4"
ROUTER_P4 = ROOT / "tests" / "softswitch" / "programs" / "ipv4_router.p4"

BMV2_REFERENCE_PPS = 100_000
REFERENCE_NOTE = (
    "BMv2's maintainers quote ~100k packets/s for simple programs in an optimised build "
    "(simple_switch, native C++). These figures are for softswitch, a Python target, on this "
    f"{os.cpu_count()}-core machine; the ratio says how far from that reference it is, not parity. "
    "In-process rates leave out packet I/O (BMv2's figure includes it): compare the veth rates."
)

# Addresses: only inside the benchmark's own namespaces (and in process).
SENDER_MAC, RECEIVER_MAC, ROUTER_MAC = "02:00:00:00:0a:01", "02:00:00:00:0b:01", "02:00:00:00:00:fe"
SENDER_IP, RECEIVER_IP = "10.0.1.1", "10.0.2.1"
IN_PORT, OUT_PORT = 1, 2  # workers (sender) on port 1, server side (receiver) on port 2
SWITCH_ID, AGG_JOB, PASS_JOB = 1, 7, 8
FAN_IN, POOL = 4, 64
PLAIN_SRC_PORT, PLAIN_DST_PORT = 5000, 5001

# Byte offsets in an Ethernet/IPv4(no options)/UDP/INA frame: seq (32 bits) then shadow:1 slot:15.
INA_AT = 14 + 20 + 8
SEQ_AT = INA_AT + 6
_SEQ_SLOT = struct.Struct("!IH")

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
SO_RCVBUFFORCE = 33


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
    """Templates of every packet kind, built with protocol/codec.py (seq 0, patched per chunk)."""

    def __init__(self):
        import numpy as np

        from protocol import codec
        from protocol import constants as C
        from protocol.codec import Hop

        self.codec, self.C = codec, C
        server = C.HOST_NODE_ID_BASE + 1
        k = C.VALUES_PER_PACKET
        self.values = [np.arange(k, dtype=np.int32) * 3 + child for child in range(FAN_IN)]
        self.sum = sum(v.astype(np.int64) for v in self.values)
        up = dict(src_mac=SENDER_MAC, dst_mac=RECEIVER_MAC, src_ip=SENDER_IP, dst_ip=RECEIVER_IP)
        down = dict(src_mac=RECEIVER_MAC, dst_mac=SENDER_MAC, src_ip=RECEIVER_IP, dst_ip=SENDER_IP)
        self.grads = [
            codec.build_frame(
                codec.grad(
                    AGG_JOB,
                    0,
                    [Hop(SWITCH_ID, True, FAN_IN, child, OUT_PORT), Hop(server, True, 1, 0, 0)],
                    self.values[child],
                    contributor=child,
                ),
                **up,
            )
            for child in range(FAN_IN)
        ]
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
            )
            for child in range(FAN_IN)
        ]
        self.passthrough = codec.build_frame(
            codec.grad(
                PASS_JOB, 0, [Hop(SWITCH_ID, False, 0, 0, OUT_PORT), Hop(server, True, 1, 0, 0)], self.values[0]
            ),
            **up,
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


# ------------------------------------------------------------------------------------ in process


def _router_switch():
    from softswitch.compiler import compile_program
    from softswitch.switch import Lpm, Switch, TableEntry

    sw = Switch(compile_program(str(ROUTER_P4)), device_id=1)
    sw.table("MyIngress.ipv4_lpm").insert(
        TableEntry(
            {"hdr.ipv4.dstAddr": Lpm(_ip(RECEIVER_IP) & 0xFFFFFF00, 24)},
            "MyIngress.ipv4_forward",
            {"dstAddr": _mac(RECEIVER_MAC), "port": OUT_PORT},
        )
    )
    return sw


def _ina_switch():
    from softswitch.compiler import compile_program
    from softswitch.switch import Exact, Lpm, Switch, TableEntry

    sw = Switch(compile_program(str(INA_P4)), device_id=SWITCH_ID)
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


def ina_job_entries() -> list[dict]:
    """The aggregating job (fan-in 4, pool 64, job_index 1) and the pass-through job (job_index 2)."""
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


class InProcessCase:
    """One switch and a generator of work units; a unit is a list of (kind, port, frame, frames out)."""

    def __init__(
        self, name: str, program: str, switch, unit, combined: dict[str, tuple[str, ...]] | None = None, verify=None
    ):
        self.name, self.program, self.switch, self.unit = name, program, switch, unit
        self.combined = combined or {}
        self.verify = verify or (lambda: None)


def in_process_cases(frames: Frames) -> list[InProcessCase]:
    router, ina = _router_switch(), _ina_switch()
    plain_ina = frames.codec.build_udp_frame(
        bytes(len(frames.grads[0]) - INA_AT),
        SENDER_MAC,
        ROUTER_MAC,
        SENDER_IP,
        RECEIVER_IP,
        src_port=PLAIN_SRC_PORT,
        dst_port=PLAIN_DST_PORT,
    )
    seq = [0]

    def chunk():
        seq[0] += 1
        s = seq[0]
        unit = [("grad_absorbed", IN_PORT, bytes(patch_chunk(frames.grads[c], s, POOL)), 0) for c in range(FAN_IN - 1)]
        unit.append(("grad_completing", IN_PORT, bytes(patch_chunk(frames.grads[-1], s, POOL)), 1))
        unit += [("result_release", OUT_PORT, bytes(patch_chunk(r, s, POOL)), 1) for r in frames.results]
        return unit

    def verify_chunk():
        """One more chunk: the sum leaves on the up port with exact values, results go down."""
        outs = [(kind, ina.process(port, frame)) for kind, port, frame, _ in chunk()]
        done = [out for kind, out in outs if kind == "grad_completing"][0]
        if len(done) != 1 or done[0][0] != OUT_PORT:
            raise BenchError(
                f"ina.p4: the completing GRAD gave {[(p, len(f)) for p, f in done]}, "
                f"expected one frame on port {OUT_PORT}"
            )
        _, pkt = frames.codec.parse_frame(done[0][1])
        if [int(v) for v in pkt.values] != [int(v) for v in frames.sum]:
            raise BenchError("ina.p4: the completed sum differs from the sum of the 4 contributions")
        downs = [out for kind, out in outs if kind == "result_release"]
        if any(len(o) != 1 or o[0][0] != IN_PORT for o in downs):
            raise BenchError(f"ina.p4: RESULTs did not all leave on port {IN_PORT}: {downs}")

    return [
        InProcessCase(
            "plain IPv4 forward",
            "tests/softswitch/programs/ipv4_router.p4",
            router,
            lambda: [("ipv4_router_forward", IN_PORT, frames.plain_to_router, 1)],
        ),
        InProcessCase(
            "non-INA UDP on ipv4_lpm", "p4src/ina.p4", ina, lambda: [("ina_ipv4_forward", IN_PORT, plain_ina, 1)]
        ),
        InProcessCase(
            "aggregation, fan-in 4",
            "p4src/ina.p4",
            ina,
            chunk,
            combined={"grad_aggregation": ("grad_absorbed", "grad_completing")},
            verify=verify_chunk,
        ),
        InProcessCase(
            "pass-through hop", "p4src/ina.p4", ina, lambda: [("grad_passthrough", IN_PORT, frames.passthrough, 1)]
        ),
    ]


KIND_LABELS = {
    "ipv4_router_forward": "IPv4 forward (ipv4_router.p4)",
    "ina_ipv4_forward": "non-INA UDP, ipv4_lpm (ina.p4)",
    "grad_absorbed": "GRAD absorbed, 3 of 4 (ina.p4)",
    "grad_completing": "GRAD completing, 4th leaves (ina.p4)",
    "grad_aggregation": "GRAD aggregation, per GRAD (ina.p4)",
    "result_release": "RESULT release + forward (ina.p4)",
    "grad_passthrough": "GRAD pass-through hop (ina.p4)",
}


def _run(switch, packets) -> dict[str, list]:
    """Process ``packets`` one by one, each call timed; per kind [count, seconds, wrong output count]."""
    acc: dict[str, list] = {}
    process, clock = switch.process, time.perf_counter
    for kind, port, frame, expect in packets:
        t0 = clock()
        out = process(port, frame)
        t1 = clock()
        a = acc.get(kind)
        if a is None:
            a = acc[kind] = [0, 0.0, 0]
        a[0] += 1
        a[1] += t1 - t0
        if len(out) != expect:
            a[2] += 1
    return acc


def measure_in_process(case: InProcessCase, seconds: float, reps: int, warm_units: int) -> list[dict]:
    warm = [p for _ in range(warm_units) for p in case.unit()]
    acc = _run(case.switch, warm)
    per_unit = sum(a[1] for a in acc.values()) / warm_units
    units = max(10, int(seconds / reps / per_unit))
    per_rep: list[dict[str, list]] = []
    for _ in range(reps):
        packets = [p for _ in range(units) for p in case.unit()]  # built outside the timing
        per_rep.append(_run(case.switch, packets))
    for acc in per_rep:
        for kind, (count, _, wrong) in acc.items():
            if wrong:
                raise BenchError(
                    f"{case.program}: {wrong} of {count} '{kind}' packets gave an unexpected "
                    "number of output frames (entries or frames are wrong)"
                )
    case.verify()
    rows = []
    kinds = list(per_rep[0]) + list(case.combined)
    for kind in kinds:
        parts = case.combined.get(kind, (kind,))
        rates = [sum(acc[p][0] for p in parts) / sum(acc[p][1] for p in parts) for acc in per_rep]
        median = statistics.median(rates)
        rows.append(
            {
                "kind": kind,
                "label": KIND_LABELS[kind],
                "case": case.name,
                "program": case.program,
                "packets_per_rep": sum(per_rep[0][p][0] for p in parts),
                "repetitions": reps,
                "pps_median": median,
                "pps_min": min(rates),
                "pps_max": max(rates),
                "pps_reps": rates,
                "us_per_packet": 1e6 / median,
                "ratio_to_bmv2_reference": median / BMV2_REFERENCE_PPS,
            }
        )
    return rows


# -------------------------------------------------------------------------------- veth: helpers


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


class SoftswitchProcess:
    """A `softswitch` process on the lab's switch-side ends; P4Runtime on a free local port."""

    def __init__(self, lab: VethLab, program: Path):
        self.log = tempfile.NamedTemporaryFile("w+", prefix="softswitch-pps-", suffix=".log")
        cmd = [sys.executable, "-m", "softswitch", "--device-id", str(SWITCH_ID), "--grpc-server-addr", "127.0.0.1:0"]
        for port, iface in lab.ports.items():
            cmd += ["-i", f"{port}@{iface}"]
        self.proc = subprocess.Popen(cmd + [str(program)], stdout=subprocess.DEVNULL, stderr=self.log, cwd=ROOT)
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


# ------------------------------------------------------------------- veth: sender and receiver


def role_send(iface: str, templates: list[bytes], pool: int, seq0: int, rate: float, seconds: float) -> dict:
    """Write frames on ``iface`` for ``seconds``: whole chunks (one frame per template, each chunk with the
    next seq when ``pool`` > 0), paced at ``rate`` frames/s (0: as fast as possible)."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
    sock.bind((iface, 0))
    send = sock.send
    per_chunk = len(templates)
    chunks_per_batch = max(1, 32 // per_chunk)
    sent = errors = 0
    seq = seq0
    start = time.monotonic()
    deadline = start + seconds
    while True:
        now = time.monotonic()
        if now >= deadline:
            break
        if rate and start + sent / rate > now:
            time.sleep(start + sent / rate - now)
            continue
        for _ in range(chunks_per_batch):
            for template in templates:
                try:
                    send(patch_chunk(template, seq, pool) if pool else template)
                    sent += 1
                except OSError:
                    errors += 1
            seq += 1
    end = time.monotonic()
    sock.close()
    return {"sent": sent, "send_errors": errors, "t_start": start, "t_end": end, "next_seq": seq}


def role_receive(iface: str, udp_dst_port: int, idle: float) -> dict:
    """Count IPv4/UDP frames to ``udp_dst_port`` arriving on ``iface`` until told to stop on stdin and then
    ``idle`` seconds pass without one."""
    sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, 16 << 20)
    except OSError:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 << 20)
    sock.bind((iface, 0))
    sock.setblocking(False)
    poller = select.poll()
    poller.register(sock, select.POLLIN)
    poller.register(sys.stdin, select.POLLIN)
    want = struct.pack("!H", udp_dst_port)
    count, first, last, stop_at = 0, None, None, None
    print("ready", flush=True)
    while True:
        for fd, _ in poller.poll(50):
            if fd == sock.fileno():
                while True:
                    try:
                        data, addr = sock.recvfrom(65535)
                    except BlockingIOError:
                        break
                    if (
                        addr[2] != PACKET_OUTGOING
                        and len(data) >= 42
                        and data[12:14] == b"\x08\x00"
                        and data[23] == 17
                        and data[36:38] == want
                    ):
                        count += 1
                        last = time.monotonic()
                        if first is None:
                            first = last
            else:
                sys.stdin.readline()
                poller.unregister(sys.stdin)
                stop_at = time.monotonic()
        if stop_at is not None and time.monotonic() - max(stop_at, last or 0) > idle:
            break
    return {"received": count, "t_first": first, "t_last": last}


# ------------------------------------------------------------------------------ veth: the cases


class VethCase:
    def __init__(
        self,
        name: str,
        program: str,
        templates: list[bytes],
        pool: int,
        udp_dst_port: int,
        outputs_per_chunk: int,
        in_process_pps: float,
        counted_stats: tuple[int, ...] = (),
    ):
        self.name, self.program, self.templates, self.pool = name, program, templates, pool
        self.udp_dst_port, self.outputs_per_chunk = udp_dst_port, outputs_per_chunk
        self.in_process_pps = in_process_pps
        self.counted_stats = counted_stats  # ina_stats indices whose packet counts sum to GRADs processed


def _ina_stat_indices(job_index: int, stats: list[int]) -> tuple[int, ...]:
    from protocol import constants as C

    return tuple(job_index * C.NUM_STATS + s for s in stats)


def run_veth_load(
    lab: VethLab,
    switch: SoftswitchProcess,
    case: VethCase,
    load: str,
    rate: float,
    seconds: float,
    seq0: int,
    workdir: Path,
) -> tuple[dict, int]:
    script = str(Path(__file__).resolve())
    templates_file = workdir / "templates.json"
    templates_file.write_text(json.dumps([t.hex() for t in case.templates]))
    before = switch.counter_packets("InaIngress.ina_stats", list(case.counted_stats)) if case.counted_stats else {}
    receiver = subprocess.Popen(
        lab.in_ns(
            OUT_PORT,
            sys.executable,
            script,
            "--role",
            "receive",
            "--iface",
            "eth0",
            "--udp-dst-port",
            str(case.udp_dst_port),
        ),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        if receiver.stdout.readline().strip() != "ready":
            raise BenchError(f"receiver did not start: {receiver.stderr.read().strip()[-300:]}")
        sender = sh(
            *lab.in_ns(
                IN_PORT,
                sys.executable,
                script,
                "--role",
                "send",
                "--iface",
                "eth0",
                "--templates",
                str(templates_file),
                "--pool",
                str(case.pool),
                "--seq0",
                str(seq0),
                "--rate",
                f"{rate:.1f}",
                "--seconds",
                str(seconds),
            )
        )
        sent = json.loads(sender.stdout)
        processed, t_processed = None, None
        if case.counted_stats:  # wait until the switch has worked off its backlog
            last_total, t_processed = None, time.monotonic()
            while True:
                now = switch.counter_packets("InaIngress.ina_stats", list(case.counted_stats))
                total = sum(now[i] - before.get(i, 0) for i in case.counted_stats)
                if total == last_total:
                    break
                last_total, t_processed = total, time.monotonic()
                time.sleep(0.05)
            processed = total
        receiver.stdin.write("stop\n")
        receiver.stdin.flush()
        out, err = receiver.communicate(timeout=60)
        received = json.loads(out)
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
    send_time = sent["t_end"] - sent["t_start"]
    expected = sent["sent"] // len(case.templates) * case.outputs_per_chunk
    window = (received["t_last"] - received["t_first"]) if received["received"] > 1 else 0.0
    delivered_pps = received["received"] / window if window > 0 else 0.0
    row = {
        "case": case.name,
        "program": case.program,
        "load": load,
        "offered_pps": sent["sent"] / send_time if send_time > 0 else 0.0,
        "target_rate_pps": rate or None,
        "send_seconds": send_time,
        "sent": sent["sent"],
        "send_errors": sent["send_errors"],
        "delivered": received["received"],
        "expected_delivered": expected,
        "loss_pct": 100.0 * (1 - received["received"] / expected) if expected else 0.0,
        "delivered_pps": delivered_pps,
        "processed": processed,
        "processed_pps": None,
        "input_loss_pct": None,
    }
    if processed is not None:
        # from the sender's first frame to the last poll at which the switch's counters still moved
        row["processed_pps"] = processed / (t_processed - sent["t_start"])
        row["input_loss_pct"] = 100.0 * (1 - processed / sent["sent"]) if sent["sent"] else 0.0
    loss = row["input_loss_pct"] if row["input_loss_pct"] is not None else row["loss_pct"]
    row["saturated"] = loss > 1.0  # frames were lost before the switch: the rate is its capacity
    rate_for_ratio = row["processed_pps"] if row["processed_pps"] is not None else delivered_pps
    row["ratio_to_bmv2_reference"] = rate_for_ratio / BMV2_REFERENCE_PPS
    return row, sent["next_seq"]


def veth_cases(frames: Frames, in_proc: dict[str, float]) -> dict[str, list[VethCase]]:
    from protocol import constants as C

    grad_stats = [
        C.STAT_GRAD_AGGREGATED,
        C.STAT_GRAD_PASSED,
        C.STAT_GRAD_DUPLICATE,
        C.STAT_GRAD_STORED_ANSWER,
        C.STAT_GRAD_RELEASED_FORWARD,
        C.STAT_GRAD_STALE,
    ]
    return {
        "router": [
            VethCase(
                "plain IPv4 forward",
                "tests/softswitch/programs/ipv4_router.p4",
                [frames.plain_to_router],
                0,
                PLAIN_DST_PORT,
                1,
                in_proc["ipv4_router_forward"],
            )
        ],
        "ina": [
            VethCase(
                "GRAD aggregation, fan-in 4",
                "p4src/ina.p4",
                frames.grads,
                POOL,
                C.INA_UDP_PORT,
                1,
                in_proc["grad_aggregation"],
                _ina_stat_indices(1, grad_stats),
            ),
            VethCase(
                "GRAD pass-through hop",
                "p4src/ina.p4",
                [frames.passthrough],
                0,
                C.INA_UDP_PORT,
                1,
                in_proc["grad_passthrough"],
                _ina_stat_indices(2, grad_stats),
            ),
        ],
    }


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


def measure_veth(frames: Frames, in_proc: dict[str, float], seconds: float, loads: list[str], progress) -> list[dict]:
    rows = []
    programs = {"router": (ROUTER_P4, install_router), "ina": (INA_P4, install_ina)}
    with VethLab() as lab, tempfile.TemporaryDirectory(prefix="softswitch-pps-") as tmp:
        for key, cases in veth_cases(frames, in_proc).items():
            program, install = programs[key]
            switch = SoftswitchProcess(lab, program)
            try:
                switch.connect()
                install(switch)
                seq = 1
                for case in cases:
                    for load in loads:
                        rate = 0.5 * case.in_process_pps if load == "half" else 0.0
                        row, seq = run_veth_load(lab, switch, case, load, rate, seconds, seq, Path(tmp))
                        rows.append(row)
                        progress(row)
            finally:
                switch.stop()
    return rows


# ---------------------------------------------------------------------------------- reporting


def _git_state() -> dict:
    head = sh("git", "-C", str(ROOT), "rev-parse", "--short", "HEAD", check=False).stdout.strip()
    dirty = sh("git", "-C", str(ROOT), "status", "--porcelain", "--", "softswitch", "p4src", check=False).stdout
    return {"head": head, "softswitch_or_p4src_uncommitted_changes": bool(dirty.strip())}


def _fmt(value, spec: str = ",.0f") -> str:
    return "-" if value is None else format(value, spec)


def print_in_process_row(row: dict) -> None:
    print(
        f"  {row['label']:<40} {row['pps_median']:>9,.0f} pps  (min {row['pps_min']:,.0f}, max "
        f"{row['pps_max']:,.0f}, {row['us_per_packet']:.1f} us/pkt)  = {row['ratio_to_bmv2_reference']:.3f}x "
        "the 100k reference",
        flush=True,
    )


def print_veth_row(row: dict) -> None:
    extra = ""
    if row["processed"] is not None:
        extra = f", switch processed {row['processed']:,} GRADs at {row['processed_pps']:,.0f} pps"
    print(
        f"  {row['case']} [{row['load']}]: offered {row['offered_pps']:,.0f} pps, sent {row['sent']:,}, "
        f"delivered {row['delivered']:,} of {row['expected_delivered']:,} at {row['delivered_pps']:,.0f} pps "
        f"(loss {row['loss_pct']:.1f}%){extra}",
        flush=True,
    )


def print_tables(result: dict) -> None:
    print()
    print(
        f"softswitch packets per second, K = {result['values_per_packet']} values per INA packet, "
        f"{result['machine']['cpus']} CPUs, git {result['git']['head']}"
        + (" (softswitch/ or p4src/ modified)" if result["git"]["softswitch_or_p4src_uncommitted_changes"] else "")
    )
    print()
    print(
        f"In process (Switch.process, median of {result['in_process'][0]['repetitions']} repetitions, warm-up excluded)"
    )
    print(f"{'packet kind':<40} {'bytes':>5} {'pps':>9} {'us/pkt':>7} {'vs 100k':>8}")
    for row in result["in_process"]:
        print(
            f"{row['label']:<40} {row['frame_bytes']:>5} {row['pps_median']:>9,.0f} {row['us_per_packet']:>7.1f} "
            f"{row['ratio_to_bmv2_reference']:>7.3f}x"
        )
    print()
    veth = result["veth"]
    if veth["skipped"]:
        print(f"Through veth ports: skipped: {veth['skipped']}")
    else:
        print(
            "Through veth ports (softswitch process, AF_PACKET sender and receiver in two namespaces; "
            "'half' = paced at half the in-process rate, 'max' = as fast as the sender can)"
        )
        print(
            f"{'case':<28} {'load':<5} {'offered':>9} {'sent':>8} {'delivered':>9} {'expected':>9} "
            f"{'loss%':>6} {'deliv pps':>9} {'proc pps':>9} {'vs 100k':>8} {'sat':>4}"
        )
        for row in veth["cases"]:
            print(
                f"{row['case']:<28} {row['load']:<5} {row['offered_pps']:>9,.0f} {row['sent']:>8,} "
                f"{row['delivered']:>9,} {row['expected_delivered']:>9,} {row['loss_pct']:>6.1f} "
                f"{row['delivered_pps']:>9,.0f} {_fmt(row['processed_pps']):>9} "
                f"{row['ratio_to_bmv2_reference']:>7.3f}x {'yes' if row['saturated'] else 'no':>4}"
            )
        print(
            "  delivered = frames counted by the receiver; for aggregation one frame per complete chunk of 4 "
            "GRADs, so a lost GRAD loses its chunk's sum. proc pps = GRADs the switch counted (ina_stats) from the "
            "first frame sent to the last counter poll (0.05 s apart) that saw them move: a lower bound. "
            "'vs 100k' uses proc pps where known, else delivered pps. sat = more than 1% of the frames sent never "
            "reached the pipeline, so the rate is the switch's capacity; otherwise it is the offered rate."
        )
    print()
    print(REFERENCE_NOTE)


def save(result: dict, out_dir: Path) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, png_path = out_dir / "softswitch_pps.json", out_dir / "softswitch_pps.png"
    json_path.write_text(json.dumps(result, indent=2))
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    veth_rows = result["veth"]["cases"]
    fig, axes = plt.subplots(1, 2 if veth_rows else 1, figsize=(13 if veth_rows else 7, 5.5), squeeze=False)
    ax = axes[0][0]
    labels = [r["label"].replace(" (", "\n(") for r in result["in_process"]]
    ax.barh(labels, [r["pps_median"] for r in result["in_process"]], color="#4c72b0")
    ax.set_title("In process: Switch.process (median)")
    if veth_rows:
        ax2 = axes[0][1]
        labels2 = [f"{r['case']}\n[{r['load']}]" for r in veth_rows]
        ax2.barh(
            labels2,
            [r["processed_pps"] if r["processed_pps"] is not None else r["delivered_pps"] for r in veth_rows],
            color="#dd8452",
        )
        ax2.set_title("Through veth ports: switch rate (processed, else delivered)")
    for a in axes[0]:
        a.axvline(BMV2_REFERENCE_PPS, color="k", linestyle="--", linewidth=1)
        a.text(BMV2_REFERENCE_PPS, -0.6, " BMv2 ~100k pps\n reference", fontsize=8, va="top")
        a.set_xlabel("packets per second")
        a.invert_yaxis()
        a.tick_params(axis="y", labelsize=8)
    fig.suptitle(
        f"softswitch (Python v1model target), K = {result['values_per_packet']}, "
        f"{result['machine']['cpus']} CPUs, git {result['git']['head']}",
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(png_path, dpi=100)
    plt.close(fig)
    return json_path, png_path


# --------------------------------------------------------------------------------------- main


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="softswitch packets per second, in process and through veth ports.")
    p.add_argument("--quick", action="store_true", help="a fast run (short cases, fewer repetitions)")
    p.add_argument(
        "--seconds",
        type=float,
        default=None,
        help="duration of each case: in-process repetitions together, each veth load's sending (default 3, quick 0.3)",
    )
    p.add_argument("--repetitions", type=int, default=None, help="in-process repetitions (default 5, quick 2)")
    p.add_argument("--no-veth", action="store_true", help="skip the veth part")
    p.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON and PNG (bench/results)")
    # internal: the sender and receiver processes inside the namespaces
    p.add_argument("--role", choices=("send", "receive"), help=argparse.SUPPRESS)
    p.add_argument("--iface", help=argparse.SUPPRESS)
    p.add_argument("--templates", help=argparse.SUPPRESS)
    p.add_argument("--pool", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--seq0", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--rate", type=float, default=0.0, help=argparse.SUPPRESS)
    p.add_argument("--udp-dst-port", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.seconds is not None and args.seconds <= 0:
        p.error(f"--seconds must be positive, got {args.seconds}")
    if args.repetitions is not None and args.repetitions < 1:
        p.error(f"--repetitions must be at least 1, got {args.repetitions}")
    return args


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.role == "send":
        templates = [bytes.fromhex(h) for h in json.loads(Path(args.templates).read_text())]
        print(json.dumps(role_send(args.iface, templates, args.pool, args.seq0, args.rate, args.seconds)))
        return 0
    if args.role == "receive":
        print(json.dumps(role_receive(args.iface, args.udp_dst_port, idle=0.3)))
        return 0

    sys.path.insert(0, str(ROOT))
    seconds = args.seconds if args.seconds is not None else (0.3 if args.quick else 3.0)
    reps = args.repetitions or (2 if args.quick else 5)
    warm_units = 20 if args.quick else 300
    loads = ["half"] if args.quick else ["half", "max"]
    print(REFERENCE_NOTE)
    load = os.getloadavg()
    print(
        f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start "
        "(other work on the machine lowers every figure)"
    )
    try:
        frames = Frames()
        sizes = {
            "ipv4_router_forward": "plain",
            "ina_ipv4_forward": "plain",
            "grad_absorbed": "grad",
            "grad_completing": "grad",
            "grad_aggregation": "grad",
            "result_release": "result",
            "grad_passthrough": "passthrough",
        }
        result = {
            "bench": "softswitch_pps",
            "mode": "quick" if args.quick else "full",
            "seconds": seconds,
            "values_per_packet": frames.C.VALUES_PER_PACKET,
            "fan_in": FAN_IN,
            "pool_size": POOL,
            "machine": {
                "cpus": os.cpu_count(),
                "python": platform.python_version(),
                "platform": platform.platform(),
                "load_average_at_start": os.getloadavg(),
            },
            "git": _git_state(),
            "bmv2_reference_pps": BMV2_REFERENCE_PPS,
            "reference_note": REFERENCE_NOTE,
            "in_process": [],
            "veth": {"skipped": None, "cases": []},
        }
        print(f"[in process] {seconds:g} s per case over {reps} repetitions, {warm_units} warm-up units")
        for case in in_process_cases(frames):
            print(f"[in process] {case.name} ({case.program}) ...", flush=True)
            for row in measure_in_process(case, seconds, reps, warm_units):
                row["frame_bytes"] = frames.frame_bytes()[sizes[row["kind"]]]
                result["in_process"].append(row)
                print_in_process_row(row)
        why = "disabled with --no-veth" if args.no_veth else veth_unavailable()
        if why:
            result["veth"]["skipped"] = why
            print(f"[veth] skipped: {why}")
        else:
            in_proc = {r["kind"]: r["pps_median"] for r in result["in_process"]}
            print(
                f"[veth] {seconds:g} s per load ({', '.join(loads)}), two namespaces, softswitch process ...",
                flush=True,
            )
            try:
                result["veth"]["cases"] = measure_veth(frames, in_proc, seconds, loads, print_veth_row)
            except (BenchError, OSError, subprocess.SubprocessError, json.JSONDecodeError) as e:
                result["veth"]["skipped"] = f"failed: {e}"
                print(f"[veth] failed: {e}")
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
