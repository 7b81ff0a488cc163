"""Python code of v1model's externs: register/counter methods and the extern functions (mark_to_drop,
hash, checksums, digest, clone, resubmit, recirculate, ...), over the runtime's per-packet state `PS`
and helpers `RT` (softswitch.runtime.v1model)."""

from __future__ import annotations

from .. import ir
from ..errors import UnsupportedConstruct
from .expressions import ExpressionEmitter
from .frames import Frame
from .writer import NameAllocator, SourceWriter, field_attribute, mask

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
        else:  # direct_counter.count(): the table counts its hits
            out.write("pass  # direct_counter.count(): the table counts its hits")

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
            bits, width = self.field_list(data, frame)
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
        bits, width = self.field_list(data, frame)
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

    def field_list(self, e: ir.Expression, frame: Frame) -> tuple[str, int]:
        """(code of an int holding the bits, number of bits) of a field list, header, struct or field:
        the fields' bits concatenated MSB first (int<W> as two's complement, bool as one bit)."""
        parts: list[tuple[str, int]] = []

        def add(code: str, t: ir.Type, item: ir.Expression | None) -> None:
            if isinstance(t, ir.BitType):
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
        total = sum(w for _, w in parts)
        shift = total
        codes = []
        for code, w in parts:
            shift -= w
            codes.append(f"({code} << {shift})" if shift else code)
        return ("(" + " | ".join(codes) + ")" if codes else "0"), total


def _enum_name(e: ir.Expression) -> str:
    assert isinstance(e, ir.Constant) and isinstance(e.type, ir.EnumType)
    return e.type.member_name(e.value)  # type: ignore[arg-type]
