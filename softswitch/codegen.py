"""AST -> Python source of one module per program, resolving names and checking types as it goes.

The generated module holds one slots class per header/struct type with extract (X_*) and pack (P_*)
functions, and a `build(RT)` function that, given a runtime (softswitch.runtime.v1model.Runtime), returns
the pipeline's blocks as closures over that runtime's tables, registers and counters. Per packet nothing
walks the AST: parser states, controls, actions and tables are plain Python functions.
"""

from __future__ import annotations

import re

from .frontend.ast import Node, find_annotation
from .frontend.errors import P4Error
from .frontend.types import (
    BOOL,
    ERROR,
    INFINT,
    STRING,
    VOID,
    ActionRunT,
    ApplyResultT,
    BitT,
    BlockT,
    BoolT,
    EnumT,
    ErrorT,
    ExternT,
    HeaderT,
    InfIntT,
    ListT,
    StackT,
    StructLikeT,
    StructT,
    TypeVarT,
    VoidT,
    fits,
    py_field,
    wrap,
)
from .program import (
    ActionInfo,
    ActionRef,
    ConstEntry,
    ControllerHeaderInfo,
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

CORE_ERRORS = [
    "NoError",
    "PacketTooShort",
    "NoMatch",
    "StackOutOfBounds",
    "HeaderTooShort",
    "ParserTimeout",
    "ParserInvalidArgument",
]
MATCH_KINDS = ("exact", "lpm", "ternary", "range", "optional")
SUPPORTED_HASHES = ("crc16", "crc32", "csum16", "xor16", "identity")


# ---------------------------------------------------------------------------------------------- helpers
class E:
    """A compiled expression: Python code, its P4 type, whether it can be assigned, its constant value."""

    __slots__ = ("code", "type", "lv", "const", "sym", "items", "slice", "obj")

    def __init__(self, code, type, lv=False, const=None, sym=None, items=None, slice=None, obj=None):
        self.code, self.type, self.lv, self.const, self.sym, self.items, self.slice = (
            code,
            type,
            lv,
            const,
            sym,
            items,
            slice,
        )
        self.obj = obj  # for a header/struct/stack object: what rebinds it (a key of CodeGen.rebound)


class Sym:
    """A name in scope. kind: type|const|var|action|table|extern|externfn|ctlinst|packet_in|packet_out|block."""

    __slots__ = ("kind", "type", "code", "value", "decl", "lv", "extra")

    def __init__(self, kind, type=None, code=None, value=None, decl=None, lv=False, extra=None):
        self.kind, self.type, self.code, self.value, self.decl, self.lv, self.extra = (
            kind,
            type,
            code,
            value,
            decl,
            lv,
            extra,
        )


class Scope:
    def __init__(self, parent=None):
        self.parent, self.names = parent, {}

    def lookup(self, name):
        s = self
        while s is not None:
            if name in s.names:
                return s.names[name]
            s = s.parent
        return None

    def add(self, name, sym, pos=None, what="name"):
        if name in self.names and pos is not None:
            raise P4Error(pos, f"'{name}' is declared twice in the same scope")
        self.names[name] = sym


class Py:
    """Python source with indentation."""

    def __init__(self, level=0):
        self.lines, self.level = [], level

    def w(self, line):
        self.lines.append("    " * self.level + line)

    def mark(self):
        return len(self.lines)

    def ensure_body(self, mark):
        if len(self.lines) == mark:
            self.w("pass")


def _ident(name: str) -> str:
    return re.sub(r"\W", "_", name)


def _mask(w):
    return (1 << w) - 1


def _wrap_code(code, ty):
    """Python code reducing `code` to ty's range."""
    if not isinstance(ty, BitT):
        return code
    m = _mask(ty.width)
    if ty.signed:
        h = 1 << (ty.width - 1)
        return f"((({code}) + {h}) & {m}) - {h}"
    return f"(({code}) & {m})"


_STRUCT_CODES = {8: "B", 16: "H", 32: "I", 64: "Q"}


def _struct_runs(fields):
    """Fields (name, width, signed) grouped into consecutive runs of 8, 16, 32 or 64 bits, as
    [(run width, fields)]; None when the header does not split that way (e.g. a 48-bit field)."""
    runs, cur, width = [], [], 0
    for f in fields:
        cur.append(f)
        width += f[1]
        if width in _STRUCT_CODES:
            runs.append((width, cur))
            cur, width = [], 0
        elif width > 64:
            return None
    return runs if fields and not cur else None


def check_arity(pos, name, args, expected):
    """The one 'wrong number of arguments' error of every call, method and instantiation."""
    if len(args) != expected:
        raise P4Error(pos, f"wrong number of arguments to '{name}': expected {expected}, got {len(args)}")


def expr_text(n: Node) -> str:
    """The source text of a key expression, as P4Info names match fields."""
    k = n.kind
    if k == "Name":
        return n.name
    if k == "Member":
        return f"{expr_text(n.expr)}.{n.name}"
    if k == "Index":
        return f"{expr_text(n.expr)}[{expr_text(n.index)}]"
    if k == "Slice":
        return f"{expr_text(n.expr)}[{expr_text(n.hi)}:{expr_text(n.lo)}]"
    if k == "Call":
        return f"{expr_text(n.func)}({', '.join(expr_text(a) for a in n.args)})"
    if k == "Int":
        return str(n.value)
    return "<expr>"


def _fq(annos, prefix, name):
    a = find_annotation(annos, "name")
    if a and a.args and isinstance(a.args[0], str):
        n = a.args[0]
        if n.startswith("."):
            return n[1:]
        return f"{prefix}.{n}" if prefix else n
    return f"{prefix}.{name}" if prefix else name


class ActionDef:
    def __init__(self, decl, fq, pyname, params, scope):
        self.decl, self.fq, self.pyname, self.params, self.scope = decl, fq, pyname, params, scope
        # params: list of (name, direction, type)


class TableDef:
    def __init__(self, decl, fq, pyname):
        self.decl, self.fq, self.pyname = decl, fq, pyname
        self.actions: dict[str, ActionDef] = {}  # fq -> def
        self.bound: dict[str, str] = {}  # fq -> wrapper passing the actions list's bound arguments


class Ctx:
    """Where statements are being compiled: parser state, control apply body or action body."""

    def __init__(self, kind, ret=None, control=None):
        self.kind, self.ret, self.control = kind, ret, control


# ---------------------------------------------------------------------------------------------- compiler
class CodeGen:
    """One program's code generator. `no_hoist`: objects (keys of `rebound`) that must not be kept in
    function locals because some statement rebinds them (see `hoisted`)."""

    def __init__(self, decls, program_name, no_hoist=frozenset()):
        self.decls = decls
        self.no_hoist = no_hoist
        self.rebound = set()  # objects some assignment replaces: ("root",) or (struct type, field)
        self.hoist = None  # local name -> code, for the function being generated (None: off)
        self.hoisted = set()  # objects kept in a local somewhere
        self.g = Scope()
        self.info = ProgramInfo(name=program_name)
        self.mod = Py(0)  # module level: classes, extract/pack functions
        self.build = Py(1)  # inside build(RT)
        self.errors = {n: i for i, n in enumerate(CORE_ERRORS)}
        self.match_kinds = set()
        self.uid = 0
        self.struct_types: list[StructLikeT] = []
        self.direct_counters = {}  # fq -> [unit, table or None, pos]
        self.digests = {}
        self.table_defs = []
        self.actions_used = {}  # fq -> ActionInfo

    def fresh(self, base):
        self.uid += 1
        return f"{_ident(base)}_{self.uid}"

    # ------------------------------------------------------------------ entry point
    def generate(self) -> str:
        main = None
        for d in self.decls:
            if d.kind == "Instance":
                if main is not None:
                    raise P4Error(d.pos, "only one top-level instantiation (the package 'main') is supported")
                main = d
            else:
                self.declare(d)
        if main is None:
            raise P4Error(None, "the program has no 'main' package instantiation (V1Switch(...) main;)")
        blocks = self.gen_main(main)
        for fq, (unit, table, pos) in self.direct_counters.items():
            if table is None:
                raise P4Error(pos, f"direct_counter {fq} is not attached to any table (counters = ...)")
            self.info.direct_counters.append(DirectCounterInfo(fq, table, unit))
        self.info.actions = list(self.actions_used.values())
        self.info.digests = list(self.digests.values())
        head = [
            "# Generated by softswitch from a P4_16 program; do not edit.",
            "from struct import Struct",
            "from softswitch.runtime.support import (ParserError, ExitCtl, Stack, stack_next, stack_last,",
            "    compute_hash, bits_to_bytes, csum16_bits, HASHES, from_list)",
            "",
        ]
        b = self.build.lines
        fl = self.field_lists
        out = head + self.mod.lines + ["", "def build(RT):", "    PS = RT.state"] + b
        out.append(
            "    return {" + ", ".join(f"{k!r}: {v}" for k, v in blocks.items()) + f", 'field_lists': {fl!r}" + "}"
        )
        return "\n".join(out) + "\n"

    # ------------------------------------------------------------------ declarations
    def declare(self, d):
        k = d.kind
        g = self.g
        if k == "Typedef":
            g.add(d.name, Sym("type", self.resolve_type(d.type, g)), d.pos)
        elif k in ("Header", "Struct"):
            self.declare_struct(d)
        elif k == "Enum":
            base = self.resolve_type(d.base, g) if d.base is not None else None
            if base is not None and not isinstance(base, BitT):
                raise P4Error(d.pos, f"enum {d.name}: the underlying type must be bit<N> or int<N>")
            members = {}
            for i, (m, val, mpos) in enumerate(d.members):
                if base is not None:
                    if val is None:
                        raise P4Error(mpos, f"enum {d.name}: member {m} needs a value")
                    members[m] = wrap(self.const_value(val, g, base), base)
                else:
                    members[m] = i
            g.add(d.name, Sym("type", EnumT(d.name, members, base)), d.pos)
        elif k == "ErrorDecl":
            for m, mpos in d.members:
                if m not in self.errors:
                    self.errors[m] = len(self.errors)
        elif k == "MatchKind":
            for m, _ in d.members:
                self.match_kinds.add(m)
        elif k == "Extern":
            g.add(d.name, Sym("type", ExternT(d), decl=d), d.pos)
        elif k == "ExternFunc":
            prev = g.names.get(d.name)
            if prev is not None and prev.kind == "externfn":
                prev.extra.append(d)
            else:
                g.add(d.name, Sym("externfn", decl=d, extra=[d]), d.pos)
        elif k in ("ParserType", "ControlType", "Package"):
            g.add(d.name, Sym("type", BlockT(d), decl=d), d.pos)
        elif k in ("Parser", "Control"):
            g.add(d.name, Sym("block", BlockT(d), decl=d), d.pos)
        elif k == "Action":
            self.declare_action(d, g, "", None)
        elif k == "Const":
            ty = self.resolve_type(d.type, g)
            v = self.const_value(d.value, g, ty)
            g.add(d.name, Sym("const", ty, value=v), d.pos)
        else:
            raise P4Error(d.pos, f"{k} declarations are not supported at top level")

    def declare_struct(self, d):
        g = self.g
        ty = HeaderT(d.name, tuple(a.name for a in d.annos)) if d.kind == "Header" else StructT(d.name)
        g.add(d.name, Sym("type", ty), d.pos)
        seen = set()
        for f in d.fields:
            if f.name in seen:
                raise P4Error(f.pos, f"{ty} has two fields named '{f.name}'")
            seen.add(f.name)
            fty = self.resolve_type(f.type, g)
            if isinstance(ty, HeaderT):
                if isinstance(fty, EnumT) and fty.base is not None:
                    fty = fty
                elif not isinstance(fty, BitT):
                    raise P4Error(f.pos, f"field '{f.name}' of header {d.name} must be bit<N> or int<N>, not {fty}")
            elif isinstance(fty, (ExternT, BlockT, VoidT)):
                raise P4Error(f.pos, f"field '{f.name}' of struct {d.name} cannot have type {fty}")
            ty.add(f.name, fty, f.annos)
        if isinstance(ty, HeaderT):
            w = sum(self.width_of(t) for _, t in ty.fields)
            if w % 8:
                raise P4Error(d.pos, f"header {d.name} is {w} bits wide; softswitch (like BMv2) needs a multiple of 8")
            ch = find_annotation(d.annos, "controller_header")
            if ch and ch.args:
                self.info.controller_headers.append(
                    ControllerHeaderInfo(ch.args[0], tuple(FieldInfo(n, self.width_of(t)) for n, t in ty.fields))
                )
        self.struct_types.append(ty)
        self.gen_struct_class(ty)

    def width_of(self, t):
        if isinstance(t, BitT):
            return t.width
        if isinstance(t, EnumT) and t.base is not None:
            return t.base.width
        if isinstance(t, BoolT):
            return 1
        if isinstance(t, ErrorT):
            return 32
        raise ValueError(t)

    def default_code(self, t):
        if isinstance(t, BoolT):
            return "False"
        if isinstance(t, StructLikeT):
            return f"{t.pyname}()"
        if isinstance(t, StackT):
            return f"Stack({t.elem.pyname}, {t.size})"
        if isinstance(t, EnumT):
            return repr(min(t.members.values())) if t.members and t.base is None else "0"
        return "0"

    def gen_struct_class(self, ty):
        m = self.mod
        cls = ty.pyname
        slots = ["_v"] if isinstance(ty, HeaderT) else []
        slots += [py_field(n) for n, _ in ty.fields]
        m.w(f"class {cls}:")
        m.level += 1
        m.w(f"__slots__ = {tuple(slots)!r}")
        m.w("def __init__(self):")
        m.level += 1
        if isinstance(ty, HeaderT):
            m.w("self._v = False")
        for n, t in ty.fields:
            m.w(f"self.{py_field(n)} = {self.default_code(t)}")
        if not slots:
            m.w("pass")
        m.level -= 1
        m.w("def copy(self):")
        m.level += 1
        m.w(f"n = {cls}.__new__({cls})")
        if isinstance(ty, HeaderT):
            m.w("n._v = self._v")
        for n, t in ty.fields:
            p = py_field(n)
            if isinstance(t, (StructLikeT, StackT)):
                m.w(f"n.{p} = self.{p}.copy()")
            else:
                m.w(f"n.{p} = self.{p}")
        m.w("return n")
        m.level -= 2
        if isinstance(ty, HeaderT):
            self.gen_header_io(ty)
        m.w("")

    def gen_header_io(self, ty):
        """X_<hdr>(h, data, off) extracts at bit offset off and returns the new offset; P_<hdr>(h) packs.
        Headers whose fields group into whole 1/2/4/8-byte units use one precompiled struct.Struct at
        byte offsets; the others (and any header at a bit offset) go through one int.from_bytes."""
        m = self.mod
        fields = [(py_field(n), self.width_of(t), isinstance(t, BitT) and t.signed) for n, t in ty.fields]
        W = sum(w for _, w, _ in fields)
        nb = W // 8
        runs = _struct_runs(fields)
        if runs is not None:
            fmt = "!" + "".join(
                _STRUCT_CODES[w].lower() if len(fs) == 1 and fs[0][2] else _STRUCT_CODES[w] for w, fs in runs
            )
            m.w(f"S_{ty.name} = Struct({fmt!r})")
        m.w(f"def X_{ty.name}(h, data, off):")
        m.level += 1
        m.w("b = off >> 3")
        if runs is None:
            m.w("if off & 7:")
            m.w(f"    end = (off + {W} + 7) >> 3")
            m.w("    if end > len(data):")
            m.w("        raise ParserError(1)")
            m.w(f"    v = (int.from_bytes(data[b:end], 'big') >> ((end << 3) - off - {W})) & {_mask(W)}")
            m.w("else:")
            m.w(f"    end = b + {nb}")
            m.w("    if end > len(data):")
            m.w("        raise ParserError(1)")
            m.w("    v = int.from_bytes(data[b:end], 'big')")
            self._split_fields("v", W, fields)
        else:
            m.w("if off & 7:")
            m.level += 1
            m.w(f"end = (off + {W} + 7) >> 3")
            m.w("if end > len(data):")
            m.w("    raise ParserError(1)")
            m.w(f"v = (int.from_bytes(data[b:end], 'big') >> ((end << 3) - off - {W})) & {_mask(W)}")
            self._split_fields("v", W, fields)
            m.w("h._v = True")
            m.w(f"return off + {W}")
            m.level -= 1
            m.w(f"if b + {nb} > len(data):")
            m.w("    raise ParserError(1)")
            targets = [f"h.{fs[0][0]}" if len(fs) == 1 else f"u{i}" for i, (w, fs) in enumerate(runs)]
            m.w(f"{', '.join(targets)}, = S_{ty.name}.unpack_from(data, b)")
            for i, (w, fs) in enumerate(runs):
                if len(fs) > 1:
                    self._split_fields(f"u{i}", w, fs)
        m.w("h._v = True")
        m.w(f"return off + {W}")
        m.level -= 1
        m.w(f"def P_{ty.name}(h):")
        if runs is None:
            m.w(f"    return ({self._join_fields(W, fields)}).to_bytes({nb}, 'big')")
        else:
            m.w(f"    return S_{ty.name}.pack({', '.join(self._join_fields(w, fs, run=True) for w, fs in runs)})")

    def _split_fields(self, v, W, fields):
        """h.<field> = its bits of the W-bit int v, for each field (py name, width, signed) in order."""
        shift = W
        for name, w, signed in fields:
            shift -= w
            code = v if shift == 0 else f"({v} >> {shift})"
            if shift + w < W:
                code = f"({code} & {_mask(w)})"
            if signed:
                code = f"(({code} ^ {1 << (w - 1)}) - {1 << (w - 1)})"
            self.mod.w(f"h.{name} = {code}")

    def _join_fields(self, W, fields, run=False):
        """The W-bit int holding the fields; a struct run of one signed field packs it as it is."""
        if run and len(fields) == 1:
            return f"h.{fields[0][0]}"
        parts = []
        shift = W
        for name, w, signed in fields:
            shift -= w
            f = f"h.{name}"
            if signed:
                f = f"({f} & {_mask(w)})"
            parts.append(f if shift == 0 else f"({f} << {shift})")
        return " | ".join(parts) or "0"

    # ------------------------------------------------------------------ types and constants
    def resolve_type(self, n, sc):
        k = n.kind
        if k == "TypeBit":
            w = self.const_value(n.width, sc, INFINT)
            if not isinstance(w, int) or w <= 0 or (n.signed and w < 1):
                raise P4Error(n.pos, f"invalid width {w} of {'int' if n.signed else 'bit'}<>")
            return BitT(w, n.signed)
        if k == "TypeBool":
            return BOOL
        if k == "TypeInfInt":
            return INFINT
        if k == "TypeTuple":
            return ListT([self.resolve_type(t, sc) for t in n.types])
        if k == "TypeStack":
            el = self.resolve_type(n.elem, sc)
            if not isinstance(el, HeaderT):
                raise P4Error(n.pos, f"header stacks need a header element type, not {el}")
            size = self.const_value(n.size, sc, INFINT)
            if size <= 0:
                raise P4Error(n.pos, f"header stack size must be positive, not {size}")
            return StackT(el, size)
        if k == "TypeName":
            name = n.name
            if name == "error":
                return ERROR
            if name == "string":
                return STRING
            if name == "void":
                return VOID
            s = sc.lookup(name)
            if s is None:
                raise P4Error(n.pos, f"undeclared type '{name}'")
            if s.kind not in ("type", "block"):
                raise P4Error(n.pos, f"'{name}' is not a type")
            if isinstance(s.type, ExternT):
                targs = [self.resolve_type(a, sc) for a in n.args]
                return ExternT(s.decl, targs)
            if n.args:
                raise P4Error(n.pos, f"type '{name}' takes no type arguments")
            return s.type
        raise P4Error(n.pos, f"unsupported type {k}")

    def const_value(self, n, sc, ty):
        e = self.expr(n, sc)
        if e.const is None:
            raise P4Error(n.pos, "expected a compile-time constant")
        if ty is not None and not isinstance(ty, InfIntT):
            e = self.coerce(e, ty, n.pos, "constant")
        return e.const

    def coerce(self, e, ty, pos, what):
        """e converted to ty where P4 allows it implicitly (int literals); P4Error otherwise."""
        if e.type is None:
            raise P4Error(pos, f"{self.describe(e)} is not a value")
        if e.type == ty or isinstance(ty, TypeVarT) or isinstance(e.type, TypeVarT):
            return e
        if isinstance(e.type, InfIntT) and isinstance(ty, BitT):
            if e.const is not None:
                v = wrap(e.const, ty)
                return E(repr(v), ty, const=v)
            return E(_wrap_code(e.code, ty), ty)
        if isinstance(e.type, InfIntT) and isinstance(ty, InfIntT):
            return e
        if isinstance(ty, ListT) and isinstance(e.type, ListT):
            return e
        if isinstance(ty, StructLikeT) and isinstance(e.type, ListT) and len(e.items) == len(ty.fields):
            # `{a, b, ...}` as a header/struct value: a new object, fields in order (a header is valid)
            items = [self.coerce(it, ft, pos, what) for it, (_, ft) in zip(e.items, ty.fields)]
            names = tuple(py_field(f) for f, _ in ty.fields)
            vals = "".join(
                f"{it.code}.copy(), " if isinstance(it.type, (StructLikeT, StackT)) else f"{it.code}, " for it in items
            )
            return E(f"from_list({ty.pyname}(), {names!r}, ({vals}), {isinstance(ty, HeaderT)})", ty)
        if isinstance(ty, StructLikeT) and isinstance(e.type, ListT):
            raise P4Error(pos, f"a list of {len(e.items)} values cannot be a {ty} value ({len(ty.fields)} fields)")
        raise P4Error(
            pos, what(e.type, ty) if callable(what) else f"type mismatch in {what}: expected {ty}, got {e.type}"
        )

    def describe(self, e):
        if e.sym is not None:
            return {
                "table": "a table",
                "action": "an action",
                "extern": "an extern instance",
                "ctlinst": "a control instance",
                "type": "a type",
                "packet_in": "packet_in",
                "packet_out": "packet_out",
                "externfn": "an extern function",
            }.get(e.sym.kind, e.sym.kind)
        return "this expression"

    def val(self, e, pos):
        if e.type is None or e.sym is not None and e.sym.kind not in ("const", "var"):
            raise P4Error(pos, f"{self.describe(e)} is not a value")
        if isinstance(e.type, (ApplyResultT,)):
            raise P4Error(pos, "a table's apply() result is only usable through .hit, .miss or .action_run")
        return e

    def mk(self, code, ty, *parts):
        """An expression; folded to a constant when every operand is constant."""
        if parts and all(p.const is not None for p in parts):
            v = eval(code, {"min": min, "max": max})  # noqa: S307 - code built from our own literals
            v = wrap(v, ty) if isinstance(ty, BitT) else v
            return E(repr(v), ty, const=v)
        return E(code, ty)

    # ------------------------------------------------------------------ expressions
    def expr(self, n, sc) -> E:
        m = getattr(self, "x_" + n.kind, None)
        if m is None:
            raise P4Error(n.pos, f"{n.kind.lower()} expressions are not allowed here")
        return m(n, sc)

    def x_Int(self, n, sc):
        if n.width is None:
            return E(repr(n.value), INFINT, const=n.value)
        if n.width <= 0:
            raise P4Error(n.pos, f"invalid width {n.width} in integer literal")
        t = BitT(n.width, n.signed)
        v = wrap(n.value, t)
        return E(repr(v), t, const=v)

    def x_Bool(self, n, sc):
        return E(repr(n.value), BOOL, const=n.value)

    def x_Str(self, n, sc):
        return E(repr(n.value), STRING, const=n.value)

    def x_Name(self, n, sc):
        if n.name == "error":
            return E(None, ERROR, sym=Sym("type", ERROR))
        s = sc.lookup(n.name)
        if s is None:
            raise P4Error(n.pos, f"undeclared name '{n.name}'")
        if s.kind == "const":
            return E(repr(s.value), s.type, const=s.value)
        if s.kind == "var":
            if s.extra is None:
                return E(s.code, s.type, lv=s.lv)
            return self.hoisted_object(s.extra, s.code, s.type, s.lv, ("root",))
        return E(None, None, sym=s)

    def hoisted_object(self, local, code, ty, lv, obj):
        """A control parameter (or a header/struct/stack inside one) read once per function into a local
        (`hdr.values.v0` -> `v_hdr__values.v0`, `v_hdr__values = C.v_hdr.values` at the top), unless some
        statement of the program replaces that object (then the whole program is generated again with
        it in `no_hoist`: see compiler.py)."""
        if self.hoist is None or obj in self.no_hoist:
            return E(code, ty, lv=lv, obj=obj)
        self.hoist.setdefault(local, code)
        self.hoisted.add(obj)
        return E(local, ty, lv=lv, obj=obj)

    def hoist_lines(self, level, skip=()):
        """The assignments loading this function's hoisted objects (parents before children)."""
        return ["    " * level + f"{k} = {v}" for k, v in self.hoist.items() if k not in skip]

    def x_Member(self, n, sc):
        b = self.expr(n.expr, sc)
        name = n.name
        if b.sym is not None and b.sym.kind == "type":
            t = b.sym.type
            if isinstance(t, ErrorT):
                if name not in self.errors:
                    raise P4Error(n.pos, f"error.{name} is not declared")
                v = self.errors[name]
                return E(repr(v), ERROR, const=v)
            if isinstance(t, EnumT):
                if name not in t.members:
                    raise P4Error(n.pos, f"enum {t.name} has no member '{name}'")
                v = t.members[name]
                return E(repr(v), t, const=v)
            raise P4Error(n.pos, f"type {t} has no member '{name}'")
        if b.sym is not None:
            return E(None, None, sym=Sym("method", decl=(b, name, n.pos)))
        t = b.type
        if isinstance(t, StructLikeT):
            if name in t.field_map:
                ft, code = t.field_map[name], f"{b.code}.{py_field(name)}"
                if isinstance(ft, (StructLikeT, StackT)):
                    if self.hoist is not None and b.code in self.hoist:
                        return self.hoisted_object(f"{b.code}__{py_field(name)}", code, ft, b.lv, (t.pyname, name))
                    return E(code, ft, lv=b.lv, obj=(t.pyname, name))
                return E(code, ft, lv=b.lv)
            if isinstance(t, HeaderT) and name in ("isValid", "setValid", "setInvalid"):
                return E(None, None, sym=Sym("method", decl=(b, name, n.pos)))
            raise P4Error(n.pos, f"{t} has no field '{name}'")
        if isinstance(t, StackT):
            if name == "next":
                return E(f"stack_next({b.code})", t.elem, lv=b.lv)
            if name == "last":
                return E(f"stack_last({b.code})", t.elem, lv=b.lv)
            if name == "size":
                return E(repr(t.size), BitT(32), const=t.size)
            if name == "lastIndex":
                return E(f"(({b.code}.nextIndex - 1) & 0xFFFFFFFF)", BitT(32))
            if name == "nextIndex":
                return E(f"{b.code}.nextIndex", BitT(32))
            if name in ("push_front", "pop_front"):
                return E(None, None, sym=Sym("method", decl=(b, name, n.pos)))
            raise P4Error(n.pos, f"header stack has no member '{name}'")
        if isinstance(t, ApplyResultT):
            if name == "hit":
                return E(f"{b.code}.hit", BOOL)
            if name == "miss":
                return E(f"(not {b.code}.hit)", BOOL)
            if name == "action_run":
                return E(f"{b.code}.name", ActionRunT(t.table))
            raise P4Error(n.pos, f"a table's apply() result has no member '{name}'")
        raise P4Error(n.pos, f"{t} has no member '{name}'")

    def x_Index(self, n, sc):
        b = self.val(self.expr(n.expr, sc), n.pos)
        if not isinstance(b.type, StackT):
            raise P4Error(n.pos, f"cannot index a value of type {b.type}")
        i = self.val(self.expr(n.index, sc), n.index.pos)
        if not i.type.is_numeric():
            raise P4Error(n.index.pos, f"a header stack index must be an integer, not {i.type}")
        if i.const is not None:
            if not 0 <= i.const < b.type.size:
                raise P4Error(n.index.pos, f"index {i.const} is out of bounds of {b.type}")
        return E(f"{b.code}.h[{i.code}]", b.type.elem, lv=b.lv)

    def x_Slice(self, n, sc):
        b = self.val(self.expr(n.expr, sc), n.pos)
        hi = self.const_value(n.hi, sc, INFINT)
        lo = self.const_value(n.lo, sc, INFINT)
        if not isinstance(b.type, BitT):
            raise P4Error(n.pos, f"cannot slice a value of type {b.type}")
        if not (0 <= lo <= hi < b.type.width):
            raise P4Error(n.pos, f"slice [{hi}:{lo}] is out of range of {b.type}")
        w = hi - lo + 1
        ty = BitT(w)
        code = f"(({b.code} >> {lo}) & {_mask(w)})" if lo else f"({b.code} & {_mask(w)})"
        e = self.mk(code, ty, b)
        e.lv = b.lv
        e.slice = (b, hi, lo)
        return e

    def x_List(self, n, sc):
        items = [self.val(self.expr(i, sc), i.pos) for i in n.items]
        return E(None, ListT([i.type for i in items]), items=items)

    def x_Unary(self, n, sc):
        e = self.val(self.expr(n.expr, sc), n.pos)
        op, t = n.op, e.type
        if op == "!":
            if not isinstance(t, BoolT):
                raise P4Error(n.pos, f"'!' needs a bool operand, got {t}")
            return self.mk(f"(not {e.code})", BOOL, e)
        if not t.is_numeric():
            raise P4Error(n.pos, f"'{op}' needs an integer operand, got {t}")
        if op == "+":
            return e
        if op == "~":
            if isinstance(t, InfIntT):
                raise P4Error(n.pos, "'~' needs an operand with a width (e.g. 8w1)")
            code = f"(~{e.code})" if t.signed else f"(~{e.code} & {_mask(t.width)})"
            return self.mk(code, t, e)
        return self.mk(_wrap_code(f"-{e.code}", t) if isinstance(t, BitT) else f"(-{e.code})", t, e)

    def x_Cast(self, n, sc):
        ty = self.resolve_type(n.type, sc)
        e = self.val(self.expr(n.expr, sc), n.pos)
        return self.cast(e, ty, n.pos)

    def cast(self, e, ty, pos):
        st = e.type
        if st == ty:
            return e
        if isinstance(ty, BitT):
            if isinstance(st, (BitT, InfIntT)):
                return self.mk(_wrap_code(e.code, ty), ty, e)
            if isinstance(st, BoolT):
                if ty.width != 1 or ty.signed:
                    raise P4Error(pos, f"cannot cast bool to {ty} (only to bit<1>)")
                return self.mk(f"(1 if {e.code} else 0)", ty, e)
            if isinstance(st, EnumT) and st.base is not None:
                return self.cast(E(e.code, st.base, const=e.const), ty, pos)
        if isinstance(ty, BoolT) and isinstance(st, (BitT, InfIntT)):
            if isinstance(st, BitT) and st.width != 1:
                raise P4Error(pos, f"cannot cast {st} to bool (only bit<1>)")
            return self.mk(f"({e.code} != 0)", BOOL, e)
        if isinstance(ty, EnumT) and ty.base is not None and isinstance(st, (BitT, InfIntT)):
            c = self.cast(e, ty.base, pos)
            return E(c.code, ty, const=c.const)
        if isinstance(ty, InfIntT) and isinstance(st, BitT) and e.const is not None:
            return E(repr(e.const), INFINT, const=e.const)
        raise P4Error(pos, f"cannot cast {st} to {ty}")

    def unify(self, l, r, op, pos):
        lt, rt = l.type, r.type
        if lt == rt:
            return l, r, lt
        if isinstance(lt, InfIntT) and isinstance(rt, BitT):
            return self.coerce(l, rt, pos, op), r, rt
        if isinstance(rt, InfIntT) and isinstance(lt, BitT):
            return l, self.coerce(r, lt, pos, op), lt
        raise P4Error(pos, f"operands of '{op}' have different types: {lt} and {rt}")

    def x_Binary(self, n, sc):
        op = n.op
        l = self.val(self.expr(n.left, sc), n.left.pos)
        r = self.val(self.expr(n.right, sc), n.right.pos)
        if op in ("&&", "||"):
            for x in (l, r):
                if not isinstance(x.type, BoolT):
                    raise P4Error(n.pos, f"'{op}' needs bool operands, got {x.type}")
            return self.mk(f"({l.code} {'and' if op == '&&' else 'or'} {r.code})", BOOL, l, r)
        if op in ("==", "!="):
            if isinstance(l.type, ActionRunT) or isinstance(r.type, ActionRunT):
                raise P4Error(n.pos, "action_run can only be used in a switch statement")
            l, r, t = self.unify(l, r, op, n.pos)
            if isinstance(t, (StructLikeT, StackT, ListT)):
                raise P4Error(n.pos, f"comparing {t} values is not supported by softswitch")
            return self.mk(f"({l.code} {op} {r.code})", BOOL, l, r)
        if op == "++":
            for x in (l, r):
                if not isinstance(x.type, BitT):
                    raise P4Error(n.pos, f"'++' needs operands with a width, got {x.type}")
            lw, rw = l.type.width, r.type.width
            t = BitT(lw + rw, l.type.signed)
            lc = f"({l.code} & {_mask(lw)})" if l.type.signed else l.code
            rc = f"({r.code} & {_mask(rw)})" if r.type.signed else r.code
            code = f"(({lc} << {rw}) | {rc})"
            return self.mk(_wrap_code(code, t) if t.signed else code, t, l, r)
        if op in ("<<", ">>"):
            if not l.type.is_numeric() or not r.type.is_numeric():
                raise P4Error(n.pos, f"'{op}' needs integer operands, got {l.type} and {r.type}")
            if isinstance(r.type, BitT) and r.type.signed:
                raise P4Error(n.pos, f"the shift amount must be unsigned, got {r.type}")
            if r.const is not None and r.const < 0:
                raise P4Error(n.pos, "negative shift amount")
            t = l.type
            if isinstance(t, InfIntT) and r.const is None:
                raise P4Error(n.pos, "shifting an integer literal by a non-constant needs a width (e.g. 8w1)")
            if op == "<<":
                code = f"({l.code} << {r.code})"
                return self.mk(_wrap_code(code, t), t, l, r)
            return self.mk(f"({l.code} >> {r.code})", t, l, r)
        l, r, t = self.unify(l, r, op, n.pos)
        if op in ("<", ">", "<=", ">="):
            if not t.is_numeric():
                raise P4Error(n.pos, f"'{op}' needs integer operands, got {t}")
            return self.mk(f"({l.code} {op} {r.code})", BOOL, l, r)
        if not t.is_numeric():
            raise P4Error(n.pos, f"'{op}' needs integer operands, got {t}")
        if isinstance(t, InfIntT):
            if op in ("|+|", "|-|"):
                raise P4Error(n.pos, f"'{op}' needs operands with a width")
            pyop = {"/": "//"}.get(op, op)
            if op in ("/", "%") and r.const == 0:
                raise P4Error(n.pos, "division by zero")
            return self.mk(f"({l.code} {pyop} {r.code})", t, l, r)
        w = t.width
        if op in ("+", "-", "*"):
            return self.mk(_wrap_code(f"{l.code} {op} {r.code}", t), t, l, r)
        if op in ("&", "|", "^"):
            return self.mk(f"({l.code} {op} {r.code})", t, l, r)
        if op in ("/", "%"):
            if t.signed:
                raise P4Error(n.pos, f"'{op}' is not supported on signed values")
            if r.const == 0:
                raise P4Error(n.pos, "division by zero")
            return self.mk(f"({l.code} {'//' if op == '/' else '%'} {r.code})", t, l, r)
        if op == "|+|":
            hi = _mask(w - 1) if t.signed else _mask(w)
            lo = -(1 << (w - 1)) if t.signed else 0
            return self.mk(f"min(max({l.code} + {r.code}, {lo}), {hi})", t, l, r)
        if op == "|-|":
            hi = _mask(w - 1) if t.signed else _mask(w)
            lo = -(1 << (w - 1)) if t.signed else 0
            return self.mk(f"min(max({l.code} - {r.code}, {lo}), {hi})", t, l, r)
        raise P4Error(n.pos, f"operator '{op}' is not supported")

    def x_Cond(self, n, sc):
        c = self.val(self.expr(n.cond, sc), n.cond.pos)
        if not isinstance(c.type, BoolT):
            raise P4Error(n.cond.pos, f"the condition of '?:' must be bool, got {c.type}")
        a = self.val(self.expr(n.then, sc), n.then.pos)
        b = self.val(self.expr(n.els, sc), n.els.pos)
        a, b, t = self.unify(a, b, "?:", n.pos)
        if c.const is not None:
            return a if c.const else b
        return E(f"({a.code} if {c.code} else {b.code})", t)

    def x_Call(self, n, sc):
        return self.call(n, sc, None)

    # ------------------------------------------------------------------ calls
    def param_types(self, params, sc, tvars):
        s = Scope(sc)
        for tv, t in tvars.items():
            s.add(tv, Sym("type", t))
        return [(p.name, p.direction, self.resolve_type(p.type, s)) for p in params]

    def check_args(self, fname, params, args, sc, pos):
        """Compiles call arguments against (name, direction, type) params; returns their E."""
        check_arity(pos, fname, args, len(params))
        out = []
        for i, ((pname, d, pt), a) in enumerate(zip(params, args)):
            e = self.val(self.expr(a, sc), a.pos)
            if d in ("out", "inout"):
                if not e.lv:
                    raise P4Error(a.pos, f"argument '{pname}' of '{fname}' is {d}: it must be assignable")
                if not fits(pt, e.type) or not fits(e.type, pt):
                    if not (isinstance(pt, TypeVarT)):
                        raise P4Error(a.pos, f"argument '{pname}' of '{fname}' must be {pt}, got {e.type}")
            else:
                e = self.coerce(
                    e,
                    pt,
                    a.pos,
                    lambda got, want, pname=pname: f"argument '{pname}' of '{fname}' must be {want}, got {got}",
                )
            out.append(e)
        return out

    def call(self, n, sc, ctx):
        """Compiles a call. As an expression (ctx None) returns its value; as a statement emits code."""
        f = n.func
        fe = self.expr(f, sc)
        s = fe.sym
        if s is None:
            raise P4Error(n.pos, "this expression cannot be called")
        if s.kind == "method":
            base, mname, mpos = s.decl
            return self.call_method(n, base, mname, sc, ctx)
        if s.kind == "action":
            if ctx is None:
                raise P4Error(n.pos, "an action call is a statement, not a value")
            return self.call_action(n, s.decl, sc, ctx)
        if s.kind == "externfn":
            return self.call_extern_fn(n, f.name, s, sc, ctx)
        raise P4Error(n.pos, f"{self.describe(fe)} cannot be called")

    def stmt_only(self, n, ctx, what):
        if ctx is None:
            raise P4Error(n.pos, f"{what} returns no value")

    def call_action(self, n, ad, sc, ctx):
        args = self.check_args(ad.fq.rsplit(".", 1)[-1], ad.params, n.args, sc, n.pos)
        codes = []
        outs = []
        for (pname, d, pt), a in zip(ad.params, args):
            if isinstance(pt, (StructLikeT, StackT)) and d in (None, "in"):
                codes.append(f"{a.code}.copy()")
            else:
                codes.append(a.code)
            if d in ("out", "inout") and not isinstance(pt, (StructLikeT, StackT)):
                outs.append(a.code)
        call = f"{ad.pyname}(C{''.join(', ' + c for c in codes)})"
        self.emit_call_with_outs(call, outs)

    def emit_call_with_outs(self, call, outs):
        if outs:
            self.out.w(f"{', '.join(outs)}, = {call}")
        else:
            self.out.w(call)

    def call_method(self, n, base, mname, sc, ctx):
        o = self.out
        bs = base.sym
        if bs is None:
            t = base.type
            if isinstance(t, HeaderT):
                check_arity(n.pos, mname, n.args, 0)
                if mname == "isValid":
                    return E(f"{base.code}._v", BOOL)
                self.stmt_only(n, ctx, mname)
                if not base.lv:
                    raise P4Error(n.pos, f"cannot call {mname}() on a read-only header")
                o.w(f"{base.code}._v = {mname == 'setValid'}")
                return None
            if isinstance(t, StackT):
                self.stmt_only(n, ctx, mname)
                check_arity(n.pos, mname, n.args, 1)
                cnt = self.const_value(n.args[0], sc, INFINT)
                o.w(f"{base.code}.{mname}({cnt})")
                return None
            raise P4Error(n.pos, f"{t} has no method '{mname}'")
        k = bs.kind
        if k == "table":
            if mname != "apply":
                raise P4Error(n.pos, f"a table has no method '{mname}' (only apply)")
            check_arity(n.pos, "apply", n.args, 0)
            td = bs.decl
            code = f"{td.pyname}(C)"
            if ctx is not None:
                o.w(code)
                return None
            return E(code, ApplyResultT(td))
        if k == "packet_in":
            return self.call_packet_in(n, base, mname, sc, ctx)
        if k == "packet_out":
            if mname != "emit":
                raise P4Error(n.pos, f"packet_out has no method '{mname}'")
            self.stmt_only(n, ctx, "emit")
            check_arity(n.pos, "emit", n.args, 1)
            e = self.val(self.expr(n.args[0], sc), n.args[0].pos)
            self.emit_emit(bs.code, e, n.args[0].pos)
            return None
        if k == "extern":
            return self.call_extern_method(n, bs, mname, sc, ctx)
        if k == "ctlinst":
            if mname != "apply":
                raise P4Error(n.pos, f"a control instance has no method '{mname}' (only apply)")
            self.stmt_only(n, ctx, "apply")
            decl, pyname = bs.decl, bs.code
            params = self.param_types(decl.params, self.g, {})
            args = self.check_args(decl.name, params, n.args, sc, n.pos)
            codes, outs = [], []
            for (pname, d, pt), a in zip(params, args):
                codes.append(
                    f"{a.code}.copy()" if isinstance(pt, (StructLikeT, StackT)) and d in (None, "in") else a.code
                )
                if d in ("out", "inout") and not isinstance(pt, (StructLikeT, StackT)):
                    outs.append(a.code)
            self.emit_call_with_outs(f"{pyname}({', '.join(codes)})", outs)
            return None
        raise P4Error(n.pos, f"{self.describe(base)} has no method '{mname}'")

    def emit_emit(self, pkt, e, pos):
        t = e.type
        o = self.out
        if isinstance(t, HeaderT):
            v = self.fresh("h")
            o.w(f"{v} = {e.code}")
            o.w(f"if {v}._v: {pkt}.append(P_{t.name}({v}))")
        elif isinstance(t, StackT):
            v = self.fresh("h")
            o.w(f"for {v} in {e.code}.h:")
            o.w(f"    if {v}._v: {pkt}.append(P_{t.elem.name}({v}))")
        elif isinstance(t, StructT):
            for fname, ft in t.fields:
                self.emit_emit(pkt, E(f"{e.code}.{py_field(fname)}", ft), pos)
        else:
            raise P4Error(pos, f"emit expects a header, header stack or struct of headers, got {t}")

    def call_packet_in(self, n, base, mname, sc, ctx):
        o = self.out
        if not (ctx and ctx.kind == "parser") and not (ctx is None and self.in_parser):
            raise P4Error(n.pos, f"packet_in.{mname} can only be used in a parser")
        if mname == "extract":
            self.stmt_only(n, ctx, "extract")
            if len(n.args) != 1:
                raise P4Error(
                    n.pos,
                    f"wrong number of arguments to 'extract': expected 1, got {len(n.args)} "
                    f"(variable-size extract is not supported)",
                )
            a = n.args[0]
            e = self.val(self.expr(a, sc), a.pos)
            if not isinstance(e.type, HeaderT):
                raise P4Error(a.pos, f"extract expects a header, got {e.type}")
            if not e.lv:
                raise P4Error(a.pos, "extract needs an assignable header")
            if a.kind == "Member" and a.name == "next":
                st = self.expr(a.expr, sc)
                v = self.fresh("s")
                o.w(f"{v} = {st.code}")
                o.w(f"off = X_{e.type.name}(stack_next({v}), data, off)")
                o.w(f"{v}.nextIndex += 1")
            else:
                o.w(f"off = X_{e.type.name}({e.code}, data, off)")
            return None
        if mname == "lookahead":
            if n.args or len(n.targs) != 1:
                raise P4Error(n.pos, "lookahead takes one type argument and no arguments: lookahead<T>()")
            t = self.resolve_type(n.targs[0], sc)
            if isinstance(t, HeaderT):
                return E(f"RT.lookahead_header(X_{t.name}, {t.pyname}(), data, off)", t)
            if not isinstance(t, BitT):
                raise P4Error(n.pos, f"lookahead<{t}> is not supported (only bit<N> and header types)")
            return E(f"RT.lookahead(data, off, {t.width})", t)
        if mname == "advance":
            self.stmt_only(n, ctx, "advance")
            params = [("sizeInBits", "in", BitT(32))]
            (e,) = self.check_args("advance", params, n.args, sc, n.pos)
            o.w(f"off = RT.advance(data, off, {e.code})")
            return None
        raise P4Error(n.pos, f"packet_in.{mname} is not supported by softswitch")

    def call_extern_method(self, n, bs, mname, sc, ctx):
        inst = bs.extra  # dict: type, fq, code, size, elem
        ename = inst["type"].name
        decl = inst["type"].decl
        meths = [m for m in decl.methods if m.name == mname and not m.ctor]
        if not meths:
            raise P4Error(n.pos, f"extern {ename} has no method '{mname}'")
        meth = meths[0]
        tvars = {
            tp: (inst["type"].targs[i] if i < len(inst["type"].targs) else TypeVarT(tp))
            for i, tp in enumerate(decl.tparams)
        }
        for tp in meth.tparams:
            tvars[tp] = TypeVarT(tp)
        params = self.param_types(meth.params, self.g, tvars)
        args = self.check_args(mname, params, n.args, sc, n.pos)
        self.stmt_only(n, ctx, mname)
        o = self.out
        code = inst["code"]
        if ename == "register":
            size = inst["size"]
            if mname == "read":
                res, idx = args
                iv = self.fresh("i")
                o.w(f"{iv} = {idx.code}")
                o.w(f"{res.code} = {code}[{iv}] if {iv} < {size} else 0")
            else:
                idx, v = args
                iv = self.fresh("i")
                o.w(f"{iv} = {idx.code}")
                o.w(f"if {iv} < {size}: {code}[{iv}] = {v.code}")
            return None
        if ename == "counter":
            o.w(f"{code}.count({args[0].code})")
            return None
        if ename == "direct_counter":
            o.w("pass  # direct_counter.count(): the table counts its hits")
            return None
        raise P4Error(n.pos, f"extern {ename} is not supported by softswitch")

    def serialize(self, e, pos):
        """(code of an int holding the bits, number of bits) of a field list / header / field."""
        parts = []

        def add(x):
            t = x.type
            if isinstance(t, BitT):
                parts.append((f"({x.code} & {_mask(t.width)})" if t.signed else x.code, t.width))
            elif isinstance(t, BoolT):
                parts.append((f"(1 if {x.code} else 0)", 1))
            elif isinstance(t, EnumT) and t.base is not None:
                parts.append((x.code, t.base.width))
            elif isinstance(t, ListT):
                for it in x.items:
                    add(it)
            elif isinstance(t, StructLikeT):
                for fname, ft in t.fields:
                    add(E(f"{x.code}.{py_field(fname)}", ft))
            elif isinstance(t, InfIntT):
                raise P4Error(pos, "an integer literal in a field list needs a width (e.g. 8w0)")
            else:
                raise P4Error(pos, f"cannot use {t} in a field list")

        add(e)
        total = sum(w for _, w in parts)
        shift = total
        codes = []
        for c, w in parts:
            shift -= w
            codes.append(f"({c} << {shift})" if shift else c)
        return ("(" + " | ".join(codes) + ")" if codes else "0"), total

    def data_field_list(self, e, pos):
        """The user-metadata fields named by the data argument of clone3/resubmit/recirculate (a list of
        fields or the whole struct), registered as an anonymous field list; None when it names none.
        Like BMv2, their values at the end of the pipeline are preserved; anything else in the list
        (standard_metadata, headers, constants) is not, as p4c's BMv2 back end ignores it too."""
        root = getattr(self, "meta_code", None)
        items = e.items if isinstance(e.type, ListT) else [e]
        paths = []
        for it in items:
            if root is None or not it.lv:
                continue
            if it.code == root:
                paths += [py_field(f) for f, _ in self.meta_type.fields]
            elif it.code.startswith(root + ".") and re.fullmatch(r"[\w.]+", it.code[len(root) + 1 :]):
                paths.append(it.code[len(root) + 1 :])
        if not paths:
            return None
        key = f"data{len([k for k in self.field_lists if isinstance(k, str)])}"
        self.field_lists[key] = paths
        return key

    def const_enum(self, e, enum_name, pos, what):
        if e.const is None or not isinstance(e.type, EnumT) or e.type.name != enum_name:
            raise P4Error(pos, f"{what} must be a constant {enum_name} member")
        return [k for k, v in e.type.members.items() if v == e.const][0]

    def call_extern_fn(self, n, fname, s, sc, ctx):
        decls = [d for d in s.extra if len(d.params) == len(n.args)] or s.extra
        decl = decls[0]
        tvars = {tp: TypeVarT(tp) for tp in decl.tparams}
        for i, ta in enumerate(n.targs):
            if i < len(decl.tparams):
                tvars[decl.tparams[i]] = self.resolve_type(ta, sc)
        params = self.param_types(decl.params, self.g, tvars)
        saved_hoist = self.hoist
        if fname in ("clone3", "resubmit", "recirculate"):
            self.hoist = None  # data_field_list() recognises the metadata fields by their plain code
        args = self.check_args(fname, params, n.args, sc, n.pos)
        self.hoist = saved_hoist
        self.stmt_only(n, ctx, fname)
        o = self.out
        if fname == "verify":
            if ctx.kind != "parser":
                raise P4Error(n.pos, "verify() can only be used in a parser")
            c, err = args
            o.w(f"if not {c.code}: raise ParserError({err.code})")
        elif fname == "mark_to_drop":
            sm = args[0].code
            o.w(f"{sm}.egress_spec = 511")
            o.w(f"{sm}.mcast_grp = 0")
        elif fname == "hash":
            res, algo, base, data, mx = args
            aname = self.const_enum(algo, "HashAlgorithm", n.args[1].pos, "the hash algorithm")
            if aname not in SUPPORTED_HASHES:
                raise P4Error(
                    n.args[1].pos,
                    f"hash algorithm {aname} is not supported by softswitch (supported: {', '.join(SUPPORTED_HASHES)})",
                )
            if not isinstance(res.type, BitT):
                raise P4Error(n.args[0].pos, f"the hash result must be bit<N>, got {res.type}")
            vc, nb = self.serialize(data, n.args[3].pos)
            o.w(f"{res.code} = compute_hash({aname!r}, {vc}, {nb}, {base.code}, {mx.code}, {res.type.width})")
        elif fname in (
            "verify_checksum",
            "update_checksum",
            "verify_checksum_with_payload",
            "update_checksum_with_payload",
        ):
            c, data, ck, algo = args
            aname = self.const_enum(algo, "HashAlgorithm", n.args[3].pos, "the checksum algorithm")
            if aname not in SUPPORTED_HASHES:
                raise P4Error(n.args[3].pos, f"checksum algorithm {aname} is not supported by softswitch")
            if not isinstance(ck.type, BitT):
                raise P4Error(n.args[2].pos, f"the checksum must be a bit<N> field, got {ck.type}")
            vc, nb = self.serialize(data, n.args[1].pos)
            if fname.endswith("_with_payload"):
                h = f"(HASHES[{aname!r}](bits_to_bytes({vc}, {nb}) + PS.payload) & {_mask(ck.type.width)})"
            elif aname == "csum16":
                h = f"(csum16_bits({vc}, {nb}) & {_mask(ck.type.width)})"
            else:
                h = f"(HASHES[{aname!r}](bits_to_bytes({vc}, {nb})) & {_mask(ck.type.width)})"
            o.w(f"if {c.code}:")
            if fname.startswith("verify"):
                o.w(f"    if {h} != {ck.code}: PS.sm.checksum_error = 1")
            else:
                if not ck.lv:
                    raise P4Error(n.args[2].pos, "the checksum field must be assignable")
                o.w(f"    {ck.code} = {h}")
        elif fname == "random":
            res, lo, hi = args
            o.w(f"{res.code} = RT.random({lo.code}, {hi.code})")
        elif fname == "digest":
            rcv, data = args
            if n.targs:
                t = self.resolve_type(n.targs[0], sc)
            else:
                t = data.type
            if not isinstance(t, StructT):
                raise P4Error(n.pos, f"digest needs a struct type, got {t}")
            if isinstance(data.type, ListT):
                if len(data.items) != len(t.fields):
                    raise P4Error(
                        n.args[1].pos,
                        f"digest data has {len(data.items)} values; struct {t.name} has {len(t.fields)} fields",
                    )
                vals = []
                for (fname_, ft), it in zip(t.fields, data.items):
                    it = self.coerce(it, ft, n.args[1].pos, f"field {fname_} of digest {t.name}")
                    vals.append(it.code)
            elif data.type == t:
                vals = [f"{data.code}.{py_field(f)}" for f, _ in t.fields]
            else:
                raise P4Error(n.args[1].pos, f"digest data must be struct {t.name} or a list of its fields")
            for f, ft in t.fields:
                if not isinstance(ft, (BitT, BoolT)) and not (isinstance(ft, EnumT) and ft.base):
                    raise P4Error(n.pos, f"digest struct {t.name}: field {f} must be bit<N>")
            self.digests.setdefault(
                t.name, DigestInfo(t.name, tuple(FieldInfo(f, self.width_of(ft)) for f, ft in t.fields))
            )
            d = ", ".join(f"{f!r}: {v}" for (f, _), v in zip(t.fields, vals))
            o.w(f"PS.digests.append(({t.name!r}, {{{d}}}))")
        elif fname in ("clone", "clone_preserving_field_list", "clone3"):
            ct = self.const_enum(args[0], "CloneType", n.args[0].pos, "the clone type")
            if fname == "clone3":
                fl = repr(self.data_field_list(args[2], n.args[2].pos))
            else:
                fl = args[2].code if len(args) == 3 else "None"
            o.w(f"PS.clone = ({ct!r}, {args[1].code}, {fl})")
        elif fname in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            o.w(f"PS.{fname.split('_')[0]} = {args[0].code}")
        elif fname in ("resubmit", "recirculate"):
            fl = self.data_field_list(args[0], n.args[0].pos)
            o.w(f"PS.{fname} = {-1 if fl is None else repr(fl)}")
        elif fname == "truncate":
            o.w(f"PS.truncate = {args[0].code}")
        elif fname in ("assert", "assume"):
            o.w(f"if not {args[0].code}: RT.assert_failed({str(n.pos)!r})")
        elif fname == "log_msg":
            if len(args) == 2:
                d = args[1]
                vals = [it.code for it in d.items] if isinstance(d.type, ListT) else [d.code]
                o.w(f"RT.log_msg({args[0].code}, ({', '.join(vals)},))")
            else:
                o.w(f"RT.log_msg({args[0].code}, ())")
        else:
            raise P4Error(n.pos, f"extern {fname} is not supported by softswitch")
        return None

    # ------------------------------------------------------------------ statements
    in_parser = False

    def block(self, stmts, sc, ctx):
        mark = self.out.mark()
        inner = Scope(sc)
        for s in stmts:
            self.stmt(s, inner, ctx)
        self.out.ensure_body(mark)

    def stmt(self, s, sc, ctx):
        o = self.out
        k = s.kind
        if k == "Block":
            self.block(s.stmts, sc, ctx)
        elif k == "Empty":
            pass
        elif k == "Assign":
            self.assign(s, sc)
        elif k == "CallStmt":
            r = self.call(s.call, sc, ctx)
            if r is not None:
                o.w(r.code)
        elif k == "If":
            c = self.val(self.expr(s.cond, sc), s.cond.pos)
            if not isinstance(c.type, BoolT):
                raise P4Error(s.cond.pos, f"the condition of 'if' must be bool, got {c.type}")
            o.w(f"if {c.code}:")
            o.level += 1
            self.block([s.then], sc, ctx)
            o.level -= 1
            if s.els is not None:
                o.w("else:")
                o.level += 1
                self.block([s.els], sc, ctx)
                o.level -= 1
        elif k == "Switch":
            self.switch(s, sc, ctx)
        elif k == "Exit":
            if ctx.kind == "parser":
                raise P4Error(s.pos, "exit is not allowed in a parser")
            o.w("raise ExitCtl()")
        elif k == "Return":
            if ctx.kind == "parser":
                raise P4Error(s.pos, "return is not allowed in a parser")
            if s.value is not None:
                raise P4Error(s.pos, "return with a value is not supported (no functions in softswitch's subset)")
            o.w(f"return{' ' + ctx.ret if ctx.ret else ''}")
        elif k == "VarDecl":
            ty = self.resolve_type(s.type, sc)
            py = self.fresh("l_" + s.name)
            if s.init is not None:
                e = self.val(self.expr(s.init, sc), s.init.pos)
                e = self.coerce(e, ty, s.init.pos, lambda got, want: f"cannot initialize {want} '{s.name}' with {got}")
                code = f"{e.code}.copy()" if isinstance(ty, (StructLikeT, StackT)) else e.code
            else:
                code = self.default_code(ty)
            sc.add(s.name, Sym("var", ty, code=py, lv=True), s.pos)
            o.w(f"{py} = {code}")
        elif k == "Const":
            ty = self.resolve_type(s.type, sc)
            sc.add(s.name, Sym("const", ty, value=self.const_value(s.value, sc, ty)), s.pos)
        elif k == "Instance":
            raise P4Error(s.pos, "instantiations are only allowed in a control or parser body, not in apply")
        else:
            raise P4Error(s.pos, f"{k} statements are not supported here")

    def assign(self, s, sc):
        o = self.out
        lhs = self.val(self.expr(s.lhs, sc), s.lhs.pos)
        if not lhs.lv:
            raise P4Error(s.lhs.pos, f"cannot assign to {expr_text(s.lhs)} (read-only)")
        rhs = self.val(self.expr(s.rhs, sc), s.rhs.pos)
        rhs = self.coerce(rhs, lhs.type, s.rhs.pos, lambda got, want: f"cannot assign {got} to {want} without a cast")
        if lhs.slice is not None:
            base, hi, lo = lhs.slice
            w = hi - lo + 1
            keep = _mask(base.type.width) & ~(_mask(w) << lo)
            code = f"({base.code} & {keep}) | (({rhs.code} & {_mask(w)}) << {lo})"
            if base.type.signed:
                code = _wrap_code(code, base.type)
            o.w(f"{base.code} = {code}")
            return
        if lhs.code.startswith("stack_"):
            if isinstance(lhs.type, StructLikeT):
                raise P4Error(s.lhs.pos, "assigning a whole header to .next/.last is not supported")
        if isinstance(lhs.type, (StructLikeT, StackT)):
            if lhs.obj is not None:
                self.rebound.add(lhs.obj)
            o.w(f"{lhs.code} = {rhs.code}.copy()")
        else:
            o.w(f"{lhs.code} = {rhs.code}")

    def switch(self, s, sc, ctx):
        o = self.out
        if s.expr.kind == "Member" and s.expr.name == "action_run":
            e = self.expr(s.expr, sc)
            if not isinstance(e.type, ActionRunT):
                raise P4Error(s.expr.pos, "switch on action_run needs table.apply().action_run")
            td = e.type.table
            v = self.fresh("run")
            o.w(f"{v} = {e.code}")

            def label(lab):
                if lab.kind != "Name":
                    raise P4Error(lab.pos, "a switch case on action_run must name an action")
                for fq, ad in td.actions.items():
                    if fq.rsplit(".", 1)[-1] == lab.name or fq == lab.name or ad.decl.name == lab.name:
                        return repr(fq)
                raise P4Error(lab.pos, f"action '{lab.name}' is not an action of table {td.fq}")
        else:
            e = self.val(self.expr(s.expr, sc), s.expr.pos)
            if not isinstance(e.type, (BitT, EnumT, ErrorT)):
                raise P4Error(s.expr.pos, f"cannot switch on a value of type {e.type}")
            v = self.fresh("sw")
            o.w(f"{v} = {e.code}")

            def label(lab):
                le = self.coerce(self.val(self.expr(lab, sc), lab.pos), e.type, lab.pos, "switch case")
                if le.const is None:
                    raise P4Error(lab.pos, "a switch case label must be a constant")
                return le.code

        pending = []
        first = True
        seen = set()
        for c in s.cases:
            if c.label is None:
                cond = None
            else:
                lab = label(c.label)
                if lab in seen:
                    raise P4Error(c.pos, "duplicate switch case label")
                seen.add(lab)
                pending.append(lab)
            if c.body is None:
                if c.label is None:
                    raise P4Error(c.pos, "the default case needs a body")
                continue
            if c.label is None:
                o.w("else:" if not first else "if True:")
            else:
                cond = " or ".join(f"{v} == {lab}" for lab in pending)
                o.w(f"{'if' if first else 'elif'} {cond}:")
            pending = []
            first = False
            o.level += 1
            self.block(c.body.stmts, sc, ctx)
            o.level -= 1
        if pending:
            raise P4Error(s.pos, "the last switch case has no body")

    # ------------------------------------------------------------------ main package
    def gen_main(self, inst):
        tn = inst.type
        if tn.kind != "TypeName" or tn.name != "V1Switch":
            raise P4Error(inst.pos, "the main package must be V1Switch (softswitch implements v1model only)")
        if inst.name != "main":
            raise P4Error(inst.pos, "the package instance must be named 'main'")
        roles = ["parser", "verify", "ingress", "egress", "compute", "deparser"]
        check_arity(inst.pos, "V1Switch", inst.args, 6)
        decls = []
        for role, a in zip(roles, inst.args):
            if a.kind != "Call" or a.func.kind != "Name" or a.args:
                raise P4Error(a.pos, f"V1Switch argument '{role}' must be an instantiation like MyIngress()")
            s = self.g.lookup(a.func.name)
            if s is None:
                raise P4Error(a.pos, f"undeclared name '{a.func.name}'")
            if s.kind != "block":
                raise P4Error(a.pos, f"'{a.func.name}' is not a parser or control")
            want = "Parser" if role == "parser" else "Control"
            if s.decl.kind != want:
                raise P4Error(
                    a.pos,
                    f"V1Switch argument '{role}' must be a {want.lower()}, "
                    f"but {a.func.name} is a {s.decl.kind.lower()}",
                )
            decls.append(s.decl)
        counts = [4, 2, 3, 3, 2, 2]
        for role, d, c in zip(roles, decls, counts):
            if len(d.params) != c:
                raise P4Error(
                    d.pos,
                    f"{d.kind.lower()} {d.name} used as V1Switch's {role} must have {c} "
                    f"parameters, has {len(d.params)}",
                )
        ptypes = [self.param_types(d.params, self.g, {}) for d in decls]
        H = ptypes[0][1][2]
        M = ptypes[0][2][2]
        if not isinstance(H, StructT):
            raise P4Error(decls[0].params[1].pos, f"the parser's headers parameter must be a struct, got {H}")
        if not isinstance(M, StructT):
            raise P4Error(decls[0].params[2].pos, f"the parser's metadata parameter must be a struct, got {M}")
        for role, d, pt in zip(roles[1:], decls[1:], ptypes[1:]):
            hi = 1 if role == "deparser" else 0
            if pt[hi][2] != H:
                raise P4Error(d.params[hi].pos, f"{d.name}: headers type is {pt[hi][2]}, the parser's is {H}")
            if role != "deparser" and pt[1][2] != M:
                raise P4Error(d.params[1].pos, f"{d.name}: metadata type is {pt[1][2]}, the parser's is {M}")
        self.field_lists = {}
        self.meta_type, self.meta_code = M, None
        for fname, ft in M.fields:
            a = find_annotation(M.field_annos.get(fname), "field_list")
            if a:
                for idx in a.args:
                    if isinstance(idx, int):
                        self.field_lists.setdefault(idx, []).append(py_field(fname))
        out = {}
        sm = self.g.lookup("standard_metadata_t")
        out["new_hdr"] = H.pyname
        out["new_meta"] = M.pyname
        out["new_sm"] = sm.type.pyname
        out["parser"] = self.gen_parser(decls[0])
        for role, d in zip(roles[1:], decls[1:]):
            out[role] = self.gen_control(d, d.name)
        return out

    # ------------------------------------------------------------------ parsers
    def gen_parser(self, d):
        if d.ctor_params:
            raise P4Error(d.pos, "parser constructor parameters are not supported by softswitch")
        self.out = o = Py(1)
        sc = Scope(self.g)
        names = []
        for p in d.params:
            t = self.resolve_type(p.type, sc)
            py = "v_" + _ident(p.name)
            if isinstance(t, ExternT) and t.name == "packet_in":
                sc.add(p.name, Sym("packet_in", code="data"), p.pos)
                names.append("data")
                continue
            sc.add(p.name, Sym("var", t, code=py, lv=p.direction != "in"), p.pos)
            names.append(py)
        fn = self.fresh("p_" + d.name)
        o.w(f"def {fn}({', '.join(names)}):")
        o.level += 1
        o.w("off = 0")
        ctx = Ctx("parser")
        self.in_parser = True
        for ld in d.locals:
            self.parser_local(ld, sc, ctx)
        states = {s.name: i for i, s in enumerate(d.states)}
        for s in d.states:
            if s.name in ("accept", "reject"):
                raise P4Error(s.pos, f"state '{s.name}' is predefined")
        if "start" not in states:
            raise P4Error(d.pos, f"parser {d.name} has no 'start' state")
        o.w("try:")
        o.level += 1
        o.w(f"st = {states['start']}")
        o.w("while True:")
        o.level += 1
        for i, s in enumerate(d.states):
            o.w(f"{'if' if i == 0 else 'elif'} st == {i}:")
            o.level += 1
            ssc = Scope(sc)
            for st in s.stmts:
                self.stmt(st, ssc, ctx)
            self.transition(s, ssc, states)
            o.level -= 1
        o.level -= 2
        o.w("except ParserError as e:")
        o.w("    return off, e.code")
        self.in_parser = False
        self.build.lines += o.lines
        return fn

    def parser_local(self, ld, sc, ctx):
        if ld.kind in ("VarDecl", "Const"):
            self.stmt(ld, sc, ctx)
        else:
            raise P4Error(ld.pos, f"{ld.kind} declarations in parsers are not supported by softswitch")

    def goto(self, name, states, pos):
        if name == "accept":
            return "return off, 0"
        if name == "reject":
            return "return off, 0"
        if name not in states:
            raise P4Error(pos, f"undeclared parser state '{name}'")
        return f"st = {states[name]}; continue"

    def transition(self, s, sc, states):
        o = self.out
        t = s.transition
        if t is None:
            o.w("return off, 0")
            return
        if t.kind == "TransDirect":
            o.w(self.goto(t.state, states, t.pos))
            return
        keys = [self.val(self.expr(e, sc), e.pos) for e in t.exprs]
        kv = []
        for k in keys:
            if not isinstance(k.type, (BitT, BoolT, EnumT, ErrorT, InfIntT)):
                raise P4Error(t.pos, f"cannot select on a value of type {k.type}")
            v = self.fresh("k")
            o.w(f"{v} = {k.code}")
            kv.append((v, k.type))
        first = True
        has_default = False
        for c in t.cases:
            ks = c.keyset
            items = ks.items if ks.kind == "Tuple" else [ks]
            if ks.kind == "Default":
                items = [ks] * len(kv)
            if len(items) != len(kv):
                raise P4Error(ks.pos, f"select case has {len(items)} values, the select has {len(kv)} keys")
            conds = []
            for (v, ty), it in zip(kv, items):
                conds += self.keyset_cond(v, ty, it, sc)
            target = self.goto(c.state, states, c.spos)
            if not conds:
                o.w("else:" if not first else "if True:")
                has_default = True
            else:
                o.w(f"{'if' if first else 'elif'} {' and '.join(conds)}:")
            o.w(f"    {target}")
            first = False
            if not conds:
                break
        if not has_default:
            if first:
                o.w("raise ParserError(2)")
            else:
                o.w("else:")
                o.w("    raise ParserError(2)")

    def keyset_cond(self, v, ty, it, sc):
        if it.kind == "Default":
            return []
        if it.kind == "Mask":
            val = self.coerce(self.val(self.expr(it.value, sc), it.pos), ty, it.pos, "select case")
            m = self.coerce(self.val(self.expr(it.mask, sc), it.pos), ty, it.pos, "select mask")
            if val.const is not None and m.const is not None:
                return [f"({v} & {m.const}) == {val.const & m.const}"]
            return [f"({v} & {m.code}) == ({val.code} & {m.code})"]
        if it.kind == "Range":
            lo = self.coerce(self.val(self.expr(it.lo, sc), it.pos), ty, it.pos, "select range")
            hi = self.coerce(self.val(self.expr(it.hi, sc), it.pos), ty, it.pos, "select range")
            return [f"{lo.code} <= {v} <= {hi.code}"]
        e = self.coerce(
            self.val(self.expr(it, sc), it.pos),
            ty,
            it.pos,
            lambda got, want: f"select case value of type {got} does not match key type {want}",
        )
        return [f"{v} == {e.code}"]

    # ------------------------------------------------------------------ controls
    def gen_control(self, d, prefix):
        """Generates the apply function of one control instance named `prefix`; returns its Python name."""
        if d.ctor_params:
            raise P4Error(d.pos, "control constructor parameters are not supported by softswitch")
        saved_out = getattr(self, "out", None)
        saved_hoist, self.hoist = self.hoist, None
        sc = Scope(self.g)
        slots = []
        params = []
        ret_outs = []
        for p in d.params:
            t = self.resolve_type(p.type, sc)
            py = "v_" + _ident(p.name)
            slots.append(py)
            params.append(py)
            if isinstance(t, ExternT) and t.name == "packet_out":
                sc.add(p.name, Sym("packet_out", code=f"C.{py}"), p.pos)
                continue
            if isinstance(t, ExternT) and t.name == "packet_in":
                raise P4Error(p.pos, "packet_in is only available in parsers")
            root = py if isinstance(t, (StructLikeT, StackT)) else None  # an object: may live in a local
            sc.add(p.name, Sym("var", t, code=f"C.{py}", lv=p.direction in ("out", "inout"), extra=root), p.pos)
            if p.direction in ("out", "inout") and not isinstance(t, (StructLikeT, StackT)):
                ret_outs.append(f"C.{py}")
            if t == getattr(self, "meta_type", None):
                self.meta_code = f"C.{py}"  # where clone3/resubmit/recirculate data finds user metadata
        cls = self.fresh("Ctx_" + prefix)
        fn = self.fresh("c_" + prefix)
        init = Py(2)
        ctx = Ctx("control", ret="(" + ", ".join(ret_outs) + ",)" if ret_outs else None, control=prefix)
        pending_funcs = []
        for ld in d.locals:
            k = ld.kind
            if k == "Const":
                ty = self.resolve_type(ld.type, sc)
                sc.add(ld.name, Sym("const", ty, value=self.const_value(ld.value, sc, ty)), ld.pos)
            elif k == "VarDecl":
                ty = self.resolve_type(ld.type, sc)
                py = "v_" + _ident(ld.name)
                slots.append(py)
                if ld.init is not None:
                    self.out = init
                    e = self.val(self.expr(ld.init, sc), ld.init.pos)
                    e = self.coerce(
                        e, ty, ld.init.pos, lambda got, want: f"cannot initialize {want} '{ld.name}' with {got}"
                    )
                    code = f"{e.code}.copy()" if isinstance(ty, (StructLikeT, StackT)) else e.code
                else:
                    code = self.default_code(ty)
                init.w(f"C.{py} = {code}")
                sc.add(ld.name, Sym("var", ty, code=f"C.{py}", lv=True), ld.pos)
            elif k == "Action":
                self.declare_action(ld, sc, prefix, ctx)
            elif k == "Table":
                self.gen_table(ld, sc, prefix)
            elif k == "Instance":
                self.gen_instance(ld, sc, prefix)
            else:
                raise P4Error(ld.pos, f"{k} declarations in controls are not supported")
        _ = pending_funcs
        self.out = o = Py(1)
        o.w(f"class {cls}:")
        o.w(f"    __slots__ = {tuple(slots)!r}")
        o.w(f"def {fn}({', '.join(params)}):")
        o.level += 1
        o.w(f"C = {cls}()")
        for p in params:
            o.w(f"C.{p} = {p}")
        o.lines += init.lines
        mark = o.mark()
        self.hoist = {}
        self.block(d.body.stmts, sc, ctx)
        if ctx.ret:
            o.w(f"return {ctx.ret}")
        o.lines[mark:mark] = self.hoist_lines(o.level, skip=params)
        self.build.lines += o.lines
        self.out = saved_out
        self.hoist = saved_hoist
        return fn

    def declare_action(self, d, sc, prefix, ctx):
        fq = _fq(d.annos, prefix, d.name)
        py = self.fresh("a_" + fq)
        params = self.param_types(d.params, sc, {})
        asc = Scope(sc)
        pnames = []
        outs = []
        seen_dirless = False
        for (pname, dirn, pt), p in zip(params, d.params):
            ppy = "a_" + _ident(pname)
            pnames.append(ppy)
            asc.add(pname, Sym("var", pt, code=ppy, lv=dirn != "in"), p.pos)
            if dirn is None:
                seen_dirless = True
                if not isinstance(pt, (BitT, BoolT)) and not (isinstance(pt, EnumT) and pt.base):
                    raise P4Error(p.pos, f"action parameter '{pname}' must be bit<N>, int<N> or bool, not {pt}")
            elif seen_dirless:
                raise P4Error(p.pos, "directional action parameters must come before directionless ones")
            if dirn in ("out", "inout") and not isinstance(pt, (StructLikeT, StackT)):
                outs.append(ppy)
        ad = ActionDef(d, fq, py, params, sc)
        sc.add(d.name, Sym("action", decl=ad), d.pos)
        saved, saved_hoist = getattr(self, "out", None), self.hoist
        self.out = o = Py(1)
        o.w(f"def {py}(C{''.join(', ' + p for p in pnames)}):")
        o.level += 1
        self.hoist = {}
        actx = Ctx("action", ret="(" + ", ".join(outs) + ",)" if outs else None, control=prefix)
        self.block(d.body.stmts, asc, actx)
        if outs:
            o.w(f"return {actx.ret}")
        o.lines[1:1] = self.hoist_lines(o.level)
        self.build.lines += o.lines
        self.out = saved
        self.hoist = saved_hoist
        return ad

    def action_info(self, ad):
        if ad.fq not in self.actions_used:
            ps = []
            for pname, d, pt in ad.params:
                if d is None:
                    ps.append(ParamInfo(pname, self.width_of(pt)))
            self.actions_used[ad.fq] = ActionInfo(ad.fq, tuple(ps), tuple("@" + a.name for a in ad.decl.annos))
        return self.actions_used[ad.fq]

    def gen_instance(self, ld, sc, prefix):
        t = self.resolve_type(ld.type, sc)
        fq = _fq(ld.annos, prefix, ld.name)
        if isinstance(t, BlockT):
            if t.decl.kind != "Control":
                raise P4Error(ld.pos, f"instantiating {t.decl.kind.lower()} {t.name} here is not supported")
            if ld.args:
                raise P4Error(ld.pos, "control constructor arguments are not supported by softswitch")
            fn = self.gen_control(t.decl, fq)
            sc.add(ld.name, Sym("ctlinst", decl=t.decl, code=fn), ld.pos)
            return
        if not isinstance(t, ExternT):
            raise P4Error(ld.pos, f"cannot instantiate {t}")
        name = t.name
        inst = {"type": t, "fq": fq}
        if name == "register":
            check_arity(ld.pos, "register", ld.args, 1)
            if not t.targs:
                raise P4Error(ld.pos, "register needs its element type: register<bit<W>>(size)")
            el = t.targs[0]
            if not isinstance(el, BitT):
                raise P4Error(ld.pos, f"register elements must be bit<W> or int<W>, not {el}")
            size = self.const_value(ld.args[0], sc, BitT(32))
            if size <= 0:
                raise P4Error(ld.args[0].pos, "register size must be positive")
            inst["size"] = size
            inst["code"] = self.fresh("R_" + fq)
            self.build.w(f"{inst['code']} = RT.register_values({fq!r})")
            self.info.registers.append(RegisterInfo(fq, el.width, size, el.signed))
        elif name == "counter":
            check_arity(ld.pos, "counter", ld.args, 2)
            size = self.const_value(ld.args[0], sc, BitT(32))
            unit = self.const_enum(self.expr(ld.args[1], sc), "CounterType", ld.args[1].pos, "the counter type")
            inst["size"] = size
            inst["code"] = self.fresh("CN_" + fq)
            self.build.w(f"{inst['code']} = RT.counter({fq!r})")
            self.info.counters.append(CounterInfo(fq, size, unit))
        elif name == "direct_counter":
            check_arity(ld.pos, "direct_counter", ld.args, 1)
            unit = self.const_enum(self.expr(ld.args[0], sc), "CounterType", ld.args[0].pos, "the counter type")
            inst["code"] = None
            self.direct_counters[fq] = [unit, None, ld.pos]
        else:
            raise P4Error(ld.pos, f"extern {name} is not supported by softswitch")
        sc.add(ld.name, Sym("extern", t, extra=inst), ld.pos)

    # ------------------------------------------------------------------ tables
    def gen_table(self, d, sc, prefix):
        saved_hoist, self.hoist = self.hoist, None
        try:
            self._gen_table(d, sc, prefix)
        finally:
            self.hoist = saved_hoist

    def _gen_table(self, d, sc, prefix):
        fq = _fq(d.annos, prefix, d.name)
        td = TableDef(d, fq, self.fresh("t_" + fq))
        props = d.props
        for pn, p in props.items():
            if pn not in ("key", "actions", "default_action", "size", "counters", "entries", "support_timeout"):
                raise P4Error(p.pos, f"table property '{pn}' is not supported by softswitch")
        if "actions" not in props:
            raise P4Error(d.pos, f"table {d.name} has no actions property")
        keys, key_codes = [], []
        self.out = Py(2)
        for k in props["key"].value if "key" in props else []:
            e = self.val(self.expr(k.expr, sc), k.expr.pos)
            if k.match_kind not in self.match_kinds:
                raise P4Error(k.mkpos, f"undeclared match kind '{k.match_kind}'")
            if k.match_kind not in MATCH_KINDS:
                raise P4Error(k.mkpos, f"match kind '{k.match_kind}' is not supported by softswitch")
            t = e.type
            if isinstance(t, BoolT):
                w, code = 1, f"(1 if {e.code} else 0)"
            elif isinstance(t, BitT):
                w, code = t.width, (f"({e.code} & {_mask(t.width)})" if t.signed else e.code)
            elif isinstance(t, EnumT) and t.base is not None:
                w, code = t.base.width, e.code
            elif isinstance(t, ErrorT):
                w, code = 32, e.code
            else:
                raise P4Error(k.expr.pos, f"a table key must be bit<N>, int<N> or bool, not {t}")
            a = find_annotation(k.annos, "name")
            kname = a.args[0] if a and a.args else expr_text(k.expr)
            keys.append(KeyInfo(kname, k.match_kind, w))
            key_codes.append(code)
        if sum(1 for k in keys if k.match_kind == "lpm") > 1:
            raise P4Error(d.pos, f"table {d.name} has more than one lpm key")
        refs = []
        for ar in props["actions"].value:
            s = sc.lookup(ar.name)
            if s is None:
                raise P4Error(ar.pos, f"undeclared name '{ar.name}'")
            if s.kind != "action":
                raise P4Error(ar.pos, f"'{ar.name}' is not an action")
            ad = s.decl
            if ad.fq in td.actions:
                raise P4Error(ar.pos, f"action {ar.name} is listed twice in table {d.name}")
            ndir = sum(1 for p in ad.params if p[1] is not None)
            if len(ar.args) != ndir:
                if ndir == 0:
                    raise P4Error(
                        ar.pos,
                        f"action {ar.name} has no directional parameters to bind in a table's "
                        f"actions list (its parameters come from the control plane)",
                    )
                raise P4Error(
                    ar.pos,
                    f"action {ar.name} in table {d.name} must bind its {ndir} directional "
                    f"parameter(s) ({', '.join(p[0] for p in ad.params[:ndir])}), "
                    f"got {len(ar.args)} argument(s)",
                )
            if ndir:
                td.bound[ad.fq] = self.bind_action_args(ar, ad, ndir, sc, fq)
            td.actions[ad.fq] = ad
            scope = "TABLE_AND_DEFAULT"
            if find_annotation(ar.annos, "defaultonly") or find_annotation(ad.decl.annos, "defaultonly"):
                scope = "DEFAULT_ONLY"
            elif find_annotation(ar.annos, "tableonly") or find_annotation(ad.decl.annos, "tableonly"):
                scope = "TABLE_ONLY"
            refs.append(ActionRef(ad.fq, scope))
            self.action_info(ad)

        def action_call(ar, what):
            s = sc.lookup(ar.name)
            if s is None or s.kind != "action":
                raise P4Error(ar.pos, f"undeclared action '{ar.name}'")
            ad = s.decl
            if ad.fq not in td.actions:
                raise P4Error(ar.pos, f"{what} {ar.name} is not in the actions of table {d.name}")
            params = [p for p in ad.params if p[1] is None]
            ndir = len(ad.params) - len(params)
            if len(ar.args) != len(ad.params) and not (ndir and len(ar.args) == len(params)):
                raise P4Error(
                    ar.pos, f"wrong number of arguments to '{ar.name}': expected {len(ad.params)}, got {len(ar.args)}"
                )
            # the directional arguments repeat the binding of the actions list (p4c requires the same ones)
            data_args = ar.args[len(ar.args) - len(params) :]
            vals = []
            for (pname, _, pt), a in zip(params, data_args):
                e = self.coerce(
                    self.val(self.expr(a, sc), a.pos),
                    pt,
                    a.pos,
                    lambda got, want, pname=pname: f"argument '{pname}' of '{ar.name}' must be {want}, got {got}",
                )
                if e.const is None:
                    raise P4Error(a.pos, f"argument '{pname}' of '{ar.name}' must be a constant here")
                v = e.const
                if isinstance(v, bool):
                    v = int(v)
                if isinstance(pt, BitT) and pt.signed:
                    v &= _mask(pt.width)
                vals.append(v)
            return ad, tuple(vals)

        if "default_action" in props:
            p = props["default_action"]
            dad, dargs = action_call(p.value, "default action")
            ref = [r for r in refs if r.name == dad.fq][0]
            if ref.scope == "TABLE_ONLY":
                raise P4Error(p.value.pos, f"action {p.value.name} is @tableonly: it cannot be the default action")
            default, const_default = dad.fq, p.const
        else:
            s = self.g.lookup("NoAction")
            if s is None or s.kind != "action":
                raise P4Error(d.pos, f"table {d.name} has no default_action and NoAction is not declared")
            td.actions.setdefault(s.decl.fq, s.decl)
            self.action_info(s.decl)
            default, dargs, const_default = "NoAction", (), False
        size = 1024
        if "size" in props:
            size = self.const_value(props["size"].value, sc, INFINT)
            if size <= 0:
                raise P4Error(props["size"].pos, "table size must be positive")
        dc = None
        if "counters" in props:
            ce = props["counters"].value
            s = sc.lookup(ce.name) if ce.kind == "Name" else None
            if s is None or s.kind != "extern" or s.type.name != "direct_counter":
                raise P4Error(ce.pos, f"counters of table {d.name} must name a direct_counter instance")
            dc = s.extra["fq"]
            rec = self.direct_counters[dc]
            if rec[1] is not None and rec[1] != fq:
                raise P4Error(ce.pos, f"direct_counter {dc} is already attached to table {rec[1]}")
            rec[1] = fq
        entries = []
        is_const = False
        if "entries" in props:
            is_const = props["entries"].const
            prio_auto = len(props["entries"].value)
            for i, en in enumerate(props["entries"].value):
                ks = en.keyset
                items = ks.items if ks.kind == "Tuple" else [ks]
                if ks.kind == "Default" and len(keys) != 1:
                    items = [ks] * len(keys)
                if len(items) != len(keys):
                    raise P4Error(ks.pos, f"entry has {len(items)} key values, table {d.name} has {len(keys)} keys")
                matches = tuple(self.entry_match(k, it, sc) for k, it in zip(keys, items))
                ead, eargs = action_call(Node("ActionRef", en.apos, name=en.action, args=en.args, annos=[]), "action")
                ref = [r for r in refs if r.name == ead.fq][0]
                if ref.scope == "DEFAULT_ONLY":
                    raise P4Error(en.apos, f"action {en.action} is @defaultonly: it cannot be used in an entry")
                needs_prio = any(k.match_kind in ("ternary", "range", "optional") for k in keys)
                if en.priority is not None:
                    prio = self.const_value(en.priority, sc, INFINT)
                else:
                    prio = (prio_auto - i) if needs_prio else None
                entries.append(ConstEntry(matches, ead.fq, eargs, prio))
        self.info.tables.append(
            TableInfo(
                fq,
                tuple(keys),
                tuple(refs),
                default,
                tuple(dargs),
                bool(const_default),
                tuple(entries),
                is_const,
                size,
                dc,
                tuple("@" + a.name for a in d.annos),
            )
        )
        tv = self.fresh("T_" + fq)
        b = self.build
        b.w(f"{tv} = RT.table({fq!r})")
        fns = ", ".join(f"{k!r}: {td.bound.get(k, ad.pyname)}" for k, ad in td.actions.items())
        b.w(f"{tv}.bind({{{fns}}})")
        b.w(f"def {td.pyname}(C):")
        if not key_codes:
            kc = "None"
        elif len(key_codes) == 1:
            kc = key_codes[0]
        else:
            kc = "(" + ", ".join(key_codes) + ")"
        b.w(f"    r = {tv}.lookup({kc})")
        b.w("    r.fn(C, *r.args)")
        b.w("    return r")
        sc.add(d.name, Sym("table", decl=td), d.pos)
        self.table_defs.append(td)

    def bind_action_args(self, ar, ad, ndir, sc, table_fq):
        """`actions = { a(x); }`: a wrapper that passes the bound (directional) arguments before the
        control-plane action data, writing out/inout results back like a direct call does."""
        name = ad.fq.rsplit(".", 1)[-1]
        args = self.check_args(name, ad.params[:ndir], ar.args, sc, ar.pos)
        codes, outs = [], []
        for (pname, dirn, pt), a in zip(ad.params, args):
            codes.append(f"{a.code}.copy()" if isinstance(pt, (StructLikeT, StackT)) and dirn == "in" else a.code)
            if dirn in ("out", "inout") and not isinstance(pt, (StructLikeT, StackT)):
                outs.append(a.code)
        wpy = self.fresh("b_" + table_fq + "_" + name)
        call = f"{ad.pyname}(C{''.join(', ' + c for c in codes)}, *d)"
        b = self.build
        b.w(f"def {wpy}(C, *d):")
        b.w(f"    {', '.join(outs)}, = {call}" if outs else f"    {call}")
        return wpy

    def entry_match(self, key, it, sc):
        w = key.bitwidth
        ty = BitT(w)
        mk = key.match_kind

        def cv(x):
            e = self.val(self.expr(x, sc), x.pos)
            if isinstance(e.type, BoolT) and e.const is not None:
                return int(e.const)
            if isinstance(e.type, EnumT) or isinstance(e.type, ErrorT):
                return e.const
            e = self.coerce(
                e,
                ty,
                x.pos,
                lambda got, want: f"entry value of type {got} does not match key {key.name} of type {want}",
            )
            if e.const is None:
                raise P4Error(x.pos, "table entry values must be constants")
            return e.const & _mask(w)

        if it.kind == "Default":
            if mk == "exact":
                raise P4Error(it.pos, f"key {key.name} is exact: an entry cannot leave it as a wildcard")
            return ("dontcare",)
        if it.kind == "Mask":
            v, m = cv(it.value), cv(it.mask)
            if mk == "lpm":
                plen = bin(m).count("1")
                if m != (_mask(plen) << (w - plen)):
                    raise P4Error(it.pos, f"mask 0x{m:x} of lpm key {key.name} is not a prefix")
                return ("lpm", v & m, plen)
            if mk != "ternary":
                raise P4Error(it.pos, f"key {key.name} is {mk}: a masked value ('&&&') needs a ternary key")
            return ("ternary", v & m, m)
        if it.kind == "Range":
            if mk != "range":
                raise P4Error(it.pos, f"key {key.name} is {mk}: a range ('..') needs a range key")
            return ("range", cv(it.lo), cv(it.hi))
        v = cv(it)
        if mk == "exact":
            return ("exact", v)
        if mk == "lpm":
            return ("lpm", v, w)
        if mk == "ternary":
            return ("ternary", v, _mask(w))
        if mk == "range":
            return ("range", v, v)
        return ("optional", v, False)
