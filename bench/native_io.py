"""Frames per second through softswitch's native port I/O alone, on veth pairs.

The switch runs the native runtime's test descriptor (tests/softswitch/native/fixture_program.c: the
frame's first bytes say "forward to port 2"), so the figure is the I/O layer's (recvmmsg -> pipeline
orchestration -> sendmmsg), not a P4 program's. A native sender (sendmmsg, as fast as it can) writes to
the host end of port 1's veth pair, a native receiver (recvmmsg) counts what leaves port 2's host end.
Three native threads (sender, switch, receiver) share this machine's cores.

Cases, per frame size (64, 330 = an ina.p4 GRAD with 64 values, 1514 bytes):
  * in process: process_batch on packed frames, no ports (the orchestration's own cost);
  * harness: sender -> one veth pair -> receiver, no switch (the ceiling of the measuring setup);
  * switch:  sender -> veth -> native switch (port 1 -> port 2) -> veth -> receiver, once with the
    ports receiving from a PACKET_MMAP ring (the runtime's default) and once with recvmmsg.
By default the switch's thread runs alone on one CPU and the sender and receiver share another, and
the switch CPU's busy time is measured. The sender on one shared core cannot saturate the switch, so a
third case measures the switch's own capacity:
  * drain: the I/O thread paused, a burst of frames fills port 1's ring, then the thread drains it at
    full batches (64 frames): frames / drain time, with the receiver still counting every frame;
  * absorb: the same with frames the pipeline drops (receive side only, as for the GRADs a switch
    aggregates: 3 of 4 end in the switch).
Prints a table with the machine's load and saves bench/results/native_io.json and .png.

    .venv/bin/python bench/native_io.py [--seconds 3] [--quick] [--out DIR]    (root: creates veth pairs)
    .venv/bin/python bench/native_io.py --idle 15 [--trickle 100] [--rounds 2]

--idle measures instead what the switch's native threads spend when frames are few: CPU seconds with no
traffic and with a trickle (each frame's latency through the switch too), frame slots (SOFTSWITCH_IO=ring)
against the hybrid (SOFTSWITCH_IO=hybrid), alternating.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "softswitch" / "native"))

from bench.cpu_time import machine_busy, thread_cpu_seconds  # noqa: E402
from native.build import load_library  # noqa: E402

RESULTS = ROOT / "bench" / "results"
SIZES = (64, 330, 1514)
TAG = b"NATIVEIO"
TAG_AT = 16  # after the fixture's 16-byte test header
SEQ_AT = TAG_AT + len(TAG)


def traffic_library():
    lib = load_library("native-io-traffic", [ROOT / "bench" / "native_io_traffic.c"])
    u32, u64, double = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_double
    text, out = ctypes.c_char_p, ctypes.POINTER(ctypes.c_uint64)
    lib.traffic_send.restype = lib.traffic_receive.restype = ctypes.c_int64
    lib.traffic_send.argtypes = [text, text, u32, u32, double, u64, out]
    lib.traffic_receive.argtypes = [text, text, u32, u32, double, double, ctypes.POINTER(ctypes.c_int), out]
    return lib


class VethPairs:
    """veth pairs (switch end, host end) in the root namespace, removed on exit."""

    def __init__(self, count: int):
        tag = os.getpid() % 100000
        self.pairs = [(f"nio{tag}s{i}", f"nio{tag}h{i}") for i in range(1, count + 1)]

    def __enter__(self):
        for a, b in self.pairs:
            subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
            for name in (a, b):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{name}.disable_ipv6=1"], check=False)
                subprocess.run(["ip", "link", "set", name, "up"], check=True)
        return self.pairs

    def __exit__(self, *exc):
        for a, _ in self.pairs:
            subprocess.run(["ip", "link", "del", a], check=False, capture_output=True)


def frame_of(size: int, forward: bool = True) -> bytes:
    """A fixture frame: FORWARD to port 2 in its first bytes, which also make a unicast MAC 00:02:...
    (forward=False: the DROP command, which the switch absorbs, as it absorbs most GRADs)."""
    from native_fixture import DROP, FORWARD, make_frame

    return make_frame(FORWARD if forward else DROP, 2, payload=(TAG + bytes(4)).ljust(size - 16, b"\xab"))


def thread_ids(name: str, timeout: float = 2.0) -> list[int]:
    """Thread ids of this process whose name is `name` (the native threads name themselves once they
    run: wait for them)."""
    deadline = time.monotonic() + timeout
    while True:
        out = []
        for task in Path("/proc/self/task").iterdir():
            try:
                if (task / "comm").read_text().strip() == name:
                    out.append(int(task.name))
            except OSError:
                pass
        if out or time.monotonic() > deadline:
            if not out:
                raise RuntimeError(f"no thread named {name}")
            return out
        time.sleep(0.01)


def pin(cpu: int | None) -> None:
    """Pins the calling thread (the sender or receiver while it runs native code) to one CPU."""
    if cpu is not None:
        os.sched_setaffinity(threading.get_native_id(), {cpu})


def run_traffic(lib, send_iface: str, recv_iface: str, frame: bytes, seconds: float, traffic_cpu=None) -> dict:
    result: dict = {}
    received_bytes = ctypes.c_uint64()
    stop = ctypes.c_int(0)

    def receive():
        pin(traffic_cpu)
        result["received"] = lib.traffic_receive(
            recv_iface.encode(),
            TAG,
            len(TAG),
            TAG_AT,
            seconds + 30,
            0.5,
            ctypes.byref(stop),
            ctypes.byref(received_bytes),
        )

    receiver = threading.Thread(target=receive)
    receiver.start()
    time.sleep(0.2)
    errors = ctypes.c_uint64()
    main_affinity = os.sched_getaffinity(0)
    pin(traffic_cpu)
    t0 = time.monotonic()
    sent = lib.traffic_send(send_iface.encode(), frame, len(frame), SEQ_AT, seconds, 0, ctypes.byref(errors))
    elapsed = time.monotonic() - t0
    os.sched_setaffinity(0, main_affinity)
    stop.value = 1  # the receiver ends once frames stop coming
    receiver.join()
    if sent < 0 or result["received"] < 0:
        raise RuntimeError(f"traffic on {send_iface} -> {recv_iface} could not open its sockets (root needed)")
    return {
        "sent": sent,
        "send_errors": errors.value,
        "received": result["received"],
        "seconds": round(elapsed, 3),
        "sent_per_s": round(sent / elapsed),
        "received_per_s": round(result["received"] / elapsed),
    }


def measure_in_process(size: int, seconds: float) -> dict:
    """The runtime without ports: process_batch on 4096 packed frames per call (orchestration only)."""
    from native_fixture import fixture_switch

    from softswitch.native.switch import FrameBatch

    sw = fixture_switch()
    batch = FrameBatch([(1, frame_of(size))] * 4096)
    sw.process_batch(batch, outputs=False)
    frames, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        frames += sw.process_batch(batch, outputs=False)
    elapsed = time.perf_counter() - t0
    sw.close()
    row = {"case": "in_process", "frame_bytes": size, "frames": frames, "seconds": round(elapsed, 3)}
    row["frames_per_s"] = round(frames / elapsed)
    print(f"  process {size:5d} B: {row['frames_per_s']:>10,} frames/s in process (process_batch, no ports)")
    return row


def measure(seconds: float, sizes, pinned: bool) -> list[dict]:
    lib = traffic_library()
    rows = []
    traffic_cpu = min(os.sched_getaffinity(0)) if pinned else None
    for size in sizes:
        rows.append(measure_in_process(size, min(seconds, 2.0)))
        frame = frame_of(size)
        with VethPairs(1) as [(a, b)]:
            r = run_traffic(lib, b, a, frame, seconds, traffic_cpu)
        rows.append({"case": "harness", "frame_bytes": size, **r})
        print(f"  harness {size:5d} B: {r['received_per_s']:>10,} frames/s received ({r['sent_per_s']:,} sent)")
        for mode in ("ring", "recvmmsg"):
            rows.append(measure_switch(lib, frame, size, seconds, pinned, mode))
        if pinned:
            for mode in ("ring", "recvmmsg"):
                rows.append(measure_drain(lib, size, seconds, mode, forward=True))
            for mode in ("ring", "recvmmsg"):
                rows.append(measure_drain(lib, size, seconds, mode, forward=False))
    return rows


def forwarding_switch(s1: str, s2: str, mode: str):
    """The fixture switch forwarding port 1 (s1) to port 2 (s2), its ports receiving in `mode`."""
    from native_fixture import fixture_switch

    os.environ["SOFTSWITCH_IO"] = mode  # read by the runtime when the ports are set up
    sw = fixture_switch()
    ports = sw.ports()
    ports.add(1, s1)
    ports.add(2, s2)
    ports.start()
    return sw, ports


def measure_switch(lib, frame: bytes, size: int, seconds: float, pinned: bool, mode: str) -> dict:
    """sender -> port 1 -> native switch -> port 2 -> receiver, with the ports receiving in `mode`."""
    with VethPairs(2) as [(s1, h1), (s2, h2)]:
        sw, ports = forwarding_switch(s1, s2, mode)
        traffic_cpu = switch_cpu = None
        tids = thread_ids("softswitch-io")
        if pinned:  # the switch's thread on the last CPU, sender and receiver share the others
            cpus = sorted(os.sched_getaffinity(0))
            switch_cpu, traffic_cpu = cpus[-1], cpus[0]
            for tid in tids:
                os.sched_setaffinity(tid, {switch_cpu})
        try:
            thread0 = sum(thread_cpu_seconds(t) for t in tids)
            cpu0 = machine_busy(switch_cpu) if switch_cpu is not None else None
            r = run_traffic(lib, h1, h2, frame, seconds, traffic_cpu)
            r["switch_thread_cpu_s"] = round(sum(thread_cpu_seconds(t) for t in tids) - thread0, 3)
            if cpu0 is not None:
                cpu1 = machine_busy(switch_cpu)
                r["switch_cpu_busy"] = round((cpu1[0] - cpu0[0]) / max(1e-9, cpu1[1] - cpu0[1]), 3)
            io = ports.stats()
            r["switch_received"] = sw.stats["received"]
            r["switch_transmitted"] = sw.stats["transmitted"]
            r["frames_per_batch"] = round(io.frames_in_batches / max(1, io.batches), 1)
            r["kernel_drops_port1"] = ports.port_stats(1).kernel_drops
            r["ring"] = ports.port_stats(1).ring
        finally:
            ports.stop()
            sw.close()
            os.environ.pop("SOFTSWITCH_IO", None)
    r["switch_received_per_s"] = round(r["switch_received"] / r["seconds"])
    busy = r.get("switch_cpu_busy")
    if busy:  # what one core running only the switch would forward at 100%
        r["projected_frames_per_s_per_core"] = round(r["switch_received_per_s"] / busy)
    note = f", its CPU {busy:.0%} busy: ~{r['projected_frames_per_s_per_core']:,}/s per core" if busy else ""
    print(
        f"  switch  {size:5d} B {mode:>8}: {r['received_per_s']:>9,} frames/s through the switch "
        f"({r['frames_per_batch']} frames per batch{note})"
    )
    return {"case": "switch", "rx": mode, "frame_bytes": size, **r}


def trickle(send_iface: str, recv_iface: str, frame: bytes, rate: float, seconds: float) -> list[float]:
    """Sends `frame` on `send_iface` at `rate` frames/s for `seconds` (0: just waits), on a fixed
    schedule (a late frame does not shift the next), each with the next sequence number, and waits for
    it on `recv_iface` (up to 50 ms). Returns each frame's time from send() to its arrival in
    microseconds (None for one that did not come): a lone frame's latency through the switch, the
    bench's Python included (about the same on every receive path)."""
    if rate <= 0:
        time.sleep(seconds)
        return []
    import socket

    with (
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as tx,
        socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0) as rx,  # no protocol until bound to recv_iface
    ):
        tx.bind((send_iface, 0))
        rx.bind((recv_iface, 0x0003))  # ETH_P_ALL
        rx.settimeout(0.05)
        start, out = time.monotonic(), []
        while (due := start + len(out) / rate) < start + seconds:
            time.sleep(max(0.0, due - time.monotonic()))
            seq = len(out).to_bytes(4, "big")
            t0 = time.perf_counter_ns()
            tx.send(frame[:SEQ_AT] + seq + frame[SEQ_AT + 4 :])
            out.append(None)
            try:
                while True:
                    got = rx.recv(2048)
                    if got[TAG_AT:SEQ_AT] == TAG and got[SEQ_AT : SEQ_AT + 4] == seq:
                        out[-1] = (time.perf_counter_ns() - t0) / 1000
                        break
            except TimeoutError:
                pass
    return out


def timer_interrupts() -> tuple[int, int]:
    """(local timer interrupts, HRTIMER softirqs) on every CPU so far: a TPACKET_V3 block ring's retire
    timer fires every millisecond (tp_retire_blk_tov) whether frames come or not."""
    local = 0
    for line in Path("/proc/interrupts").read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "LOC:":
            local = sum(int(f) for f in fields[1:] if f.isdigit())
    hrtimer = 0
    for line in Path("/proc/softirqs").read_text().splitlines():
        fields = line.split()
        if fields and fields[0] == "HRTIMER:":
            hrtimer = sum(int(f) for f in fields[1:])
    return local, hrtimer


def measure_idle(mode: str, seconds: float, rate: float) -> dict:
    """The CPU a switch spends when frames are few: its native threads' (the I/O thread and the
    hybrid's switcher) CPU seconds over `seconds` with no traffic (rate 0) or a trickle of 100-byte
    frames at `rate` frames/s through port 1 -> port 2, each timed from send to arrival. On 2 shared
    cores whatever an idle or lightly used switch spins away, the lab's workers lose."""
    frame = frame_of(100)
    with VethPairs(2) as [(s1, h1), (s2, h2)]:
        sw, ports = forwarding_switch(s1, s2, mode)
        try:
            threads = ["softswitch-io"] + (["softswitch-sw"] if mode == "hybrid" else [])
            tids = [t for name in threads for t in thread_ids(name)]
            time.sleep(0.2)  # past the threads' start
            cpu0, t0 = sum(thread_cpu_seconds(t) for t in tids), time.monotonic()
            timers0 = timer_interrupts()
            latencies = trickle(h1, h2, frame, rate, seconds)
            sent = len(latencies)
            elapsed = time.monotonic() - t0
            cpu = sum(thread_cpu_seconds(t) for t in tids) - cpu0
            timers = [round((b - a) / elapsed) for a, b in zip(timers0, timer_interrupts(), strict=True)]
            deadline = time.monotonic() + 1.0  # the last frame may still be on its way through
            while sw.stats["received"] < sent and time.monotonic() < deadline:
                time.sleep(0.01)
            stats = ports.port_stats(1)
            row = {
                "case": "idle" if rate <= 0 else "trickle",
                "rx": mode,
                "rate": rate,
                "seconds": round(elapsed, 2),
                "sent": sent,
                "switch_received": sw.stats["received"],
                "switch_cpu_s": round(cpu, 4),
                "switch_cpu_share": round(cpu / elapsed, 5),
                "sleeps": ports.stats().sleeps,
                "moves": stats.rx_switches,
                "block_rings_opened": stats.block_rings,  # the hybrid opens one on a move to blocks only
                "machine_timer_interrupts_per_s": timers[0],  # the whole machine's: compare side by side
                "machine_hrtimer_softirqs_per_s": timers[1],
            }
            arrived = sorted(t for t in latencies if t is not None)
            if arrived:  # a lone frame's time through the switch, send() to arrival (the bench's Python included)
                row["lost"] = sent - len(arrived)
                for q in (10, 50, 90):
                    row[f"latency_p{q}_us"] = round(arrived[min(len(arrived) - 1, len(arrived) * q // 100)], 1)
        finally:
            ports.stop()
            sw.close()
            os.environ.pop("SOFTSWITCH_IO", None)
    per_frame = f", {row['switch_cpu_s'] / sent * 1e6:.1f} us per frame" if sent else ""
    if "latency_p50_us" in row:
        per_frame += (
            f"; latency p10/p50/p90 {row['latency_p10_us']:.0f}/{row['latency_p50_us']:.0f}/"
            f"{row['latency_p90_us']:.0f} us, {row['lost']} lost"
        )
    print(
        f"  {row['case']:7} {mode:>6} {rate:6.0f}/s: switch threads {row['switch_cpu_s'] * 1000:8.1f} ms CPU in "
        f"{elapsed:.1f} s ({row['switch_cpu_share']:.3%}{per_frame}; {row['sleeps']} sleeps, {row['moves']} moves, "
        f"{row['block_rings_opened']} block rings opened); "
        f"machine: {timers[0]:,} timer interrupts/s, {timers[1]:,} HRTIMER softirqs/s"
    )
    return row


def measure_idle_cases(seconds: float, rate: float, rounds: int) -> list[dict]:
    """Frame slots (ring) against the hybrid, idle and with a trickle, alternating (the order flips each
    round) so a busy spell of the machine falls on both."""
    rows = []
    for i in range(rounds):
        for mode in ("ring", "hybrid") if i % 2 == 0 else ("hybrid", "ring"):
            for r in (0.0, rate):
                rows.append(measure_idle(mode, seconds, r))
    return rows


BURST = 1024  # frames per burst: fits the ring (4096 slots) and the 4 MB socket buffer at 1514 bytes


def measure_drain(lib, size: int, seconds: float, mode: str, forward: bool) -> dict:
    """The switch's own capacity, without a sender competing for the CPU: with the I/O thread paused,
    a burst of BURST frames fills port 1's ring (or socket buffer); then the thread drains it at full
    batches. Rate = frames / (end of the last batch - start of the first), over bursts for `seconds`.
    forward=False: the frames are dropped by the pipeline (receive side only)."""
    frame = frame_of(size, forward)
    with VethPairs(2) as [(s1, h1), (s2, h2)]:
        sw, ports = forwarding_switch(s1, s2, mode)
        cpus = sorted(os.sched_getaffinity(0))
        tids = thread_ids("softswitch-io")
        for tid in tids:
            os.sched_setaffinity(tid, {cpus[-1]})
        received_bytes = ctypes.c_uint64()
        result = {}
        stop = ctypes.c_int(0)

        def receive():
            pin(cpus[0])
            result["received"] = lib.traffic_receive(
                h2.encode(), TAG, len(TAG), TAG_AT, seconds + 60, 0.5, ctypes.byref(stop), ctypes.byref(received_bytes)
            )

        receiver = threading.Thread(target=receive)
        receiver.start()
        time.sleep(0.2)
        main_affinity = os.sched_getaffinity(0)
        pin(cpus[0])  # this thread sends the bursts and waits: away from the switch's CPU
        errors = ctypes.c_uint64()
        frames = drain_ns = cpu_s = 0.0
        bursts = 0
        end = time.monotonic() + seconds
        try:
            while time.monotonic() < end or bursts < 3:
                ports.pause(True)  # returns once the I/O thread reads no port
                sent = lib.traffic_send(h1.encode(), frame, len(frame), SEQ_AT, 5.0, BURST, ctypes.byref(errors))
                time.sleep(0.005)  # the sender's softirq delivers the last frames into the ring
                ports.reset_stats()
                before = sw.stats["received"]
                cpu0 = sum(thread_cpu_seconds(t) for t in tids)
                ports.pause(False)
                deadline = time.monotonic() + 5
                while sw.stats["received"] - before < sent and time.monotonic() < deadline:
                    time.sleep(0.002)
                io = ports.stats()
                cpu_s += sum(thread_cpu_seconds(t) for t in tids) - cpu0
                frames += sw.stats["received"] - before
                drain_ns += io.last_batch_ns - io.first_batch_ns
                bursts += 1
            drops = ports.port_stats(1).kernel_drops
        finally:
            stop.value = 1  # every burst went through: the receiver ends once frames stop coming
            os.sched_setaffinity(0, main_affinity)
            ports.stop()
            sw.close()
            os.environ.pop("SOFTSWITCH_IO", None)
        receiver.join()
    rate = frames / (drain_ns / 1e9) if drain_ns else 0.0
    row = {
        "case": "switch_drain" if forward else "switch_absorb",
        "rx": mode,
        "frame_bytes": size,
        "bursts": bursts,
        "burst_frames": BURST,
        "frames": int(frames),
        "kernel_drops_port1": drops,
        "received_by_receiver": result.get("received"),
        "drain_seconds": round(drain_ns / 1e9, 4),
        "frames_per_s": round(rate),
        "switch_thread_cpu_us_per_frame": round(cpu_s / max(1, frames) * 1e6, 2),
    }
    what = "forwarded" if forward else "absorbed "
    print(
        f"  drain   {size:5d} B {mode:>8}: {row['frames_per_s']:>9,} frames/s {what} at full batches "
        f"({bursts} bursts of {BURST}, {drops} kernel drops, receiver got {row['received_by_receiver']:,})"
    )
    return row


def plot(rows: list[dict], path: Path, title: str) -> None:
    """Frames per second per case (bars) for each frame size (groups)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def label(r):
        return r["case"].replace("switch_", "") + (f" ({r['rx']})" if r.get("rx") else "")

    def rate(r):
        return r.get("frames_per_s") or r.get("received_per_s") or 0

    sizes = sorted({r["frame_bytes"] for r in rows})
    labels = list(dict.fromkeys(label(r) for r in rows))
    width = 0.8 / len(labels)
    fig, ax = plt.subplots(figsize=(10, 5))
    for i, name in enumerate(labels):
        values = [next((rate(r) for r in rows if label(r) == name and r["frame_bytes"] == s), 0) for s in sizes]
        ax.bar([k + i * width for k in range(len(sizes))], [v / 1e3 for v in values], width, label=name)
    ax.set_xticks([k + 0.4 - width / 2 for k in range(len(sizes))], [f"{s} B" for s in sizes])
    ax.set_ylabel("thousand frames/s")
    ax.set_yscale("log")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=3.0, help="sending time per case (default 3)")
    p.add_argument("--quick", action="store_true", help="64-byte frames only, 0.5 s")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="frame sizes in bytes")
    p.add_argument("--out", type=Path, default=RESULTS, help="directory for the JSON (bench/results)")
    p.add_argument(
        "--no-pin",
        action="store_true",
        help="let the scheduler place the threads (default: the switch thread alone on one CPU)",
    )
    p.add_argument(
        "--idle",
        type=float,
        metavar="SECONDS",
        help="instead of the rates: the switch's CPU over SECONDS with no traffic and with a trickle "
        "(--trickle), frame slots against the hybrid, alternating (--rounds)",
    )
    p.add_argument("--trickle", type=float, default=100.0, help="--idle: frames/s of the trickle (default 100)")
    p.add_argument("--rounds", type=int, default=2, help="--idle: rounds of each receive path (default 2)")
    args = p.parse_args(argv)
    if args.idle is not None and (args.idle <= 0 or args.trickle <= 0 or args.rounds < 1):
        p.error("--idle and --trickle take positive numbers, --rounds at least 1")
    if os.geteuid() != 0:
        print("native_io: needs root to create veth pairs and raw sockets", file=sys.stderr)
        return 2
    seconds = 0.5 if args.quick else args.seconds
    sizes = (64,) if args.quick else args.sizes
    load_before = os.getloadavg()
    pinned = not args.no_pin and len(os.sched_getaffinity(0)) >= 2
    if args.idle is not None:
        print(f"native port I/O at rest, {args.idle} s per case, load average before: {load_before[0]:.2f}")
        rows = measure_idle_cases(args.idle, args.trickle, args.rounds)
        seconds = args.idle
    else:
        print(f"native port I/O, {seconds} s per case, load average before: {load_before[0]:.2f}")
        rows = measure(seconds, sizes, pinned)
    load_after = os.getloadavg()
    print(f"load average after: {load_after[0]:.2f} (1 min), {os.cpu_count()} cores")
    args.out.mkdir(parents=True, exist_ok=True)
    out = args.out / ("native_io_idle.json" if args.idle is not None else "native_io.json")
    out.write_text(
        json.dumps(
            {
                "bench": "native_io",
                "seconds_per_case": seconds,
                "switch_thread_pinned_alone": pinned,
                "machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
                "load_average_before": load_before,
                "load_average_after": load_after,
                "rows": rows,
            },
            indent=2,
        )
    )
    if args.idle is not None:
        print(f"saved {out}")
        return 0
    png = args.out / "native_io.png"
    plot(rows, png, f"softswitch native port I/O (fixture forwarding 1 -> 2), load {load_before[0]:.1f}")
    print(f"saved {out} and {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
