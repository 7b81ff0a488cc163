"""A tiny two-level fabric of softswitch Switches running p4src/ina.p4, for the data-plane tests.

    w0 w1        w2 w3          leaves L1 (id 1), L2 (id 2): ports 1, 2 to workers, 3 up
     \\ /          \\ /           spine S (id 3): ports 1, 2 to the leaves, 3 to the server
      L1          L2
        \\        /
           S ---- server

Frames move by a FIFO delivery loop over a port map; a ``tap`` sees every transmission and may drop or
duplicate it. The hosts' side (sending GRADs, the server turning one packet per chunk into results,
workers retransmitting) is scripted by the tests; all switch behaviour comes from the P4 program. The
workers send dense chunks, or MASKED ones (2:4, 1:4: a chunk's positions with exactly N non-zero values
per group of four), whose sums and results travel as the chunk's dense sum (docs/protocol.md, "Layouts").
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

import numpy as np

from protocol import codec
from protocol import constants as C
from protocol import layouts as L
from protocol.codec import Hop
from softswitch.switch import Exact, Switch, TableEntry

JOB = 7
POOL = 4
SLOT_BASE = 8
SERVER_NODE = C.HOST_NODE_ID_BASE + 4
SERVER_ADDR = ("02:00:00:00:01:00", "10.0.1.1")
WORKERS = [(f"02:00:00:00:00:0{i + 1}", f"10.0.0.{i + 1}") for i in range(4)]
LEAF_OF = [("L1", 1), ("L1", 2), ("L2", 1), ("L2", 2)]  # worker -> (leaf, leaf port)
SWITCH_IDS = {"L1": 1, "L2": 2, "S": 3}
UP_PORT = 3

LINKS = {
    ("L1", 3): ("S", 1),
    ("L2", 3): ("S", 2),
    ("S", 1): ("L1", 3),
    ("S", 2): ("L2", 3),
    ("L1", 1): ("host", "w0"),
    ("L1", 2): ("host", "w1"),
    ("L2", 1): ("host", "w2"),
    ("L2", 2): ("host", "w3"),
    ("S", 3): ("host", "server"),
}


def slot_of(seq: int) -> tuple[int, int]:
    """(slot, shadow) of a chunk: slots cycle through the pool, the shadow bit alternates per round."""
    return seq % POOL, (seq // POOL) % 2


def grad_hops(worker: int) -> list[Hop]:
    leaf, port = LEAF_OF[worker]
    return [
        Hop(SWITCH_IDS[leaf], True, 2, port - 1, UP_PORT),
        Hop(SWITCH_IDS["S"], True, 2, SWITCH_IDS[leaf] - 1, UP_PORT),
        Hop(SERVER_NODE, True, 1, 0, 0),
    ]


def result_hops(worker: int) -> list[Hop]:
    leaf, port = LEAF_OF[worker]
    return [
        Hop(SWITCH_IDS["S"], True, 2, SWITCH_IDS[leaf] - 1, SWITCH_IDS[leaf]),
        Hop(SWITCH_IDS[leaf], True, 2, port - 1, port),
    ]


def configure(sw: Switch, switch_id: int) -> None:
    """What the controller installs for this job (the P4 control-plane API of docs/design-decisions.md)."""
    sw.table("InaIngress.switch_identity").set_default("InaIngress.set_switch_id", {"switch_id": switch_id})
    sw.table("InaIngress.ina_jobs").insert(
        TableEntry(
            matches={"hdr.ina.job_id": Exact(JOB), "hdr.ina.tree_id": Exact(0)},
            action="InaIngress.set_job",
            args={
                "job_index": 1,
                "slot_base": SLOT_BASE,
                "pool_size": POOL,
                "max_fan_in": 2,
                "aggregates": 1,
                "result_group": 0,
            },
        )
    )


@dataclass
class Fabric:
    program: object
    tap: object = None  # tap(index, src, dst, frame) -> list of frames to deliver
    switches: dict = field(default_factory=dict)
    inbox: dict = field(default_factory=dict)
    transmissions: list = field(default_factory=list)

    def __post_init__(self):
        for name, switch_id in SWITCH_IDS.items():
            self.switches[name] = Switch(self.program, name=name)
            configure(self.switches[name], switch_id)

    def _transmit(self, src, dst, frame, queue):
        index = len(self.transmissions)
        self.transmissions.append((src, dst, codec.parse_frame(frame)[1].header))
        frames = self.tap(index, src, dst, frame) if self.tap else [frame]
        for f in frames:
            if dst[0] == "host":
                self.inbox.setdefault(dst[1], []).append(f)
            else:
                queue.append((dst[0], dst[1], f))

    def send(self, host_link: tuple[str, int], frame: bytes) -> None:
        """A host puts ``frame`` on the wire to switch port ``host_link``; deliver until quiet."""
        queue = deque()
        self._transmit(("host",), host_link, frame, queue)
        while queue:
            name, port, f = queue.popleft()
            for out_port, out in self.switches[name].process(port, f):
                self._transmit((name, port), LINKS[(name, out_port)], out, queue)

    def take(self, host: str) -> list[bytes]:
        frames, self.inbox[host] = self.inbox.get(host, []), []
        return frames

    def slot_state(self, name: str) -> list[tuple[int, int]]:
        """(count, bitmap) of every cell of the job's pool on switch ``name``."""
        sw = self.switches[name]
        cells = range(SLOT_BASE, SLOT_BASE + 2 * POOL)
        return [
            (sw.register("InaIngress.slot_count").read(i), sw.register("InaIngress.slot_bitmap").read(i)) for i in cells
        ]


def worker_frame(worker: int, seq: int, values: np.ndarray, retx: bool = False, layout: L.Layout = L.DENSE) -> bytes:
    """A worker's GRAD of chunk ``seq``; for a MASKED layout ``values`` are the chunk's positions, of which
    the non-zero ones are kept (all-zero places of a group filled up from its first positions)."""
    slot, shadow = slot_of(seq)
    flags = (C.FLAG_RETX if retx else 0) | layout.flags
    masks = None
    if layout.masked:
        keep = (values != 0).reshape(-1, 4)
        for group in keep:
            for p in range(4):
                if group.sum() < layout.keep and not group[p]:
                    group[p] = True
        masks, kept = L.pack_masked(values[np.newaxis, :], keep.reshape(1, -1), layout)
        masks, values = masks[0], kept[0]
    pkt = codec.grad(
        JOB, seq, grad_hops(worker), values, slot=slot, shadow=shadow, contributor=worker, flags=flags, masks=masks
    )
    return codec.build_frame(pkt, WORKERS[worker][0], SERVER_ADDR[0], WORKERS[worker][1], SERVER_ADDR[1])


def result_frame(worker: int, seq: int, values: np.ndarray, layout: L.Layout = L.DENSE) -> bytes:
    slot, shadow = slot_of(seq)
    pkt = codec.result(
        JOB,
        seq,
        result_hops(worker),
        values,
        slot=slot,
        shadow=shadow,
        contributor=SERVER_NODE,
        flags=layout.sum_layout.flags,
    )
    return codec.build_frame(pkt, SERVER_ADDR[0], WORKERS[worker][0], SERVER_ADDR[1], WORKERS[worker][1])


class Hosts:
    """The scripted workers and server: one allreduce of some chunks, with retransmission rounds."""

    def __init__(self, fabric: Fabric, chunks: dict[int, list[np.ndarray]], layout: L.Layout = L.DENSE):
        self.fabric = fabric
        self.chunks = chunks  # seq -> the four workers' values (a MASKED layout: their positions)
        self.layout = layout
        self.server_sums: dict[int, np.ndarray] = {}
        self.server_packets: dict[int, int] = {}
        self.results: dict[tuple[int, int], np.ndarray] = {}  # (worker, seq) -> result values

    def send_grads(self, order, retx=False, seqs=None):
        for seq in seqs if seqs is not None else self.chunks:
            for worker in order:
                if (worker, seq) not in self.results:
                    leaf, port = LEAF_OF[worker]
                    frame = worker_frame(worker, seq, self.chunks[seq][worker], retx, self.layout)
                    self.fabric.send((leaf, port), frame)
                    self.serve()

    def serve(self):
        """The server: the first packet of a chunk holds the global sum (its fan-in is 1); every packet
        of a chunk (first or a retransmission) is answered with one result per worker."""
        for frame in self.fabric.take("server"):
            info, pkt = codec.parse_frame(frame)
            seq = pkt.header.seq
            self.server_packets[seq] = self.server_packets.get(seq, 0) + 1
            assert [h.switch_id for h in pkt.hops] == [SERVER_NODE], "switches popped their hops"
            assert pkt.header.layout is self.layout.sum_layout, "sums travel dense, never MASKED"
            if seq not in self.server_sums:
                assert not pkt.header.has(C.FLAG_RETX) or pkt.header.has(C.FLAG_STORED), (
                    "a first arrival is a complete sum, never a raw contribution passed up"
                )
                self.server_sums[seq] = pkt.values.copy()
            for worker in range(4):
                self.fabric.send(("S", 3), result_frame(worker, seq, self.server_sums[seq], self.layout))
            self.collect()

    def collect(self):
        for worker in range(4):
            for frame in self.fabric.take(f"w{worker}"):
                info, pkt = codec.parse_frame(frame)
                assert pkt.hops == [] and info.dst_ip == WORKERS[worker][1]
                self.results.setdefault((worker, pkt.header.seq), pkt.values.copy())

    def missing(self):
        return [(w, s) for s in self.chunks for w in range(4) if (w, s) not in self.results]

    def run(self, order=(0, 1, 2, 3), max_rounds=4):
        self.send_grads(order)
        for _ in range(max_rounds):
            if not self.missing():
                break
            self.send_grads(order, retx=True)
        return self
