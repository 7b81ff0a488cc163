"""Python code of the externs: v1model's register/counter/meter methods and extern functions (mark_to_drop,
hash, checksums, digest, clone, resubmit, recirculate, ...) and TNA's extern objects (Register,
RegisterAction, Hash, Random, Checksum), over the runtime's per-packet state `PS` and helpers `RT`
(softswitch.runtime.v1model). Each emitter is registered in the extern table (softswitch/extern_table.py)."""

from __future__ import annotations

from .. import ir
from ..arch.tna import HASH_ALGORITHMS as TNA_HASH_ALGORITHMS
from ..errors import UnsupportedConstruct
from ..extern_table import EXTERNS
from .expressions import ExpressionEmitter
from .frames import Frame
from .writer import NameAllocator, SourceWriter, class_name, field_attribute, mask

DROP_PORT = 511


class ExternEmitter:
    """Dispatches extern calls through the extern table (softswitch/extern_table.py), where the emitters
    below are registered for the "python" back end. A method emitter is given the arguments' code
    (`args`); a function emitter reaches its arguments through `self.code`."""

    def __init__(self, expressions: ExpressionEmitter, fresh: NameAllocator):
        self.expressions = expressions
        self.names = expressions.names
        self.fresh = fresh.fresh

    def code(self, e: ir.Expression, frame: Frame) -> str:
        return self.expressions.code(e, frame)

    def method(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame) -> None:
        emitter = EXTERNS.method_emitter("python", call.instance.kind, call.method)
        if emitter is None:
            raise UnsupportedConstruct(f"the Python back end has no code for {call.instance.kind}.{call.method}")
        args = [self.expressions.code(a.value, frame) for a in call.arguments]
        emitter(self, out, call, frame, args)

    def function(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        name = call.function
        emitter = EXTERNS.function_emitter("python", name)
        if emitter is None:
            raise UnsupportedConstruct(f"the Python back end has no code for extern {name}")
        if name not in ("clone3", "resubmit", "recirculate"):  # their data argument is not evaluated
            for a in call.arguments:
                self.code(a.value, frame)  # reach the objects in argument order, as the arguments are evaluated
        emitter(self, out, call, frame)

    # ---------------------------------------------------------------- v1model's extern objects
    @EXTERNS.method("python", "register", "read", "write")
    def register_access(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]) -> None:
        instance = call.instance
        state = self.names.externs.get(instance)
        size = _constant(instance.constructor_arguments[0])
        index = self.fresh("i")
        if call.method == "read":
            result, index_code = args
            out.write(f"{index} = {index_code}")
            out.write(f"{result} = {state}[{index}] if {index} < {size} else 0")
        else:
            index_code, value = args
            out.write(f"{index} = {index_code}")
            out.write(f"if {index} < {size}: {state}[{index}] = {value}")

    @EXTERNS.method("python", "counter", "count")
    def counter_count(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]) -> None:
        out.write(f"{self.names.externs[call.instance]}.count({args[0]})")

    @EXTERNS.method("python", "direct_counter", "count")
    def direct_counter_count(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]):
        out.write("pass  # direct_counter.count(): the table counts its hits")

    @EXTERNS.method("python", "meter", "execute_meter")
    def meter_execute(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]) -> None:
        index_code, result = args
        state = self.names.externs[call.instance]
        out.write(f"{result} = {state}.execute({index_code}) & {mask(call.arguments[1].value.type.width)}")

    @EXTERNS.method("python", "direct_meter", "read")
    def direct_meter_read(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]) -> None:
        """read(out result): the colour the table's hit marked."""
        state = self.names.externs[call.instance]
        out.write(f"{args[0]} = {state}.color & {mask(call.arguments[0].value.type.width)}")

    # ---------------------------------------------------------------- TNA's extern objects (arch/tna.py)
    # A value-giving method's last argument, `__result`, is where the value goes (absent when the
    # program does not use it).
    @EXTERNS.method("python", "RegisterAction", "execute")
    def register_action_execute(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]):
        self.register_action(out, call.instance, args[0], _result(call, args))

    @EXTERNS.method("python", "Register", "read", "write")
    def tna_register_access(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]):
        instance = call.instance
        result = _result(call, args)
        register_state = self.names.externs[instance]
        size = _constant(instance.constructor_arguments[0])
        element = instance.type.type_arguments[0]
        if not isinstance(element, ir.BitType):
            raise UnsupportedConstruct("Register.read/write of a struct register: use a RegisterAction")
        index = self.fresh("i")
        out.write(f"{index} = {args[0]}")
        if call.method == "write":
            out.write(f"if {index} < {size}: {register_state}[{index}] = {args[1]}")
        elif result is not None:
            out.write(f"{result} = {register_state}[{index}] if {index} < {size} else 0")

    @EXTERNS.method("python", "Hash", "get")
    def hash_get(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]) -> None:
        result = _result(call, args)
        if result is None:
            return
        instance = call.instance
        (width,) = (t.width for t in instance.type.type_arguments[:1])  # type: ignore[attr-defined]
        bits, data_width = self.field_list(call.arguments[0].value, frame, out)
        name = TNA_HASH_ALGORITHMS[_enum_name(instance.constructor_arguments[0])]
        out.write(f"{result} = compute_hash({name!r}, {bits}, {data_width}, 0, 0, {width})")

    @EXTERNS.method("python", "Random", "get")
    def random_get(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]) -> None:
        result = _result(call, args)
        if result is not None:
            width = call.instance.type.type_arguments[0].width  # type: ignore[attr-defined]
            out.write(f"{result} = RT.random(0, {mask(width)})")

    @EXTERNS.method("python", "Checksum", "update")
    def checksum_update(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]) -> None:
        """update(data[, zeros_as_ones]) in a deparser: the Internet checksum of the fields."""
        result = _result(call, args)
        if result is None:
            return
        bits, data_width = self.field_list(call.arguments[0].value, frame, out)
        out.write(f"{result} = csum16_bits({bits}, {data_width})")
        if len(call.arguments) == 3:
            out.write(f"if {result} == 0 and {args[1]}: {result} = 0xFFFF")

    def register_action(self, out: SourceWriter, instance: ir.ExternInstance, index_code: str, result: str | None):
        """execute(index): the entry read, apply(value, rv) run, the entry written back, rv the value. An
        index outside the register touches nothing and gives 0."""
        register = instance.register
        apply = instance.apply_action
        assert register is not None and apply is not None
        register_state = self.names.externs[register]
        size = _constant(register.constructor_arguments[0])
        function = self.names.functions[apply]
        has_result = len(apply.parameters) == 2
        element = register.type.type_arguments[0]
        index = self.fresh("i")
        out.write(f"{index} = {index_code}")
        out.write(f"if {index} < {size}:")
        with out.indented():
            extra = ", 0" if has_result else ""
            if isinstance(element, ir.StructType):
                value, word = self.fresh("v"), self.fresh("w")
                (high, low) = element.fields
                width = ir.field_width(high.type)
                out.write(f"{word} = {register_state}[{index}]")
                out.write(f"{value} = {class_name(element)}()")
                out.write(f"{value}.{field_attribute(high.name)} = {_word_half(f'({word} >> {width})', high.type)}")
                out.write(f"{value}.{field_attribute(low.name)} = {_word_half(word, low.type)}")
                call = f"{function}(C, {value}{extra})"
                if has_result and result is not None:
                    out.write(f"{result} = {call}[0]")
                else:
                    out.write(call)
                out.write(
                    f"{register_state}[{index}] = (({value}.{field_attribute(high.name)} & {mask(width)}) << {width})"
                    f" | ({value}.{field_attribute(low.name)} & {mask(width)})"
                )
            else:
                results = self.fresh("r")
                out.write(f"{results} = {function}(C, {register_state}[{index}]{extra})")
                out.write(f"{register_state}[{index}] = {results}[0]")
                if has_result and result is not None:
                    out.write(f"{result} = {results}[1]")
        if result is not None:
            out.write(f"else: {result} = 0")

    # ---------------------------------------------------------------- v1model's extern functions
    @EXTERNS.function("python", "mark_to_drop")
    def mark_to_drop(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        metadata = self.code(call.arguments[0].value, frame)
        out.write(f"{metadata}.egress_spec = {DROP_PORT}")
        out.write(f"{metadata}.mcast_grp = 0")

    @EXTERNS.function("python", "hash")
    def hash(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        result, algorithm, base, data, maximum = (a.value for a in call.arguments)
        assert isinstance(result.type, ir.BitType)
        bits, width = self.field_list(data, frame, out)
        code = self.code
        out.write(
            f"{code(result, frame)} = compute_hash({_enum_name(algorithm)!r}, {bits}, {width}, "
            f"{code(base, frame)}, {code(maximum, frame)}, {result.type.width})"
        )

    @EXTERNS.function("python", "random")
    def random(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        result, low, high = (self.code(a.value, frame) for a in call.arguments)
        out.write(f"{result} = RT.random({low}, {high})")

    @EXTERNS.function("python", "clone", "clone_preserving_field_list", "clone3")
    def clone(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        values = [a.value for a in call.arguments]
        clone_type = _enum_name(values[0])
        if call.function == "clone3":
            field_list = repr(call.field_list)
        else:
            field_list = self.code(values[2], frame) if len(values) == 3 else "None"
        out.write(f"PS.clone = ({clone_type!r}, {self.code(values[1], frame)}, {field_list})")

    @EXTERNS.function("python", "resubmit_preserving_field_list", "recirculate_preserving_field_list")
    def preserving_field_list(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        out.write(f"PS.{call.function.split('_')[0]} = {self.code(call.arguments[0].value, frame)}")

    @EXTERNS.function("python", "resubmit", "recirculate")
    def resubmit_recirculate(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        out.write(f"PS.{call.function} = {-1 if call.field_list is None else repr(call.field_list)}")

    @EXTERNS.function("python", "truncate")
    def truncate(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        out.write(f"PS.truncate = {self.code(call.arguments[0].value, frame)}")

    @EXTERNS.function("python", "assert", "assume")
    def assert_(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        condition = self.code(call.arguments[0].value, frame)
        out.write(f"if not {condition}: RT.assert_failed({str(call.position)!r})")

    @EXTERNS.function("python", "log_msg")
    def log_msg(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        values = [a.value for a in call.arguments]
        items: list[str] = []
        if len(values) == 2:
            data = values[1]
            items = (
                [self.code(i, frame) for i in data.items]
                if isinstance(data, ir.ListExpression)
                else [self.code(data, frame)]
            )
        fmt = self.code(values[0], frame)
        out.write(f"RT.log_msg({fmt}, ({', '.join(items)},))" if items else f"RT.log_msg({fmt}, ())")

    @EXTERNS.function(
        "python",
        "verify_checksum",
        "update_checksum",
        "verify_checksum_with_payload",
        "update_checksum_with_payload",
    )
    def checksum(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        condition, data, checksum, algorithm = (a.value for a in call.arguments)
        assert isinstance(checksum.type, ir.BitType)
        bits, width = self.field_list(data, frame, out)
        algorithm_name = _enum_name(algorithm)
        checksum_mask = mask(checksum.type.width)
        if call.function.endswith("_with_payload"):
            value = f"(HASHES[{algorithm_name!r}](bits_to_bytes({bits}, {width}) + PS.payload) & {checksum_mask})"
        elif algorithm_name == "csum16":
            value = f"(csum16_bits({bits}, {width}) & {checksum_mask})"
        else:
            value = f"(HASHES[{algorithm_name!r}](bits_to_bytes({bits}, {width})) & {checksum_mask})"
        checksum_code = self.expressions.code(checksum, frame)
        out.write(f"if {self.expressions.code(condition, frame)}:")
        if call.function.startswith("verify"):
            out.write(f"    if {value} != {checksum_code}: PS.sm.checksum_error = 1")
        else:
            out.write(f"    {checksum_code} = {value}")

    @EXTERNS.function("python", "digest")
    def digest(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        data = call.arguments[1].value
        t = call.type_arguments[0]
        assert isinstance(t, ir.StructType)
        if isinstance(data, ir.ListExpression):
            values = [self.expressions.code(item, frame) for item in data.items]
        else:
            base = self.expressions.code(data, frame)
            values = [f"{base}.{field_attribute(f.name)}" for f in t.fields]
        fields = ", ".join(f"{f.name!r}: {v}" for f, v in zip(t.fields, values, strict=True))
        out.write(f"PS.digests.append(({t.name!r}, {{{fields}}}))")

    def field_list(self, e: ir.Expression, frame: Frame, out: SourceWriter) -> tuple[str, int | str]:
        """(code of an int holding the bits, number of bits) of a field list, header, struct or field:
        the fields' bits concatenated MSB first (int<W> as two's complement, bool as one bit, a varbit
        field as its current bits). With a varbit field, both are variables assigned in out."""
        parts: list[tuple[str, int | str]] = []

        def add(code: str, t: ir.Type, item: ir.Expression | None) -> None:
            if isinstance(t, ir.VarbitType):  # (width, bits)
                parts.append((f"{code}[1]", f"{code}[0]"))
            elif isinstance(t, ir.BitType):
                parts.append((f"({code} & {t.mask})" if t.signed else code, t.width))
            elif isinstance(t, ir.BoolType):
                parts.append((f"(1 if {code} else 0)", 1))
            elif isinstance(t, ir.EnumType) and t.underlying is not None:
                parts.append((code, t.underlying.width))
            elif isinstance(item, ir.ListExpression):
                for i in item.items:
                    add(self.expressions.code(i, frame), i.type, i)
            else:
                assert isinstance(t, ir.StructLikeType)
                for f in t.fields:
                    add(f"{code}.{field_attribute(f.name)}", f.type, None)

        if isinstance(e, ir.ListExpression):
            add("", e.type, e)
        else:
            add(self.expressions.code(e, frame), e.type, e)
        if any(isinstance(w, str) for _, w in parts):
            bits, width = self.fresh("bits"), self.fresh("nbits")
            out.write(f"{bits}, {width} = concat_bits(({''.join(f'({c}, {w}), ' for c, w in parts)}))")
            return bits, width
        total = sum(w for _, w in parts if isinstance(w, int))
        shift = total
        codes = []
        for code, w in parts:
            assert isinstance(w, int)
            shift -= w
            codes.append(f"({code} << {shift})" if shift else code)
        return ("(" + " | ".join(codes) + ")" if codes else "0"), total


def _enum_name(e: ir.Expression) -> str:
    assert isinstance(e, ir.Constant) and isinstance(e.type, ir.EnumType)
    return e.type.member_name(e.value)  # type: ignore[arg-type]


def _result(call: ir.ExternMethodCall, args: list[str]) -> str | None:
    """The code of a TNA method's `__result` argument (where its value goes), None when unused."""
    names = [a.name for a in call.arguments]
    return args[-1] if names and names[-1] == "__result" else None


def _constant(e: ir.Expression) -> int:
    assert isinstance(e, ir.Constant) and isinstance(e.value, int)
    return e.value


def _word_half(code: str, t: ir.Type) -> str:
    """One half of a packed register word as a field value (int<W> as a signed Python int)."""
    assert isinstance(t, ir.BitType)
    if t.signed:
        return f"((({code}) & {t.mask}) ^ {1 << (t.width - 1)}) - {1 << (t.width - 1)}"
    return f"(({code}) & {t.mask})"
