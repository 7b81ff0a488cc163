"""C code of the externs: v1model's register, counter and meter methods and extern functions (mark_to_drop,
hash, checksums, digest, clone/resubmit/recirculate, truncate, random, assert/assume, log_msg) and TNA's
extern objects (Register, RegisterAction, Hash, Random, Checksum), over the runtime functions of
softswitch/native/include/ss_program.h. Each emitter is registered in the extern table
(softswitch/extern_table.py).

Registers are read and written in place (`p->registers[i].data` holds the elements in the smallest of
1/2/4/8/16 bytes, native order; a register in a group of n interleaved ones, descriptor.register_groups,
has its element i at data[i * n]); an index out of bounds reads 0 and writes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ir
from ..arch.tna import HASH_ALGORITHMS as TNA_HASH_ALGORITHMS
from ..extern_table import EXTERNS
from .expressions import ExpressionEmitter, Scope
from .layout import TypeLayout, flatten_field_list, pack_items
from .values import U64, U128, convert, element_bytes, mask_code, value_type, width_of
from .writer import CWriter, Unsupported, member, position_text, string_literal

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

    # ---------------------------------------------------------------- dispatch
    def method(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        emitter = EXTERNS.method_emitter("c", call.instance.kind, call.method)
        if emitter is None:
            raise Unsupported(f"{call.instance.kind}.{call.method}", call.position)
        emitter(self, out, call, scope)

    def function(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        emitter = EXTERNS.function_emitter("c", call.function)
        if emitter is None:
            raise Unsupported(f"the extern {call.function}", call.position)
        emitter(self, out, call, scope)

    # ---------------------------------------------------------------- v1model's extern objects
    @EXTERNS.method("c", "register", "read", "write")
    def register_access(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        instance = call.instance
        args = {a.name: a.value for a in call.arguments}
        element = instance.type.type_arguments[0]
        size = instance.constructor_arguments[0]
        assert isinstance(size, ir.Constant)
        ctype = ELEMENT_TYPES[element_bytes(width_of(element))]
        i = self.x.temp("i")
        place = self.register_element(instance, ctype, i, scope, call)
        index = list(args.values())[1] if call.method == "read" else list(args.values())[0]
        with out.block(""):
            out.write(f"{U64} {i} = {self.u64(index, scope, 'register index')};")
            if call.method == "read":
                result = list(args.values())[0]
                target = value_type(result.type)
                loaded = convert(place, U128 if ctype == U128 else U64, target)
                self.statements.store(out, result, f"{i} < {size.value} ? {loaded} : 0", scope)
            else:
                value = list(args.values())[1]
                out.write(f"if ({i} < {size.value}) {place} = ({ctype}){self.value(value, scope)};")

    def register_element(
        self, instance: ir.ExternInstance, ctype: str, i: str, scope: Scope, call: ir.ExternMethodCall
    ) -> str:
        """The C l-value of element `i` of a register (interleaved with its group's, descriptor.register_groups;
        in a lane loop, lane j uses the group's register member + j * step)."""
        data, member = self.register_data(instance, ctype, scope)
        stride = self.names.register_strides.get(instance.qualified_name, 1)
        site = scope.lane_sites.get(id(call))
        if site is not None:
            return f"{data}[{i} * {stride} + {scope.lane_term(member, site.step)}]"
        if stride == 1:
            return f"{data}[{i}]"
        return f"{data}[{i} * {stride}]" if member == 0 else f"{data}[{i} * {stride} + {member}]"

    @EXTERNS.method("c", "counter", "count")
    def counter_count(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        index = self.u64(call.arguments[0].value, scope, "counter index")
        out.write(f"ss_counter_count(p, {self.names.counter_ids[call.instance.qualified_name]}, {index});")

    @EXTERNS.method("c", "direct_counter", "count")
    def direct_counter_count(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        out.write("/* direct_counter.count(): the table counts its hits */")

    @EXTERNS.method("c", "meter", "execute_meter")
    def meter_execute(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        index = self.u64(call.arguments[0].value, scope, "meter index")
        meter = self.names.meter_ids[call.instance.qualified_name]
        self.statements.store(out, call.arguments[1].value, f"ss_meter_execute(p, {meter}, {index})", scope)

    @EXTERNS.method("c", "direct_meter", "read")
    def direct_meter_read(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        """read(out result): the colour the table's hit marked."""
        meter = self.names.meter_ids[call.instance.qualified_name]
        self.statements.store(out, call.arguments[0].value, f"ss_direct_meter_read(p, {meter})", scope)

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

    # ---------------------------------------------------------------- TNA's extern objects (arch/tna.py)
    # A value-giving method's last argument, `__result`, is where the value goes (absent when the program
    # does not use it). A Register is stored as ProgramInfo describes it: bit<W> elements as they are, a
    # struct of two halves as one word with its first field high.
    @EXTERNS.method("c", "RegisterAction", "execute")
    def register_action_execute(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        """execute(index): the element read, apply(value, rv) run, the element written back, rv the value
        (rv starts at 0). An index outside the register touches nothing and gives 0."""
        register, apply = call.instance.register, call.instance.apply_action
        assert register is not None and apply is not None
        element = register.type.type_arguments[0]
        halves = element.fields if isinstance(element, ir.StructType) else None
        half_width = ir.field_width(halves[0].type) if halves else 0
        ctype = ELEMENT_TYPES[element_bytes(2 * half_width if halves else width_of(element))]
        result = _result(call)
        i, value, rv = self.x.temp("i"), self.x.temp("value"), self.x.temp("rv")
        place = self.register_element(register, ctype, i, scope, call)
        arguments = [f"&{value}"]
        with out.block(""):
            out.write(f"{U64} {i} = {self.u64(call.arguments[0].value, scope, 'register index')};")
            with out.block(f"if ({i} < {_constant(register.constructor_arguments[0])})"):
                if halves:
                    high, low = (member(f.name) for f in halves)
                    half = mask_code(half_width)
                    out.write(f"{self.layout.type_name(element)} {value};")
                    out.write(f"{value}.{high} = ({U64}){place} >> {half_width} & {half};")
                    out.write(f"{value}.{low} = ({U64}){place} & {half};")
                else:
                    out.write(f"{value_type(element)} {value} = {place};")
                if len(apply.parameters) == 2:
                    out.write(f"{value_type(apply.parameters[1].type)} {rv} = 0;")
                    arguments.append(f"&{rv}")
                out.write(f"(void){self.names.functions[apply]}(p, C, {', '.join(arguments)});")
                if halves:
                    word = f"(({U64}){value}.{high} & {half}) << {half_width} | (({U64}){value}.{low} & {half})"
                    out.write(f"{place} = ({ctype})({word});")
                else:
                    out.write(f"{place} = ({ctype}){value};")
                if result is not None and len(apply.parameters) == 2:
                    self.statements.store(out, result, rv, scope)
            if result is not None:
                with out.block("else"):
                    self.statements.store(out, result, "0", scope)

    @EXTERNS.method("c", "Register", "read", "write")
    def tna_register_access(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        register = call.instance
        element = register.type.type_arguments[0]
        if not isinstance(element, ir.BitType):
            raise Unsupported("Register.read/write of a struct register: use a RegisterAction", call.position)
        ctype = ELEMENT_TYPES[element_bytes(element.width)]
        size = _constant(register.constructor_arguments[0])
        i = self.x.temp("i")
        place = self.register_element(register, ctype, i, scope, call)
        result = _result(call)
        with out.block(""):
            out.write(f"{U64} {i} = {self.u64(call.arguments[0].value, scope, 'register index')};")
            if call.method == "write":
                out.write(f"if ({i} < {size}) {place} = ({ctype}){self.value(call.arguments[1].value, scope)};")
            elif result is not None:
                loaded = convert(place, U128 if ctype == U128 else U64, value_type(result.type))
                self.statements.store(out, result, f"{i} < {size} ? {loaded} : 0", scope)

    @EXTERNS.method("c", "Hash", "get")
    def hash_get(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        """get(data): the algorithm over the data's bits (MSB first, zero bits up to a byte), cut to O's width."""
        result = _result(call)
        if result is None:
            return
        width = width_of(call.instance.type.type_arguments[0])
        if width > 64:
            raise Unsupported("a Hash of more than 64 bits", call.position)
        algorithm = HASH_ALGORITHMS[TNA_HASH_ALGORITHMS[_member_name(call.instance.constructor_arguments[0])]]
        with out.block(""):
            buffer, nbytes = self.serialise(out, call.arguments[0].value, scope)
            self.statements.store(out, result, f"ss_hash_extern({algorithm}, {buffer}, {nbytes}, 0, 0, {width})", scope)

    @EXTERNS.method("c", "Random", "get")
    def random_get(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        result = _result(call)
        if result is None:
            return
        width = width_of(call.instance.type.type_arguments[0])
        if width > 64:
            raise Unsupported("a Random of more than 64 bits", call.position)
        self.statements.store(out, result, f"ss_random(p, 0, {mask_code(width)})", scope)

    @EXTERNS.method("c", "Checksum", "update")
    def checksum_update(self, out: CWriter, call: ir.ExternMethodCall, scope: Scope) -> None:
        """update(data[, zeros_as_ones]) in a deparser: the Internet checksum of the fields (0 as 0xFFFF
        when zeros_as_ones)."""
        result = _result(call)
        if result is None:
            return
        total = self.x.temp("csum")
        with out.block(""):
            buffer, nbytes = self.serialise(out, call.arguments[0].value, scope)
            out.write(f"{U64} {total} = ss_csum16({buffer}, {nbytes}) & {mask_code(width_of(result.type))};")
            if len(call.arguments) == 3:
                out.write(f"if ({total} == 0 && {self.value(call.arguments[1].value, scope)}) {total} = 0xFFFF;")
            self.statements.store(out, result, total, scope)

    # ---------------------------------------------------------------- v1model's extern functions
    @EXTERNS.function("c", "mark_to_drop")
    def mark_to_drop(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        sm = self.x.place(call.arguments[0].value, scope)
        out.write(f"{sm}.egress_spec = {DROP_PORT};")
        out.write(f"{sm}.mcast_grp = 0;")

    @EXTERNS.function("c", "random")
    def random(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        result, low, high = (a.value for a in call.arguments)
        if width_of(result.type) > 64:
            raise Unsupported("random() of more than 64 bits", call.position)
        code = f"ss_random(p, {self.value(low, scope)}, {self.value(high, scope)})"
        self.statements.store(out, result, code, scope)

    @EXTERNS.function("c", "clone", "clone_preserving_field_list", "clone3")
    def clone(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        values = [a.value for a in call.arguments]
        clone_type = _enum_member(values[0], call)
        if clone_type not in CLONE_TYPES:
            raise Unsupported(f"clone type {clone_type}", call.position)
        session = self.u64(values[1], scope, "clone session")
        if call.function == "clone3":
            field_list = self.field_list_id(call)
        elif call.function == "clone_preserving_field_list":
            field_list = f"(int32_t){self.value(values[2], scope)}"
        else:
            field_list = "SS_NO_FIELD_LIST"
        out.write(f"ss_clone(p, {CLONE_TYPES[clone_type]}, (uint32_t){session}, {field_list});")

    @EXTERNS.function("c", "resubmit_preserving_field_list", "recirculate_preserving_field_list")
    def preserving_field_list(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        function = "ss_resubmit" if call.function.startswith("resubmit") else "ss_recirculate"
        out.write(f"{function}(p, (int32_t){self.value(call.arguments[0].value, scope)});")

    @EXTERNS.function("c", "resubmit", "recirculate")
    def resubmit_recirculate(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        out.write(f"ss_{call.function}(p, {self.field_list_id(call)});")

    @EXTERNS.function("c", "truncate")
    def truncate(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        out.write(f"ss_truncate(p, (uint32_t){self.u64(call.arguments[0].value, scope, 'truncate length')});")

    @EXTERNS.function("c", "assert", "assume")
    def assert_(self, out: CWriter, call: ir.ExternFunctionCall, scope: Scope) -> None:
        where = string_literal(position_text(call))
        out.write(f"if (!{self.value(call.arguments[0].value, scope)}) ss_assert_failed(p, {where});")

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

    @EXTERNS.function("c", "hash")
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

    @EXTERNS.function(
        "c", "verify_checksum", "update_checksum", "verify_checksum_with_payload", "update_checksum_with_payload"
    )
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

    @EXTERNS.function("c", "digest")
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

    @EXTERNS.function("c", "log_msg")
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


def _member_name(e: ir.Expression) -> str:
    assert isinstance(e, ir.Constant) and isinstance(e.type, ir.EnumType)
    return e.type.member_name(e.value)  # type: ignore[arg-type]


def _constant(e: ir.Expression) -> int:
    assert isinstance(e, ir.Constant) and isinstance(e.value, int)
    return e.value


def _result(call: ir.ExternMethodCall) -> ir.Expression | None:
    """A TNA method's `__result` argument (where its value goes), None when the program does not use it."""
    if call.arguments and call.arguments[-1].name == "__result":
        return call.arguments[-1].value
    return None
