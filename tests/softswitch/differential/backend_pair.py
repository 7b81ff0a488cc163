"""One program on both softswitch back ends, fed the same control-plane calls and frames, every result
compared: the engine of the differential tests and of bench/fuzz_backends.py.

    pair = BackendPair.from_path("tests/softswitch/programs/ipv4_router.p4")
    pair.call(lambda sw: sw.table("MyIngress.ipv4_lpm").insert(entry))   # same result or same error on both
    pair.process(1, frame)                                               # raises BackendMismatch
    pair.check_state()                                                   # registers, counters, stats

Nothing here knows what a program should do: the Python back end is the reference, and any difference
is a bug in one of the two (or in the front end they share).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest

from native.build import CompilerMissing, compiler
from softswitch.compiler import compile_program, compile_source
from softswitch.program import ProgramInfo, TableInfo
from softswitch.switch import Exact, Lpm, Optional, Range, Switch, TableEntry, Ternary


def _no_c_compiler() -> str:
    """Why there is no C compiler, or "" when there is one."""
    try:
        compiler()
    except CompilerMissing as e:
        return str(e)
    return ""


# the mark of every differential test module: without a C compiler there is no native back end to compare
NEEDS_NATIVE = pytest.mark.skipif(
    bool(_no_c_compiler()),
    reason=f"comparing the back ends needs the native one, built by a C compiler: {_no_c_compiler()}",
)

# programs the C back end does not compile yet: they must fall back to Python saying what and where
EXPECTED_FALLBACKS = {}


def skip_expected_fallback(path) -> None:
    """Skips (with the reason) a program in EXPECTED_FALLBACKS after checking that it does fall back
    with that reason and its file:line, so adding support shows up here."""
    name = getattr(path, "name", str(path))
    if name not in EXPECTED_FALLBACKS:
        return
    native = compile_program(str(path), backend="native")
    assert native.backend == "python"
    assert native.fallback_reason.startswith(EXPECTED_FALLBACKS[name] + str(path) + ":"), native.fallback_reason
    pytest.skip(f"the native back end does not run {name} yet: {native.fallback_reason}")


class BackendMismatch(AssertionError):
    """The two back ends did not agree."""


@dataclass
class Outcome:
    """Everything one frame produced on one back end."""

    outputs: list
    packet_ins: list
    digests: list


class BackendPair:
    def __init__(self, python_program, native_program, cpu_port: int | None = None):
        if native_program.backend != "native":
            raise BackendMismatch(f"the native back end was not used: {native_program.fallback_reason}")
        self.info: ProgramInfo = python_program.info
        self.python = Switch(python_program, cpu_port=cpu_port, name="python")
        self.native = Switch(native_program, cpu_port=cpu_port, name="native")
        assert self.python.backend == "python" and self.native.backend == "native"
        self._events: dict[str, tuple[list, list]] = {}
        for label, sw in (("python", self.python), ("native", self.native)):
            packet_ins: list = []
            digests: list = []
            self._events[label] = (packet_ins, digests)
            if cpu_port is not None:
                sw.on_packet_in = packet_ins.append
            sw.on_digest = lambda name, values, d=digests: d.append((name, dict(values)))
        self.frames = 0
        for sw in (self.python, self.native):  # meters on both see the same time: 1 ms per frame
            sw.set_meter_clock(lambda: self.frames * 0.001)
        self.seconds = {"python": 0.0, "native": 0.0}  # time spent in each back end's process()

    @classmethod
    def from_path(cls, path, defines=None, include_dirs=(), cpu_port=None) -> BackendPair:
        python = compile_program(str(path), defines=defines, include_dirs=include_dirs, backend="python")
        native = compile_program(str(path), defines=defines, include_dirs=include_dirs, backend="native")
        return cls(python, native, cpu_port)

    @classmethod
    def from_source(cls, text: str, filename="t.p4", cpu_port=None) -> BackendPair:
        return cls(
            compile_source(text, filename, backend="python"), compile_source(text, filename, backend="native"), cpu_port
        )

    def close(self) -> None:
        self.native.close()

    # ---------------------------------------------------------------- control plane
    def call(self, fn: Callable[[Switch], object]):
        """fn(switch) on both back ends: the same return value, or the same exception (type and message)."""
        results = []
        for sw in (self.python, self.native):
            try:
                results.append(("ok", fn(sw)))
            except Exception as e:  # noqa: BLE001 - comparing what each back end raises
                results.append(("error", (type(e).__name__, str(e))))
        (kind_p, value_p), (kind_n, value_n) = results
        if (kind_p, value_p) != (kind_n, value_n):
            raise BackendMismatch(
                f"control-plane call differs: python {kind_p} {value_p!r}, native {kind_n} {value_n!r}"
            )
        if kind_p == "error":
            return None
        return value_p

    # ---------------------------------------------------------------- data plane
    def process(self, port: int, frame: bytes) -> list:
        """One frame on both back ends; the outputs (port and bytes, in order), packet-ins and digests
        must be identical. Returns the outputs."""
        self.frames += 1
        outcomes = []
        for label, sw in (("python", self.python), ("native", self.native)):
            packet_ins, digests = self._events[label]
            start = time.perf_counter()
            outputs = sw.process(port, frame)
            self.seconds[label] += time.perf_counter() - start
            outcomes.append(Outcome(outputs, list(packet_ins), list(digests)))
            packet_ins.clear()
            digests.clear()
        python, native = outcomes
        if python != native:
            raise BackendMismatch(
                f"frame #{self.frames} on port {port} ({frame.hex()}):\n  python: {python}\n  native: {native}"
            )
        return python.outputs

    def check_state(self) -> None:
        """Registers, counters, direct counters, table contents and statistics must be identical."""
        problems = []
        for r in self.info.registers:
            p, n = self.python.register(r.name).values, self.native.register(r.name).values
            if p != n:
                diff = [i for i, (a, b) in enumerate(zip(p, n, strict=True)) if a != b]
                problems.append(f"register {r.name} differs at {diff[:8]} (python {p[diff[0]]}, native {n[diff[0]]})")
        for c in self.info.counters:
            p = [self.python.counter(c.name).read(i) for i in range(c.size)]
            n = [self.native.counter(c.name).read(i) for i in range(c.size)]
            if p != n:
                diff = [i for i, (a, b) in enumerate(zip(p, n, strict=True)) if a != b]
                problems.append(f"counter {c.name} differs at {diff[:8]} (python {p[diff[0]]}, native {n[diff[0]]})")
        for t in self.info.tables:
            p = sorted(map(_entry_key, self.python.table(t.name).entries()))
            n = sorted(map(_entry_key, self.native.table(t.name).entries()))
            if p != n:
                problems.append(f"table {t.name}: entries or their direct counters differ")
        p, n = dict(self.python.stats), dict(self.native.stats)
        if p != n:
            problems.append(f"statistics differ: python {p}, native {n}")
        if problems:
            raise BackendMismatch("\n".join(problems))


def _entry_key(e: TableEntry):
    return (
        repr(sorted(e.matches.items())),
        e.action,
        repr(sorted(e.args.items())),
        e.priority,
        e.packets,
        e.bytes,
        e.member,
        e.group,
    )


# ---------------------------------------------------------------------------- random inputs


def interesting_value(rng: random.Random, width: int) -> int:
    """A value of `width` bits, often one at the edges (0, 1, all ones, the sign bit)."""
    top = (1 << width) - 1
    choice = rng.random()
    if choice < 0.15:
        return 0
    if choice < 0.25:
        return top
    if choice < 0.35:
        return min(1, top)
    if choice < 0.45:
        return 1 << (width - 1)
    if choice < 0.7:
        return rng.randint(0, min(top, 15))
    return rng.getrandbits(width)


def random_entry(table: TableInfo, info: ProgramInfo, rng: random.Random) -> TableEntry:
    """A random entry for a table (keys of every match kind, an action it allows, random data)."""
    matches = {}
    for k in table.keys:
        w = k.bitwidth
        if k.match_kind == "exact":
            matches[k.name] = Exact(interesting_value(rng, w))
        elif k.match_kind == "lpm":
            length = rng.randint(0, w)
            value = interesting_value(rng, w) & (((1 << length) - 1) << (w - length))
            matches[k.name] = Lpm(value, length)
        elif k.match_kind == "ternary":
            if rng.random() < 0.2:
                continue  # a wildcard
            mask = interesting_value(rng, w)
            matches[k.name] = Ternary(interesting_value(rng, w) & mask, mask)
        elif k.match_kind == "range":
            if rng.random() < 0.2:
                continue
            low, high = sorted((interesting_value(rng, w), interesting_value(rng, w)))
            matches[k.name] = Range(low, high)
        elif k.match_kind == "optional":
            if rng.random() < 0.4:
                continue
            matches[k.name] = Optional(interesting_value(rng, w))
    choices = [a.name for a in table.actions if a.scope != "DEFAULT_ONLY"] or [table.default_action]
    action = info.action(rng.choice(choices))
    args = {p.name: interesting_value(rng, p.bitwidth) for p in action.params}
    needs_priority = any(k.match_kind in ("ternary", "range", "optional") for k in table.keys)
    return TableEntry(matches, action.name, args, rng.randint(1, 1000) if needs_priority else None)


def random_meter_config(rng: random.Random) -> tuple:
    """(cir, cburst, pir, pburst): rates per second (the pair's clock advances 1 ms per frame), bursts
    from none to a few packets' worth of bytes."""
    cir = rng.choice((0.0, 10.0, 1000.0, 100000.0))
    cburst = rng.choice((0, 1, 2, 100, 3000))
    return cir, cburst, cir * rng.choice((1, 2, 10)), cburst + rng.choice((0, 1, 1500))


def populate(pair: BackendPair, rng: random.Random, per_table: int = 8) -> None:
    """Random entries in every table that takes them, random default actions, multicast groups 1..4
    and clone sessions 1..4 (ports 0..7) on both back ends. Action profiles get members 1..6 and
    selectors groups 1..4 (group 4 empty); their tables' entries point at random members and groups.
    Meters get random configurations in a few cells, direct meters in some entries' cells."""
    info = pair.info
    targets: dict[str, list[tuple[str, int]]] = {}  # profile name -> what an entry may point at
    for profile in info.action_profiles:
        first = info.table(profile.tables[0])
        for member in range(1, 7):
            action = info.action(rng.choice([a.name for a in first.actions if a.scope != "DEFAULT_ONLY"]))
            args = {p.name: interesting_value(rng, p.bitwidth) for p in action.params}
            pair.call(
                lambda sw, n=profile.name, m=member, a=action.name, d=args: sw.action_profile(n).add_member(m, a, d)
            )
        targets[profile.name] = [("member", m) for m in range(1, 7)]
        if profile.with_selector:
            for group in range(1, 5):
                weights = (
                    {m: rng.randint(1, 3) for m in rng.sample(range(1, 7), rng.randint(1, 4))} if group < 4 else {}
                )
                pair.call(
                    lambda sw, n=profile.name, g=group, w=weights: sw.action_profile(n).set_group(g, w, create=True)
                )
            targets[profile.name] += [("group", g) for g in range(1, 5)]
    for table in info.tables:
        if table.is_const:
            continue
        for _ in range(per_table):
            entry = random_entry(table, info, rng)
            if table.implementation is not None:
                kind, ident = rng.choice(targets[table.implementation])
                entry.action, entry.args = "", {}
                setattr(entry, kind, ident)
            pair.call(lambda sw, t=table.name, e=entry: sw.table(t).insert(e))
            if table.direct_meter is not None and rng.random() < 0.7:
                config = random_meter_config(rng)
                pair.call(lambda sw, t=table.name, e=entry, c=config: sw.direct_meter_config(t, e, *c))
        if not table.const_default_action and rng.random() < 0.5:
            defaults = [a.name for a in table.actions if a.scope != "TABLE_ONLY"]
            if defaults:
                action = info.action(rng.choice(defaults))
                args = {p.name: interesting_value(rng, p.bitwidth) for p in action.params}
                pair.call(lambda sw, t=table.name, a=action.name, d=args: sw.table(t).set_default(a, d))
    for meter in info.meters:
        for index in rng.sample(range(meter.size), min(meter.size, 3)):
            config = random_meter_config(rng)
            pair.call(lambda sw, n=meter.name, i=index, c=config: sw.meter(n).set_config(i, *c))
    for group in range(1, 5):
        replicas = [(rng.randint(0, 7), rng.randint(0, 3)) for _ in range(rng.randint(0, 3))]
        pair.call(lambda sw, g=group, r=replicas: sw.set_multicast_group(g, r))
    for value_set in info.value_sets:
        for _ in range(rng.randint(0, value_set.size)):
            value, mask = interesting_value(rng, value_set.bitwidth), interesting_value(rng, value_set.bitwidth)
            pair.call(lambda sw, n=value_set.name, v=value, m=mask: sw.value_set(n).add(v, m))
    for session in range(1, 5):
        replicas = [(rng.randint(0, 7), 0) for _ in range(rng.randint(1, 2))]
        truncate = rng.choice((0, 0, 20, 60))
        pair.call(lambda sw, s=session, r=replicas, t=truncate: sw.set_clone_session(s, r, t))


def mutations(rng: random.Random, seeds: list[bytes], count: int, max_length: int = 1600) -> Iterator[bytes]:
    """`count` frames: mutated seeds (bit flips, byte changes, cuts, extensions) and random bytes."""
    for _ in range(count):
        if not seeds or rng.random() < 0.15:
            yield rng.randbytes(rng.randint(0, rng.choice((16, 64, max_length))))
            continue
        frame = bytearray(rng.choice(seeds))
        for _ in range(rng.choice((0, 1, 1, 2, 3, 8))):
            kind = rng.random()
            if kind < 0.4 and frame:
                i = rng.randrange(len(frame))
                frame[i] ^= 1 << rng.randrange(8)
            elif kind < 0.7 and frame:
                frame[rng.randrange(len(frame))] = rng.choice((0, 0xFF, rng.randrange(256)))
            elif kind < 0.85:
                del frame[rng.randint(0, len(frame)) :]
            else:
                frame += rng.randbytes(rng.randint(1, 64))
        yield bytes(frame[:max_length])
