"""Congestion marks (docs/protocol.md, "Congestion marks"): p4src/ina.p4 and the Tofino program
p4src/tna/ina_tna.p4 on softswitch, both back ends.

A packet leaving by a port whose queue holds ECN_MARK_QDEPTH packets or more (softswitch reports the real
queue's depth as standard_metadata.enq_qdepth; on TNA, ECN_MARK_QDEPTH_CELLS 80-byte cells in
egress_intrinsic_metadata_t.enq_qdepth, docs/tofino.md) carries ECN CE if it was ECN-capable (RFC 3168:
ECT(0) or ECT(1) becomes CE = 0b11, the DSCP bits stay, a Not-ECT packet is never marked). A CE mark on any
contribution to a slot survives aggregation: the completed sum carries it.
"""

from pathlib import Path

import numpy as np
import pytest
from ina_fabric import JOB, LEAF_OF, SERVER_ADDR, SERVER_NODE, WORKERS, Fabric, grad_hops, result_hops, slot_of

from protocol import codec
from protocol import constants as C
from softswitch.compiler import compile_program
from softswitch.runtime.tna import QUEUE_CELL_BYTES

P4SRC = Path(__file__).resolve().parents[2] / "p4src"
PROGRAMS = {"v1model": P4SRC / "ina.p4", "tna": P4SRC / "tna" / "ina_tna.p4"}
FULL_FRAME = 1514  # bytes of an Ethernet frame at MTU 1500

DSCP_EF = 46 << 2  # a DSCP the switch must leave alone


@pytest.fixture(
    scope="module",
    params=[(arch, backend) for arch in PROGRAMS for backend in ("python", "native")],
    ids=lambda p: "-".join(p),
)
def program(request):
    arch, backend = request.param
    return compile_program(str(PROGRAMS[arch]), backend=backend)


def queue(program, above: int) -> tuple[int, int]:
    """(packets, bytes) of a queue that ``program``'s egress reads as its marking threshold + ``above``:
    full-sized frames on v1model (it counts packets), frames of one 80-byte cell each on TNA (it counts cells)."""
    if program.info.arch == "tna":
        cells = C.ECN_MARK_QDEPTH_CELLS + above
        return cells, cells * QUEUE_CELL_BYTES
    return C.ECN_MARK_QDEPTH + above, (C.ECN_MARK_QDEPTH + above) * FULL_FRAME


def grad(worker: int, seq: int, values: np.ndarray, ecn: int) -> bytes:
    slot, shadow = slot_of(seq)
    pkt = codec.grad(JOB, seq, grad_hops(worker), values, slot=slot, shadow=shadow, contributor=worker)
    return codec.build_frame(pkt, WORKERS[worker][0], SERVER_ADDR[0], WORKERS[worker][1], SERVER_ADDR[1], tos=ecn)


def chunk(seq: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seq)
    return [rng.integers(-(2**20), 2**20, size=C.VALUES_PER_PACKET).astype(np.int32) for _ in range(4)]


def run_chunk(fabric: Fabric, seq: int, tos: list[int], order=(0, 1, 2, 3)) -> tuple[int, np.ndarray, np.ndarray]:
    """The four workers' GRADs of chunk ``seq`` (worker w's TOS byte ``tos[w]``); returns the TOS byte and
    the values of the one packet that reaches the server, and the exact sum."""
    parts = chunk(seq)
    for worker in order:
        fabric.send(LEAF_OF[worker], grad(worker, seq, parts[worker], tos[worker]))
    (frame,) = fabric.take("server")
    info, pkt = codec.parse_frame(frame)
    return info.tos, pkt.values, np.sum(np.stack(parts).astype(np.int64), axis=0)


@pytest.mark.parametrize(
    ("sent", "above", "expected"),
    [
        (C.ECN_ECT0, 0, C.ECN_CE),  # deep queue: ECT(0) -> CE
        (C.ECN_ECT1, 100, C.ECN_CE),  # ECT(1) -> CE
        (C.ECN_ECT0, -1, C.ECN_ECT0),  # below the threshold: unmarked
        (C.ECN_NOT_ECT, 100, C.ECN_NOT_ECT),  # never mark a Not-ECT packet
    ],
)
def test_sum_leaving_a_deep_queue_is_marked(program, sent, above, expected):
    fabric = Fabric(program)
    fabric.switches["S"].set_queue_depth(3, *queue(program, above))  # the spine's port towards the server
    tos, values, total = run_chunk(fabric, 0, [DSCP_EF | sent] * 4)
    assert np.array_equal(values, total)
    assert tos == DSCP_EF | expected


def test_mark_survives_aggregation(program):
    """L1's sum leaves by a deep queue (marked); at the spine it is absorbed first and L2's unmarked sum
    completes the slot: the completed sum still carries CE. With no deep queue, no mark."""
    fabric = Fabric(program)
    fabric.switches["L1"].set_queue_depth(3, *queue(program, 0))
    tos, values, total = run_chunk(fabric, 0, [C.ECN_ECT0] * 4, order=(0, 1, 2, 3))
    assert np.array_equal(values, total)
    assert tos == C.ECN_CE
    fabric.switches["L1"].set_queue_depth(3, 0, 0)
    tos, values, total = run_chunk(fabric, 1, [C.ECN_ECT0] * 4)
    assert (tos, np.array_equal(values, total)) == (C.ECN_ECT0, True)


@pytest.mark.parametrize("marked", [0, 1, 2, 3])
def test_one_marked_contribution_marks_the_sum(program, marked):
    """A contribution marked on a hop before the switches (any worker, first or last to arrive) marks the
    sum; the slot's mark does not leak into the next chunk that takes the cell."""
    fabric = Fabric(program)
    tos = [C.ECN_ECT0] * 4
    tos[marked] = C.ECN_CE
    assert run_chunk(fabric, 0, tos)[0] == C.ECN_CE
    seq = 8  # the same cell of the pool (POOL 4, two shadow sets): a fresh chunk there starts unmarked
    assert slot_of(seq) == slot_of(0)
    assert run_chunk(fabric, seq, [C.ECN_ECT0] * 4)[0] == C.ECN_ECT0


def test_result_leaving_a_deep_queue_is_marked(program):
    fabric = Fabric(program)
    parts = chunk(0)
    for worker in range(4):
        fabric.send(LEAF_OF[worker], grad(worker, 0, parts[worker], C.ECN_ECT0))
    fabric.take("server")
    fabric.switches["L1"].set_queue_depth(1, *queue(program, 0))  # towards worker 0 only
    total = np.sum(np.stack(parts).astype(np.int64), axis=0).astype(np.int32)
    slot, shadow = slot_of(0)
    for worker in range(4):
        pkt = codec.result(JOB, 0, result_hops(worker), total, slot=slot, shadow=shadow, contributor=SERVER_NODE)
        frame = codec.build_frame(
            pkt, SERVER_ADDR[0], WORKERS[worker][0], SERVER_ADDR[1], WORKERS[worker][1], tos=C.ECN_ECT0
        )
        fabric.send(("S", 3), frame)
    marks = {w: codec.parse_frame(fabric.take(f"w{w}")[0])[0].tos for w in range(4)}
    assert marks == {0: C.ECN_CE, 1: C.ECN_ECT0, 2: C.ECN_ECT0, 3: C.ECN_ECT0}


@pytest.mark.parametrize("frame_bytes", [64, FULL_FRAME])
def test_tofino_counts_the_queue_in_cells(program, frame_bytes):
    """The same number of frames, ECN_MARK_QDEPTH + 100, is a deep queue for v1model (it counts packets)
    and for TNA only when the frames fill ECN_MARK_QDEPTH_CELLS cells: 64-byte frames take one cell each.
    A depth given without its bytes counts each frame as a full-sized one."""
    packets = C.ECN_MARK_QDEPTH + 100
    fabric = Fabric(program)
    fabric.switches["S"].set_queue_depth(3, packets, packets * frame_bytes)
    marked = program.info.arch == "v1model" or packets * frame_bytes >= C.ECN_MARK_QDEPTH_CELLS * QUEUE_CELL_BYTES
    assert run_chunk(fabric, 0, [C.ECN_ECT0] * 4)[0] == (C.ECN_CE if marked else C.ECN_ECT0)
    fabric.switches["S"].set_queue_depth(3, C.ECN_MARK_QDEPTH)
    assert run_chunk(fabric, 1, [C.ECN_ECT0] * 4)[0] == C.ECN_CE
