"""The test program of the native runtime (fixture_program.c) and its ProgramInfo, for the tests here.

fixture_program.c is a hand-written descriptor, not a P4 program: its blocks follow commands in the
test frames (see the comment at its top), so the tests drive every path of the runtime's pipeline.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from native.build import CompilerMissing, compiler
from softswitch.native.library import build_library
from softswitch.native.switch import NativeProgram, NativeSwitch
from softswitch.program import (
    ActionInfo,
    ActionRef,
    CounterInfo,
    DigestInfo,
    DirectCounterInfo,
    FieldInfo,
    KeyInfo,
    ParamInfo,
    ProgramInfo,
    RegisterInfo,
    TableInfo,
)

try:  # the native runtime is C compiled at run time: without a compiler there is nothing to test
    compiler()
except CompilerMissing as e:
    pytest.skip(f"the native runtime needs a C compiler ({e})", allow_module_level=True)

SOURCE = Path(__file__).resolve().parent / "fixture_program.c"

# commands of the test header (byte 0)
FORWARD, MULTICAST, DROP, CLONE_I2E, RESUBMIT, RECIRCULATE, DIGEST, LOOKUP = range(8)
STATEFUL, CLONE_E2E, TRUNCATE, FAIL, LOG, RANDOM = range(8, 14)

ACTIONS = [
    ActionInfo("NoAction"),
    ActionInfo("Fixture.fwd", (ParamInfo("port", 9),)),
    ActionInfo("Fixture.set", (ParamInfo("a", 32), ParamInfo("b", 48))),
    ActionInfo("Fixture.wide", (ParamInfo("v", 128),)),
]
ALL_ACTIONS = tuple(ActionRef(a.name) for a in ACTIONS)


def _table(name, keys, size=1024, counter=None, **kw):
    return TableInfo(
        name,
        tuple(KeyInfo(*k) for k in keys),
        ALL_ACTIONS,
        "NoAction",
        size=size,
        direct_counter=counter,
        **kw,
    )


TABLES = [
    _table("Fixture.exact16", [("hdr.k16", "exact", 16)], size=4, counter="Fixture.exact16_counter"),
    _table("Fixture.lpm", [("meta.vrf", "exact", 8), ("hdr.dst", "lpm", 32)]),
    _table("Fixture.ternary", [("hdr.t16", "ternary", 16), ("hdr.e8", "exact", 8)], counter="Fixture.t_counter"),
    _table("Fixture.range", [("hdr.r12", "range", 12), ("hdr.t9", "ternary", 9)]),
    _table("Fixture.optional", [("hdr.o8", "optional", 8), ("hdr.p20", "lpm", 20)]),
    _table("Fixture.wide", [("hdr.mac", "exact", 48), ("hdr.v6", "lpm", 128)]),
    _table("Fixture.keyless", [], size=16),
]


def fixture_info(tables=None) -> ProgramInfo:
    tables = list(TABLES if tables is None else tables)
    return ProgramInfo(
        name="fixture",
        tables=tables,
        actions=list(ACTIONS),
        registers=[
            RegisterInfo("Fixture.r8", 8, 16),
            RegisterInfo("Fixture.r32", 32, 16),
            RegisterInfo("Fixture.r48", 48, 4),
            RegisterInfo("Fixture.r128", 128, 4),
            RegisterInfo("Fixture.s16", 16, 4, signed=True),
        ],
        counters=[CounterInfo("Fixture.c0", 8, "packets_and_bytes"), CounterInfo("Fixture.c1", 4, "bytes")],
        direct_counters=[
            DirectCounterInfo(t.direct_counter, t.name, "packets_and_bytes") for t in tables if t.direct_counter
        ],
        digests=[DigestInfo("learn_t", (FieldInfo("a", 8), FieldInfo("b", 16)))],
    )


def fixture_program(info: ProgramInfo | None = None) -> NativeProgram:
    return NativeProgram(info or fixture_info(), build_library("fixture", sources=[SOURCE]))


def fixture_switch(info: ProgramInfo | None = None, **kw) -> NativeSwitch:
    return NativeSwitch(fixture_program(info), **kw)


def with_table(name: str, **changes) -> ProgramInfo:
    """The fixture's ProgramInfo with one table's TableInfo changed (const entries, defaults...)."""
    return fixture_info([replace(t, **changes) if t.name == name else t for t in TABLES])


def make_frame(command: int, a1: int = 0, a2: int = 0, a3: int = 0, body: bytes = b"", payload: bytes = b"") -> bytes:
    """A 16-byte test header (command, its three arguments, bytes 4..11 from `body`) and a payload."""
    header = bytes([command, a1, a2, a3]) + body.ljust(8, b"\0")[:8] + bytes(4)
    return header + payload
