"""C code of v1model's externs: register, counter and meter methods, and the extern functions (mark_to_drop,
hash, checksums, digest, clone/resubmit/recirculate, truncate, random, assert/assume, log_msg), over the
runtime functions of softswitch/native/include/ss_program.h.

Registers are read and written in place (`p->registers[i].data` holds the elements in the smallest of
1/2/4/8/16 bytes, native order; a register in a group of n interleaved ones, descriptor.register_groups,
has its element i at data[i * n]); an index out of bounds reads 0 and writes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from .expressions import ExpressionEmitter, Scope
from .layout import TypeLayout, flatten_field_list, pack_items
from .values import U64, U128, convert, element_bytes, mask_code, value_type, width_of
from .writer import CWriter, Unsupported, position_text, string_literal

if TYPE_CHECKING:
    from .statements import StatementEmitter

DROP_PORT = 511
HASH_ALGORITHMS = {"crc16": "SS_HASH_CRC16", "crc32": "SS_HASH_CRC32", "csum16": "SS_HASH_CSUM16",
                   "xor16": "SS_HASH_XOR16", "identity": "SS_HASH_IDENTITY"}  # fmt: skip
CLONE_TYPES = {"I2E": "SS_CLONE_I2E", "E2E": "SS_CLONE_E2E"}
ELEMENT_TYPES = {1: "uint8_t", 2: "uint16_t", 4: "uint32_t", 8: "uint64_t", 16: U128}


class ExternEmitter:
    def __init__(self, expressions: ExpressionEmitter, layout: TypeLayout, statements: StatementEmitter):
        self.x = expressions
        self.layout = layout
        self.names = expressions.names
        self.statements = statements

    def value(self, e: ir.Expression, scope: Scope) -> str:
        return self.x.value(e, scope)

    def u64(self, e: ir.Expression, scope: Scope, what: str) -> str:
        """A value that the runtime takes as a uint64_t (indices, lengths, sessions...)."""
        if width_of(e.type) > 64:
            raise Unsupported(f"a {width_of(e.type)}-bit {what}", e.position)
        return self.value(e, scope)

    # ---------------------------------------------------------------- register, counter
    def method(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        instance = call.instance
        args = {a.name: a.value for a in call.arguments}
        if instance.kind == "register":
            element = instance.type.type_arguments[0]
            size = instance.constructor_arguments[0]
            assert isinstance(size, ir.Constant)
            ctype = ELEMENT_TYPES[element_bytes(width_of(element))]
            data, member = self.register_data(instance, ctype, scope)
            stride = self.names.register_strides.get(instance.qualified_name, 1)
            i = self.x.temp("i")
            element = f"{data}[{i}]" if stride == 1 else f"{data}[{i} * {stride} + {member}]"  # interleaved group
            if stride > 1 and member == 0:
                element = f"{data}[{i} * {stride}]"
            site = scope.lane_sites.get(id(call))
            if site is not None:  # a lane loop: lane j uses the group's register member + j * step
                element = f"{data}[{i} * {stride} + {scope.lane_term(member, site.step)}]"
            index = list(args.values())[1] if call.method == "read" else list(args.values())[0]
            with out.block(""):
                out.write(f"{U64} {i} = {self.u64(index, scope, 'register index')};")
                if call.method == "read":
                    result = list(args.values())[0]
                    target = value_type(result.type)
                    loaded = convert(element, U128 if ctype == U128 else U64, target)
                    self.statements.store(out, result, f"{i} < {size.value} ? {loaded} : 0", scope)
                elif call.method == "write":
                    value = list(args.values())[1]
                    out.write(f"if ({i} < {size.value}) {element} = ({ctype}){self.value(value, scope)};")
                else:
                    raise Unsupported(f"register.{call.method}", call.position)
        elif instance.kind == "counter" and call.method == "count":
            index = self.u64(call.arguments[0].value, scope, "counter index")
            out.write(f"ss_counter_count(p, {self.names.counter_ids[instance.qualified_name]}, {index});")
        elif instance.kind == "direct_counter" and call.method == "count":
            out.write("/* direct_counter.count(): the table counts its hits */")
        elif instance.kind == "meter" and call.method == "execute_meter":
            index = self.u64(call.arguments[0].value, scope, "meter index")
            meter = self.names.meter_ids[instance.qualified_name]
            self.statements.store(out, call.arguments[1].value, f"ss_meter_execute(p, {meter}, {index})", scope)
        elif instance.kind == "direct_meter" and call.method == "read":  # the colour the table's hit marked
            meter = self.names.meter_ids[instance.qualified_name]
            self.statements.store(out, call.arguments[0].value, f"ss_direct_meter_read(p, {meter})", scope)
        else:
            raise Unsupported(f"{instance.kind}.{call.method}", call.position)

    def register_data(self, instance: ir.ExternInstance, ctype: str, scope: Scope) -> tuple[str, int]:
        """The local of the function pointing at the elements of the register's group (its first
        register's data, read once per call: a pointer in a local survives the stores of the code around
        it, a pointer in memory would be re-read), and the register's place in the group (element i of
        member k is at [i * n + k]). One pointer per group, so every access to a group's memory in the
        function is based on it (blocks.py declares it `restrict` where that is defined)."""
        index = self.names.register_ids[instance.qualified_name]
        first = self.names.register_group_of[instance.qualified_name]
        scope.register_groups.setdefault(first, ctype)
        return f"register_{first}", index - first

    # ---------------------------------------------------------------- extern functions
    def function(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        name = call.function
        values = [a.value for a in call.arguments]
        if name == "mark_to_drop":
            sm = self.x.place(values[0], scope)
            out.write(f"{sm}.egress_spec = {DROP_PORT};")
            out.write(f"{sm}.mcast_grp = 0;")
        elif name == "hash":
            self.hash(out, call, scope)
        elif name in ("verify_checksum", "update_checksum", "verify_checksum_with_payload",
                      "update_checksum_with_payload"):  # fmt: skip
            self.checksum(out, call, scope)
        elif name == "random":
            result, low, high = values
            if width_of(result.type) > 64:
                raise Unsupported("random() of more than 64 bits", call.position)
            code = f"ss_random(p, {self.value(low, scope)}, {self.value(high, scope)})"
            self.statements.store(out, result, code, scope)
        elif name == "digest":
            self.digest(out, call, scope)
        elif name in ("clone", "clone_preserving_field_list", "clone3"):
            clone_type = _enum_member(values[0], call)
            if clone_type not in CLONE_TYPES:
                raise Unsupported(f"clone type {clone_type}", call.position)
            session = self.u64(values[1], scope, "clone session")
            if name == "clone3":
                field_list = self.field_list_id(call)
            elif name == "clone_preserving_field_list":
                field_list = f"(int32_t){self.value(values[2], scope)}"
            else:
                field_list = "SS_NO_FIELD_LIST"
            out.write(f"ss_clone(p, {CLONE_TYPES[clone_type]}, (uint32_t){session}, {field_list});")
        elif name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            function = "ss_resubmit" if name.startswith("resubmit") else "ss_recirculate"
            out.write(f"{function}(p, (int32_t){self.value(values[0], scope)});")
        elif name in ("resubmit", "recirculate"):
            out.write(f"ss_{name}(p, {self.field_list_id(call)});")
        elif name == "truncate":
            out.write(f"ss_truncate(p, (uint32_t){self.u64(values[0], scope, 'truncate length')});")
        elif name in ("assert", "assume"):
            where = string_literal(position_text(call))
            out.write(f"if (!{self.value(values[0], scope)}) ss_assert_failed(p, {where});")
        elif name == "log_msg":
            self.log_msg(out, call, scope)
        else:
            raise Unsupported(f"the extern {name}", call.position)

    def field_list_id(self, call: ir.ExternFunctionCall) -> str:
        if call.field_list is None:
            return "SS_NO_FIELD_LIST"
        return str(self.names.field_list_ids[call.field_list])

    def serialise(self, out: CWriter, data: ir.Expression, scope: Scope) -> tuple[str, int | str]:
        """A byte buffer holding a field list (MSB first, zero bits up to a byte); (name, length: a
        number, or the name of a variable holding it when a varbit field makes it vary)."""
        items = flatten_field_list(data, lambda e: self.value(e, scope), varbits=True)
        if any(w < 0 for _, w in items):
            return self.serialise_varying(out, items)
        buffer = self.x.temp("buf")
        total_bits = sum(w for _, w in items)
        nbytes = (total_bits + 7) // 8
        out.write(f"uint8_t {buffer}[{max(nbytes, 1)}];")
        pack_items(out, buffer, items)
        return buffer, nbytes

    def serialise_varying(self, out: CWriter, items: list[tuple[str, int]]) -> tuple[str, str]:
        """serialise() of a field list with varbit fields (width -N for varbit<N>): each field put at a
        bit position counted as the varbit fields' current widths add up."""
        buffer, position, nbytes = self.x.temp("buf"), self.x.temp("pos"), self.x.temp("nbytes")
        most = sum(abs(w) for _, w in items)
        out.write(f"uint8_t {buffer}[{max((most + 7) // 8, 1)}] = {{0}};")
        out.write(f"uint64_t {position} = 0;")
        for code, width in items:
            if width >= 0:
                put = "ss_bits_put128" if width > 64 else "ss_bits_put"
                out.write(f"{put}({buffer}, {position}, {width}, {code});")
                out.write(f"{position} += {width};")
                continue
            v, i = self.x.temp("vb"), self.x.temp("i")
            with out.block(""):
                out.write(f"const {self.layout.varbit_type(ir.VarbitType(-width))} {v} = {code};")
                with out.block(f"for (uint32_t {i} = 0; {i} < {v}.width; {i} += 8)"):
                    take = f"({v}.width - {i} < 8 ? {v}.width - {i} : 8)"
                    out.write(f"ss_bits_put({buffer}, {position} + {i}, {take}, {v}.bits[{i} >> 3] >> (8 - {take}));")
                out.write(f"{position} += {v}.width;")
        out.write(f"const uint32_t {nbytes} = (uint32_t)(({position} + 7) >> 3);")
        return buffer, nbytes

    def hash(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        result, algorithm, base, data, maximum = (a.value for a in call.arguments)
        width = width_of(result.type)
        if width > 64:
            raise Unsupported("hash() into more than 64 bits", call.position)
        algo = HASH_ALGORITHMS[_enum_member(algorithm, call)]
        with out.block(""):
            buffer, nbytes = self.serialise(out, data, scope)
            code = (
                f"ss_hash_extern({algo}, {buffer}, {nbytes}, {self.u64(base, scope, 'hash base')}, "
                f"{self.u64(maximum, scope, 'hash maximum')}, {width})"
            )
            self.statements.store(out, result, code, scope)

    def checksum(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        condition, data, checksum, algorithm = (a.value for a in call.arguments)
        width = width_of(checksum.type)
        if width > 64:
            raise Unsupported("a checksum field of more than 64 bits", call.position)
        algo = HASH_ALGORITHMS[_enum_member(algorithm, call)]
        with out.block(f"if ({self.value(condition, scope)})"):
            buffer, nbytes = self.serialise(out, data, scope)
            if call.function.endswith("_with_payload"):
                state = self.x.temp("h")
                out.write(f"ss_hash_state {state};")
                out.write(f"ss_hash_init(&{state}, {algo});")
                out.write(f"ss_hash_update(&{state}, {buffer}, {nbytes});")
                out.write(f"ss_hash_update(&{state}, p->payload, p->payload_len);")
                computed = f"(ss_hash_final(&{state}) & {mask_code(width)})"
            elif algo == "SS_HASH_CSUM16":
                computed = f"(ss_csum16({buffer}, {nbytes}) & {mask_code(width)})"
            else:
                computed = f"(ss_hash_bytes({algo}, {buffer}, {nbytes}) & {mask_code(width)})"
            if call.function.startswith("verify"):
                out.write(f"if ({computed} != {self.value(checksum, scope)}) p->sm.checksum_error = 1;")
            else:
                self.statements.store(out, checksum, computed, scope)

    def digest(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        data = call.arguments[1].value
        t = call.type_arguments[0]
        assert isinstance(t, ir.StructType)
        if isinstance(data, ir.ListExpression):
            items = list(data.items)
        else:
            items = [
                ir.FieldAccess(base=data, field_name=f.name, type=f.type, position=data.position) for f in t.fields
            ]
        words: list[str] = []
        for item in items:
            if ir.is_object(item.type):
                raise Unsupported("a digest field that is a header or struct", call.position)
            code = self.value(item, scope)
            if width_of(item.type) > 64:
                words += [f"({U64}){code}", f"({U64})({code} >> 64)"]
            else:
                words.append(code)
        v = self.x.temp("digest")
        with out.block(""):
            out.write(f"const {U64} {v}[{max(len(words), 1)}] = {{{', '.join(words) or '0'}}};")
            out.write(f"ss_digest(p, {self.names.digest_ids[t.name]}, {v});")

    def log_msg(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        values = [a.value for a in call.arguments]
        fmt = self.value(values[0], scope)
        items: list[ir.Expression] = []
        if len(values) == 2:
            data = values[1]
            items = list(data.items) if isinstance(data, ir.ListExpression) else [data]
        entries = []
        for item in items:
            t = item.type
            if ir.is_object(t) or width_of(t) > 64:
                raise Unsupported(f"log_msg of a {t} value", call.position)
            kind = (
                "SS_LOG_BOOL"
                if isinstance(t, ir.BoolType)
                else "SS_LOG_SIGNED"
                if getattr(t, "signed", False)
                else "SS_LOG_UNSIGNED"
            )
            entries.append(f"{{{kind}, {width_of(t)}, {self.value(item, scope)}}}")
        v = self.x.temp("log")
        with out.block(""):
            out.write(f"const ss_log_value {v}[{max(len(entries), 1)}] = {{{', '.join(entries) or '{0, 0, 0}'}}};")
            out.write(f"ss_log_msg(p, {fmt}, {len(entries)}, {v});")


def _enum_member(e: ir.Expression, call: ir.ExternFunctionCall) -> str:
    if not (isinstance(e, ir.Constant) and isinstance(e.type, ir.EnumType)):
        raise Unsupported(f"a {call.function} argument that is not a constant", call.position)
    return e.type.member_name(e.value)  # type: ignore[arg-type]
