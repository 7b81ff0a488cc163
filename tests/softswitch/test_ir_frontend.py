"""The front end's IR: types and widths resolved, constants folded, implicit casts made explicit, every
expression typed, instances elaborated under their P4Info names: what a back end reads."""

import os

import pytest
from softswitch_testlib import PROGRAMS, v1, v1_ir

from softswitch import ir
from softswitch.compiler import compile_program, lower_program
from softswitch.frontend.errors import P4Error
from softswitch.ir.walk import block_nodes, walk

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DECLS = "header w_t { bit<8> a; bit<16> b; int<8> s; bit<8> c; }"
PARSER = "state start { pkt.extract(hdr.eth); pkt.extract(hdr.w); transition accept; }"


def ingress_ir(body, decls=DECLS, locals_="", **parts):
    parts.setdefault("hdr_fields", "w_t w;")
    return v1_ir(f"{locals_} apply {{ {body} }}", decls=decls, parser=PARSER, **parts)


def ingress_statements(body, **kw):
    return ingress_ir(body, **kw).pipeline.blocks["ingress"].body.statements


def assigned_value(body, **kw):
    (statement,) = ingress_statements(body, **kw)
    assert isinstance(statement, ir.Assign)
    return statement.value


# ---------------------------------------------------------------------------------------------- types
def test_header_fields_have_widths_and_bit_offsets():
    program = lower_program(os.path.join(PROGRAMS, "ipv4_router.p4"))
    ipv4 = next(t for t in program.headers if t.name == "ipv4_t")
    assert ipv4.width == 160
    layout = [(f.name, f.type, f.offset) for f in ipv4.fields]
    assert layout[:3] == [("version", ir.BitType(4), 0), ("ihl", ir.BitType(4), 4), ("diffserv", ir.BitType(8), 8)]
    assert layout[6] == ("fragOffset", ir.BitType(13), 51)  # after flags: bit<3> at 48
    assert layout[-1] == ("dstAddr", ir.BitType(32), 128)  # typedef ip4Addr_t resolved to bit<32>


def test_stacks_enums_and_errors_are_resolved():
    program = ingress_ir(
        "",
        decls=DECLS + " const bit<8> N = 3; enum bit<4> color_t { RED = 1, BLUE = 0xF } enum dir_t { UP, DOWN }"
        " error { MyOwnError }",
        hdr_fields="w_t w; w_t[N + 1] stack;",
    )
    headers = program.pipeline.headers_type
    assert headers.field_named("stack").type == ir.HeaderStackType(headers.field_named("w").type, 4)
    assert program.enums["color_t"].members == {"RED": 1, "BLUE": 15}
    assert program.enums["color_t"].underlying == ir.BitType(4)
    assert program.enums["dir_t"].members == {"UP": 0, "DOWN": 1} and program.enums["dir_t"].underlying is None
    assert program.errors["NoError"] == 0 and program.errors["StackOutOfBounds"] == 3
    assert program.errors["MyOwnError"] == len(program.errors) - 1 > 6  # after core.p4's errors


def test_every_expression_of_ina_p4_has_a_concrete_type():
    program = lower_program(os.path.join(ROOT, "p4src", "ina.p4"))
    count = 0
    for block in [*program.actions, *program.blocks()]:
        for node in block_nodes(block):
            if isinstance(node, ir.Expression):
                count += 1
                assert not isinstance(node.type, ir.TypeVariable), node
                if isinstance(node.type, ir.IntLiteralType):
                    assert isinstance(node, ir.Constant), node  # only constants lack a width
                if isinstance(node, ir.Binary) and node.op in ("+", "-", "*", "&", "|", "^"):
                    assert node.left.type == node.right.type == node.type, node
    assert count > 1000


# ---------------------------------------------------------------------------------------------- constants
@pytest.mark.parametrize(
    "expression,type_,value",
    [
        ("X + 10", ir.BitType(8), 4),  # const bit<8> X = 250: wraps modulo 2^8
        ("8w5 - 8w6", ir.BitType(8), 255),
        ("(bit<8>)(int<8>)-8s100", ir.BitType(8), 156),  # -100 as two's complement bits
        ("(bit<8>)((int<8>)8w200 >> 2)", ir.BitType(8), 0xF2),  # -56 >> 2 = -14, arithmetic
        ("(4w0xF ++ 4w1)", ir.BitType(8), 0xF1),
        ("16w0xABCD[11:4]", ir.BitType(8), 0xBC),
        ("8w250 |+| 8w10", ir.BitType(8), 255),
        ("(bit<8>)(-8s100 |-| 8s100)", ir.BitType(8), 0x80),  # saturates at -128
        ("(bit<8>)(1 << 9)", ir.BitType(8), 0),
        ("~8w0x0F", ir.BitType(8), 0xF0),
        ("X == 250 ? 8w1 : 8w2", ir.BitType(8), 1),
    ],
)
def test_constant_expressions_are_folded(expression, type_, value):
    folded = assigned_value(f"hdr.w.c = {expression};", decls=DECLS + " const bit<8> X = 250;")
    assert isinstance(folded, ir.Constant)
    assert (folded.type, folded.value) == (type_, value)


def test_integer_literals_get_the_width_of_the_other_operand():
    value = assigned_value("hdr.w.a = hdr.w.a + 300;")
    assert isinstance(value, ir.Binary) and value.type == ir.BitType(8)
    assert isinstance(value.right, ir.Constant) and (value.right.type, value.right.value) == (ir.BitType(8), 44)
    comparison = assigned_value("hdr.w.a = (hdr.w.s < -1) ? 8w1 : 8w0;").condition
    assert comparison.right.type == ir.BitType(8, signed=True) and comparison.right.value == -1


def test_conditional_with_constant_condition_keeps_only_the_chosen_branch():
    value = assigned_value("hdr.w.a = true ? hdr.w.c : 8w0;")
    assert isinstance(value, ir.FieldAccess) and value.field_name == "c"


def test_casts_and_slices_are_explicit_nodes_with_result_types():
    value = assigned_value(
        "hdr.w.b = (bit<16>)(bit<8>)hdr.w.s ++ hdr.w.a[3:0] ++ 12w0;", decls=DECLS.replace("bit<16> b", "bit<32> b")
    )
    assert value.type == ir.BitType(32)
    left = value.left
    assert isinstance(left, ir.Binary) and left.op == "++" and left.type == ir.BitType(20)
    widening = left.left
    assert isinstance(widening, ir.Cast) and widening.type == ir.BitType(16)
    assert isinstance(widening.operand, ir.Cast) and widening.operand.operand.type == ir.BitType(8, signed=True)
    assert isinstance(left.right, ir.Slice) and (left.right.high, left.right.low, left.right.type) == (
        3,
        0,
        ir.BitType(4),
    )


def test_last_index_is_next_index_minus_one_in_bit_32():
    """(lastIndex is for parsers only: a parser state reads it.)"""
    parser = "state start { pkt.extract(hdr.eth); hdr.w.a = (bit<8>)hdr.st.lastIndex; transition accept; }"
    program = v1_ir("apply { }", decls=DECLS, hdr_fields="w_t w; w_t[4] st;", parser=parser)
    (state,) = program.pipeline.blocks["parser"].states
    value = state.statements[1].value
    minus = value.operand
    assert isinstance(minus, ir.Binary) and minus.op == "-" and minus.type == ir.BitType(32)
    assert isinstance(minus.left, ir.StackNextIndex)


# ---------------------------------------------------------------------------------------------- references
def test_names_are_bound_to_declarations():
    program = ingress_ir(
        "bit<8> x = hdr.w.a; if (x == 1) { bit<8> x2 = x; hdr.w.c = x2; } set(x); t.apply();",
        locals_="bit<8> total = 7; action set(inout bit<8> v) { v = total; } "
        "table t { key = { hdr.w.a: exact; } actions = { NoAction; } }",
    )
    ingress = program.pipeline.blocks["ingress"]
    declaration, conditional, call, apply = ingress.body.statements
    x = declaration.variable
    assert (x.name, x.kind, x.type) == ("x", ir.VariableKind.LOCAL, ir.BitType(8))
    assert conditional.condition.left.variable is x
    inner = conditional.then.statements
    assert inner[0].initializer.variable is x and inner[1].value.variable is inner[0].variable
    action = call.call.action
    assert action is ingress.actions[0] and action.qualified_name == "I.set"
    assert call.call.arguments[0].direction == "inout" and call.call.arguments[0].value.variable is x
    total = ingress.variables[0].variable
    assert total.kind == ir.VariableKind.CONTROL_LOCAL and action.body.statements[0].value.variable is total
    assert apply.call.table is ingress.tables[0]


def test_each_control_instance_is_elaborated_with_its_own_tables():
    compiled = v1(
        "Counted() first; Counted() second; apply { first.apply(hdr); second.apply(hdr); }",
        decls="control Counted(inout headers_t h) { counter(4, CounterType.packets) hits; "
        "table t { key = { h.eth.etype: exact; } actions = { NoAction; } } apply { t.apply(); hits.count(0); } }",
    )
    ingress = compiled.ir.pipeline.blocks["ingress"]
    first, second = ingress.sub_controls
    assert (first.qualified_name, second.qualified_name) == ("I.first", "I.second")
    assert [t.qualified_name for t in first.tables + second.tables] == ["I.first.t", "I.second.t"]
    apply_first = ingress.body.statements[0].call
    assert isinstance(apply_first, ir.ControlApply) and apply_first.control is first
    assert [c.name for c in compiled.info.counters] == ["I.first.hits", "I.second.hits"]
    assert [t.name for t in compiled.info.tables] == ["I.first.t", "I.second.t"]


# ---------------------------------------------------------------------------------------------- tables, parsers
def test_tables_carry_keys_actions_defaults_entries_and_counters():
    program = ingress_ir(
        "t.apply();",
        locals_="direct_counter(CounterType.packets) hits; action fwd(bit<9> port) { sm.egress_spec = port; } "
        "action mark(out bit<8> v, bit<8> x) { v = x; } "
        '@name("forward") table t { key = { hdr.w.a: ternary @name("a"); hdr.w.s: exact; } '
        "actions = { fwd; mark(hdr.w.c); } default_action = fwd(3); counters = hits; size = 64; "
        "const entries = { (1 &&& 0xF, 2) : fwd(5); (_, -1) : mark(hdr.w.c, 9); } }",
    )
    ingress = program.pipeline.blocks["ingress"]
    (table,) = ingress.tables
    assert table.qualified_name == "I.forward" and table.size == 64
    assert [(k.name, k.match_kind, k.width) for k in table.keys] == [("a", "ternary", 8), ("hdr.w.s", "exact", 8)]
    assert isinstance(table.keys[1].expression, ir.FieldAccess) and table.keys[1].expression.type.signed
    fwd, mark = table.actions
    assert fwd.bound_arguments == () and [a.direction for a in mark.bound_arguments] == ["out"]
    assert (table.default_action.action, table.default_action.arguments) == (fwd.action, (3,))
    assert [(e.matches, e.action.name, e.arguments, e.priority) for e in table.entries] == [
        ((("ternary", 1, 0xF), ("exact", 2)), "fwd", (5,), 2),
        ((("dontcare",), ("exact", 0xFF)), "mark", (9,), 1),
    ]
    assert table.entries_are_const and table.direct_counter is ingress.extern_instances[0]
    assert table.direct_counter.table == "I.forward"


def test_a_table_without_default_action_gets_no_action():
    program = ingress_ir("t.apply();", locals_="table t { actions = { } }")
    default = program.pipeline.blocks["ingress"].tables[0].default_action
    assert default.action is program.actions[0] and default.action.name == "NoAction" and not default.is_const


def test_parser_states_transitions_and_keysets():
    program = v1_ir(
        "apply { }",
        decls=DECLS,
        hdr_fields="w_t w; w_t[2] st;",
        parser="state start { pkt.extract(hdr.eth); transition select(hdr.eth.etype, hdr.eth.dst[7:0]) {"
        " (0x800 &&& 0xFF00, _): more; (1 .. 5, 7): accept; } } "
        "state more { pkt.extract(hdr.st.next); transition select(hdr.st.last.a) { 0: more; default: reject; } } "
        "state dead { }",
    )
    parser = program.pipeline.blocks["parser"]
    start, more, dead = parser.states
    assert [k.type for k in start.transition.keys] == [ir.BitType(16), ir.BitType(8)]
    first, second = start.transition.cases
    assert (first.keysets[0].value.value, first.keysets[0].mask.value, first.keysets[1].is_default) == (
        0x800,
        0xFF00,
        True,
    )
    assert (second.keysets[0].value.value, second.keysets[0].high.value, second.next_state) == (1, 5, "accept")
    extract = more.statements[0]
    assert isinstance(extract, ir.Extract) and isinstance(extract.header, ir.StackNext)
    assert extract.packet is parser.parameters[0]
    assert isinstance(more.transition.keys[0].base, ir.StackLast)
    assert more.transition.cases[1].keysets[0].is_default and more.transition.cases[1].next_state == "reject"
    assert dead.transition.next_state == "reject" and not dead.transition.keys


def test_emit_of_a_struct_is_one_emit_per_header_in_field_order():
    program = ingress_ir("", hdr_fields="w_t w; w_t[2] st;")
    deparser = program.pipeline.blocks["deparser"]
    emits = deparser.body.statements
    assert all(isinstance(e, ir.Emit) and e.packet is deparser.parameters[0] for e in emits)
    assert [(e.value.field_name, type(e.value.type).__name__) for e in emits] == [
        ("eth", "HeaderType"),
        ("w", "HeaderType"),
        ("st", "HeaderStackType"),
    ]


def test_clone3_data_names_the_preserved_metadata_fields():
    program = ingress_ir(
        "clone3(CloneType.I2E, 32w5, { meta.x, sm.ingress_port, meta.inner.y });",
        decls=DECLS + " struct inner_t { bit<8> y; }",
        meta_fields="bit<8> x; inner_t inner;",
    )
    (statement,) = program.pipeline.blocks["ingress"].body.statements
    call = statement.call
    assert isinstance(call, ir.ExternFunctionCall) and call.function == "clone3"
    assert program.field_lists[call.field_list] == (("x",), ("inner", "y"))


# ---------------------------------------------------------------------------------------------- errors
@pytest.mark.parametrize(
    "body,message",
    [
        (
            "hdr.w.a[7:4][4:0] = 1;",
            "t.p4:13:14: error: slice [4:0] is out of range of bit<4>",
        ),
        (
            "switch (hdr.w.a) { default: { } 1: { } }",
            "t.p4:13:46: error: the default case must be the last one",
        ),
    ],
)
def test_errors_point_at_the_construct(body, message):
    with pytest.raises(P4Error) as e:
        ingress_ir(body)
    assert str(e.value) == message


def test_a_slice_of_a_slice_is_one_slice_of_the_base():
    (statement,) = ingress_ir("hdr.w.a[6:1][4:2] = 3w5;").pipeline.blocks["ingress"].body.statements
    target = statement.target
    assert isinstance(target, ir.Slice) and (target.high, target.low) == (5, 3)
    assert isinstance(target.base, ir.FieldAccess) and target.base.field_name == "a"


def test_a_struct_cannot_contain_itself():
    with pytest.raises(P4Error) as e:
        ingress_ir("", decls=DECLS + " struct loop_t { bit<8> a; loop_t again; }")
    assert str(e.value) == "t.p4:5:90: error: struct loop_t cannot contain itself"


def test_compiled_program_exposes_its_ir():
    program = compile_program(os.path.join(PROGRAMS, "ipv4_router.p4"), backend="python")
    assert isinstance(program.ir, ir.Program) and program.backend == "python"
    assert [t.qualified_name for t in program.ir.pipeline.blocks["ingress"].tables] == [
        t.name for t in program.info.tables
    ]
    with pytest.raises(ValueError, match="unknown softswitch back end 'fpga' \\(known: native, python\\)"):
        compile_program(os.path.join(PROGRAMS, "ipv4_router.p4"), backend="fpga")
    assert sum(1 for _ in walk(program.ir.pipeline.blocks["ingress"].body)) > 5
