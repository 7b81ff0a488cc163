"""Switch: one running v1model or TNA device executing a compiled program, with its control API (by P4 name).

`Switch(prog)` runs `prog` on the back end it was compiled for: a program compiled by the native back
end gives a softswitch.native.switch.NativeSwitch (same control API, pipeline and state in native
code); otherwise this class, the Python runtime. One lock serialises packet processing and
control-plane writes. Callbacks (packet-in, digests, transmit) run after the lock is released, so they
may call back into the switch.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from protocol.p4names import find_named

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
from .runtime.tna import TnaPipeline
from .runtime.v1model import Pipeline, Runtime

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
)


def _by_name(items: dict, name: str, kind: str):
    return find_named(items, name, kind)


class ControllerSide:
    """What both switches (this one and softswitch.native.switch.NativeSwitch) do for their controller:
    run its callbacks without letting a broken one kill the packet path, and inject its packet-outs."""

    name: str
    log: Callable[[str], None] | None
    cpu_port: int | None
    on_transmit: Callable[[int, bytes], None] | None

    def process(self, port: int, frame: bytes) -> list[tuple[int, bytes]]:
        raise NotImplementedError

    def _count_from_cpu(self) -> None:
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
        self._count_from_cpu()
        out = self.process(self.cpu_port, frame)
        if self.on_transmit is not None:
            for p, f in out:
                self._callback(self.on_transmit, p, f)
        return out


class Switch(ControllerSide):
    backend = "python"

    def __new__(cls, prog=None, *args, **kwargs):
        if cls is Switch and getattr(prog, "backend", "python") == "native":
            from .native.switch import NativeSwitch

            return NativeSwitch(prog, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, prog, device_id=0, cpu_port=None, name="s1", log=None):
        self.device_id = device_id
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
            if prog.info.arch == "tna":
                self.pipeline = TnaPipeline(blocks, self.runtime, self.pre, self.stats)
            else:
                self.pipeline = Pipeline(blocks, self.runtime, self.pre, self.stats)

    def process(self, port, frame):
        """Runs one received frame; returns [(egress_port, bytes)] in emission order (never raises)."""
        try:
            data = bytes(frame)
        except Exception:
            self.stats["malformed"] += 1
            return []
        if not isinstance(port, int) or not 0 <= port < 512:
            self.stats["malformed"] += 1
            return []
        with self._lock:
            stats, pipeline, cpu = self.stats, self.pipeline, self.cpu_port
            stats["received"] += 1
            out = pipeline.process(port, data)
            digests = pipeline.digests
            pipeline.digests = []
            if digests:
                stats["digests"] += len(digests)
            if cpu is None:
                result, to_cpu = out, ()
            else:
                result = []
                to_cpu = []
                for p, f in out:
                    if p == cpu and self.on_packet_in is not None:
                        to_cpu.append(f)
                    else:
                        result.append((p, f))
                    if p == cpu:
                        stats["to_cpu"] += 1
            stats["transmitted"] += len(out)
            on_pi, on_dg = self.on_packet_in, self.on_digest
        for f in to_cpu:
            self._callback(on_pi, f)
        if on_dg is not None:
            for name, values in digests:
                self._callback(on_dg, name, values)
        return result

    def _count_from_cpu(self) -> None:
        self.stats["from_cpu"] += 1

    # ------------------------------------------------------------------ tables
    def table(self, name):
        return _LockedTable(_by_name(self.runtime.tables, name, "table"), self._lock)

    def tables(self):
        return [self.table(n) for n in self.runtime.tables]

    def direct_counter_of(self, table, entry):
        with self._lock:
            t = _by_name(self.runtime.tables, table, "table") if isinstance(table, str) else table._t
            e = t.find(entry)
            if e is None:
                raise EntryNotFound(f"table {t.name}: no entry with this key")
            return e.packets, e.bytes

    # ------------------------------------------------------------------ externs
    def register(self, name):
        return _Locked(_by_name(self.runtime.registers, name, "register"), self._lock)

    def counter(self, name):
        return _Locked(_by_name(self.runtime.counters, name, "counter"), self._lock)

    def meter(self, name):
        """An indexed meter: .set_config(index, cir, cburst, pir, pburst) (rates per second, bursts in the
        meter's units), .clear_config(index), .config(index)."""
        return _Locked(_by_name(self.runtime.meters, name, "meter"), self._lock)

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
            t = _by_name(self.runtime.tables, table, "table")
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
        t = _by_name(self.runtime.tables, table, "table")
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
        return _Locked(_by_name(self.runtime.action_profiles, name, "action profile"), self._lock)

    def value_set(self, name):
        """A parser value set: .add(value, mask=None), .clear(), .members."""
        return _Locked(_by_name(self.runtime.value_sets, name, "value set"), self._lock)

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


class _Locked:
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


class _LockedTable(_Locked):
    @property
    def _t(self):
        return self._o

    @property
    def default(self):
        with self._lock:
            return self._o.default
