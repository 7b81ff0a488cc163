"""C types of the program's headers, structs and header stacks, and the functions that move headers
between packet bytes and those types.

    typedef struct { uint16_t ss_valid; uint64_t dst_addr; ... } H_ethernet_t;    a header
    typedef struct { H_ethernet_t ethernet; ... } S_headers_t;                   a struct
    typedef struct { uint32_t ss_next; H_hop_t ss_e[4]; } K_hop_t_4;             a header stack
    typedef struct { H_a_t a; H_b_t b; } U_ab_t;                                 a header_union

standard_metadata_t is the runtime's `ss_standard_metadata` (same field names). Per header type,
`extract_<H>(h, b)` fills a header from the bytes at b (its start on a byte boundary),
`extract_bits_<H>(h, data, off)` from any bit offset (only generated where the parser may leave a
byte boundary), and `emit_<H>(out, h)` writes its bytes and returns how many. Field offsets are
compile-time constants, so each field is one load (or store), a byte swap and a shift.
"""

from __future__ import annotations

from .. import ir
from .lanes import MIN_LANES
from .values import U128, storage_type, value_type, width_of
from .writer import CWriter, NameAllocator, Unsupported, identifier, member

STANDARD_METADATA = "ss_standard_metadata"
MIN_IO_LOOP = 16  # fields of a run that header I/O moves in a loop


class TypeLayout:
    """The C type of every P4 type the program uses; declarations in `types`, header functions in
    `functions` (both written on first use, dependencies first)."""

    def __init__(
        self,
        program: ir.Program,
        names: NameAllocator,
        unaligned_parsing: bool,
        write_flags: dict[tuple[str, str], str] | None = None,
    ):
        self.program = program
        # (struct type name, field) -> a hidden uint8_t member of the struct set to 1 when the field is
        # written (TNA: whether ingress chose a unicast port; statements.store sets it)
        self.write_flags = write_flags or {}
        self.names = names
        self.unaligned_parsing = unaligned_parsing
        self.types = CWriter()
        self.functions = CWriter()
        self._declared: dict[object, str] = {}
        self._header_io: set[str] = set()
        self._field_arrays: dict[tuple[str, str, str], tuple[str, int]] = {}
        self.standard_metadata = program.pipeline.standard_metadata_type
        for t in program.types:
            self.type_name(t)

    # ---------------------------------------------------------------- type names
    def type_name(self, t: ir.Type) -> str:
        """The C type name of a header, struct or stack type (declared on first use)."""
        if isinstance(t, ir.StructLikeType) and t == self.standard_metadata:
            return STANDARD_METADATA
        key = (type(t).__name__, str(t))
        name = self._declared.get(key)
        if name is not None:
            return name
        if isinstance(t, ir.HeaderType):
            name = self.names.fresh("H_" + t.name)
            self._struct(name, [("uint16_t", "ss_valid")] + self._field_members(t))
        elif isinstance(t, ir.StructType):
            name = self.names.fresh("S_" + t.name)
            flags = [("uint8_t", flag) for (struct, _), flag in self.write_flags.items() if struct == t.name]
            self._struct(name, self._field_members(t) + flags)
        elif isinstance(t, ir.HeaderUnionType):  # a struct of headers (the front end keeps one valid)
            name = self.names.fresh("U_" + t.name)
            self._struct(name, self._members(t))
        elif isinstance(t, ir.HeaderStackType):
            element = self.type_name(t.element)
            name = self.names.fresh(f"K_{t.element.name}_{t.size}")
            self._struct(name, [("uint32_t", "ss_next"), (element, f"ss_e[{t.size}]")])
        else:
            raise Unsupported(f"a variable of type {t}")
        self._declared[key] = name
        return name

    def _members(self, t: ir.StructLikeType) -> list[tuple[str, str]]:
        return [(self.storage(f.type), member(f.name)) for f in t.fields]

    def _field_members(self, t: ir.StructLikeType) -> list[tuple[str, str]]:
        """The members of a header or struct; a run of at least MIN_LANES consecutive scalar fields of
        one type is also an array (an anonymous union of the fields and `T ss_lanes_<first>[n]`, same
        offsets), so a lane loop (lanes.py) and header I/O can index the fields."""
        members = self._members(t)
        out: list[tuple[str, str]] = []
        start = 0

        def kind(i: int) -> tuple[str, str]:
            return (members[i][0], str(t.fields[i].type))

        for end in range(1, len(members) + 1):
            if end < len(members) and kind(end) == kind(start) and not ir.is_object(t.fields[end].type):
                continue
            run = members[start:end]
            if len(run) >= MIN_LANES and not ir.is_object(t.fields[start].type):
                ctype = run[0][0]
                array = f"ss_lanes_{run[0][1]}"
                fields = " ".join(f"{c} {m};" for c, m in run)
                out.append(("union", f"{{ struct {{ {fields} }}; {ctype} {array}[{len(run)}]; }}"))
                for i, f in enumerate(t.fields[start:end]):
                    self._field_arrays[(type(t).__name__, str(t), f.name)] = (array, i)
            else:
                out += run
            start = end
        return out

    def write_flag(self, target: ir.Expression) -> str | None:
        """The hidden member a write of `target` (a field of a struct with write_flags) sets, if any."""
        if not self.write_flags or not isinstance(target, ir.FieldAccess):
            return None
        base_type = target.base.type
        if not isinstance(base_type, ir.StructType):
            return None
        return self.write_flags.get((base_type.name, target.field_name))

    def field_array(self, t: ir.StructLikeType, field_name: str) -> tuple[str, int] | None:
        """(array member, index) aliasing a field of a header or struct type, if it is in such a run."""
        self.type_name(t)
        return self._field_arrays.get((type(t).__name__, str(t), field_name))

    def _struct(self, name: str, members: list[tuple[str, str]]) -> None:
        with self.types.block("typedef struct"):
            for ctype, field in members or [("uint8_t", "ss_empty")]:
                self.types.write(f"{ctype} {field};")
        self.types.lines[-1] = f"}} {name};"
        self.types.write("")

    def storage(self, t: ir.Type) -> str:
        """The C type of a header/struct member of type t."""
        if ir.is_object(t):
            return self.type_name(t)
        if isinstance(t, ir.VarbitType):
            return self.varbit_type(t)
        return storage_type(t)

    def varbit_type(self, t: ir.VarbitType) -> str:
        """`varbit<N>`: its width and its bits, MSB first from bits[0], zero after the width (so two values
        are equal when their widths and all their bytes are)."""
        name = f"ss_varbit_{t.max_width}"
        if name not in self._declared.values():
            self._struct(name, [("uint32_t", "width"), ("uint8_t", f"bits[{max(1, (t.max_width + 7) // 8)}]")])
            self._declared[("VarbitType", str(t))] = name
        return name

    def variable(self, t: ir.Type, position: object = None) -> str:
        """The C type of a variable (local, parameter copy, control local) of type t."""
        if ir.is_object(t):
            return self.type_name(t)
        return value_type(t, position)

    # ---------------------------------------------------------------- header I/O
    def header_io(self, t: ir.HeaderType) -> str:
        """The suffix of the extract_/emit_ functions of header type t (written on first use)."""
        suffix = identifier(t.name)
        if suffix in self._header_io:
            return suffix
        self._header_io.add(suffix)
        if t.varbit_field is not None:
            self._varbit_header_io(t, suffix)
            return suffix
        cname = self.type_name(t)
        out = self.functions
        nbytes = t.width // 8
        out.write(f"/* {t.name}: {nbytes} bytes */")
        variants = [(f"extract_{suffix}({cname} *h, const uint8_t *b)", "ss_field_get", "b, {offset}")]
        if self.unaligned_parsing:
            signature = f"extract_bits_{suffix}({cname} *h, const uint8_t *data, uint64_t off)"
            variants.append((signature, "ss_bits_get", "data, off + {offset}"))
        runs = self._byte_runs(t)
        aligned = True
        for signature, get, at in variants:
            opening = "SS_LANE_FUNCTION void" if runs and aligned else "static inline void"
            with out.block(f"{opening} {signature}"):
                skip = 0
                for f in t.fields:
                    if skip:
                        skip -= 1
                        continue
                    run = runs.get(f.name) if aligned else None
                    if run is not None:  # whole bytes, one after another: a load and byte swap per lane
                        array, count, nbytes_each = run
                        with out.block(f"for (uint32_t i = 0; i < {count}; i++)"):
                            load = f"ss_load_be(b + {f.offset // 8} + i * {nbytes_each}, {nbytes_each})"
                            out.write(f"h->{array}[i] = {load};")
                        skip = count - 1
                        continue
                    w = ir.field_width(f.type)
                    out.write(
                        f"h->{member(f.name)} = {get}{'128' if w > 64 else ''}({at.format(offset=f.offset)}, {w});"
                    )
                out.write("h->ss_valid = 1;")
            aligned = False
        opening = "SS_LANE_FUNCTION uint32_t" if runs else "static inline uint32_t"
        with out.block(f"{opening} emit_{suffix}(uint8_t *o, const {cname} *h)"):
            items: list[tuple[str, int]] = []
            skip = 0
            for f in t.fields:
                if skip:
                    skip -= 1
                    continue
                run = runs.get(f.name)
                if run is None:
                    items.append((f"h->{member(f.name)}", ir.field_width(f.type)))
                    continue
                pack_items(out, "o", items, items_offset=f.offset - sum(w for _, w in items))
                items = []
                array, count, nbytes_each = run
                with out.block(f"for (uint32_t i = 0; i < {count}; i++)"):
                    out.write(f"ss_store_be(o + {f.offset // 8} + i * {nbytes_each}, {nbytes_each}, h->{array}[i]);")
                skip = count - 1
            if items:
                pack_items(out, "o", items, items_offset=t.width - sum(w for _, w in items))
            out.write(f"return {nbytes};")
        out.write("")
        return suffix

    def _varbit_header_io(self, t: ir.HeaderType, suffix: str) -> None:
        """A header with a varbit field: `extract_<H>(h, data, off, bits)` reads it from any bit offset
        with `bits` bits for the varbit field (the caller checked the length), `emit_<H>(o, h)` writes
        its bits and zero bits up to a whole byte (as BMv2 and the Python back end), returning the bytes."""
        cname = self.type_name(t)
        varbit = t.varbit_field
        assert varbit is not None
        out = self.functions
        out.write(f"/* {t.name}: {t.width} bits and a varbit field */")
        with out.block(f"static void extract_{suffix}({cname} *h, const uint8_t *data, uint64_t off, uint32_t bits)"):
            out.write("uint64_t at = off;")
            for f in t.fields:
                name = member(f.name)
                if f is varbit:
                    out.write(f"memset(h->{name}.bits, 0, sizeof h->{name}.bits);")
                    out.write(f"h->{name}.width = bits;")
                    with out.block("for (uint32_t i = 0; i < bits; i += 8)"):
                        out.write("uint32_t take = bits - i < 8 ? bits - i : 8;")
                        out.write(f"ss_bits_put(h->{name}.bits, i, take, ss_bits_get(data, at + i, take));")
                    out.write("at += bits;")
                    continue
                w = ir.field_width(f.type)
                get = "ss_bits_get128" if w > 64 else "ss_bits_get"
                out.write(f"h->{name} = {get}(data, at, {w});")
                out.write(f"at += {w};")
            out.write("h->ss_valid = 1;")
        with out.block(f"static uint32_t emit_{suffix}(uint8_t *o, const {cname} *h)"):
            out.write(f"uint32_t total = {t.width} + h->{member(varbit.name)}.width;")
            out.write("memset(o, 0, (total + 7) / 8);")
            out.write("uint64_t at = 0;")
            for f in t.fields:
                name = member(f.name)
                if f is varbit:
                    with out.block(f"for (uint32_t i = 0; i < h->{name}.width; i += 8)"):
                        out.write(f"uint32_t take = h->{name}.width - i < 8 ? h->{name}.width - i : 8;")
                        out.write(f"ss_bits_put(o, at + i, take, ss_bits_get(h->{name}.bits, i, take));")
                    out.write(f"at += h->{name}.width;")
                    continue
                w = ir.field_width(f.type)
                if w > 64:
                    raise Unsupported(f"a field wider than 64 bits in header {t.name} with a varbit field")
                out.write(f"ss_bits_put(o, at, {w}, h->{name});")
                out.write(f"at += {w};")
            out.write("return (total + 7) / 8;")
        out.write("")

    def _byte_runs(self, t: ir.HeaderType) -> dict[str, tuple[str, int, int]]:
        """First field name -> (array, fields, bytes each) of every run of at least MIN_IO_LOOP fields
        aliased by an array (field_array), all of one width of 8, 16, 32 or 64 bits on whole bytes: header
        I/O moves such a run in a loop (one load or store and byte swap per field, vectorised where the CPU
        can; shorter runs stay inline code)."""
        runs: dict[str, tuple[str, int, int]] = {}
        fields = list(t.fields)
        i = 0
        while i < len(fields):
            f = fields[i]
            found = self.field_array(t, f.name)
            if found is None or found[1] != 0:
                i += 1
                continue
            array = found[0]
            count = 1
            while i + count < len(fields) and (self.field_array(t, fields[i + count].name) or ("",))[0] == array:
                count += 1
            width = ir.field_width(f.type)
            same_width = all(ir.field_width(g.type) == width for g in fields[i : i + count])
            if count >= MIN_IO_LOOP and same_width and width in (8, 16, 32, 64) and f.offset % 8 == 0:
                runs[f.name] = (array, count, width // 8)
            i += count
        return runs


def invalidate(place: str, t: ir.Type) -> list[str]:
    """Statements making a header (or every member of a header_union) at `place` invalid."""
    if isinstance(t, ir.HeaderUnionType):
        return [f"{place}.{member(f.name)}.ss_valid = 0;" for f in t.fields]
    return [f"{place}.ss_valid = 0;"]


def pack_items(out: CWriter, buffer: str, items: list[tuple[str, int]], items_offset: int = 0) -> int:
    """Writes the values `items` ((code, width) pairs, MSB first) one after another from bit
    `items_offset` (a multiple of 8) of `buffer`, zero bits after the last up to a byte boundary; returns
    the number of bytes. Fields that together end on a byte boundary are combined into one number and
    stored with one big-endian store."""
    runs: list[list[tuple[str, int, int]]] = []  # (code, width, bit position)
    current: list[tuple[str, int, int]] = []
    position = items_offset
    for code, width in items:
        current.append((code, width, position))
        position += width
        if position % 8 == 0:
            runs.append(current)
            current = []
    if current:
        runs.append(current)
    assert items_offset % 8 == 0
    for run in runs:
        start = run[0][2]
        end = (run[-1][2] + run[-1][1] + 7) // 8 * 8
        nbytes = (end - start) // 8
        at = f"{buffer} + {start // 8}" if start else buffer
        if end - start > 128:
            out.write(f"memset({at}, 0, {nbytes});")
            for code, width, bit in run:
                put = "ss_bits_put128" if width > 64 else "ss_bits_put"
                out.write(f"{put}({at}, {bit - start}, {width}, {code});")
            continue
        wide = end - start > 64
        ctype = U128 if wide else "uint64_t"
        parts = []
        for code, width, bit in run:
            shift = end - (bit + width)
            value = f"({ctype}){code}"
            parts.append(f"{value} << {shift}" if shift else value)
        store = "ss_store_be128" if wide else "ss_store_be"
        out.write(f"{store}({at}, {nbytes}, {' | '.join(parts)});")
    return (position - items_offset + 7) // 8


def flatten_field_list(e: ir.Expression, value_of, varbits: bool = False) -> list[tuple[str, int]]:
    """(code, width) of each field of a field list, header, struct or single value, in order: what
    hash(), checksums and the like serialise (a header's validity is not part of it). With varbits, a
    varbit field is allowed and comes as (code of its struct, -its maximum width)."""
    items: list[tuple[str, int]] = []

    def add(x: ir.Expression) -> None:
        t = x.type
        if isinstance(x, ir.ListExpression):
            for item in x.items:
                add(item)
        elif isinstance(t, ir.StructLikeType):
            for f in t.fields:
                add(ir.FieldAccess(base=x, field_name=f.name, type=f.type, position=x.position))
        elif isinstance(t, (ir.BitType, ir.BoolType)) or (isinstance(t, ir.EnumType) and t.underlying is not None):
            items.append((value_of(x), width_of(t)))
        elif isinstance(t, ir.VarbitType) and varbits:
            items.append((value_of(x), -t.max_width))
        else:
            raise Unsupported(f"a field list item of type {t}", x.position)

    add(e)
    return items
