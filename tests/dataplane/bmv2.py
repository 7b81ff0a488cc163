"""Real BMv2 for the data-plane tests: p4c-bm2-ss builds (cached), simple_switch_grpc on veth pairs, STF
commands as P4Runtime writes.

The reference toolchain (/opt/p4-toolchain, or p4c-bm2-ss and simple_switch_grpc on PATH) compiles a program
once per source: the JSON and P4Info go to build/bmv2-stf/<program>-<hash of every P4 source and the
compiler's version>/, so a changed program (or include) is compiled again and an unchanged one never.
A switch runs in the root namespace on veth pairs with its own names (``ib<pid>s<port>`` on the switch,
``ib<pid>h<port>`` for the test), IPv6 off so the kernel sends nothing of its own on them; the test
sends and receives frames on the host ends with AF_PACKET sockets. The pipeline and table entries go in
over P4Runtime (controller/p4rt.py), as the controller writes them; BMv2's P4Runtime server reads
counters but not registers.
"""

from __future__ import annotations

import hashlib
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from controller.p4rt import P4Names, SwitchConnection, load_p4info
from topologies.bmv2_build import TOOLCHAIN_BIN, toolchain_tool

REPO = Path(__file__).resolve().parents[2]
P4SRC = REPO / "p4src"
CACHE = REPO / "build" / "bmv2-stf"
ETH_P_ALL = 0x0003


tool = toolchain_tool  # the toolchain's ``name``: on PATH, else in /opt/p4-toolchain/bin


def missing() -> str | None:
    """Why BMv2 cannot run here (a skip reason), or None."""
    for name in ("p4c-bm2-ss", "simple_switch_grpc"):
        if tool(name) is None:
            return f"{name} not found (on PATH or in {TOOLCHAIN_BIN}): the reference P4 toolchain is not installed"
    if os.geteuid() != 0:
        return "needs root (veth pairs for BMv2's ports)"
    if shutil.which("ip") is None:
        return "needs iproute2's ip (veth pairs)"
    return None


def source_hash(program: Path) -> str:
    """A digest of the program, every P4 file it can include from p4src/, and the compiler's version."""
    digest = hashlib.sha256()
    compiler = tool("p4c-bm2-ss")
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout if compiler else ""
    digest.update(version.encode())
    for path in [program, *sorted(P4SRC.rglob("*.p4"))]:
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def compiled(program: Path) -> tuple[Path, Path]:
    """(BMv2 JSON, P4Info text) of ``program``, compiled by p4c-bm2-ss unless the cache has this source."""
    out = CACHE / f"{program.stem}-{source_hash(program)}"
    json_path, p4info_path = out / "program.json", out / "p4info.txtpb"
    if json_path.exists() and p4info_path.exists():
        return json_path, p4info_path
    work = CACHE / f".{out.name}.{os.getpid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    argv = [
        tool("p4c-bm2-ss") or "p4c-bm2-ss",
        "--arch", "v1model", "-I", str(P4SRC), "-o", str(work / "program.json"),
        "--p4runtime-files", str(work / "p4info.txtpb"), str(program),
    ]  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError(f"p4c-bm2-ss failed on {program}:\n{done.stderr[-4000:]}")
    try:
        work.rename(out)  # atomic: another run that compiled the same source meanwhile keeps its copy
    except OSError:
        shutil.rmtree(work, ignore_errors=True)
    return json_path, p4info_path


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


def _free_tcp_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Bmv2Switch:
    """One simple_switch_grpc on veth pairs for ``ports``; ``load`` pushes a program (resetting all state)."""

    def __init__(self, ports: Iterable[int], device_id: int = 1, log: Path | None = None):
        self.ports = sorted(ports)
        tag = f"ib{os.getpid() % 100000}"
        self.switch_ifs = {p: f"{tag}s{p}" for p in self.ports}
        self.host_ifs = {p: f"{tag}h{p}" for p in self.ports}
        self.device_id = device_id
        self.proc: subprocess.Popen | None = None
        self.conn: SwitchConnection | None = None
        self.sockets: dict[int, socket.socket] = {}
        self.names: P4Names | None = None
        self.groups: set[int] = set()
        self.log = log
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self) -> None:
        for p in self.ports:
            sw, host = self.switch_ifs[p], self.host_ifs[p]
            subprocess.run(["ip", "link", "del", sw], capture_output=True)  # a leftover of a killed run
            _ip("link", "add", sw, "type", "veth", "peer", "name", host)
            for intf in (sw, host):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{intf}.disable_ipv6=1"], capture_output=True)
                _ip("link", "set", intf, "mtu", "9000", "up")
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # no protocol until bound: opened for
            s.bind((host, ETH_P_ALL))  # ETH_P_ALL it would queue every interface's frames meanwhile
            s.setblocking(False)
            self.sockets[p] = s
        grpc_addr = f"127.0.0.1:{_free_tcp_port()}"
        argv = [tool("simple_switch_grpc") or "simple_switch_grpc", "--device-id", str(self.device_id)]
        for p in self.ports:
            argv += ["-i", f"{p}@{self.switch_ifs[p]}"]
        argv += ["--no-p4", "--", "--grpc-server-addr", grpc_addr]
        out = open(self.log, "wb") if self.log else subprocess.DEVNULL  # noqa: SIM115 (closed with the process)
        self.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.conn = SwitchConnection(grpc_addr, self.device_id, timeout=30.0, name="bmv2").open()

    def load(self, json_path: Path, p4info_path: Path) -> None:
        """Push the pipeline: tables, registers and counters start empty."""
        assert self.conn is not None
        self.clear_groups()
        info = load_p4info(p4info_path)
        self.conn.set_pipeline(info, json_path.read_bytes())
        self.names = P4Names(info)
        self.drain()

    # ---- STF configuration commands as P4Runtime writes

    def setdefault(self, table: str, action: str, args: dict[str, int]) -> None:
        assert self.names is not None and self.conn is not None
        entry = self.names.table_entry(table, None, action, args, default=True)
        self.conn.write([(p4runtime_pb2.Update.MODIFY, _entity(table_entry=entry))])

    def add(self, table: str, keys: dict, action: str, args: dict[str, int], priority: int | None) -> None:
        """An STF ``add``: keys as parsed by softswitch.stf (("value", v), ("ternary", v, mask), ("lpm", v, len))."""
        assert self.names is not None and self.conn is not None
        fields = self.names.table(table).fields
        match: dict[str, int | tuple[int, int]] = {}
        for name, (kind, *vals) in keys.items():
            field = re.sub(r"\$(\d+)", r"[\1]", name)  # STF writes stack[0].f as stack$0.f
            _, width, match_type = fields[field]
            if kind == "value" and match_type == p4info_pb2.MatchField.TERNARY:
                match[field] = (vals[0], (1 << width) - 1)
            elif kind == "value" and match_type == p4info_pb2.MatchField.LPM:
                match[field] = (vals[0], width)
            elif kind == "value":
                match[field] = vals[0]
            else:
                match[field] = (vals[0], vals[1])
        entry = self.names.table_entry(table, match, action, args, priority=0 if priority is None else priority + 1)
        self.conn.write([(p4runtime_pb2.Update.INSERT, _entity(table_entry=entry))])

    def multicast_group(self, group: int, replicas: list[tuple[int, int]]) -> None:
        """Group ``group`` replicates to ``replicas``: (port, replica id) pairs."""
        assert self.conn is not None
        g = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=group)
        for port, rid in replicas:
            g.replicas.add(egress_port=port, instance=rid)
        kind = p4runtime_pb2.Update.MODIFY if group in self.groups else p4runtime_pb2.Update.INSERT
        self.conn.write([(kind, _entity(multicast_group=g))])
        self.groups.add(group)

    def clear_groups(self) -> None:
        assert self.conn is not None
        for group in sorted(self.groups):
            g = p4runtime_pb2.MulticastGroupEntry(multicast_group_id=group)
            self.conn.write([(p4runtime_pb2.Update.DELETE, _entity(multicast_group=g))])
        self.groups.clear()

    def counter(self, name: str, indices: Iterable[int]) -> dict[int, tuple[int, int]]:
        assert self.names is not None and self.conn is not None
        counter_id, _ = self.names.counter(name)
        return self.conn.read_counter(counter_id, indices)

    # ---- packets

    def send(self, port: int, frame: bytes) -> None:
        self.sockets[port].send(frame)

    def receive(self, count: int, timeout: float) -> list[tuple[int, bytes]]:
        """Frames out of the switch until ``count`` arrived or ``timeout`` seconds passed (whichever first)."""
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout
        by_fd = {s.fileno(): p for p, s in self.sockets.items()}
        while len(got) < count:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select(list(by_fd), [], [], left)
            for fd in ready:
                got.extend(self._read_all(by_fd[fd]))
        return got

    def drain(self) -> list[tuple[int, bytes]]:
        """Whatever is waiting on the host ends now."""
        return [frame for p in self.ports for frame in self._read_all(p)]

    def _read_all(self, port: int) -> list[tuple[int, bytes]]:
        out = []
        s = self.sockets[port]
        while True:
            try:
                data, address = s.recvfrom(16384)
            except BlockingIOError:
                return out
            if address[2] != socket.PACKET_OUTGOING:  # not our own sends on this end
                out.append((port, data))

    def close(self) -> None:
        if self.conn is not None:
            self.conn.close()
            self.conn = None
        if self.proc is not None:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
            self.proc = None
        for s in self.sockets.values():
            s.close()
        self.sockets.clear()
        for p in self.ports:
            subprocess.run(["ip", "link", "del", self.switch_ifs[p]], capture_output=True)


def _entity(**kwargs: object) -> p4runtime_pb2.Entity:
    e = p4runtime_pb2.Entity()
    for name, value in kwargs.items():
        if name == "table_entry":
            e.table_entry.CopyFrom(value)
        else:
            e.packet_replication_engine_entry.multicast_group_entry.CopyFrom(value)
    return e
