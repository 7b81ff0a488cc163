"""The preprocessor: #include (system and relative), object and function-like macros with ## pasting,
#if/#ifdef/#ifndef/#elif/#else/#endif, #undef, -D style defines, and positions in the original files."""

import pytest
from softswitch_testlib import PROGRAMS, program, source

from softswitch.frontend.errors import P4Error
from softswitch.frontend.preprocess import Preprocessor
from softswitch.switch import Switch


def texts(src, **kw):
    return [t.text for t in Preprocessor(**kw).run_text(src, "x.p4") if t.kind != "eof"]


def test_program_using_includes_macros_and_conditionals_runs():
    sw = Switch(program("preproc.p4"))
    assert sw.process(0, bytes([1, 2, 3, 9])) == [(5, bytes([0xAA, 4, 3, 9]))]
    sw = Switch(program("preproc.p4", defines={"VARIANT_B": None}))
    assert sw.process(0, bytes([1, 2, 3])) == [(5, bytes([0xBB, 4, 3]))]


def test_define_on_command_line_reaches_if():
    with pytest.raises(P4Error, match=r"preproc.p4:11:1: error: #error OUT_PORT too small"):
        program("preproc.p4", defines={"DEFS_P4": ""})  # skips defs.p4: OUT_PORT undefined


def test_token_pasting_and_nested_function_macros():
    src = "#define CAT(a, b) a ## b\n#define LANE(i) CAT(lane_, i)\n#define TWICE(x) x x\nLANE(3) TWICE(LANE(4))"
    assert texts(src) == ["lane_3", "lane_4", "lane_4"]


def test_macro_is_not_expanded_recursively_and_if_arithmetic():
    src = "#define X X + 1\nX\n#if (2 * 3 == 6) && !defined(Y) && (1 << 4) >= 16\nyes\n#else\nno\n#endif"
    assert texts(src) == ["X", "+", "1", "yes"]


def test_errors_point_to_the_original_file_and_line():
    with pytest.raises(P4Error) as e:
        texts("#if 1\nfoo\n")
    assert str(e.value) == "x.p4:1:1: error: unterminated #if (missing #endif)"
    with pytest.raises(P4Error) as e:
        texts('\n  #include "nope.p4"\n')
    assert str(e.value) == "x.p4:2:3: error: cannot find include file 'nope.p4'"
    with pytest.raises(P4Error) as e:
        texts("#define F(a, b) a\nF(1)\n")
    assert str(e.value) == "x.p4:2:1: error: macro 'F' takes 2 argument(s), 1 given"


def test_errors_in_included_files_name_the_included_file(tmp_path):
    (tmp_path / "bad.p4").write_text("header h_t {\n  bit<8> a\n}\n")
    (tmp_path / "main.p4").write_text('#include <core.p4>\n#include "bad.p4"\n')
    from softswitch.compiler import compile_program

    with pytest.raises(P4Error) as e:
        compile_program(str(tmp_path / "main.p4"))
    assert str(e.value) == f"{tmp_path}/bad.p4:3:1: error: syntax error: expected ';', got '}}'"


def test_include_dirs_are_searched(tmp_path):
    (tmp_path / "consts.p4").write_text("#define PORT 7\n")
    prog = source(
        """
        #include <core.p4>
        #include <v1model.p4>
        #include "consts.p4"
        header t_t { bit<8> a; }
        struct h_t { t_t t; }
        struct m_t { }
        parser P(packet_in p, out h_t h, inout m_t m, inout standard_metadata_t sm) {
            state start { p.extract(h.t); transition accept; } }
        control VC(inout h_t h, inout m_t m) { apply { } }
        control I(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { sm.egress_spec = PORT; } }
        control E(inout h_t h, inout m_t m, inout standard_metadata_t sm) { apply { } }
        control CC(inout h_t h, inout m_t m) { apply { } }
        control D(packet_out p, in h_t h) { apply { p.emit(h.t); } }
        V1Switch(P(), VC(), I(), E(), CC(), D()) main;
    """,
        include_dirs=[str(tmp_path)],
    )
    assert Switch(prog).process(0, b"\x01") == [(7, b"\x01")]
    assert PROGRAMS
