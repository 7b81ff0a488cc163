"""The Tofino Native Architecture's pipeline as softswitch runs it (one pipe's six blocks, Tofino 1):

  ingress parser (the packet after 64 bits of ingress intrinsic metadata and 64 bits of port metadata)
  -> ingress control -> ingress deparser (emitted headers + the unparsed payload)
  -> traffic manager: drop_ctl bit 0 drops; otherwise a copy per replica of mcast_grp_a and mcast_grp_b
     (egress_rid = the replica's id) and one to ucast_egress_port if ingress wrote it; nothing: dropped
  -> per copy, unless bypass_egress: egress parser (the packet after the egress intrinsic metadata, whose
     enq_qdepth and deq_qdepth are the port's real queue in 80-byte cells: Switch.set_queue_depth)
  -> egress control -> egress deparser; drop_ctl bit 0 drops
  -> out on the egress port, or, on a recirculation port (local port 68 of a pipe: 68, 196, 324, 452),
     back into the ingress parser with that port as ingress_port.

A parser error does not drop the packet: ingress runs with ingress_intrinsic_metadata_from_parser_t
.parser_err set (PARSER_ERROR_PARTIAL_HDR when the packet ended inside an extract, NO_MATCH when no select
case matched); the header being extracted stays invalid. softswitch keeps one copy of the registers and
counters for all pipes (a switch with one pipe). A received packet may pass ingress at most
MAX_PASSES times (passes.py; recirculation loops are cut and counted in loop_limit_drops).
"""

from __future__ import annotations

import time

from .passes import run_passes
from .support import ExitCtl

RECIRCULATION_LOCAL_PORT = 68
QUEUE_CELL_BYTES = 80  # Tofino 1's queue buffer cell: egress_intrinsic_metadata_t.enq_qdepth / deq_qdepth count these
FULL_FRAME_BYTES = 1514  # a queued frame of unknown size counts as an Ethernet frame at MTU 1500
QDEPTH_MAX = 0x7FFFF  # enq_qdepth / deq_qdepth are bit<19>
LOCAL_PORT_MASK = 0x7F
PORT_METADATA_BYTES = 8  # PORT_METADATA_SIZE (64 bits), after the ingress intrinsic metadata
PARSER_ERROR_NO_MATCH, PARSER_ERROR_PARTIAL_HDR, PARSER_ERROR_CTR_RANGE = 0x1, 0x2, 0x4
# softswitch's parser error codes (BMv2's numbering) -> TNA's parser_err flags
PARSER_ERROR_FLAGS = {1: PARSER_ERROR_PARTIAL_HDR, 2: PARSER_ERROR_NO_MATCH, 3: PARSER_ERROR_CTR_RANGE}

INGRESS_INTRINSIC = "ingress_intrinsic_metadata_t"
INGRESS_FROM_PARSER = "ingress_intrinsic_metadata_from_parser_t"
INGRESS_FOR_TM = "ingress_intrinsic_metadata_for_tm_t"
INGRESS_FOR_DEPARSER = "ingress_intrinsic_metadata_for_deparser_t"
EGRESS_INTRINSIC = "egress_intrinsic_metadata_t"
EGRESS_FROM_PARSER = "egress_intrinsic_metadata_from_parser_t"
EGRESS_FOR_DEPARSER = "egress_intrinsic_metadata_for_deparser_t"


def queue_cells(packets: int, queued_bytes: int | None) -> int:
    """enq_qdepth of a port whose queue holds ``packets`` frames of ``queued_bytes`` bytes in all: the cells
    they fill, each frame whole cells as on Tofino, frames taken at their mean size (FULL_FRAME_BYTES when
    the bytes are not known); saturated to bit<19>."""
    packets = max(0, int(packets))
    if packets == 0:
        return 0
    size = packets * FULL_FRAME_BYTES if queued_bytes is None else max(0, int(queued_bytes))
    cells_per_frame = -(-size // (packets * QUEUE_CELL_BYTES))
    return min(QDEPTH_MAX, packets * cells_per_frame)


class PacketLength:
    """What counters read of the packet (the runtime's PS.sm for v1model programs)."""

    __slots__ = ("packet_length",)

    def __init__(self, length: int):
        self.packet_length = length


def serialize(layout: list[tuple[str, int]], values: dict[str, int]) -> bytes:
    """An intrinsic metadata header as the bits the parser extracts (fields MSB first, unnamed ones 0)."""
    word, width = 0, 0
    for name, bits in layout:
        word = (word << bits) | (values.get(name, 0) & ((1 << bits) - 1))
        width += bits
    return word.to_bytes(width // 8, "big")


def _tracking_tm_class(base):
    """The for_tm metadata class, remembering whether ingress wrote ucast_egress_port (on Tofino an
    unwritten port means no unicast copy, not port 0)."""
    slot = base.__dict__["ucast_egress_port"]

    class TrafficManagerMetadata(base):
        __slots__ = ("ucast_valid",)

        def __init__(self):
            base.__init__(self)
            self.ucast_valid = False

        @property
        def ucast_egress_port(self):
            return slot.__get__(self)

        @ucast_egress_port.setter
        def ucast_egress_port(self, value):
            slot.__set__(self, value)
            self.ucast_valid = True

    return TrafficManagerMetadata


class TnaPipeline:
    """Runs packets through a TNA program's generated blocks; returns [(egress_port, bytes)]."""

    def __init__(self, blocks, runtime, pre, stats, recirculation_local_port: int = RECIRCULATION_LOCAL_PORT):
        self.b = blocks
        self.rt = runtime
        self.pre = pre
        self.stats = stats
        self.digests: list = []
        self.recirculation_local_port = recirculation_local_port
        self.t0 = time.monotonic()
        self.roles = blocks["parameter_roles"]
        self.layouts = blocks["header_layouts"]
        self.classes = {key[4:]: cls for key, cls in blocks.items() if key.startswith("new_")}
        if INGRESS_FOR_TM in self.classes:
            self.classes[INGRESS_FOR_TM] = _tracking_tm_class(self.classes[INGRESS_FOR_TM])
        self.blocks = {role: blocks[role] for role in self.roles}
        self.ingress_layout = self.layouts.get(INGRESS_INTRINSIC, [])
        self.egress_layout = self.layouts.get(EGRESS_INTRINSIC, [])
        self.queue_depth: dict[int, int] = {}  # port -> cells its real queue holds (Switch.set_queue_depth)

    def _now_ns(self) -> int:
        return int((time.monotonic() - self.t0) * 1e9)

    def process(self, port, data):
        out: list[tuple[int, bytes]] = []
        self.digests = []
        jobs = [(data, port)]  # recirculated packets are appended and run in turn
        run_passes(
            jobs, lambda frame, ingress_port: self._ingress(frame, ingress_port, jobs, out), self.stats, self.rt.log
        )
        return out

    def _objects(self, gress: str) -> dict:
        return {
            "headers": self.classes[f"{gress}_headers"](),
            "metadata": self.classes[f"{gress}_metadata"](),
            **{name: cls() for name, cls in self.classes.items() if name.startswith(gress + "_intrinsic")},
        }

    def _run_parser(self, role: str, objects: dict, frame: bytes, from_parser: str):
        arguments = [frame if r == "packet" else objects[r] for r in self.roles[role]]
        offset, error = self.b[role](*arguments)
        flags = PARSER_ERROR_FLAGS.get(error, PARSER_ERROR_NO_MATCH) if error else 0
        if error:
            self.stats["parser_errors"] += 1
        if from_parser in objects:
            objects[from_parser].parser_err = flags
            objects[from_parser].global_tstamp = self._now_ns() & ((1 << 48) - 1)
        return frame[(offset + 7) >> 3 :]

    def _run_control(self, role: str, objects: dict, parts: list | None = None) -> None:
        arguments = [parts if r == "packet" else objects[r] for r in self.roles[role]]
        try:
            self.b[role](*arguments)
        except ExitCtl:
            pass

    def _ingress(self, data: bytes, port: int, jobs: list, out: list) -> None:
        PS = self.rt.state
        PS.sm = PacketLength(len(data))
        PS.payload = b""
        objects = self._objects("ingress")
        prefix = serialize(self.ingress_layout, {"ingress_port": port, "ingress_mac_tstamp": self._now_ns()})
        payload = self._run_parser(
            "ingress_parser", objects, prefix + bytes(PORT_METADATA_BYTES) + data, INGRESS_FROM_PARSER
        )
        PS.payload = payload
        self._run_control("ingress", objects)
        parts: list[bytes] = []
        self._run_control("ingress_deparser", objects, parts)
        parts.append(payload)
        frame = b"".join(parts)
        deparser_md = objects.get(INGRESS_FOR_DEPARSER)
        if deparser_md is not None and deparser_md.drop_ctl & 1:
            self.stats["dropped"] += 1
            return
        tm = objects.get(INGRESS_FOR_TM)
        copies: list[tuple[int, int]] = []
        if tm is not None:
            for group in (tm.mcast_grp_a, tm.mcast_grp_b):
                if group:
                    replicas = self.pre.groups.get(group, [])
                    copies += replicas
                    self.stats["replicated"] += len(replicas)
            if tm.ucast_valid:
                copies.append((tm.ucast_egress_port, 0))
        if not copies:
            self.stats["dropped"] += 1
            return
        bypass = tm is not None and tm.bypass_egress
        for egress_port, rid in copies:
            if bypass:
                self._leave(frame, egress_port, jobs, out)
            else:
                self._egress(frame, egress_port, rid, jobs, out)

    def _egress(self, frame: bytes, port: int, rid: int, jobs: list, out: list) -> None:
        PS = self.rt.state
        PS.sm = PacketLength(len(frame))
        objects = self._objects("egress")
        depth = self.queue_depth.get(port, 0)
        prefix = serialize(
            self.egress_layout,
            {
                "egress_port": port,
                "egress_rid": rid,
                "pkt_length": len(frame),
                "deq_timedelta": 0,
                "enq_qdepth": depth,
                "deq_qdepth": depth,
            },
        )
        payload = self._run_parser("egress_parser", objects, prefix + frame, EGRESS_FROM_PARSER)
        PS.payload = payload
        self._run_control("egress", objects)
        parts: list[bytes] = []
        self._run_control("egress_deparser", objects, parts)
        parts.append(payload)
        deparser_md = objects.get(EGRESS_FOR_DEPARSER)
        if deparser_md is not None and deparser_md.drop_ctl & 1:
            self.stats["dropped"] += 1
            return
        self._leave(b"".join(parts), port, jobs, out)

    def _leave(self, frame: bytes, port: int, jobs: list, out: list) -> None:
        if port & LOCAL_PORT_MASK == self.recirculation_local_port:
            self.stats["recirculated"] += 1
            jobs.append((frame, port))
        else:
            out.append((port, frame))
