"""Python code of v1model's externs: register/counter methods and the extern functions (mark_to_drop,
hash, checksums, digest, clone, resubmit, recirculate, ...), over the runtime's per-packet state `PS`
and helpers `RT` (softswitch.runtime.v1model)."""

from __future__ import annotations

from .. import ir
from ..errors import UnsupportedConstruct
from .expressions import ExpressionEmitter
from .frames import Frame
from .writer import NameAllocator, SourceWriter, class_name, field_attribute, mask

DROP_PORT = 511


class ExternEmitter:
    def __init__(self, expressions: ExpressionEmitter, fresh: NameAllocator):
        self.expressions = expressions
        self.names = expressions.names
        self.fresh = fresh.fresh

    def method(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame) -> None:
        instance = call.instance
        args = [self.expressions.code(a.value, frame) for a in call.arguments]
        state = self.names.externs.get(instance)
        if instance.kind == "register":
            size = instance.constructor_arguments[0]
            assert isinstance(size, ir.Constant)
            index = self.fresh("i")
            if call.method == "read":
                result, index_code = args
                out.write(f"{index} = {index_code}")
                out.write(f"{result} = {state}[{index}] if {index} < {size.value} else 0")
            else:
                index_code, value = args
                out.write(f"{index} = {index_code}")
                out.write(f"if {index} < {size.value}: {state}[{index}] = {value}")
        elif instance.kind == "counter":
            out.write(f"{state}.count({args[0]})")
        elif instance.kind == "meter":  # execute_meter(index, out result)
            index_code, result = args
            out.write(f"{result} = {state}.execute({index_code}) & {mask(call.arguments[1].value.type.width)}")
        elif instance.kind == "direct_meter":  # read(out result): the color the table's hit marked
            out.write(f"{args[0]} = {state}.color & {mask(call.arguments[0].value.type.width)}")
        elif instance.kind in ("RegisterAction", "Register", "Hash", "Random", "Checksum"):
            self.tna_method(out, call, frame, args)
        else:  # direct_counter.count(): the table counts its hits
            out.write("pass  # direct_counter.count(): the table counts its hits")

    def tna_method(self, out: SourceWriter, call: ir.ExternMethodCall, frame: Frame, args: list[str]) -> None:
        """TNA externs (arch/tna.py). A value-giving method's last argument, `__result`, is where the value
        goes (absent when the program does not use it)."""
        instance = call.instance
        names = [a.name for a in call.arguments]
        result = args[-1] if names and names[-1] == "__result" else None
        if instance.kind == "RegisterAction":
            self.register_action(out, instance, args[0], result)
        elif instance.kind == "Register":
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
        elif instance.kind == "Hash":
            if result is None:
                return
            (width,) = (t.width for t in instance.type.type_arguments[:1])  # type: ignore[attr-defined]
            bits, data_width = self.field_list(call.arguments[0].value, frame, out)
            algorithm = _enum_name(instance.constructor_arguments[0])
            name = {"IDENTITY": "identity", "CRC16": "crc16", "CRC32": "crc32", "XOR16": "xor16"}[algorithm]
            out.write(f"{result} = compute_hash({name!r}, {bits}, {data_width}, 0, 0, {width})")
        elif instance.kind == "Random":
            if result is not None:
                width = instance.type.type_arguments[0].width  # type: ignore[attr-defined]
                out.write(f"{result} = RT.random(0, {mask(width)})")
        else:  # Checksum.update(data[, zeros_as_ones]) in a deparser: the Internet checksum of the fields
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

    def function(self, out: SourceWriter, call: ir.ExternFunctionCall, frame: Frame) -> None:
        name = call.function
        values = [a.value for a in call.arguments]

        def code(e: ir.Expression) -> str:
            return self.expressions.code(e, frame)

        if name not in ("clone3", "resubmit", "recirculate"):  # their data argument is not evaluated
            for v in values:
                code(v)  # reach the objects in argument order, as the arguments are evaluated

        if name == "mark_to_drop":
            metadata = code(values[0])
            out.write(f"{metadata}.egress_spec = {DROP_PORT}")
            out.write(f"{metadata}.mcast_grp = 0")
        elif name == "hash":
            result, algorithm, base, data, maximum = values
            assert isinstance(result.type, ir.BitType)
            bits, width = self.field_list(data, frame, out)
            out.write(
                f"{code(result)} = compute_hash({_enum_name(algorithm)!r}, {bits}, {width}, {code(base)}, "
                f"{code(maximum)}, {result.type.width})"
            )
        elif name.endswith("_checksum") or name.endswith("_checksum_with_payload"):
            self.checksum(out, call, frame)
        elif name == "random":
            result, low, high = values
            out.write(f"{code(result)} = RT.random({code(low)}, {code(high)})")
        elif name == "digest":
            self.digest(out, call, frame)
        elif name in ("clone", "clone_preserving_field_list", "clone3"):
            clone_type = _enum_name(values[0])
            if name == "clone3":
                field_list = repr(call.field_list)
            else:
                field_list = code(values[2]) if len(values) == 3 else "None"
            out.write(f"PS.clone = ({clone_type!r}, {code(values[1])}, {field_list})")
        elif name in ("resubmit_preserving_field_list", "recirculate_preserving_field_list"):
            out.write(f"PS.{name.split('_')[0]} = {code(values[0])}")
        elif name in ("resubmit", "recirculate"):
            out.write(f"PS.{name} = {-1 if call.field_list is None else repr(call.field_list)}")
        elif name == "truncate":
            out.write(f"PS.truncate = {code(values[0])}")
        elif name in ("assert", "assume"):
            out.write(f"if not {code(values[0])}: RT.assert_failed({str(call.position)!r})")
        elif name == "log_msg":
            items: list[str] = []
            if len(values) == 2:
                data = values[1]
                items = [code(i) for i in data.items] if isinstance(data, ir.ListExpression) else [code(data)]
            out.write(
                f"RT.log_msg({code(values[0])}, ({', '.join(items)},))"
                if items
                else f"RT.log_msg({code(values[0])}, ())"
            )
        else:
            raise UnsupportedConstruct(f"the Python back end has no code for extern {name}")

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


def _constant(e: ir.Expression) -> int:
    assert isinstance(e, ir.Constant) and isinstance(e.value, int)
    return e.value


def _word_half(code: str, t: ir.Type) -> str:
    """One half of a packed register word as a field value (int<W> as a signed Python int)."""
    assert isinstance(t, ir.BitType)
    if t.signed:
        return f"((({code}) & {t.mask}) ^ {1 << (t.width - 1)}) - {1 << (t.width - 1)}"
    return f"(({code}) & {t.mask})"
