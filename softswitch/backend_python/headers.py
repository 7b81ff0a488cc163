"""Module-level code per header/struct type: a slots class (with copy()), and for headers the extract
function `X_<header>(h, data, off) -> new offset` and the pack function `P_<header>(h) -> bytes`.

A header whose fields group into whole 1/2/4/8-byte units (IPv4, UDP, the 64 INA lanes) is read and
written with one precompiled struct.Struct when it starts on a byte boundary; the others (and any header
at a bit offset) go through one int.from_bytes and shifts and masks per field.
"""

from __future__ import annotations

from .. import ir
from .writer import SourceWriter, class_name, default_value_code, field_attribute, mask

_STRUCT_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}
Run = tuple[int, list[tuple[str, int, str]]]  # (bits, fields as (attribute, width, kind: "bit"/"int"/"bool"))


def write_type(out: SourceWriter, t: ir.StructLikeType) -> None:
    cls = class_name(t)
    is_header = isinstance(t, ir.HeaderType)
    slots = (["_v"] if is_header else []) + [field_attribute(f.name) for f in t.fields]
    out.write(f"class {cls}:")
    with out.indented():
        out.write(f"__slots__ = {tuple(slots)!r}")
        out.write("def __init__(self):")
        with out.indented():
            if is_header:
                out.write("self._v = False")
            for f in t.fields:
                out.write(f"self.{field_attribute(f.name)} = {default_value_code(f.type)}")
            if not slots:
                out.write("pass")
        out.write("def copy(self):")
        with out.indented():
            out.write(f"n = {cls}.__new__({cls})")
            if is_header:
                out.write("n._v = self._v")
            for f in t.fields:
                attribute = field_attribute(f.name)
                copy = ".copy()" if ir.is_object(f.type) else ""
                out.write(f"n.{attribute} = self.{attribute}{copy}")
            out.write("return n")
        out.write("def set_from(self, o):")  # assignment to an object others hold (a parameter)
        with out.indented():
            if is_header:
                out.write("self._v = o._v")
            for f in t.fields:
                attribute = field_attribute(f.name)
                copy = ".copy()" if ir.is_object(f.type) else ""
                out.write(f"self.{attribute} = o.{attribute}{copy}")
            if not slots:
                out.write("pass")
        if isinstance(t, ir.HeaderUnionType):
            # a union is valid when a member is; making it invalid invalidates every member
            members = [f"self.{field_attribute(f.name)}" for f in t.fields]
            out.write("@property")
            out.write("def _v(self):")
            out.write(f"    return {' or '.join(m + '._v' for m in members) or 'False'}")
            out.write("@_v.setter")
            out.write("def _v(self, valid):")
            out.write("    if not valid:")
            for m in members:
                out.write(f"        {m}._v = False")
            out.write("    else:")
            out.write("        raise ValueError('a header_union is made valid through one of its members')")
    if isinstance(t, ir.HeaderType):
        _write_header_io(out, t)
    out.write("")


def _struct_runs(fields: list[tuple[str, int, str]]) -> list[Run] | None:
    """Fields grouped into consecutive runs of 8, 16, 32 or 64 bits; None when the header does not
    split that way (e.g. a 48-bit field)."""
    runs: list[Run] = []
    current: list[tuple[str, int, str]] = []
    width = 0
    for f in fields:
        current.append(f)
        width += f[1]
        if width in _STRUCT_CODES:
            runs.append((width, current))
            current, width = [], 0
        elif width > 64:
            return None
    return runs if fields and not current else None


def _write_varbit_header_io(out: SourceWriter, t: ir.HeaderType) -> None:
    """X_/P_ of a header with a varbit field: its value is (width, bits); X_ takes the width to extract."""
    varbit = t.varbit_field
    assert varbit is not None and isinstance(varbit.type, ir.VarbitType)
    fixed = t.width
    out.write(f"def X_{t.name}(h, data, off, bits):")
    with out.indented():
        # BMv2's order (bm_sim/parser.cpp, extract_VL): a length that is not whole bytes is
        # ParserInvalidArgument, then PacketTooShort, then HeaderTooShort (more than the field holds)
        out.write("if bits & 7:")
        out.write("    raise ParserError(6)")
        out.write(f"total = {fixed} + bits")
        out.write("end = off + total")
        out.write("if end > len(data) << 3:")
        out.write("    raise ParserError(1)")
        out.write(f"if bits > {varbit.type.max_width}:")
        out.write("    raise ParserError(4)")
        out.write("last = (end + 7) >> 3")
        out.write("v = (int.from_bytes(data[off >> 3:last], 'big') >> ((last << 3) - end)) & ((1 << total) - 1)")
        out.write("shift = total")
        for f in t.fields:
            attribute = field_attribute(f.name)
            if f is varbit:
                out.write("shift -= bits")
                out.write(f"h.{attribute} = (bits, (v >> shift) & ((1 << bits) - 1))")
                continue
            w, kind = ir.field_width(f.type), _kind(f.type)
            out.write(f"shift -= {w}")
            code = f"((v >> shift) & {mask(w)})"
            if kind == "int":
                code = f"(({code} ^ {1 << (w - 1)}) - {1 << (w - 1)})"
            elif kind == "bool":
                code = f"({code} != 0)"
            out.write(f"h.{attribute} = {code}")
        out.write("h._v = True")
        out.write("return end")
    out.write(f"def P_{t.name}(h):")
    with out.indented():
        out.write("v = 0")
        out.write("total = 0")
        for f in t.fields:
            attribute = field_attribute(f.name)
            if f is varbit:
                out.write(f"w, bits = h.{attribute}")
                out.write("v = (v << w) | bits")
                out.write("total += w")
            else:
                w = ir.field_width(f.type)
                out.write(f"v = (v << {w}) | (h.{attribute} & {mask(w)})")
                out.write(f"total += {w}")
        out.write("pad = -total % 8")  # BMv2 emits whole bytes
        out.write("return (v << pad).to_bytes((total + pad) >> 3, 'big')")


def _write_header_io(out: SourceWriter, t: ir.HeaderType) -> None:
    if t.varbit_field is not None:
        _write_varbit_header_io(out, t)
        return
    fields = [(field_attribute(f.name), ir.field_width(f.type), _kind(f.type)) for f in t.fields]
    width = t.width
    nbytes = width // 8
    runs = _struct_runs(fields)
    if runs is not None:
        fmt = "!" + "".join(
            _STRUCT_CODES[w].lower() if len(fs) == 1 and fs[0][2] == "int" else _STRUCT_CODES[w] for w, fs in runs
        )
        out.write(f"S_{t.name} = Struct({fmt!r})")
    out.write(f"def X_{t.name}(h, data, off):")
    with out.indented():
        out.write("b = off >> 3")
        unaligned = [
            f"end = (off + {width} + 7) >> 3",
            "if end > len(data):",
            "    raise ParserError(1)",
            # hex: a header of more than ~14,000 bits (ina_k1024.p4's values) has a mask past int's decimal limit
            f"v = (int.from_bytes(data[b:end], 'big') >> ((end << 3) - off - {width})) & {mask(width):#x}",
        ]
        if runs is None:
            out.write("if off & 7:")
            for line in unaligned:
                out.write("    " + line)
            out.write("else:")
            out.write(f"    end = b + {nbytes}")
            out.write("    if end > len(data):")
            out.write("        raise ParserError(1)")
            out.write("    v = int.from_bytes(data[b:end], 'big')")
            _split_fields(out, "v", width, fields)
        else:
            out.write("if off & 7:")
            with out.indented():
                for line in unaligned:
                    out.write(line)
                _split_fields(out, "v", width, fields)
                out.write("h._v = True")
                out.write(f"return off + {width}")
            out.write(f"if b + {nbytes} > len(data):")
            out.write("    raise ParserError(1)")
            targets = [f"h.{fs[0][0]}" if len(fs) == 1 else f"u{i}" for i, (_, fs) in enumerate(runs)]
            out.write(f"{', '.join(targets)}, = S_{t.name}.unpack_from(data, b)")
            for i, (w, fs) in enumerate(runs):
                if len(fs) > 1:
                    _split_fields(out, f"u{i}", w, fs)
        out.write("h._v = True")
        out.write(f"return off + {width}")
    out.write(f"def P_{t.name}(h):")
    if runs is None:
        out.write(f"    return ({_join_fields(width, fields)}).to_bytes({nbytes}, 'big')")
    else:
        packed = ", ".join(_join_fields(w, fs, run=True) for w, fs in runs)
        out.write(f"    return S_{t.name}.pack({packed})")


def _split_fields(out: SourceWriter, v: str, width: int, fields: list[tuple[str, int, str]]) -> None:
    """h.<field> = its bits of the width-bit int v, for each field in order."""
    shift = width
    for name, w, kind in fields:
        shift -= w
        code = v if shift == 0 else f"({v} >> {shift})"
        if shift + w < width:
            code = f"({code} & {mask(w)})"
        if kind == "int":
            code = f"(({code} ^ {1 << (w - 1)}) - {1 << (w - 1)})"
        elif kind == "bool":
            code = f"({code} != 0)"
        out.write(f"h.{name} = {code}")


def _join_fields(width: int, fields: list[tuple[str, int, str]], run: bool = False) -> str:
    """The width-bit int holding the fields; a struct run of one signed field packs it as it is."""
    if run and len(fields) == 1:
        return f"h.{fields[0][0]}"
    parts = []
    shift = width
    for name, w, kind in fields:
        shift -= w
        f = f"h.{name}"
        if kind == "int":
            f = f"({f} & {mask(w)})"
        parts.append(f if shift == 0 else f"({f} << {shift})")
    return " | ".join(parts) or "0"


def _kind(t: ir.Type) -> str:
    """How a header field's bits read back: "int" (two's complement), "bool" (1 bit) or "bit"."""
    if isinstance(t, ir.BitType) and t.signed:
        return "int"
    return "bool" if isinstance(t, ir.BoolType) else "bit"
