"""Where a small all_reduce's time goes: the torch backend's path through the lab, stage by stage, next to gloo.

On the lab's network (network namespaces, veth links shaped to the topology file's bandwidths, one
softswitch process per switch, the lab's server agent), one process per worker host joins an ``ina``
process group (a job of its own, as lab training does) and all-reduces float32 tensors of each size
with ``dist.all_reduce``, twice per turn: as the backend runs (the calling thread runs the exchange
itself) and with every exchange on the backend's switch thread (``waiter_may_run = False``, as DDP's
buckets run), alternating with gloo's all_reduce of the same tensor between the same processes (the group's own
gloo backend: TCP through the switches' IPv4 routes). Every variant's sum is checked against gloo's in
every call, within the bounds docs/pytorch.md gives (a mismatch ends the run, naming the call and element).

Each ina all_reduce is timed stage by stage from two sources on one clock (CLOCK_REALTIME; the lab's
processes share one kernel):

- the ranks' own stamps (worker/timeline.py): the call, the hand-over to the thread that runs it,
  the first and last batch handed to the kernel, the first and last batch taken from the socket, the
  write-back, the return;
- the moments the packets crossed the switches' ports: a packet socket on every switch interface (root
  namespace) with kernel timestamps (SO_TIMESTAMPNS) records each INA frame of the job going in or
  out, after the sender's shaper, before the switch reads it, and after the switch's shaper (a stamp
at the switch's egress includes the wait for the link's tbf tokens, and the file's link delay where
the kernel has netem; the lab says when it has not).

For each rank and call the path is cut into consecutive stages that add up to the call's time (the
last packet of each step, which is what the call waits for): torch before the exchange, the
hand-over, scales/quantize/encode/send, the link to the switch, waiting for the slowest rank,
the switch (GRAD in to the aggregate out), the server's round (its link both ways and the server
agent), the switch (RESULT in to the copy out), the link and the agent's wake-up, decode and torch
after; where the switch is the tree's root and multicasts the RESULTs itself (the default), the switch
(the last GRAD in to the RESULT out) instead of the three from the aggregate out to the copy out. Each
backend's time from the last rank's call to the ranks' return is printed too: its own time, without the
start skew the operation before it left. It prints the mean of every stage per size (the means add up to the mean call) and the totals'
medians, and saves JSON (means, medians, 10th and 90th percentiles) and a PNG (stacked bars of the
means, gloo beside them).

    .venv/bin/python bench/allreduce_latency.py                      # star_100m, its default program, 2,410 / 10k / 100k floats
    .venv/bin/python bench/allreduce_latency.py --sizes 2410 --iterations 400 --no-capture

Needs root and Debian's mininet; takes /tmp/ina-lab.lock for the lab's run. Saves
bench/results/allreduce_latency.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import struct
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from bench.allreduce_netns import LOCK, lab_lock  # noqa: E402
from controller.cli_options import add_lanes_shorthand, add_program  # noqa: E402

RESULTS = ROOT / "bench" / "results"
DEFAULT_SIZES = (2410, 10_000, 100_000)  # floats: the digits MLP's gradient, and two larger
SO_TIMESTAMPNS = getattr(socket, "SO_TIMESTAMPNS", 35)  # Linux; its control message has the same type
PACKET_OUTGOING = 4
ETH_P_ALL = 0x0003
# the stages of one ina all_reduce, in path order: (name, start stamp, end stamp); stamps from the
# rank's timeline, or measured at the switch's ports ("port:..." names, see ``port_stamps``); "sent_first"
# and "sent_last" are the rank's send stamps, no later than its first and last GRAD's arrival at the switch
# (``port_stamps``). stage_table makes every stage start where the one before ended (``path_stamps``)
STAGES = (
    ("torch: checks, copy, queue", "call", "queued"),
    ("hand-over to the thread that runs it", "queued", "picked"),
    ("scales, quantize, encode, send", "picked", "sent_first"),
    ("send the rest (window)", "sent_first", "sent_last"),
    ("link to the switch", "sent_last", "port:grad_in"),
    ("waiting for the slowest rank", "port:grad_in", "port:grad_in_all"),
    ("switch: GRAD in to sum out", "port:grad_in_all", "port:sum_out"),
    ("server: link both ways + agent", "port:sum_out", "port:result_in"),
    ("switch: RESULT in to copy out", "port:result_in", "port:result_out"),
    ("link + agent wake-up", "port:result_out", "last_receive"),
    ("decode, dequantize, write back", "last_receive", "executed"),
    ("back to the caller", "executed", "returned"),
)
# the same path where the aggregating switch is the tree's root and multicasts the RESULT of each sum it
# completes itself (docs/design-decisions.md, "Results from the tree's root"): no server on the path
ROOT_STAGES = (
    *STAGES[:6],
    ("switch: last GRAD in to RESULT out", "port:grad_in_all", "port:result_out"),
    *STAGES[-3:],
)
# the ina backend as it runs (a synchronous all_reduce on its caller's thread) and with every exchange on
# its switch thread (InaProcessGroup.waiter_may_run = False), alternating call by call
VARIANTS = ("ina", "ina, switch thread")
TIMELINE_STAGES = (
    ("torch: checks, copy, queue", "call", "queued"),
    ("hand-over to the thread that runs it", "queued", "picked"),
    ("scales, quantize, encode, send", "picked", "first_send"),
    ("send the rest (window)", "first_send", "last_send"),
    ("network round trip (send to receive)", "last_send", "last_receive"),
    ("decode, dequantize, write back", "last_receive", "executed"),
    ("back to the caller", "executed", "returned"),
)


# -- one rank (runs inside a lab host) ------------------------------------------------------------------
class SumMismatch(RuntimeError):
    """An ina all_reduce's sum differs from gloo's by more than the documented bounds allow."""


def rank_inputs(seed: int, world_size: int, values: int) -> np.ndarray:
    """Every rank's tensor of one size (row r is rank r's): each rank draws its own from the same seeds,
    so any rank can work out the exact sum."""
    return np.stack([np.random.default_rng([seed, r, values]).standard_normal(values).astype(np.float32)
                     for r in range(world_size)])  # fmt: skip


def gloo_tolerance(inputs: np.ndarray) -> np.ndarray:
    """How far, per element, an ina SUM of these inputs may be from gloo's (docs/pytorch.md, "Dtypes and
    precision"): ina's quantization bound 16 N^3 2^-30 max|x| (the one-round path's; two rounds' is
    smaller) and its one rounding to float32, plus gloo's rounding of every partial sum."""
    n = len(inputs)
    eps = float(np.finfo(np.float32).eps)
    exact = np.abs(inputs.astype(np.float64).sum(0))
    ina = 16.0 * n**3 * 2.0**-30 * float(np.abs(inputs).max()) + eps * exact
    return ina + eps * (exact + (n - 1) * np.abs(inputs.astype(np.float64)).sum(0))


def check_sum(what: str, ina: np.ndarray, gloo: np.ndarray, tolerance: np.ndarray) -> float:
    """|ina - gloo| / max|gloo|; raises SumMismatch naming `what` and the worst element when ina is
    further from gloo than `tolerance` anywhere."""
    difference = np.abs(ina.astype(np.float64) - gloo.astype(np.float64))
    over = difference - tolerance
    if not np.all(over <= 0):  # NaN included
        i = int(np.nanargmax(np.where(np.isnan(over), np.inf, over)))
        raise SumMismatch(
            f"{what}: ina's sum differs from gloo's at element {i}: {float(ina[i])!r} against {float(gloo[i])!r} "
            f"(allowed {float(tolerance[i]):.3g})"
        )
    return float(difference.max()) / max(1e-30, float(np.abs(gloo).max()))


def rank_main(args: argparse.Namespace) -> int:
    """Join the ina group, all-reduce every size ina then gloo, ``iterations`` times, write the stamps."""
    import torch
    import torch.distributed as dist

    import worker.torch_backend  # noqa: F401  (registers the backend)
    from worker.timeline import Timeline

    torch.set_num_threads(1)
    dist.init_process_group(
        "ina", rank=args.rank, world_size=args.world_size, init_method=f"tcp://{args.master_addr}:{args.master_port}"
    )
    group = dist.group.WORLD
    gloo = group.gloo
    timeline = Timeline()
    out: dict = {"rank": args.rank, "sizes": []}
    for n in args.sizes:
        inputs = rank_inputs(args.seed, args.world_size, n)
        tolerance = gloo_tolerance(inputs)
        x = torch.from_numpy(inputs[args.rank].copy())
        for _ in range(args.warmup):  # the first call of a size agrees on its scales (two rounds)
            dist.all_reduce(x.clone())
            gloo.allreduce([x.clone()]).wait()
        records: dict[str, list] = {variant: [] for variant in VARIANTS}
        transport = group.channel.transport
        held_before, batches_before = getattr(transport, "held_batches", 0), transport.received_batches
        gloo_times, worst = [], 0.0
        for i in range(args.iterations):
            sums = {}
            for variant in VARIANTS if i % 2 else VARIANTS[::-1]:  # each goes first in every other call
                group.waiter_may_run = variant == "ina"
                group.timeline = group.channel.transport.timeline = timeline
                t = x.clone()
                dist.all_reduce(t)
                timeline.records[-1]["returned"] = time.time()
                group.timeline = group.channel.transport.timeline = None
                records[variant] += timeline.take()
                sums[variant] = t.numpy()
            g = x.clone()
            t0 = time.time()
            gloo.allreduce([g]).wait()
            gloo_times.append((t0, time.time()))
            for variant, t in sums.items():  # every variant's sum, every call: a mismatch ends the run
                what = f"rank {args.rank}, {n} floats, call {i}, {variant}"
                worst = max(worst, check_sum(what, t, g.numpy(), tolerance))
        group.waiter_may_run = True
        held = getattr(transport, "held_batches", 0) - held_before  # receive coalescing
        batches = transport.received_batches - batches_before  # the ina calls' receive batches (both variants)
        out["sizes"].append(
            {"values": n, **records, "gloo": gloo_times, "max_relative_difference": worst, "held_batches": held}
            | {"receive_batches_per_call": batches / max(1, len(VARIANTS) * args.iterations)}
        )
    counts = group.switch_counts()
    out["rounds"] = {"agreements": counts["agreements"], "value_rounds": counts["value_rounds"]}
    Path(args.out).write_text(json.dumps(out))
    dist.barrier()
    dist.destroy_process_group()
    sys.stdout.flush()
    os._exit(0)  # torch's gloo threads outlive the group (examples/launch.py: end_rank_process)


# -- the packets at the switches' ports ------------------------------------------------------------------
class PortCapture:
    """Packet sockets on switch interfaces: every INA frame of ``job_id`` with its kernel timestamp.

    ``frames`` collects (time, interface, outgoing, pkt_type, seq) tuples; ``outgoing`` is a frame the
    switch sent on that interface."""

    def __init__(self, interfaces: list[str], job_id: int):
        from protocol import codec
        from protocol.constants import INA_UDP_PORT

        self._codec, self._port = codec, INA_UDP_PORT
        self.job_id = job_id
        self.frames: list[tuple[float, str, bool, int, int]] = []
        self.undecodable = 0
        self._socks: dict[int, tuple[socket.socket, str]] = {}
        for intf in interfaces:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # no protocol until bound to intf
            sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
            sock.bind((intf, ETH_P_ALL))
            sock.setblocking(False)
            self._socks[sock.fileno()] = (sock, intf)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="port-capture", daemon=True)

    def __enter__(self) -> PortCapture:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)
        for sock, _ in self._socks.values():
            sock.close()

    def _run(self) -> None:
        fds = list(self._socks)
        while not self._stop.is_set():
            ready, _, _ = select.select(fds, [], [], 0.2)
            for fd in ready:
                sock, intf = self._socks[fd]
                while True:
                    try:
                        data, ancillary, _, address = sock.recvmsg(2048, socket.CMSG_SPACE(16))
                    except (BlockingIOError, InterruptedError):
                        break
                    self._take(data, ancillary, address, intf)

    def _take(self, data: bytes, ancillary, address, intf: str) -> None:
        # Ethernet + IPv4 + UDP to the INA port only: gloo's TCP, ARP and the like are not the job's
        if len(data) < 42 or data[12:14] != b"\x08\x00" or data[23] != 17:
            return
        udp_at = 14 + 4 * (data[14] & 0x0F)
        if struct.unpack_from("!H", data, udp_at + 2)[0] != self._port:
            return
        when = None
        for level, kind, value in ancillary:
            if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS:
                seconds, nanos = struct.unpack("qq", value[:16])
                when = seconds + nanos * 1e-9
        try:
            packet = self._codec.decode(data[udp_at + 8 :])
        except self._codec.ProtocolError:
            self.undecodable += 1
            return
        h = packet.header
        if when is not None and h.job_id == self.job_id:
            self.frames.append((when, intf, address[2] == PACKET_OUTGOING, h.pkt_type, h.seq))


def port_stamps(records: list[dict], frames: list[tuple], ports: dict[str, str], server_port: str) -> None:
    """Add the ``port:...`` stamps of STAGES to every rank's records (``records[r][i]``: rank r's i-th
    call; ``ports``: worker host -> its switch interface, in rank order; one aggregating switch).

    A call's packets are the GRADs its rank sent into the switch between its call and its last receive;
    their sequence numbers name the RESULTs and sums of the same call. Each stamp is the last such
    frame: the moment the call's last chunk passed that point.

    The rank stamps a send after sendmmsg returned, but over a veth link the kernel delivers (and
    timestamps) the frame at the switch's port during that call: "sent_first" and "sent_last" are the
    rank's first_send and last_send, each no later than the kernel's stamp of its first and last GRAD
    in (the frame cannot have reached the switch before it was sent)."""
    from protocol.constants import PKT_TYPE_GRAD, PKT_TYPE_RESULT

    frames = sorted(frames)
    times = np.array([f[0] for f in frames])
    workers = list(ports.values())
    for i in range(len(records[0])):
        calls = [r[i] for r in records]
        lo, hi = min(c["call"] for c in calls), max(c.get("last_receive", c["call"]) for c in calls)
        window = frames[int(np.searchsorted(times, lo)) : int(np.searchsorted(times, hi, side="right"))]
        # a rank's GRADs between its own call and last receive are this call's (a fast rank may already
        # send the next call's while a slow one still waits for this one's results)
        seqs = {
            f[4]
            for call, intf in zip(calls, workers, strict=True)
            for f in window
            if f[1] == intf
            and f[3] == PKT_TYPE_GRAD
            and not f[2]
            and call["call"] <= f[0] <= call.get("last_receive", hi)
        }
        mine = [f for f in window if f[4] in seqs]

        def last(match, mine=mine) -> float | None:
            chosen = [f[0] for f in mine if match(f)]
            return max(chosen) if chosen else None

        def grads_in(intf: str, mine=mine) -> list[float]:
            return [f[0] for f in mine if f[3] == PKT_TYPE_GRAD and not f[2] and f[1] == intf]

        grad_in = {intf: max(grads_in(intf), default=None) for intf in workers}
        first_in = {intf: min(grads_in(intf), default=None) for intf in workers}
        sum_out = last(lambda f: f[3] == PKT_TYPE_GRAD and f[2] and f[1] == server_port)
        result_in = last(lambda f: f[3] == PKT_TYPE_RESULT and not f[2] and f[1] == server_port)
        arrivals = [t for t in grad_in.values() if t is not None]
        for call, intf in zip(calls, workers, strict=True):
            stamps = {
                "port:grad_in": grad_in[intf],
                "port:grad_in_all": max(arrivals) if arrivals else None,
                "port:sum_out": sum_out,
                "port:result_in": result_in,
                "port:result_out": last(lambda f, intf=intf: f[3] == PKT_TYPE_RESULT and f[2] and f[1] == intf),
            }
            call.update({k: v for k, v in stamps.items() if v is not None})
            for sent, rank_stamp, port in (("sent_first", "first_send", first_in), ("sent_last", "last_send", grad_in)):
                if rank_stamp in call:
                    arrived = port[intf]
                    call[sent] = call[rank_stamp] if arrived is None else min(call[rank_stamp], arrived)


def path_stamps(record: dict, stages) -> dict[str, float]:
    """``record``'s stamps along ``stages`` (consecutive: each starts where the one before ended), each
    moved up to the one before where it is earlier, so no stage is negative and the stages still add up to
    the call's time. Stamps from two sources (the rank's, taken after a system call returned, and the
    kernel's at the switch's ports) can disagree by the length of a system call; the path cannot."""
    path, floor = dict(record), float("-inf")
    for _, start, end in stages:
        for key in (start, end):
            if key in record:
                path[key] = floor = max(record[key], floor)
    return path


def stage_table(records: list[dict], stages) -> dict[str, dict[str, float]]:
    """Median, 10th and 90th percentile (microseconds) of every stage over all ranks' calls that have
    both stamps (along ``path_stamps``: none negative), and of the whole call."""
    table = {}
    paths = [path_stamps(r, stages) for r in records]
    for name, start, end in (*stages, ("total", "call", "returned")):
        spans = [1e6 * (r[end] - r[start]) for r in paths if start in r and end in r]
        if spans:
            table[name] = {
                "mean_us": float(np.mean(spans)),
                "median_us": float(np.median(spans)),
                "p10_us": float(np.percentile(spans, 10)),
                "p90_us": float(np.percentile(spans, 90)),
                "calls": len(spans),
            }
    return table


def spans_table(spans_s: list[float]) -> dict[str, float]:
    us = 1e6 * np.asarray(spans_s)
    return {
        "mean_us": float(np.mean(us)),
        "median_us": float(np.median(us)),
        "p10_us": float(np.percentile(us, 10)),
        "p90_us": float(np.percentile(us, 90)),
        "calls": len(us),
    }


# -- the lab run --------------------------------------------------------------------------------------
def run_lab(args: argparse.Namespace) -> dict:
    """Bring the lab up, run the ranks (capturing the switch ports), bring it down; the raw report."""
    from controller.options import DEFAULT_RESULT_MODE
    from controller.planner import PlanOptions
    from topologies.mininet_lab import MininetLab

    log_lines: list[str] = []

    def log(message: str) -> None:
        log_lines.append(message)
        if message.startswith("[lab] ") and ("starting" in message or "network up" in message):
            print(message, flush=True)

    options = PlanOptions(result_mode=DEFAULT_RESULT_MODE)
    with lab_lock(args.lock):
        lab = MininetLab(
            str(ROOT / args.topology),
            program=args.program,  # None: the lab's default program
            log=log,
            plan_options=options,
        )
        lab.start()
        try:
            load_before = [f"{v:.2f}" for v in os.getloadavg()]
            with lab.training_job() as (plan, plan_path):
                return _run_ranks(args, lab, plan, plan_path, load_before)
        finally:
            lab.stop()


def _run_ranks(args, lab, plan, plan_path, load_before) -> dict:
    from topologies.lab_network import intf_name
    from topologies.lab_training import RankHost, rank_env, start_rank_process

    topo = lab.topo
    aggregators = [s for s in plan.switches if s.aggregates]
    if len(aggregators) != 1:
        raise SystemExit(
            f"{args.topology}: the per-hop stages need one aggregating switch, the plan has {len(aggregators)}"
        )
    switch = aggregators[0].switch
    neighbours = {}  # host -> the switch's interface toward it
    for link in topo.links:
        for a, b, port in ((link.a, link.b, link.a_port), (link.b, link.a, link.b_port)):
            if a == switch:
                neighbours[b] = intf_name(switch, port)
    if any(w.name not in neighbours for w in plan.workers) or lab.server not in neighbours:
        raise SystemExit(f"{args.topology}: the per-hop stages need every worker and the server on {switch}")
    hosts = [RankHost(w.name, w.ip, intf_name(w.name, lab.spec.host(w.name).port)) for w in plan.workers]
    ports = {w.name: neighbours[w.name] for w in plan.workers}
    outputs = [lab.workdir / f"latency-rank{r}.json" for r in range(len(hosts))]
    capture = PortCapture(list(neighbours.values()), plan.job_id) if args.capture else None
    print(
        f"{args.topology}: {len(hosts)} workers, K = {plan.value_count}, job {plan.job_id}, sizes "
        f"{', '.join(map(str, args.sizes))} floats, {args.iterations} calls each (ina and gloo alternating), "
        f"load {' '.join(load_before)}",
        flush=True,
    )
    if capture is not None:
        capture.__enter__()
    procs = []
    server_before = lab.server_stats()
    t0 = time.monotonic()
    try:
        for rank, host in enumerate(hosts):
            argv = [
                sys.executable,
                str(Path(__file__).resolve()),
                "--rank",
                str(rank),
                "--world-size",
                str(len(hosts)),
                "--master-addr",
                hosts[0].ip,
                "--master-port",
                str(29600 + lab.train_runs),
                "--sizes",
                *map(str, args.sizes),
                "--iterations",
                str(args.iterations),
                "--warmup",
                str(args.warmup),
                "--out",
                str(outputs[rank]),
            ]
            log_path = lab.workdir / f"latency-rank{rank}.log"
            env = rank_env(host, str(plan_path))
            procs.append(start_rank_process(lab.network, host, argv, f"latency rank {rank}", log_path, env))
        deadline = time.monotonic() + args.timeout
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            time.sleep(0.2)
        for rank, p in enumerate(procs):
            if p.poll() is None or p.returncode != 0 or not outputs[rank].exists():
                tail = (lab.workdir / f"latency-rank{rank}.log").read_text(errors="replace").splitlines()[-15:]
                raise SystemExit(f"rank {rank} on {hosts[rank].name} failed (status {p.poll()}):\n" + "\n".join(tail))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
        if capture is not None:
            capture.__exit__()
    ranks = [json.loads(path.read_text()) for path in outputs]
    server_after = lab.server_stats()
    return {
        # times the server agent left its port unread to gather a batch (worker/transport.py), all sizes
        "server_held_batches": server_after.get("held_batches", 0) - server_before.get("held_batches", 0),
        "topology": args.topology,
        "workers": len(hosts),
        "values_per_packet": plan.value_count,
        "switch": switch,
        "root_results": bool(aggregators[0].root),  # the switch multicasts the RESULTs (ROOT_STAGES)
        "ports": ports,
        "server_port": neighbours[lab.server],
        "load_before": load_before,
        "load_after": [f"{v:.2f}" for v in os.getloadavg()],
        "run_s": time.monotonic() - t0,
        "ranks": ranks,
        "frames": capture.frames if capture is not None else [],
        "undecodable_frames": capture.undecodable if capture is not None else 0,
    }


def after_last_call(calls: list[list[tuple[float, float]]]) -> dict[str, float]:
    """``calls[r][i]``: rank r's (call, return) of the i-th call. The median over calls of the ranks' mean
    time from the last rank's call to their return: the operation's own time, without the start skew the
    operation before it left (a rank that calls early waits for the last one, whichever backend)."""
    spans = [np.mean([end for _, end in call]) - max(start for start, _ in call) for call in zip(*calls, strict=True)]
    return spans_table(spans)


def analyse(raw: dict) -> list[dict]:
    """Per size: the stage medians of each ina variant (with the port stamps when captured) and gloo's times."""
    rows = []
    for s, size in enumerate(raw["ranks"][0]["sizes"]):
        stages = (ROOT_STAGES if raw.get("root_results") else STAGES) if raw["frames"] else TIMELINE_STAGES
        gloo = spans_table([end - start for rank in raw["ranks"] for start, end in rank["sizes"][s]["gloo"]])
        variants = {}
        for variant in VARIANTS:
            records = [rank["sizes"][s][variant] for rank in raw["ranks"]]
            if raw["frames"]:
                port_stamps(records, raw["frames"], raw["ports"], raw["server_port"])
            variants[variant] = stage_table([r for rank in records for r in rank], stages)
        own = {v: after_last_call([[(c["call"], c["returned"]) for c in rank["sizes"][s][v]] for rank in raw["ranks"]])
               for v in VARIANTS}  # fmt: skip
        own["gloo"] = after_last_call([[tuple(c) for c in rank["sizes"][s]["gloo"]] for rank in raw["ranks"]])
        rows.append(
            {
                "values": size["values"],
                "stages": [name for name, _, _ in stages],
                "ina": variants,
                "gloo": gloo,
                "gloo_over_ina": {v: gloo["median_us"] / t["total"]["median_us"] for v, t in variants.items()},
                "after_last_call": own,
                "max_relative_difference": max(rank["sizes"][s]["max_relative_difference"] for rank in raw["ranks"]),
                "ranks_held_batches": sum(rank["sizes"][s].get("held_batches", 0) for rank in raw["ranks"]),
                "receive_batches_per_call": float(
                    np.mean([rank["sizes"][s].get("receive_batches_per_call", np.nan) for rank in raw["ranks"]])
                ),
            }
        )
    return rows


def print_table(rows: list[dict]) -> None:
    """Mean microseconds per stage (the means add up to the mean call), then the totals' medians."""
    names = rows[0]["stages"]
    width = max(len(n) for n in names) + 2
    columns = [(row, variant) for row in rows for variant in VARIANTS]

    def line(label: str, cell) -> None:
        print(f"{label:<{width}}" + "".join(cell(row, variant) for row, variant in columns))

    print()
    line("mean us per stage", lambda row, v: f"{row['values']:>17,} floats")
    line("", lambda row, v: f"{v:>24}")
    for name in names:
        line(name, lambda row, v, name=name: f"{row['ina'][v].get(name, {}).get('mean_us', float('nan')):>24.0f}")
    line("ina total, mean", lambda row, v: f"{row['ina'][v]['total']['mean_us']:>24.0f}")
    line("gloo total, mean", lambda row, v: f"{row['gloo']['mean_us']:>24.0f}")
    line("ina total, median", lambda row, v: f"{row['ina'][v]['total']['median_us']:>24.0f}")
    line("gloo total, median", lambda row, v: f"{row['gloo']['median_us']:>24.0f}")
    line("gloo time / ina time (medians)", lambda row, v: f"{row['gloo_over_ina'][v]:>24.2f}")
    line("ina from the last rank's call", lambda row, v: f"{row['after_last_call'][v]['median_us']:>24.0f}")
    line("gloo from the last rank's call", lambda row, v: f"{row['after_last_call']['gloo']['median_us']:>24.0f}")
    line("max |ina - gloo| / max |sum|", lambda row, v: f"{row['max_relative_difference']:>24.1e}")
    line("ranks' held receives (all calls)", lambda row, v: f"{row['ranks_held_batches']:>24}")
    line("a rank's receive batches per call", lambda row, v: f"{row['receive_batches_per_call']:>24.1f}")


def plot(rows: list[dict], raw: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = rows[0]["stages"]
    fig, axes = plt.subplots(1, len(rows), figsize=(4.2 * len(rows) + 3, 5.5), squeeze=False)
    colours = plt.get_cmap("tab20").colors
    for ax, row in zip(axes[0], rows, strict=True):
        for x, variant in enumerate(VARIANTS):
            bottom = 0.0
            for i, name in enumerate(names):
                value = max(0.0, row["ina"][variant].get(name, {}).get("mean_us", 0.0)) / 1e3
                ax.bar(
                    x, value, bottom=bottom, color=colours[i % len(colours)], label=name if x == 0 else None, width=0.6
                )
                bottom += value
            total = row["ina"][variant]["total"]["mean_us"] / 1e3
            ax.plot([x - 0.3, x + 0.3], [total, total], "k--", lw=1)
        ax.bar(len(VARIANTS), row["gloo"]["mean_us"] / 1e3, color="0.5", width=0.6, label="gloo all_reduce")
        ax.set_xticks(range(len(VARIANTS) + 1), [*(v.replace(", ", "\n") for v in VARIANTS), "gloo"])
        ax.set(title=f"{row['values']:,} floats", ylabel="ms (means over ranks and calls)")
        ax.grid(True, axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center right", fontsize=8)
    fig.suptitle(
        f"one all_reduce on {Path(raw['topology']).stem}: {raw['workers']} workers, K = {raw['values_per_packet']} "
        f"(dashed: mean of the whole call), load {' '.join(raw['load_before'])}"
    )
    fig.tight_layout(rect=(0, 0, 1 - 2.8 / (4.2 * len(rows) + 3), 0.95))
    fig.savefig(path, dpi=100)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--topology", default="topologies/star_100m.yaml", help="lab topology file (one aggregating switch)"
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=list(DEFAULT_SIZES), help="floats per all_reduce")
    ap.add_argument("--iterations", type=int, default=200, help="timed calls per size and backend")
    ap.add_argument("--warmup", type=int, default=20, help="untimed calls per size and backend first")
    add_program(ap, help="the switches' program (default: the lab's, the largest K the links carry)")
    add_lanes_shorthand(ap)
    ap.add_argument("--no-capture", dest="capture", action="store_false", help="no packet sockets on the switch ports")
    ap.add_argument("--lock", default=LOCK, help="lab lock file ('' for none)")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds the ranks may take")
    ap.add_argument("--out", default=str(RESULTS / "allreduce_latency"), help="output path without extension")
    ap.add_argument(
        "--raw", action="store_true", help="also save every rank's stamps and the captured frames (.raw.json)"
    )
    # one rank inside a lab host (started by the bench itself)
    ap.add_argument("--rank", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--world-size", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--master-addr", help=argparse.SUPPRESS)
    ap.add_argument("--master-port", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=5, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rank is not None:
        return rank_main(args)
    if os.geteuid() != 0:
        print("bench/allreduce_latency.py needs root (mininet)", file=sys.stderr)
        return 1
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    raw = run_lab(args)
    rows = analyse(raw)
    print_table(rows)
    print(f"the server agent held its port {raw['server_held_batches']} times over the run (receive coalescing)")
    report = {key: raw[key] for key in raw if key not in ("ranks", "frames")}
    report["rounds"] = [rank["rounds"] for rank in raw["ranks"]]
    report["captured_frames"] = len(raw["frames"])
    report["sizes"] = rows
    out.with_suffix(".json").write_text(json.dumps(report, indent=1))
    if args.raw:
        out.with_suffix(".raw.json").write_text(json.dumps(raw))
    plot(rows, raw, out.with_suffix(".png"))
    print(f"saved {out.with_suffix('.json')} and {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
