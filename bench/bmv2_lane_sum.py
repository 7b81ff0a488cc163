"""BMv2's time per packet for K int32 lanes summed into a register cell: one statement group per lane, as
p4src/ina.p4 writes it, against the lanes packed into wide fields and summed lane-wise with SWAR masks.

Why: on BMv2 an INA round is slower than the parameter server's because simple_switch interprets every
lane's statements (docs/design-decisions.md, "K = 344 at a 1500-byte MTU"). This measures what a SWAR
formulation would save before ina.p4 is rewritten for it, and at which field width: p4c-bm2-ss takes
fields up to 2,048 bits (64 lanes), softswitch's native back end compiles values up to 128 bits (4 lanes),
so a SWAR ina.p4 that both run has 128-bit fields. The programs are generated here (into
build/bmv2-lane-sum/), compiled by p4c-bm2-ss, and run on one simple_switch_grpc (the BMv2 test harness,
tests/dataplane/bmv2.py: veth pairs, root). Each frame carries K random int32 lanes and a cell index in its EtherType; the switch adds the lanes into the
cell (int32 wrap), writes the sum back into the frame and sends it out. Every output is checked against
the running sums made here with numpy, so every program must send the same frames.

    .venv/bin/python bench/bmv2_lane_sum.py --frames 2000 --burst 20 --field-lanes 4 64

Prints the microseconds per packet of each program (frames sent in bursts, each burst's outputs awaited:
a throughput figure while the burst fits BMv2's queues) and saves bench/results/bmv2_lane_sum.json.
With --softswitch the same programs also run on softswitch's native back end, in process (one
`process_batch` call over every frame, the calling thread's CPU time, as bench/softswitch_pps.py times
it), their outputs checked the same way: what a SWAR ina.p4 would cost the lab's switches.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "dataplane"))  # the BMv2 harness the data-plane tests use

import bmv2  # noqa: E402

from topologies.bmv2_build import compiled  # noqa: E402

OUT_DIR = ROOT / "build" / "bmv2-lane-sum"
CELLS = 64  # register cells: the EtherType's low 6 bits pick one
MAX_FIELD_LANES = 64  # lanes per wide field: p4c-bm2-ss refuses widths above 2,048 bits
NATIVE_FIELD_LANES = 4  # softswitch's native back end compiles values up to 128 bits
FRAME = """#include <core.p4>
#include <v1model.p4>
header ethernet_t {{ bit<48> dst; bit<48> src; bit<16> type; }}
{lanes_header}
struct headers_t {{ ethernet_t eth; lanes_t lanes; }}
struct meta_t {{ bit<1> ovf; }}
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.eth); pkt.extract(hdr.lanes); transition accept; }}
}}
control V(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control C(inout headers_t hdr, inout meta_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in headers_t hdr) {{ apply {{ pkt.emit(hdr.eth); pkt.emit(hdr.lanes); }} }}
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {{
{declarations}
    apply {{
        bit<32> idx = (bit<32>) hdr.eth.type[5:0];
{body}
        sm.egress_spec = 2;
    }}
}}
V1Switch(P(), V(), I(), E(), C(), D()) main;
"""


def per_lane_program(k: int) -> str:
    """One register and one group of statements per lane: read, add, signed-overflow bit, write, emit."""
    lanes = "header lanes_t { " + " ".join(f"bit<32> l{i};" for i in range(k)) + " }"
    registers = "\n".join(f"    register<bit<32>>({CELLS}) lane_{i};" for i in range(k))
    body = ["        bit<32> old; bit<32> sum; bit<32> ovf;", "        meta.ovf = 0;"]
    for i in range(k):
        body += [
            f"        lane_{i}.read(old, idx); sum = old + hdr.lanes.l{i}; ovf = (old ^ sum) & (hdr.lanes.l{i} ^ sum);",
            f"        meta.ovf = meta.ovf | ovf[31:31]; lane_{i}.write(idx, sum); hdr.lanes.l{i} = sum;",
        ]
    return FRAME.format(lanes_header=lanes, declarations=registers, body="\n".join(body))


def swar_program(k: int, field_lanes: int) -> str:
    """The lanes in fields of ``field_lanes``: a lane-wise add is an add of the low 31 bits of every lane
    with the sign bits put back by XOR (no carry crosses a lane), and a lane overflowed where both inputs'
    sign differs from the sum's."""
    width, fields = 32 * field_lanes, k // field_lanes
    lanes = "header lanes_t { " + " ".join(f"bit<{width}> v{f};" for f in range(fields)) + " }"
    declarations = [f"    register<bit<{width}>>({CELLS}) cells_{f};" for f in range(fields)]
    declarations += [
        f"    const bit<{width}> HIGH = {width}w0x{'80000000' * field_lanes};",
        f"    const bit<{width}> LOW = {width}w0x{'7fffffff' * field_lanes};",
    ]
    body = [f"        bit<{width}> old; bit<{width}> v; bit<{width}> sum; bit<{width}> ovf = 0;"]
    for f in range(fields):
        body += [
            f"        cells_{f}.read(old, idx); v = hdr.lanes.v{f};",
            "        sum = ((old & LOW) + (v & LOW)) ^ ((old ^ v) & HIGH);",
            "        ovf = ovf | ((old ^ sum) & (v ^ sum) & HIGH);",
            f"        cells_{f}.write(idx, sum); hdr.lanes.v{f} = sum;",
        ]
    body.append("        meta.ovf = (ovf != 0) ? 1w1 : 1w0;")
    return FRAME.format(lanes_header=lanes, declarations="\n".join(declarations), body="\n".join(body))


def frames_of(k: int, count: int, seed: int = 1) -> list[bytes]:
    rng = np.random.default_rng(seed)
    out = []
    for i in range(count):
        values = rng.integers(-(2**31), 2**31, size=k, dtype=np.int64).astype(">i4").tobytes()
        out.append(b"\x02" * 6 + b"\x04" * 6 + (i % CELLS).to_bytes(2, "big") + values)
    return out


def expected_outputs(frames: list[bytes], k: int) -> list[bytes]:
    """What the switch must send for each frame: its cell's running sum (int32 wrap) in place of its lanes."""
    cells = np.zeros((CELLS, k), dtype=np.int64)
    out = []
    for i, frame in enumerate(frames):
        cell = i % CELLS
        cells[cell] = (cells[cell] + np.frombuffer(frame[14:], dtype=">i4") + 2**31) % 2**32 - 2**31
        out.append(frame[:14] + cells[cell].astype(">i4").tobytes())
    return out


def run(switch: bmv2.Bmv2Switch, program: Path, frames: list[bytes], burst: int) -> tuple[float, list[bytes]]:
    """Seconds for every frame through the switch, bursts of ``burst`` awaited in turn, and its outputs."""
    switch.load(*compiled(str(program)))
    got: list[bytes] = []
    start = time.perf_counter()
    for first in range(0, len(frames), burst):
        part = frames[first : first + burst]
        for frame in part:
            switch.send(1, frame)
        got += [frame for _, frame in switch.receive(len(part), 10.0)]
    return time.perf_counter() - start, got


def run_softswitch(program: Path, frames: list[bytes]) -> tuple[float, list[bytes]] | str:
    """CPU seconds of softswitch's native back end running every frame in one batch, and its outputs; or
    why the native back end does not compile the program."""
    from softswitch.compiler import compile_program
    from softswitch.native.switch import FrameBatch
    from softswitch.switch import Switch

    compiled = compile_program(str(program), backend="native")
    if compiled.backend != "native":  # it fell back to the Python back end (and said why on stderr)
        return compiled.fallback_reason or "the native back end does not compile it"
    switch = Switch(compiled, device_id=1)
    batch = FrameBatch([(1, frame) for frame in frames])
    start = time.thread_time()
    outputs = switch.process_batch(batch)
    seconds = time.thread_time() - start
    return seconds, [bytes(frame) for sent in outputs for _, frame in sent]


def check_outputs(got: list[bytes], want: list[bytes], label: str) -> None:
    """Exit naming ``label`` when the frames a program sent are not the running sums."""
    if got != want:
        wrong = sum(1 for a, b in zip(got, want, strict=False) if a != b) + abs(len(got) - len(want))
        sys.exit(f"bmv2_lane_sum: {label}: {wrong} of {len(want)} outputs differ from the sums")


def main() -> None:  # noqa: C901 (the bench's runs and checks in one place)
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lanes", type=int, default=256, help="K, a multiple of every --field-lanes")
    ap.add_argument(
        "--field-lanes",
        type=int,
        nargs="+",
        default=[NATIVE_FIELD_LANES, MAX_FIELD_LANES],
        help=f"lanes per SWAR field, one program each (1..{MAX_FIELD_LANES}; default: {NATIVE_FIELD_LANES}, the "
        f"128 bits softswitch's native back end compiles, and {MAX_FIELD_LANES}, the 2,048 bits p4c-bm2-ss takes)",
    )
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--burst", type=int, default=20, help="frames sent before their outputs are awaited")
    ap.add_argument("--repeats", type=int, default=2, help="runs of each program, taking turns")
    ap.add_argument(
        "--softswitch", action="store_true", help="also run the programs on softswitch's native back end (in process)"
    )
    ap.add_argument("--out", default=str(ROOT / "bench" / "results" / "bmv2_lane_sum"))
    args = ap.parse_args()
    reason = bmv2.missing()
    if reason:
        sys.exit(f"bmv2_lane_sum: {reason}")
    for lanes in args.field_lanes:
        if not 1 <= lanes <= MAX_FIELD_LANES or args.lanes % lanes:
            sys.exit(
                f"bmv2_lane_sum: --field-lanes {lanes}: must be in 1..{MAX_FIELD_LANES} and divide --lanes {args.lanes}"
            )
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    sources = {"per lane": per_lane_program(args.lanes)}
    for lanes in args.field_lanes:
        sources[f"SWAR {32 * lanes}-bit"] = swar_program(args.lanes, lanes)
    programs = {}
    for name, source in sources.items():
        path = OUT_DIR / f"lane_sum_{name.replace(' ', '_').lower()}_k{args.lanes}.p4"
        path.write_text(source)
        programs[name] = path
    frames = frames_of(args.lanes, args.frames)
    want = expected_outputs(frames, args.lanes)
    switch = bmv2.Bmv2Switch([1, 2])
    times: dict[str, list[float]] = {name: [] for name in programs}
    try:
        for _ in range(args.repeats):
            for name, path in programs.items():
                seconds, got = run(switch, path, frames, args.burst)
                check_outputs(got, want, name)
                times[name].append(1e6 * seconds / len(frames))
                print(f"{name:>15}: {times[name][-1]:7.1f} us per packet ({len(frames)} frames, K = {args.lanes})")
    finally:
        switch.close()
    medians = {name: float(np.median(t)) for name, t in times.items()}
    for name, median in medians.items():
        if name != "per lane":
            print(f"per lane / {name}: {medians['per lane'] / median:.1f}x the time per packet (medians)")
    softswitch: dict[str, list[float]] = {}
    skipped: dict[str, str] = {}  # programs the native back end does not compile, and why
    if args.softswitch:
        for _ in range(args.repeats):
            for name, path in programs.items():
                if name in skipped:
                    continue
                ran = run_softswitch(path, frames)
                if isinstance(ran, str):
                    skipped[name] = ran
                    print(f"softswitch native, {name:>15}: not run, {ran}")
                    continue
                seconds, got = ran
                check_outputs(got, want, f"softswitch, {name}")
                softswitch.setdefault(name, []).append(1e6 * seconds / len(frames))
                print(f"softswitch native, {name:>15}: {softswitch[name][-1]:7.2f} us per packet")
    out = Path(args.out).with_suffix(".json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(
        json.dumps(
            {
                "lanes": args.lanes,
                "field_lanes": args.field_lanes,
                "frames": args.frames,
                "burst": args.burst,
                "us_per_packet": times,
                "softswitch_native_us_per_packet": softswitch,
                "softswitch_native_not_run": skipped,
            }
        )
    )
    print(f"saved {out}")


if __name__ == "__main__":
    main()
