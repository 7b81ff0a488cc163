"""Switch: one running v1model or TNA device executing a compiled program, with its control API (by P4 name).

`Switch` is the base class of the two implementations: `PythonSwitch` (here: the Python runtime) and
softswitch.native.switch.NativeSwitch (pipeline and state in native code), with the same control API.
`switch_class(prog)` chooses the one for the back end `prog` was compiled for, and `Switch(prog, ...)`
constructs that one (so `isinstance(Switch(prog), Switch)` holds for both). One lock serialises packet
processing and control-plane writes. Callbacks (packet-in, digests, transmit) run after the lock is
released, so they may call back into the switch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, MutableMapping

from protocol.p4names import find_named

from .limits import packet_headroom
from .runtime.pre import PRE
from .runtime.tables import (  # noqa: F401
    ConstDefaultAction,
    EntryExists,
    EntryNotFound,
    Exact,
    InvalidEntry,
    Lpm,
    Optional,
    Range,
    TableEntry,
    TableError,
    TableFull,
    Ternary,
)
from .runtime.tna import TnaPipeline, queue_cells
from .runtime.v1model import Pipeline, Runtime

QDEPTH_MAX = 0x7FFFF  # standard_metadata.enq_qdepth / deq_qdepth are bit<19>
STAT_KEYS = (
    "received",
    "transmitted",
    "dropped",
    "parser_errors",
    "malformed",
    "errors",
    "resubmitted",
    "recirculated",
    "cloned",
    "replicated",
    "to_cpu",
    "from_cpu",
    "digests",
    "loop_limit_drops",
    "buffer_limit_drops",
    "stack_index_drops",
)


def queue_depth_reading(arch: str, packets: int, queued_bytes: int | None = None) -> int:
    """A port's queue depth as the architecture's egress reads it: v1model's standard_metadata.enq_qdepth
    counts packets (as BMv2 does), TNA's egress_intrinsic_metadata_t.enq_qdepth 80-byte cells (Tofino 1)."""
    if arch == "tna":
        return queue_cells(packets, queued_bytes)
    return max(0, min(int(packets), QDEPTH_MAX))


def by_name(items: dict, name: str, kind: str):
    """items[name], or the one item whose last dotted component is name (protocol/p4names.py's rule)."""
    return find_named(items, name, kind)


class Switch:
    """The base of both implementations: what every switch does for its controller (callbacks that cannot
    kill the packet path, packet-outs) and the checks at the start of process(). `Switch(prog, ...)`
    constructs the implementation switch_class(prog) names."""

    backend: str
    name: str
    log: Callable[[str], None] | None
    cpu_port: int | None
    on_transmit: Callable[[int, bytes], None] | None
    stats: MutableMapping[str, int]

    def __new__(cls, prog=None, *args, **kwargs):
        if cls is Switch:
            cls = switch_class(prog)
        return super().__new__(cls)

    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        """Runs one received frame; returns [(egress_port, bytes)] in emission order (never raises)."""
        data = self.received(port, frame)
        return [] if data is None else self.run(port, data)

    def received(self, port: object, frame: object) -> bytes | None:
        """frame as bytes, or None (counted as malformed) when it is not bytes or port is not 0..511."""
        try:
            data = bytes(frame)  # type: ignore[call-overload]
        except Exception:
            self.stats["malformed"] += 1
            return None
        if not isinstance(port, int) or not 0 <= port < 512:
            self.stats["malformed"] += 1
            return None
        return data

    def run(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        """process() of a checked frame: the implementation's pipeline."""
        raise NotImplementedError

    def set_queue_depth(self, port: int, packets: int, queued_bytes: int | None = None) -> None:
        """How many packets (and bytes, where known) the real queue behind egress ``port`` holds now (the
        kernel qdisc in front of its veth, or a modelled link's queue): egress reads it as enq_qdepth and
        deq_qdepth, in packets on v1model as BMv2 reports its own queues' depth, in cells on TNA
        (queue_depth_reading; softswitch-internals.md, "Queue depth")."""
        raise NotImplementedError

    def count_from_cpu(self) -> None:
        raise NotImplementedError

    def _callback(self, fn: Callable[..., object], *args: object) -> None:
        try:
            fn(*args)
        except Exception as e:  # a broken callback must not kill the packet path
            if self.log:
                self.log(f"{self.name}: callback {fn!r} failed: {e}")

    def packet_out(self, frame: bytes) -> list[tuple[int, bytes]]:
        """Injects a frame from the controller on cpu_port; returns and (if set) transmits the outputs."""
        if self.cpu_port is None:
            raise RuntimeError(f"{self.name}: packet_out needs a cpu_port")
        self.count_from_cpu()
        out = self.process(self.cpu_port, frame)
        if self.on_transmit is not None:
            for p, f in out:
                self._callback(self.on_transmit, p, f)
        return out


def switch_class(prog) -> type[Switch]:
    """The implementation that runs prog: NativeSwitch for a program the native back end compiled,
    PythonSwitch otherwise."""
    if getattr(prog, "backend", "python") == "native":
        from .native.switch import NativeSwitch

        return NativeSwitch
    return PythonSwitch


class PythonSwitch(Switch):
    """A switch running the Python back end's generated code on softswitch.runtime."""

    backend = "python"

    def __init__(self, prog, device_id=0, cpu_port=None, name="s1", log=None, limits=None):
        self.device_id = device_id
        self.headroom = packet_headroom(limits)  # limits.py: BMv2's packet buffer, or None
        self.cpu_port = cpu_port
        self.name = name
        self.log = log
        self.on_packet_in = None  # callable(frame_bytes): frames the pipeline sends to cpu_port
        self.on_digest = None  # callable(digest_name, values_dict)
        self.on_transmit = None  # callable(port, frame_bytes): frames produced by packet_out()
        self._lock = threading.RLock()
        self.stats = {k: 0 for k in STAT_KEYS}
        self.pre = PRE()
        self.load(prog)

    def set_queue_depth(self, port, packets, queued_bytes=None):
        self.pipeline.queue_depth[int(port)] = queue_depth_reading(self.info.arch, packets, queued_bytes)

    # ------------------------------------------------------------------ pipeline
    def load(self, prog):
        """Replaces the pipeline (SetForwardingPipelineConfig): all tables, externs and PRE state are cleared."""
        if getattr(prog, "backend", "python") != "python":
            prog = prog.for_backend("python")
        with self._lock:
            self.prog = prog
            self.info = prog.info
            self.runtime = Runtime(prog.info, self.log)
            self.pre = PRE()
            blocks = prog.build(self.runtime)
            pipeline: Pipeline | TnaPipeline
            if prog.info.arch == "tna":
                pipeline = TnaPipeline(blocks, self.runtime, self.pre, self.stats)
            else:
                pipeline = Pipeline(blocks, self.runtime, self.pre, self.stats)
                pipeline.headroom = self.headroom
            self.pipeline = pipeline

    def run(self, port, data):
        with self._lock:
            stats, pipeline, cpu = self.stats, self.pipeline, self.cpu_port
            stats["received"] += 1
            out = pipeline.process(port, data)
            digests = pipeline.digests
            pipeline.digests = []
            if digests:
                stats["digests"] += len(digests)
            result: list[tuple[int, bytes]] = out
            to_cpu: list[bytes] = []
            if cpu is not None:
                result = []
                for p, f in out:
                    if p == cpu and self.on_packet_in is not None:
                        to_cpu.append(f)
                    else:
                        result.append((p, f))
                    if p == cpu:
                        stats["to_cpu"] += 1
            stats["transmitted"] += len(out)
            on_pi, on_dg = self.on_packet_in, self.on_digest
        if on_pi is not None:
            for f in to_cpu:
                self._callback(on_pi, f)
        if on_dg is not None:
            for name, values in digests:
                self._callback(on_dg, name, values)
        return result

    def count_from_cpu(self) -> None:
        self.stats["from_cpu"] += 1

    # ------------------------------------------------------------------ tables
    def table(self, name):
        return _LockedTable(by_name(self.runtime.tables, name, "table"), self._lock)

    def tables(self):
        return [self.table(n) for n in self.runtime.tables]

    def direct_counter_of(self, table, entry):
        with self._lock:
            t = by_name(self.runtime.tables, table, "table") if isinstance(table, str) else table._t
            e = t.find(entry)
            if e is None:
                raise EntryNotFound(f"table {t.name}: no entry with this key")
            return e.packets, e.bytes

    # ------------------------------------------------------------------ externs
    def register(self, name):
        return Locked(by_name(self.runtime.registers, name, "register"), self._lock)

    def counter(self, name):
        return Locked(by_name(self.runtime.counters, name, "counter"), self._lock)

    def meter(self, name):
        """An indexed meter: .set_config(index, cir, cburst, pir, pburst) (rates per second, bursts in the
        meter's units), .clear_config(index), .config(index)."""
        return Locked(by_name(self.runtime.meters, name, "meter"), self._lock)

    def set_meter_clock(self, clock) -> None:
        """Meters read clock() (seconds) instead of time.monotonic (tests make marking deterministic with
        it; NativeSwitch has the same); None: the monotonic clock again."""
        import time

        with self._lock:
            for meter in self.runtime.meters.values():
                meter.clock = clock or time.monotonic

    def direct_meter_config(self, table, entry, cir, cburst, pir, pburst):
        """Configures the direct meter cell of a table entry (the table's `meters`)."""
        with self._lock:
            t = by_name(self.runtime.tables, table, "table")
            meter = t.info.direct_meter
            if meter is None:
                raise KeyError(f"table {t.name} has no direct meter")
            stored = t.find(entry)
            if stored is None:
                raise EntryNotFound(f"table {t.name}: no entry with this key")
            self.runtime.meters[meter].set_config(id(stored), cir, cburst, pir, pburst)

    def clear_direct_meter_config(self, table, entry):
        """Back to no configuration (every packet GREEN) for a table entry's direct meter cell."""
        with self._lock:
            meter, stored = self._direct_meter_cell(table, entry)
            meter.clear_config(id(stored))

    def direct_meter_config_of(self, table, entry):
        """(cir, cburst, pir, pburst) of a table entry's direct meter cell, or None when unconfigured."""
        with self._lock:
            meter, stored = self._direct_meter_cell(table, entry)
            return meter.config(id(stored))

    def _direct_meter_cell(self, table, entry):
        t = by_name(self.runtime.tables, table, "table")
        if t.info.direct_meter is None:
            raise KeyError(f"table {t.name} has no direct meter")
        stored = t.find(entry)
        if stored is None:
            raise EntryNotFound(f"table {t.name}: no entry with this key")
        return self.runtime.meters[t.info.direct_meter], stored

    def action_profile(self, name):
        """An action profile/selector: .add_member(id, action, args), .modify_member, .delete_member(id),
        .member(id), .members; .set_group(id, {member: weight}, create=True), .delete_group(id), .groups.
        Entries of its tables give TableEntry(member=id) or TableEntry(group=id) instead of an action."""
        return Locked(by_name(self.runtime.action_profiles, name, "action profile"), self._lock)

    def value_set(self, name):
        """A parser value set: .add(value, mask=None), .clear(), .members."""
        return Locked(by_name(self.runtime.value_sets, name, "value set"), self._lock)

    # ------------------------------------------------------------------ packet replication engine
    def set_multicast_group(self, group_id, replicas):
        with self._lock:
            self.pre.set_group(group_id, replicas)

    def delete_multicast_group(self, group_id):
        with self._lock:
            self.pre.delete_group(group_id)

    def multicast_groups(self):
        with self._lock:
            return {g: list(r) for g, r in self.pre.groups.items()}

    def set_clone_session(self, session_id, replicas, truncate=0):
        with self._lock:
            self.pre.set_session(session_id, replicas, truncate)

    def delete_clone_session(self, session_id):
        with self._lock:
            self.pre.delete_session(session_id)

    def clone_sessions(self):
        with self._lock:
            return {s: (list(r), t) for s, (r, t) in self.pre.sessions.items()}


class Locked:
    """Wraps a register/counter state so each call holds the switch's lock."""

    def __init__(self, obj, lock):
        self._o, self._lock = obj, lock

    @property
    def size(self):
        return self._o.size

    @property
    def info(self):
        return self._o.info

    @property
    def name(self):
        return self._o.name

    def __getattr__(self, attr):
        fn = getattr(self._o, attr)
        if not callable(fn):
            return fn

        def locked(*a, **k):
            with self._lock:
                return fn(*a, **k)

        return locked


class _LockedTable(Locked):
    @property
    def _t(self):
        return self._o

    @property
    def default(self):
        with self._lock:
            return self._o.default
