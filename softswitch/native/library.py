"""Building a program's native library (the runtime's C sources + the program's generated C) and the
ctypes view of it: the exported functions with their signatures and the program descriptor's structs.

    lib = build_library("ipv4_router", generated={"program.c": c_text})     # a NativeLibrary
    lib.api.ss_switch_create(None)                                          # the ctypes functions
    lib.descriptor                                                          # ProgramDescriptor

One shared object per program: the runtime is linked into each (with -fvisibility=hidden, so
several programs load side by side without clashing), cached by native/build.py under a hash of the
runtime sources, the program's C, the flags and the compiler version. The runtime's object files are
compiled once (native.build.build_objects) and linked into every program's library, so a new program
costs only the compilation of its own C.
"""

from __future__ import annotations

import ctypes
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from native.build import DEFAULT_CFLAGS, build_objects, load_library

from ..ports import MAX_FRAME

__all__ = ["INCLUDE_DIR", "RUNTIME_SOURCES", "NativeLibrary", "ProgramDescriptor", "build_library"]

PACKAGE_DIR = Path(__file__).resolve().parent
INCLUDE_DIR = PACKAGE_DIR / "include"
SOURCE_DIR = PACKAGE_DIR / "src"
RUNTIME_SOURCES = tuple(sorted(SOURCE_DIR.glob("*.c")))
# SS_IO_FRAME (ss_io.c): the longest frame a port takes, one value for both back ends' ports
CFLAGS = (*DEFAULT_CFLAGS, "-pthread", "-fvisibility=hidden", f"-DSS_IO_FRAME={MAX_FRAME}")
# a program's generated C: straight-line code over many fields and registers, where -O3 finds about an
# eighth fewer instructions than -O2 (ina.p4) at the same compile time
PROGRAM_CFLAGS = tuple("-O3" if flag == "-O2" else flag for flag in CFLAGS)
ABI_VERSION = 5

MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")
COUNTER_UNITS = ("packets", "bytes", "packets_and_bytes")

# return codes of the control functions (ss_internal.h)
OK, E_EXISTS, E_NOT_FOUND, E_FULL, E_INVALID, E_NOMEM, E_IO = range(7)
# record kinds (ss_internal.h)
REC_FRAME, REC_PACKET_IN, REC_DIGEST, REC_LOG = 1, 2, 3, 4


# ---------------------------------------------------------------------------- descriptor structs


class _ParamDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("bitwidth", ctypes.c_uint32)]


class _ActionDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("n_params", ctypes.c_uint32), ("params", ctypes.POINTER(_ParamDesc))]


class _KeyDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("match_kind", ctypes.c_uint32), ("bitwidth", ctypes.c_uint32)]


class _TableDesc(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("n_keys", ctypes.c_uint32),
        ("keys", ctypes.POINTER(_KeyDesc)),
        ("size", ctypes.c_uint32),
        ("direct_counter", ctypes.c_uint32),
    ]


class _RegisterDesc(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("bitwidth", ctypes.c_uint32),
        ("size", ctypes.c_uint32),
        ("is_signed", ctypes.c_uint32),
        ("group_offset", ctypes.c_uint32),
        ("group_count", ctypes.c_uint32),
        ("initial", ctypes.c_uint64),
    ]


class _CounterDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("size", ctypes.c_uint32), ("unit", ctypes.c_uint32)]


class _DigestDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("n_fields", ctypes.c_uint32), ("fields", ctypes.POINTER(_ParamDesc))]


class _ValueSetDesc(ctypes.Structure):
    _fields_ = [("name", ctypes.c_char_p), ("bitwidth", ctypes.c_uint32), ("size", ctypes.c_uint32)]


class _MeterDesc(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("size", ctypes.c_uint32),
        ("unit", ctypes.c_uint32),
        ("direct_table", ctypes.c_int32),
    ]


_FN = ctypes.c_void_p


class _Program(ctypes.Structure):
    _fields_ = [
        ("abi_version", ctypes.c_uint32),
        ("name", ctypes.c_char_p),
        ("hdr_size", ctypes.c_uint32),
        ("meta_size", ctypes.c_uint32),
        ("max_deparsed", ctypes.c_uint32),
        ("parse", _FN),
        ("verify_checksum", _FN),
        ("ingress", _FN),
        ("egress", _FN),
        ("compute_checksum", _FN),
        ("deparse", _FN),
        ("copy_field_list", _FN),
        ("n_actions", ctypes.c_uint32),
        ("actions", ctypes.POINTER(_ActionDesc)),
        ("n_tables", ctypes.c_uint32),
        ("tables", ctypes.POINTER(_TableDesc)),
        ("n_registers", ctypes.c_uint32),
        ("registers", ctypes.POINTER(_RegisterDesc)),
        ("n_counters", ctypes.c_uint32),
        ("counters", ctypes.POINTER(_CounterDesc)),
        ("n_digests", ctypes.c_uint32),
        ("digests", ctypes.POINTER(_DigestDesc)),
        ("n_value_sets", ctypes.c_uint32),
        ("value_sets", ctypes.POINTER(_ValueSetDesc)),
        ("n_meters", ctypes.c_uint32),
        ("meters", ctypes.POINTER(_MeterDesc)),
    ]


@dataclass(frozen=True)
class Param:
    name: str
    bitwidth: int

    @property
    def words(self) -> int:
        """64-bit words the value takes in action data and digests."""
        return (self.bitwidth + 63) // 64


@dataclass(frozen=True)
class ActionDesc:
    index: int
    name: str
    params: tuple[Param, ...]


@dataclass(frozen=True)
class KeyDesc:
    name: str
    match_kind: str
    bitwidth: int


@dataclass(frozen=True)
class TableDesc:
    index: int
    name: str
    keys: tuple[KeyDesc, ...]
    size: int
    direct_counter: bool


@dataclass(frozen=True)
class RegisterDesc:
    index: int
    name: str
    bitwidth: int
    size: int
    signed: bool


@dataclass(frozen=True)
class CounterDesc:
    index: int
    name: str
    size: int
    unit: str


@dataclass(frozen=True)
class DigestDesc:
    index: int
    name: str
    fields: tuple[Param, ...]


@dataclass(frozen=True)
class ValueSetDesc:
    index: int
    name: str
    bitwidth: int
    size: int


@dataclass(frozen=True)
class MeterDesc:
    index: int
    name: str
    size: int  # 0: a direct meter
    unit: str  # "packets" or "bytes"
    direct_table: int  # the metered table's index, -1 for an indexed meter


@dataclass(frozen=True)
class ProgramDescriptor:
    """The program descriptor of a library, read into Python (names map to the C indices)."""

    name: str
    actions: tuple[ActionDesc, ...]
    tables: tuple[TableDesc, ...]
    registers: tuple[RegisterDesc, ...]
    counters: tuple[CounterDesc, ...]
    digests: tuple[DigestDesc, ...]
    value_sets: tuple[ValueSetDesc, ...] = ()
    meters: tuple[MeterDesc, ...] = ()


def _s(b: bytes | None) -> str:
    return (b or b"").decode()


def _params(ptr, n) -> tuple[Param, ...]:
    return tuple(Param(_s(ptr[i].name), ptr[i].bitwidth) for i in range(n))


def _read_descriptor(p: _Program) -> ProgramDescriptor:
    return ProgramDescriptor(
        name=_s(p.name),
        actions=tuple(
            ActionDesc(i, _s(a.name), _params(a.params, a.n_params))
            for i, a in ((i, p.actions[i]) for i in range(p.n_actions))
        ),
        tables=tuple(
            TableDesc(
                i,
                _s(t.name),
                tuple(
                    KeyDesc(_s(t.keys[k].name), MATCH_KINDS[t.keys[k].match_kind], t.keys[k].bitwidth)
                    for k in range(t.n_keys)
                ),
                t.size,
                bool(t.direct_counter),
            )
            for i, t in ((i, p.tables[i]) for i in range(p.n_tables))
        ),
        registers=tuple(
            RegisterDesc(i, _s(r.name), r.bitwidth, r.size, bool(r.is_signed))
            for i, r in ((i, p.registers[i]) for i in range(p.n_registers))
        ),
        counters=tuple(
            CounterDesc(i, _s(c.name), c.size, COUNTER_UNITS[c.unit])
            for i, c in ((i, p.counters[i]) for i in range(p.n_counters))
        ),
        digests=tuple(
            DigestDesc(i, _s(d.name), _params(d.fields, d.n_fields))
            for i, d in ((i, p.digests[i]) for i in range(p.n_digests))
        ),
        value_sets=tuple(
            ValueSetDesc(i, _s(v.name), v.bitwidth, v.size)
            for i, v in ((i, p.value_sets[i]) for i in range(p.n_value_sets))
        ),
        meters=tuple(
            MeterDesc(i, _s(m.name), m.size, ("packets", "bytes")[m.unit], m.direct_table)
            for i, m in ((i, p.meters[i]) for i in range(p.n_meters))
        ),
    )


# ---------------------------------------------------------------------------- functions

_P = ctypes.c_void_p
_U8P = ctypes.POINTER(ctypes.c_uint8)
_U16P = ctypes.POINTER(ctypes.c_uint16)
_U32P = ctypes.POINTER(ctypes.c_uint32)
_U64P = ctypes.POINTER(ctypes.c_uint64)
_u32, _u64, _i32, _i64, _int = ctypes.c_uint32, ctypes.c_uint64, ctypes.c_int32, ctypes.c_int64, ctypes.c_int

_SIGNATURES = {
    "ss_abi_version": (_u32, []),
    "ss_library_program": (ctypes.POINTER(_Program), []),
    "ss_last_error": (ctypes.c_char_p, []),
    "ss_free": (None, [_P]),
    "ss_switch_create": (_P, [_P]),
    "ss_switch_destroy": (None, [_P]),
    "ss_switch_configure": (None, [_P, _i32, _int, _int, _P]),
    "ss_switch_set_headroom": (None, [_P, _u32]),
    "ss_port_queue_depth": (None, [_P, _u32, _u32]),
    "ss_port_queue_depth_read": (_u32, [_P, _u32]),
    "ss_stat_count": (_u32, []),
    "ss_stats_read": (None, [_P, _U64P]),
    "ss_stat_add": (None, [_P, _u32, _i64]),
    "ss_assert_failures": (_u64, [_P]),
    "ss_process_batch": (_i64, [_P, _u32, _P, ctypes.c_char_p, _P, _int, ctypes.POINTER(_P), _U64P]),
    "ss_process_one": (_i64, [_P, _u32, ctypes.c_char_p, _u32, ctypes.POINTER(_P)]),
    "ss_ctl_table_insert": (_int, [_P, _u32, ctypes.c_char_p, ctypes.c_char_p, _i64, _u32, _U64P, _int]),
    "ss_ctl_table_put_ref": (
        _int,
        [_P, _u32, ctypes.c_char_p, ctypes.c_char_p, _i64, _u32, _int, _i64, _int, _int],
    ),
    "ss_ctl_profile_add": (_i64, [_P]),
    "ss_ctl_profile_member_set": (_int, [_P, _u32, _i64, _u32, _U64P]),
    "ss_ctl_profile_member_delete": (_int, [_P, _u32, _i64]),
    "ss_ctl_profile_group_set": (_int, [_P, _u32, _i64, _u32, ctypes.POINTER(_i64)]),
    "ss_ctl_profile_group_delete": (_int, [_P, _u32, _i64]),
    "ss_ctl_profile_entries": (_i64, [_P, _u32, _int, _i64]),
    "ss_ctl_meter_set": (_int, [_P, _u32, _u64, ctypes.POINTER(ctypes.c_double)]),
    "ss_ctl_direct_meter_set": (_int, [_P, _u32, ctypes.c_char_p, _i64, ctypes.POINTER(ctypes.c_double)]),
    "ss_ctl_meter_clock": (None, [_P, _int, ctypes.c_double]),
    "ss_ctl_table_modify": (_int, [_P, _u32, ctypes.c_char_p, _i64, _u32, _U64P]),
    "ss_ctl_table_delete": (_int, [_P, _u32, ctypes.c_char_p, _i64]),
    "ss_ctl_table_find": (_int, [_P, _u32, ctypes.c_char_p, _i64, _U64P]),
    "ss_ctl_table_clear": (_int, [_P, _u32]),
    "ss_ctl_table_count": (_u64, [_P, _u32]),
    "ss_ctl_table_read": (_i64, [_P, _u32, _P, _i64, _u64, _u32, _P, _u64]),
    "ss_ctl_table_set_default": (_int, [_P, _u32, _u32, _U64P]),
    "ss_ctl_table_get_default": (_i64, [_P, _u32, _U64P]),
    "ss_ctl_table_lookup": (_i64, [_P, _u32, ctypes.c_char_p, _U32P, _U64P]),
    "ss_ctl_register_read": (_int, [_P, _u32, _u64, _U64P]),
    "ss_ctl_register_write": (_int, [_P, _u32, _u64, _u64, _u64]),
    "ss_ctl_register_read_all": (_int, [_P, _u32, _P]),
    "ss_ctl_register_elem_bytes": (_u32, [_P, _u32]),
    "ss_ctl_register_reset": (_int, [_P, _u32]),
    "ss_ctl_counter_read": (_int, [_P, _u32, _u64, _U64P]),
    "ss_ctl_counter_write": (_int, [_P, _u32, _u64, _u64, _u64]),
    "ss_ctl_counter_reset": (_int, [_P, _u32]),
    "ss_ctl_value_set_set": (_int, [_P, _u32, _u32, ctypes.c_char_p]),
    "ss_ctl_mc_set": (_int, [_P, _u32, _u32, _U16P, _U16P]),
    "ss_ctl_mc_delete": (_int, [_P, _u32]),
    "ss_ctl_session_set": (_int, [_P, _u64, _u32, _U16P, _U16P, _u32]),
    "ss_ctl_session_delete": (_int, [_P, _u64]),
    "ss_ctl_pre_read": (_u64, [_P, _int, _P, _u64]),
    "ss_events_create": (_P, []),
    "ss_events_destroy": (None, [_P]),
    "ss_events_wait": (_i64, [_P, _i64, ctypes.POINTER(_P)]),
    "ss_events_close": (None, [_P]),
    "ss_events_dropped": (_u64, [_P]),
    "ss_io_create": (_P, []),
    "ss_io_set_switch": (None, [_P, _P]),
    "ss_io_add_port": (_int, [_P, _u32, ctypes.c_char_p]),
    "ss_io_start": (_int, [_P]),
    "ss_io_stop": (None, [_P]),
    "ss_io_destroy": (None, [_P]),
    "ss_io_send": (_int, [_P, _u32, ctypes.c_char_p, _u32]),
    "ss_io_port_stats": (_int, [_P, _u32, _U64P]),
    "ss_io_stats": (None, [_P, _U64P]),
    "ss_io_stats_reset": (None, [_P]),
    "ss_io_pause": (None, [_P, _int]),
    "ss_io_queue_depth": (_int, [_P, _u64, _u32]),
    "ss_io_queue_depth_stats": (None, [_P, _U64P]),
    "ss_hash_bytes": (_u64, [_u32, ctypes.c_char_p, ctypes.c_size_t]),
    "ss_hash_extern": (_u64, [_u32, ctypes.c_char_p, ctypes.c_size_t, _u64, _u64, _u32]),
}


class NativeLibrary:
    """A loaded program library: ``api`` (ctypes functions with signatures) and ``descriptor``."""

    def __init__(self, cdll: ctypes.CDLL):
        self.cdll = cdll
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(cdll, name)
            fn.restype = restype
            fn.argtypes = argtypes
        self.api = cdll
        if cdll.ss_abi_version() != ABI_VERSION:
            raise RuntimeError(f"native runtime ABI {cdll.ss_abi_version()} != {ABI_VERSION} expected by Python")
        program = cdll.ss_library_program().contents
        if program.abi_version != ABI_VERSION:
            raise RuntimeError(
                f"program {_s(program.name)} was generated for runtime ABI {program.abi_version}, "
                f"the runtime is {ABI_VERSION}"
            )
        self.descriptor = _read_descriptor(program)

    def last_error(self) -> str:
        return _s(self.api.ss_last_error())


def build_library(name: str, generated: Mapping[str, str] | None = None, sources: Sequence[Path] = ()) -> NativeLibrary:
    """Compile (or reuse) the runtime together with a program's C (generated text or files on disk)
    into one shared object and load it. Raises native.build.CompilerMissing / CompileError."""
    extra = tuple(shlex.split(os.environ.get("SOFTSWITCH_NATIVE_CFLAGS", "")))  # e.g. -g -fsanitize=address
    runtime = build_objects(
        "softswitch-runtime", RUNTIME_SOURCES, include_dirs=[INCLUDE_DIR, SOURCE_DIR], cflags=CFLAGS + extra
    )
    cdll = load_library(
        f"softswitch-{name}",
        [*runtime, *sources],
        generated=generated,
        include_dirs=[INCLUDE_DIR, SOURCE_DIR],
        cflags=PROGRAM_CFLAGS + extra,
        libs=["pthread"],
    )
    return NativeLibrary(cdll)
