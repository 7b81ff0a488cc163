"""Packets per second of the worker and server agents on kernel UDP over veth: batch path vs scalar path.

Two network namespaces joined by one veth pair, no switch between them: the job is planned with no
aggregating switch (every GRAD's hop list is the server's terminal entry), so the server agent sums and
answers, as for the parameter-server baseline. Each reading runs the agents of this checkout (the batch
path) and the agents as of BASELINE_REV (the scalar path: one codec.encode, one sendto and one timer per
chunk), taken from git with ``git archive``, in the same run on the same namespaces:

* worker: one worker agent, server fan-in 1: repeated allreduces of --values int32 for --seconds.
  GRADs/s (one per chunk), MB/s of gradient (4 bytes a value) and CPU per packet of each process.
* server, aggregated stream of 8 workers: what an aggregating switch hands the server: one GRAD per chunk
  (server fan-in 1, its child = all 8 ranks); results multicast (one per chunk; switches replicate) and
  unicast (one per rank and chunk; only rank 0 runs an agent, ranks 1-7 are sockets nobody reads, whose
  full buffers the kernel drops the results into; they accept coalesced datagrams, UDP_GRO, so that the
  veth's receiving side, which runs in the server's CPU time, does not cut them up for nobody).
* server, parameter server: 8 worker agents in one process (one event loop), server fan-in 8: 8 GRADs in
  and 8 RESULTs out per chunk.
* window: the worker reading of the batch path with several pool sizes (chunks in flight per tree), with
  the receive holds each round trip of the window took (worker/transport.py, receive coalescing);
  ``--compare REV`` runs the sweep with the agents of REV too (git archive), alternating, in the same run;
  ``--windows-only`` runs just the sweep.
* offloads off: the worker reading with segmentation offload off on both veth ends, as the lab's hosts.
* raw I/O: 280-byte datagrams for --io-seconds: a Python sendto loop, the Python fallback of
  native/udp.py, sendmmsg and UDP_SEGMENT against a recvfrom loop, recvmmsg and UDP_GRO receivers.

Pool size (window) is the planner's default unless --pool-size is given. Prints tables, saves
bench/results/agent_pps.json and agent_pps.png. Needs root (network namespaces).

    .venv/bin/python bench/agent_pps.py [--seconds 4] [--values 1048576] [--quick] [--baseline REV]
                                        [--windows 64 256 1024] [--windows-only] [--compare REV]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # (the roles put the agents' code before it: _use_code)
from bench.cpu_time import process_cpu_seconds  # noqa: E402
from controller.cli_options import add_pool_size  # noqa: E402

RESULTS = ROOT / "bench" / "results"
BASELINE_REV = "53e27aa"  # main just before the agents moved to the batch path: the scalar agents
CODE_DIRS = ("protocol", "worker", "server", "controller", "native")
NET = "10.203.0"
SERVER_IP = f"{NET}.100"
JOB_ID = 7
N_WORKERS = 8
DATAGRAM = 280  # bytes of a GRAD with one hop and K = 64: 16 + 8 + 256


class BenchError(RuntimeError):
    """Something the benchmark needs did not work; the message says what."""


def sh(*cmd: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise BenchError(f"'{' '.join(cmd)}' failed: {(proc.stderr or proc.stdout).strip()}")
    return proc


def worker_ip(rank: int) -> str:
    return f"{NET}.{rank + 1}"


# ------------------------------------------------------------------------------------------ plans


def switchless_plan(n_workers: int, aggregated: bool, result_mode: str, pool: int) -> str:
    """A job of n workers and one server with no switch: the plan JSON.

    ``aggregated``: the server sees one already summed stream (fan-in 1, one child standing for every
    rank, as behind an aggregating switch); else one stream per worker (fan-in n)."""
    sys.path.insert(0, str(ROOT))
    from controller.plan import ChildInfo, Hop, HostRef, JobPlan, ServerView, TreePlan

    workers = [
        HostRef(f"w{r}", worker_ip(r), f"02:00:00:00:0a:{r + 1:02x}", 0x8000 + r, r, rank=r) for r in range(n_workers)
    ]
    server = HostRef("ps", SERVER_IP, "02:00:00:00:0b:01", 0x8000 + 100, 100)
    fan_in = 1 if aggregated else n_workers
    if aggregated:
        children = [ChildInfo(0, "aggregating-switch", 1, "switch", list(range(n_workers)))]
    else:
        children = [ChildInfo(w.rank, w.name, w.node_id, "worker", [w.rank]) for w in workers]
    tree = TreePlan(
        tree_id=0,
        root="ps",
        rate=1000.0,
        weight=1.0,
        height=0.0,
        edges=[],
        aggregation_points=[],
        grad_hops={w.name: [Hop(server.node_id, True, fan_in, 0 if aggregated else w.rank, 0, "ps")] for w in workers},
        result_hops={w.name: [] for w in workers},
        server=ServerView("ps", server.node_id, fan_in, children),
        host_parent={},
        host_children={},
    )
    plan = JobPlan(
        job_id=JOB_ID,
        workers=workers,
        servers=[server],
        trees=[tree],
        switches=[],
        pool_size=pool,
        result_mode=result_mode,
    )
    plan.validate()
    return plan.to_json()


def default_pool() -> int:
    sys.path.insert(0, str(ROOT))
    from controller.planner import PlanOptions

    return PlanOptions().pool_size


# ------------------------------------------------------------------------------------- namespaces


class VethPair:
    """Namespace W (worker IPs .1-.8) and namespace S (the server, .100), joined by one veth pair."""

    def __init__(self):
        tag = os.getpid() % 100000
        self.worker_ns, self.server_ns = f"agpps{tag}w", f"agpps{tag}s"
        self.worker_if, self.server_if = f"agpps{tag}w", f"agpps{tag}s"
        self._namespaces: list[str] = []

    def __enter__(self) -> VethPair:
        try:
            for ns in (self.worker_ns, self.server_ns):
                sh("ip", "netns", "add", ns)
                self._namespaces.append(ns)
                sh("ip", "-n", ns, "link", "set", "lo", "up")
                for conf in ("all", "default"):
                    sh("ip", "netns", "exec", ns, "sysctl", "-qw", f"net.ipv6.conf.{conf}.disable_ipv6=1", check=False)
            sh(
                "ip", "link", "add", self.worker_if, "netns", self.worker_ns, "type", "veth",
                "peer", "name", self.server_if, "netns", self.server_ns,
            )  # fmt: skip
            for rank in range(N_WORKERS):
                sh("ip", "-n", self.worker_ns, "addr", "add", f"{worker_ip(rank)}/24", "dev", self.worker_if)
            sh("ip", "-n", self.server_ns, "addr", "add", f"{SERVER_IP}/24", "dev", self.server_if)
            for ns, iface in ((self.worker_ns, self.worker_if), (self.server_ns, self.server_if)):
                sh("ip", "-n", ns, "link", "set", iface, "up")
        except BaseException:
            self.close()
            raise
        return self

    def set_offloads(self, on: bool) -> None:
        """Segmentation and checksum offloads of both ends (off: the kernel cuts datagrams before the
        veth, as on the lab's hosts)."""
        state = "on" if on else "off"
        for ns, iface in ((self.worker_ns, self.worker_if), (self.server_ns, self.server_if)):
            sh("ip", "netns", "exec", ns, "ethtool", "-K", iface, "tx", state, "gso", state, "gro", state, check=False)

    def close(self) -> None:
        for ns in self._namespaces:
            sh("ip", "netns", "del", ns, check=False)  # deleting a namespace deletes its veth end
        self._namespaces = []

    def __exit__(self, *exc) -> None:
        self.close()

    def run(self, ns: str, argv: list[str], **kwargs) -> subprocess.Popen:
        return subprocess.Popen(["ip", "netns", "exec", ns, *argv], text=True, **kwargs)


def scalar_code(rev: str, into: Path) -> Path:
    """The agents as of ``rev`` (git archive of the code folders), unpacked under ``into`` once per
    commit: --compare naming the baseline's commit (in any spelling) shares its copy."""
    resolved = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if resolved.returncode != 0:
        raise BenchError(f"{rev!r} is not a git revision of {ROOT} (run from a git checkout)")
    target = into / f"code-{resolved.stdout.strip()}"
    if target.exists():
        return target
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *CODE_DIRS], capture_output=True)
    if archive.returncode != 0:
        raise BenchError(f"git archive {rev} failed: {archive.stderr.decode().strip()} (run from a git checkout)")
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


# ------------------------------------------------------------------------ roles in the namespaces


def _use_code(code: str) -> None:
    """Import the agents from ``code`` (this checkout or an unpacked older revision)."""
    sys.path.insert(0, code)
    import worker.agent

    if not Path(worker.agent.__file__).resolve().is_relative_to(Path(code).resolve()):
        raise BenchError(f"worker.agent came from {worker.agent.__file__}, not from {code}")


def role_server(args) -> None:
    _use_code(args.code)
    from controller.plan import JobPlan
    from server.agent import ServerAgent
    from worker.transport import UdpTransport

    plan = JobPlan.from_json(Path(args.plan).read_text())
    transport = UdpTransport(ip=SERVER_IP, bind_ip=SERVER_IP)
    server = ServerAgent(transport, "ps")
    server.add_job(plan)
    closed = []
    transport.loop.add_reader(sys.stdin, lambda: closed.append(os.read(sys.stdin.fileno(), 100) == b""))
    print("ready", flush=True)
    transport.loop.run_until(lambda: any(closed), 600)
    lost = getattr(transport, "send_buffer_full", 0)
    held = getattr(transport, "held_batches", 0)
    print(json.dumps({"stats": dict(server.stats), "send_buffer_full": lost, "held_batches": held}), flush=True)


def role_workers(args) -> None:
    _use_code(args.code)
    import socket

    import numpy as np

    from controller.plan import JobPlan
    from worker.agent import WorkerAgent
    from worker.loop import RealTimeLoop
    from worker.transport import UdpTransport

    plan = JobPlan.from_json(Path(args.plan).read_text())
    loop = RealTimeLoop()
    ranks = [int(r) for r in args.ranks.split(",")]
    agents = [
        WorkerAgent(plan, r, UdpTransport(ip=worker_ip(r), loop=loop, bind_ip=worker_ip(r)), timeout=0.05, retries=12)
        for r in ranks
    ]
    sinks = []
    for rank in range(len(plan.workers)):
        if rank not in ranks:  # results for ranks without an agent: a small buffer nobody reads
            sink = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sink.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 16)
            sink.setsockopt(socket.IPPROTO_UDP, 104, 1)  # UDP_GRO: a segmentation send stays one packet
            sink.bind((worker_ip(rank), 40000))
            sinks.append(sink)
    inputs = [np.arange(args.values, dtype=np.int32) * (r + 1) for r in ranks]
    total = sum(np.arange(args.values, dtype=np.int64) * (r + 1) for r in range(len(plan.workers)))
    expected = total if len(ranks) == len(plan.workers) else inputs[0]  # aggregated: rank 0's stream alone

    def allreduce():
        handles = [a.allreduce_async(x) for a, x in zip(agents, inputs, strict=True)]
        if not loop.run_until(lambda: all(h.done() for h in handles), 120):
            raise BenchError("an allreduce did not finish within 120 s")
        for h in handles:
            if not np.array_equal(h.wait(), expected):
                raise BenchError("an allreduce gave a wrong result")

    allreduce()  # warm-up: imports, first buffers, RTT estimate
    sent0 = sum(a.stats["packets_sent"] for a in agents)
    held0 = sum(getattr(a.transport, "held_batches", 0) for a in agents)
    print(json.dumps({"event": "start"}), flush=True)
    start, cpu0 = time.monotonic(), time.process_time()
    rounds = 0
    while rounds == 0 or time.monotonic() - start < args.seconds:
        allreduce()
        rounds += 1
    elapsed, cpu = time.monotonic() - start, time.process_time() - cpu0
    chunks = rounds * -(-args.values // plan.value_count) * len(agents)
    print(
        json.dumps(
            {
                "event": "end",
                "rounds": rounds,
                "chunks": chunks,
                "seconds": elapsed,
                "cpu_seconds": cpu,
                "packets_sent": sum(a.stats["packets_sent"] for a in agents) - sent0,
                "retransmissions": sum(a.stats["retransmissions"] for a in agents),
                "send_buffer_full": sum(a.transport.send_buffer_full for a in agents),
                "srtt_ms": 1e3 * float(agents[0]._srtt or 0.0),
                "held_batches": sum(getattr(a.transport, "held_batches", 0) for a in agents) - held0,
                "values_per_packet": plan.value_count,
            }
        ),
        flush=True,
    )


def role_send(args) -> None:
    sys.path.insert(0, str(ROOT))
    import socket

    import numpy as np

    from native import udp

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 << 20)
    if args.mode != "segments":
        sock.setsockopt(socket.SOL_SOCKET, 11, 1)  # SO_NO_CHECK (segmentation needs checksums)
    sock.setblocking(False)
    rows = np.zeros((64, DATAGRAM), dtype=np.uint8)
    payload, address = bytes(DATAGRAM), (SERVER_IP, 40000)
    io = udp.open_batch_socket(sock, native=args.mode in ("sendmmsg", "segments"))
    ip = udp.ip_number(SERVER_IP)
    sent = 0
    end = time.monotonic() + args.seconds
    while time.monotonic() < end:
        if args.mode == "sendto":
            for _ in range(64):
                try:
                    sock.sendto(payload, address)
                    sent += 1
                except BlockingIOError:
                    pass
        elif args.mode == "segments":
            sent += io.send_segments(rows, ip, 40000, wait_ms=5)[0]
        else:
            sent += io.send(rows, DATAGRAM, ip, 40000, wait_ms=5)[0]
    print(json.dumps({"sent": sent}), flush=True)


def role_receive(args) -> None:
    sys.path.insert(0, str(ROOT))
    import select
    import socket

    from native import udp

    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    sock.bind((SERVER_IP, 40000))
    sock.setblocking(False)
    io = udp.open_batch_socket(sock, 2048, 256, native=args.mode in ("recvmmsg", "gro"), gro=args.mode == "gro")
    buffer = bytearray(2048)
    received, first, last = 0, None, None
    print("ready", flush=True)
    stop = []
    while not stop:
        readable, _, _ = select.select([sock, sys.stdin], [], [], 1.0)
        if sys.stdin in readable:
            stop.append(os.read(sys.stdin.fileno(), 100) == b"")
        if sock not in readable:
            continue
        if args.mode == "recvfrom":
            count = 0
            while True:
                try:
                    sock.recvfrom_into(buffer)
                except BlockingIOError:
                    break
                count += 1
        else:
            count = io.receive()
        if count:
            now = time.monotonic()
            first = first or now
            last = now
            received += count
    print(json.dumps({"received": received, "seconds": (last - first) if first else 0.0}), flush=True)


# ----------------------------------------------------------------------------- readings (parent)


def run_agents(pair: VethPair, code: Path, plan_json: str, ranks: list[int], values: int, seconds: float, tmp: Path):
    plan_path = tmp / "plan.json"
    plan_path.write_text(plan_json)
    node = [sys.executable, str(Path(__file__).resolve()), "node"]
    server = pair.run(
        pair.server_ns,
        [*node, "server", "--code", str(code), "--plan", str(plan_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    workers = None
    try:
        if server.stdout.readline().strip() != "ready":
            raise BenchError("the server agent did not start")
        workers = pair.run(
            pair.worker_ns,
            [
                *node,
                "workers",
                "--code",
                str(code),
                "--plan",
                str(plan_path),
                "--ranks",
                ",".join(map(str, ranks)),
                "--values",
                str(values),
                "--seconds",
                str(seconds),
            ],  # fmt: skip
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        server_cpu0 = None
        result = None
        for line in workers.stdout:
            event = json.loads(line)
            if event["event"] == "start":
                server_cpu0 = process_cpu_seconds(server.pid)
            else:
                result = event
                result["server_cpu_seconds"] = process_cpu_seconds(server.pid) - server_cpu0
        workers.wait(60)
        if result is None:
            raise BenchError(f"the worker agents failed: {workers.stderr.read().strip()[-600:]}")
        server.stdin.close()
        server_report = json.loads(server.stdout.readline())
        server.wait(30)
    finally:
        for proc in (workers, server):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
    result["server"] = server_report
    seconds = result["seconds"]
    result["grads_per_s"] = result["chunks"] / seconds
    result["gradient_mb_per_s"] = result["chunks"] * result["values_per_packet"] * 4 / seconds / 1e6
    result["worker_cpu_us_per_packet"] = 1e6 * result["cpu_seconds"] / result["chunks"]
    result["server_cpu_us_per_packet"] = 1e6 * result["server_cpu_seconds"] / result["chunks"]
    return result


def run_io(pair: VethPair, send_mode: str, receive_mode: str, seconds: float) -> dict:
    node = [sys.executable, str(Path(__file__).resolve()), "node"]
    receiver = pair.run(
        pair.server_ns, [*node, "receive", "--mode", receive_mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        if receiver.stdout.readline().strip() != "ready":
            raise BenchError("the receiver did not start")
        sender = pair.run(
            pair.worker_ns, [*node, "send", "--mode", send_mode, "--seconds", str(seconds)], stdout=subprocess.PIPE
        )
        cpu_start = process_cpu_seconds(receiver.pid)
        sent = json.loads(sender.communicate(timeout=seconds + 60)[0])["sent"]
        time.sleep(0.3)
        receiver_cpu = process_cpu_seconds(receiver.pid) - cpu_start
        receiver.stdin.close()
        got = json.loads(receiver.stdout.readline())
        receiver.wait(30)
    finally:
        if receiver.poll() is None:
            receiver.kill()
            receiver.wait()
    return {
        "send": send_mode,
        "receive": receive_mode,
        "sent_per_s": sent / seconds,
        "received_per_s": got["received"] / seconds,
        "lost": max(0, sent - got["received"]),
        "receiver_cpu_us_per_packet": 1e6 * receiver_cpu / max(1, got["received"]),
    }


IO_CASES = [
    ("sendto", "recvfrom"),
    ("python-batch", "python-batch"),
    ("sendmmsg", "recvmmsg"),
    ("segments", "recvmmsg"),
    ("segments", "gro"),
]


def main(argv=None) -> int:
    if argv is None and len(sys.argv) > 1 and sys.argv[1] == "node":
        return node_main(sys.argv[2:])
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=4.0, help="measured time of each agents reading")
    ap.add_argument("--values", type=int, default=1 << 20, help="int32 values per allreduce (default 1 Mi)")
    add_pool_size(ap, default=None, old="--pool")
    ap.add_argument("--windows", type=int, nargs="*", default=[64, 128, 256, 512, 1024, 2048])
    ap.add_argument("--windows-only", action="store_true", help="only the window sweep")
    ap.add_argument("--compare", metavar="REV", help="also sweep the windows with the agents of git revision REV")
    ap.add_argument("--io-seconds", type=float, default=2.0)
    ap.add_argument("--baseline", default=BASELINE_REV, help=f"git revision of the scalar agents ({BASELINE_REV})")
    ap.add_argument("--quick", action="store_true", help="shorter readings, fewer windows")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    if os.geteuid() != 0 or shutil.which("ip") is None:
        print("agent_pps: needs root and iproute2 ('ip netns') to build the namespaces", file=sys.stderr)
        return 2
    if args.quick:
        args.seconds, args.io_seconds = 2.0, 1.0
        if "--windows" not in (argv if argv is not None else sys.argv):
            args.windows = [64, 256, 1024]
    pool = args.pool_size or default_pool()
    args.out.mkdir(parents=True, exist_ok=True)
    report = {
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release(), "load_before": os.getloadavg()},
        "values_per_allreduce": args.values,
        "pool": pool,
        "baseline_rev": args.baseline,
        "readings": {},
        "windows": [],
        "compare_rev": args.compare,
        "io": [],
    }
    with tempfile.TemporaryDirectory(prefix="agent-pps-") as tmp_text, VethPair() as pair:
        tmp = Path(tmp_text)
        codes = {"batch": ROOT}
        if not args.windows_only:
            codes["scalar"] = scalar_code(args.baseline, tmp)
        if args.compare:
            codes["compare"] = scalar_code(args.compare, tmp)
        readings = [
            ("worker", switchless_plan(1, False, "unicast", pool), [0]),
            ("server: aggregated stream, multicast results", switchless_plan(N_WORKERS, True, "multicast", pool), [0]),
            ("server: aggregated stream, unicast results", switchless_plan(N_WORKERS, True, "unicast", pool), [0]),
            (
                "server: parameter server (8 workers)",
                switchless_plan(N_WORKERS, False, "unicast", pool),
                list(range(8)),
            ),
        ]
        print(f"load average {os.getloadavg()[0]:.2f}; pool {pool}; {args.values} values per allreduce", flush=True)
        for name, plan, ranks in [] if args.windows_only else readings:
            for path in ("scalar", "batch"):
                values = args.values if path == "batch" else max(64 * 256, args.values // 16)
                result = run_agents(pair, codes[path], plan, ranks, values, args.seconds, tmp)
                result["values"] = values
                report["readings"].setdefault(name, {})[path] = result
                print(f"  {name:48} {path:6} {_describe(result)}", flush=True)
        for window in args.windows:
            for code in ("compare", "batch") if args.compare else ("batch",):
                plan = switchless_plan(1, False, "unicast", window)
                result = run_agents(pair, codes[code], plan, [0], args.values, args.seconds / 2, tmp)
                result["pool"], result["code"] = window, args.compare if code == "compare" else "this checkout"
                result["load"] = os.getloadavg()[0]
                report["windows"].append(result)
                print(f"  window {window:5} {result['code'][:13]:13}: {_describe(result)}", flush=True)
        if args.windows_only:
            finish(report, args.out)
            return 0
        pair.set_offloads(False)
        result = run_agents(pair, ROOT, switchless_plan(1, False, "unicast", pool), [0], args.values, args.seconds, tmp)
        report["readings"]["worker, offloads off (as the lab's hosts)"] = {"batch": result}
        print(f"  worker, offloads off                              batch  {_describe(result)}", flush=True)
        pair.set_offloads(True)
        for send_mode, receive_mode in IO_CASES:
            result = run_io(pair, send_mode, receive_mode, args.io_seconds)
            report["io"].append(result)
            print(
                f"  raw I/O {send_mode:>12} -> {receive_mode:12} {result['received_per_s']:>12,.0f} datagrams/s",
                flush=True,
            )
    finish(report, args.out)
    return 0


def finish(report: dict, out: Path) -> None:
    """Print the tables and save the JSON and the plot."""
    report["machine"]["load_after"] = os.getloadavg()
    print_tables(report)
    name = "agent_windows" if not report["readings"] else "agent_pps"
    (out / f"{name}.json").write_text(json.dumps(report, indent=1))
    plot(report, out / f"{name}.png")
    print(f"\nsaved {out / (name + '.json')} and {out / (name + '.png')}")


def _describe(result: dict) -> str:
    return (
        f"{result['grads_per_s']:>10,.0f} GRAD/s {result['gradient_mb_per_s']:6.1f} MB/s  "
        f"rtt {result['srtt_ms']:.2f} ms  retx {result['retransmissions']}"
    )


def print_tables(report: dict) -> None:
    if report["readings"]:
        print_readings(report)
    print("\nwindow (batch path, one worker): chunks in flight per tree -> rate, round trip, receive holds, CPU")
    print(
        f"  {'pool':>5} {'agents':13} {'GRAD/s':>10} {'srtt ms':>8} {'holds per window: worker':>25} {'server':>7} "
        f"{'us/chunk: worker':>17} {'server':>7} {'load':>5}"
    )
    for r in report["windows"]:
        windows = r["chunks"] / r["pool"]
        print(
            f"  {r['pool']:5} {r.get('code', 'this checkout')[:13]:13} {r['grads_per_s']:>10,.0f} {r['srtt_ms']:8.2f} "
            f"{r.get('held_batches', 0) / windows:25.2f} {r['server'].get('held_batches', 0) / windows:7.2f} "
            f"{r['worker_cpu_us_per_packet']:17.2f} {r['server_cpu_us_per_packet']:7.2f} {r.get('load', 0.0):5.1f}"
        )
    if report["io"]:
        print("\nraw UDP I/O, 280-byte datagrams, one sender process and one receiver process")
        for r in report["io"]:
            print(
                f"  {r['send']:>12} -> {r['receive']:12} sent {r['sent_per_s']:>12,.0f}/s received "
                f"{r['received_per_s']:>12,.0f}/s  receiver {r['receiver_cpu_us_per_packet']:.2f} us/datagram"
            )
    print(
        f"\nload average before {report['machine']['load_before'][0]:.2f}, after {report['machine']['load_after'][0]:.2f}"
    )


def print_readings(report: dict) -> None:
    print(f"\nagents on kernel UDP over veth, pool {report['pool']} (K = 64: 280-byte GRADs, 256 bytes of gradient)")
    header = (
        f"{'reading':48} {'path':6} {'GRAD/s':>10} {'MB/s':>6} {'server pkts/s':>13} "
        f"{'worker us/pkt':>13} {'server us/pkt':>13} {'x scalar':>8}"
    )
    print(header)
    print("-" * len(header))
    for name, paths in report["readings"].items():
        for path, r in paths.items():
            server_packets = r["server"]["stats"].get("contributions", 0) + r["server"]["stats"].get("results_sent", 0)
            ratio = ""
            if path == "batch" and "scalar" in paths:
                ratio = f"{r['grads_per_s'] / paths['scalar']['grads_per_s']:.1f}"
            print(
                f"{name:48} {path:6} {r['grads_per_s']:>10,.0f} {r['gradient_mb_per_s']:>6.1f} "
                f"{server_packets / r['seconds'] if r['seconds'] else 0:>13,.0f} "
                f"{r['worker_cpu_us_per_packet']:>13.2f} {r['server_cpu_us_per_packet']:>13.2f} {ratio:>8}"
            )
    print("\n(server pkts/s: GRADs taken plus RESULTs sent, over the run; us/pkt: CPU per chunk of each process)")


def plot(report: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [n for n, paths in report["readings"].items() if "scalar" in paths]
    if not names:  # --windows-only
        fig, right = plt.subplots(figsize=(6.5, 4.8))
        plot_windows(report, right)
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), gridspec_kw={"width_ratios": [3, 2]})
    x = range(len(names))
    for offset, code, colour in ((-0.2, "scalar", "tab:gray"), (0.2, "batch", "tab:orange")):
        rates = [report["readings"][n][code]["grads_per_s"] for n in names]
        bars = left.bar([i + offset for i in x], rates, width=0.4, label=f"{code} path", color=colour)
        left.bar_label(bars, labels=[f"{r / 1000:.0f}k" if r >= 1000 else f"{r:.0f}" for r in rates], fontsize=7)
    left.axhline(300_000, color="tab:red", linestyle="--", linewidth=1, label="300k GRAD/s")
    left.set_xticks(list(x), [n.replace("server: ", "server:\n").replace(", ", ",\n") for n in names], fontsize=8)
    left.set_ylabel("GRADs per second (chunks)")
    left.set_title(f"agents over veth, pool {report['pool']}")
    left.legend(fontsize=8)
    plot_windows(report, right)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def plot_windows(report: dict, right) -> None:
    """The window sweep: rate against pool size, a line per version of the agents."""
    codes = list(dict.fromkeys(r.get("code", "this checkout") for r in report["windows"]))
    for code in codes:
        colour = "tab:orange" if code == "this checkout" else "tab:gray"
        sweep = [r for r in report["windows"] if r.get("code", "this checkout") == code]
        right.plot([r["pool"] for r in sweep], [r["grads_per_s"] for r in sweep], marker="o", color=colour, label=code)
    if len(codes) > 1:
        right.legend(fontsize=8)
    right.axhline(300_000, color="tab:red", linestyle="--", linewidth=1)
    right.set_xscale("log", base=2)
    right.set_xlabel("pool size (chunks in flight per tree)")
    right.set_ylabel("GRADs per second, one worker")
    right.set_title(f"window: rate = pool / round trip (load {report['windows'][0].get('load', 0):.1f})")


def node_main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="agent_pps.py node")
    ap.add_argument("role", choices=("server", "workers", "send", "receive"))
    ap.add_argument("--code", default=str(ROOT))
    ap.add_argument("--plan")
    ap.add_argument("--ranks", default="0")
    ap.add_argument("--values", type=int, default=1 << 20)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--mode", default="")
    args = ap.parse_args(argv)
    {"server": role_server, "workers": role_workers, "send": role_send, "receive": role_receive}[args.role](args)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BenchError as e:
        print(f"agent_pps: {e}", file=sys.stderr)
        sys.exit(1)
