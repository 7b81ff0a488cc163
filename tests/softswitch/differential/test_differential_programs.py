"""Every test program (v1model and TNA) on both back ends: random table entries, multicast groups and clone sessions,
then mutated and random frames (seeded); outputs, packet-ins, digests, registers, counters, direct
counters and statistics must be identical (backend_pair.py compares them)."""

import random
import re
from pathlib import Path

import pytest
from backend_pair import NEEDS_NATIVE, BackendPair, mutations, populate, skip_expected_fallback

from protocol import codec
from softswitch.stf import parse_stf

pytestmark = NEEDS_NATIVE

ROOT = Path(__file__).resolve().parents[3]
PROGRAM_DIRS = (ROOT / "tests" / "softswitch" / "programs", ROOT / "tests" / "softswitch" / "stf")
MAIN = re.compile(r"\b(V1Switch|Switch)\s*\(", re.M)  # a program's package instance (not an include file)
PROGRAMS = sorted(p for d in PROGRAM_DIRS for p in d.rglob("*.p4") if MAIN.search(p.read_text()))
DEFINES = {"preproc.p4": {}}  # programs that need -D to compile: none so far
FRAMES_PER_PROGRAM = 2000
# programs some frames send into an endless loop (on BMv2 too): only their STF packets, unmutated
NO_FUZZ = {"loops.p4": "hdr.l.n = 255 makes `for (bit<8> i = 1; i <= hdr.l.n; ...)` loop forever"}


def stf_packets(program: Path) -> list[bytes]:
    """The frames of the STF files next to a program (seeds that get through its parser)."""
    frames = []
    for stf in program.parent.glob("*.stf"):
        if stf.stem.split("_fail")[0] != program.stem:
            continue
        for command in parse_stf(stf.read_text(), str(stf)):
            if command.op == "packet":
                frames.append(command.args["data"])
    return frames


def plain_frames(rng: random.Random) -> list[bytes]:
    """Ethernet/IPv4/UDP frames to a few addresses, and Ethernet frames of other types."""
    frames = []
    for dst in ("10.0.0.1", "10.0.1.2", "192.168.0.1", "255.255.255.255"):
        frames.append(
            codec.build_udp_frame(rng.randbytes(20), "02:00:00:00:00:01", "02:00:00:00:00:02", "10.9.9.9", dst)
        )
    for ether_type in (0x0806, 0x86DD, 0x8100, 0x88B5, 0x88B6):  # 0x88B5/6: the TNA programs' own headers
        frames.append(bytes(12) + ether_type.to_bytes(2, "big") + rng.randbytes(40))
    return frames


def test_every_test_program_is_covered():
    names = {p.name for p in PROGRAMS}
    assert names >= {
        "ipv4_router.p4",
        "compat_preserve_data.p4",
        "l2l3.p4",
        "functions.p4",
        "tna_probe.p4",
        "tna_corners.p4",
    }


@pytest.mark.parametrize("path", PROGRAMS, ids=lambda p: p.stem)
def test_program_on_both_back_ends(path):
    skip_expected_fallback(path)
    rng = random.Random(f"differential:{path.name}")
    pair = BackendPair.from_path(path, defines=DEFINES.get(path.name), cpu_port=64)
    try:
        populate(pair, rng)
        seeds = stf_packets(path) + plain_frames(rng)
        frames = seeds if path.name in NO_FUZZ else list(mutations(rng, seeds, FRAMES_PER_PROGRAM))
        for i, frame in enumerate(frames):
            pair.process(rng.choice((0, 1, 2, 3, 64)), frame)
            if i % 500 == 0:
                pair.check_state()
        pair.check_state()
        assert pair.python.stats["received"] == len(frames)
    finally:
        pair.close()
