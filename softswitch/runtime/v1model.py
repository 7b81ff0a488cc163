"""The v1model architecture as BMv2's simple_switch runs it: parser -> verifyChecksum -> ingress ->
packet replication (clone I2E, resubmit, multicast, drop, unicast) -> egress (clone E2E, drop) ->
computeChecksum -> deparser (-> recirculate). One Runtime per switch holds the state generated code uses.

instance_type values are BMv2's: 0 normal, 1 ingress clone, 2 egress clone, 4 recirculated,
5 replicated (multicast), 6 resubmitted.
"""

from __future__ import annotations

import random as _random
import time
from time import monotonic

from ..limits import BMV2_PACKET_HEADROOM
from .action_profiles import ActionProfileState
from .externs import CounterState, MeterState, RegisterState, ValueSetState
from .passes import run_passes
from .support import ExitCtl
from .tables import TableState

DROP_PORT = 511
PKT_NORMAL, PKT_INGRESS_CLONE, PKT_EGRESS_CLONE, PKT_RECIRC, PKT_REPLICATION, PKT_RESUBMIT = 0, 1, 2, 4, 5, 6


class PacketState:
    """Per-packet side effects of externs (clone, resubmit, digests...) and the current standard_metadata."""

    __slots__ = ("sm", "digests", "clone", "resubmit", "recirculate", "truncate", "payload")

    def __init__(self):
        self.sm = None
        self.digests = []
        self.clone = self.resubmit = self.recirculate = self.truncate = None
        self.payload = b""


class Runtime:
    """What a generated module's build(RT) binds to: tables, registers, counters and helpers."""

    def __init__(self, info, log=None):
        self.info = info
        self.state = PacketState()
        self.tables = {t.name: TableState(t, info.actions, self.state) for t in info.tables}
        self.registers = {r.name: RegisterState(r) for r in info.registers}
        self.counters = {c.name: CounterState(c, self.state) for c in info.counters}
        self.value_sets = {v.name: ValueSetState(v) for v in info.value_sets}
        self.meters = {m.name: MeterState(m, self.state) for m in [*info.meters, *info.direct_meters]}
        for table in self.tables.values():
            if table.info.direct_meter is not None:
                table.direct_meter = self.meters[table.info.direct_meter]
        self.action_profiles = {
            p.name: ActionProfileState(p, [self.tables[t] for t in p.tables]) for p in info.action_profiles
        }
        self.log = log
        self.assert_failures = 0
        self._random = _random.Random()

    # used by generated code
    def table(self, name):
        return self.tables[name]

    def register_values(self, name):
        return self.registers[name].values

    def counter(self, name):
        return self.counters[name]

    def value_set(self, name):
        return self.value_sets[name].members

    def meter(self, name):
        return self.meters[name]

    @staticmethod
    def lookahead(data, off, width):
        from .support import ParserError

        end = off + width
        if end > len(data) * 8:
            raise ParserError(1)
        b0, b1 = off >> 3, (end + 7) >> 3
        v = int.from_bytes(data[b0:b1], "big")
        return (v >> ((b1 << 3) - end)) & ((1 << width) - 1)

    @staticmethod
    def lookahead_header(extract, header, data, off):
        """lookahead<H>(): `header` (a fresh H) filled from the bits at `off`, which stay unconsumed."""
        extract(header, data, off)
        return header

    @staticmethod
    def advance(data, off, nbits):
        from .support import ParserError

        if nbits % 8:  # BMv2 advances whole bytes only: error.ParserInvalidArgument
            raise ParserError(6)
        if off + nbits > len(data) * 8:
            raise ParserError(1)
        return off + nbits

    def random(self, lo, hi):
        return self._random.randint(lo, hi) if lo <= hi else lo

    def assert_failed(self, where):
        self.assert_failures += 1
        if self.log:
            self.log(f"assert/assume failed at {where}")

    def log_msg(self, fmt, values):
        if not self.log:
            return
        parts = fmt.split("{}")
        msg = parts[0]
        for i, p in enumerate(parts[1:]):
            msg += (str(values[i]) if i < len(values) else "{}") + p
        self.log(msg)


class Pipeline:
    """Runs packets through a program's generated blocks; returns [(egress_port, bytes)]."""

    def __init__(self, blocks, runtime, pre, stats):
        self.b = blocks
        self.rt = runtime
        self.pre = pre
        self.stats = stats
        self.digests = []  # (name, values) produced by the last process() call
        self.headroom: int | None = BMV2_PACKET_HEADROOM  # bytes a deparser may add (None: no limit)
        self.buffer_limit = BMV2_PACKET_HEADROOM  # the longest frame the packet being processed may become
        self.t0 = time.monotonic()
        self.queue_depth = {}  # port -> packets its real queue holds (Switch.set_queue_depth)
        self.new_hdr, self.new_meta, self.new_sm = blocks["new_hdr"], blocks["new_meta"], blocks["new_sm"]
        self.parser, self.verify, self.ingress = blocks["parser"], blocks["verify"], blocks["ingress"]
        self.egress, self.compute, self.deparser = blocks["egress"], blocks["compute"], blocks["deparser"]

    def _now(self):
        return int((time.monotonic() - self.t0) * 1e6)

    def _preserve(self, meta, index):
        """Values of field list `index` (an @field_list number, or a "dataN" list from clone3/resubmit/
        recirculate data); its entries are paths like "f" or "outer.inner" inside the user metadata."""
        if index is None or index == -1:
            return None
        vals = []
        for path in self.b["field_lists"].get(index, ()):
            obj = meta
            for f in path.split("."):
                obj = getattr(obj, f)
            vals.append((path, obj.copy() if hasattr(obj, "copy") else obj))
        return vals

    def _restore(self, meta, preserved):
        if preserved:
            for path, v in preserved:
                *outer, last = path.split(".")
                obj = meta
                for f in outer:
                    obj = getattr(obj, f)
                setattr(obj, last, v.copy() if hasattr(v, "copy") else v)

    def process(self, port, data):
        out: list[tuple[int, bytes]] = []
        self.buffer_limit = len(data) + self.headroom if self.headroom is not None else 1 << 62
        self.digests = []
        jobs = [(data, port, PKT_NORMAL, None)]  # first in, first out: _ingress/_egress append to it
        run_passes(
            jobs,
            lambda data, port, itype, kept: self._ingress(data, port, itype, kept, jobs, out),
            self.stats,
            self.rt.log,
        )
        return out

    def _parse(self, data, port, itype):
        hdr, meta, sm = self.new_hdr(), self.new_meta(), self.new_sm()
        sm.ingress_port = port
        sm.packet_length = len(data)
        sm.instance_type = itype
        sm.ingress_global_timestamp = int((monotonic() - self.t0) * 1e6)
        self.rt.state.sm = sm
        off, err = self.parser(data, hdr, meta, sm)
        sm.parser_error = err
        if err:
            self.stats["parser_errors"] += 1
        return hdr, meta, sm, data[(off + 7) >> 3 :]

    def _ingress(self, data, port, itype, preserved, jobs, out):
        PS = self.rt.state
        hdr, meta, sm, payload = self._parse(data, port, itype)
        if preserved:
            self._restore(meta, preserved)
        PS.digests = []
        PS.clone = PS.resubmit = PS.recirculate = PS.truncate = None
        PS.payload = payload
        try:
            self.verify(hdr, meta)
        except ExitCtl:
            pass
        try:
            self.ingress(hdr, meta, sm)
        except ExitCtl:
            pass
        if PS.digests:
            self.digests.extend(PS.digests)
        clone, resub = PS.clone, PS.resubmit
        if clone is not None and clone[0] == "I2E":
            self._clone_i2e(data, port, meta, clone, jobs, out)
        if resub is not None:
            self.stats["resubmitted"] += 1
            jobs.append((data, port, PKT_RESUBMIT, self._preserve(meta, resub)))
            return
        grp = sm.mcast_grp
        if grp:
            reps = self.pre.groups.get(grp)
            if not reps:
                self.stats["dropped"] += 1
                return
            last = len(reps) - 1
            for i, (p, rid) in enumerate(reps):
                if i == last:
                    h, m, s = hdr, meta, sm
                else:
                    h, m, s = hdr.copy(), meta.copy(), sm.copy()
                s.instance_type = PKT_REPLICATION
                self.stats["replicated"] += 1
                self._egress(h, m, s, p, rid, payload, jobs, out, 0)
            return
        if sm.egress_spec == DROP_PORT:
            self.stats["dropped"] += 1
            return
        self._egress(hdr, meta, sm, sm.egress_spec, 0, payload, jobs, out, 0)

    def _clone_i2e(self, data, port, meta, clone, jobs, out):
        _, sid, fl = clone
        sess = self.pre.sessions.get(sid)
        if sess is None:
            return
        reps, trunc = sess
        preserved = self._preserve(meta, fl)
        for p, rid in reps:
            # BMv2 parses the original packet again for an ingress-to-egress clone
            h2, m2, s2, pay2 = self._parse(data, port, PKT_INGRESS_CLONE)
            self._restore(m2, preserved)
            self.stats["cloned"] += 1
            self._egress(h2, m2, s2, p, rid, pay2, jobs, out, 1, trunc)

    def _egress(self, hdr, meta, sm, port, rid, payload, jobs, out, depth, clone_trunc=0):
        PS = self.rt.state
        sm.egress_port = port
        sm.egress_rid = rid
        sm.egress_global_timestamp = int((monotonic() - self.t0) * 1e6)
        sm.enq_qdepth = sm.deq_qdepth = self.queue_depth.get(port, 0)
        PS.sm = sm
        PS.clone = PS.recirculate = PS.truncate = None
        PS.payload = payload
        try:
            self.egress(hdr, meta, sm)
        except ExitCtl:
            pass
        clone, recirc, trunc = PS.clone, PS.recirculate, PS.truncate
        if clone is not None and clone[0] == "E2E" and depth < 8:
            sess = self.pre.sessions.get(clone[1])
            if sess is not None:
                reps, ctrunc = sess
                preserved = self._preserve(meta, clone[2])
                for p, r in reps:
                    m2 = self.new_meta()
                    self._restore(m2, preserved)
                    s2 = self.new_sm()
                    s2.ingress_port = sm.ingress_port
                    s2.packet_length = sm.packet_length
                    s2.instance_type = PKT_EGRESS_CLONE
                    self.stats["cloned"] += 1
                    self._egress(hdr.copy(), m2, s2, p, r, payload, jobs, out, depth + 1, ctrunc)
                PS.sm = sm
        if sm.egress_spec == DROP_PORT:
            self.stats["dropped"] += 1
            return
        try:
            self.compute(hdr, meta)
        except ExitCtl:
            pass
        parts: list[bytes] = []
        try:
            self.deparser(parts, hdr)
        except ExitCtl:
            pass
        parts.append(payload)
        frame = b"".join(parts)
        if len(frame) > self.buffer_limit:  # BMv2's deparser would write past its packet buffer (limits.py)
            self.stats["buffer_limit_drops"] += 1
            self.stats["dropped"] += 1
            if self.rt.log:
                room = self.headroom
                assert room is not None
                self.rt.log(
                    f"packet dropped: the deparser made a {len(frame)}-byte frame, past BMv2's packet buffer "
                    f"(the received {self.buffer_limit - room} bytes + {room})"
                )
            return
        if recirc is not None:
            self.stats["recirculated"] += 1
            jobs.append((frame, sm.ingress_port, PKT_RECIRC, self._preserve(meta, recirc)))
            return
        if trunc:
            frame = frame[:trunc]
        if clone_trunc:
            frame = frame[:clone_trunc]
        out.append((port, frame))
