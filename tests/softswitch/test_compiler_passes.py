"""The front end as a list of named passes: `softswitch compile --list-passes` and `--dump-ir PASS`, the
IR printer over every repository program, and the visitor base's refusal of a node it has no code for."""

import dataclasses
import glob
import os
from pathlib import Path

import pytest
from softswitch_testlib import PROGRAMS

from softswitch import cli, ir
from softswitch.backend_python.expressions import ExpressionEmitter, GeneratedNames
from softswitch.backend_python.statements import StatementEmitter
from softswitch.backend_python.writer import NameAllocator, SourceWriter
from softswitch.compiler import dump_ir, lower_program
from softswitch.errors import UnsupportedConstruct
from softswitch.frontend.errors import Pos
from softswitch.frontend.pass_manager import front_end
from softswitch.ir.printer import program_text

ROOT = Path(__file__).resolve().parents[2]
LVALUE_ONCE = os.path.join(PROGRAMS, "lang", "lvalue_once.p4")


@pytest.mark.parametrize("flag", ["--list-passes", "--dump-ir"])
def test_list_passes_names_the_pipeline_in_order(capsys, flag):
    assert cli.main(["compile", flag]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == front_end().names()
    assert listed[:2] == ["declare", "elaborate"] and "inline-functions" in listed


def test_dump_ir_shows_what_each_pass_left():
    """After elaborate the l-value's call is there once, held in a temporary, and a compound assignment's
    right-side call is held before the l-value is read; after inline-functions the calls are gone, their
    bodies in place."""
    elaborated = dump_ir(LVALUE_ONCE, "elaborate")
    assert elaborated.startswith("// softswitch IR after pass elaborate\n")
    assert (
        "bit<8> held = next_index(inout hdr.ctl.i);\n        hdr.s[held].f = (hdr.s[held].f | 128:bit<8>);"
        in elaborated
    )
    assert (
        "bit<8> held = next_index(inout hdr.ctl.k);\n        hdr.s[hdr.ctl.k].f = (hdr.s[hdr.ctl.k].f + held);"
        in elaborated
    )
    inlined = dump_ir(LVALUE_ONCE, "inline-functions")
    assert "next_index(" not in inlined
    assert "next_index_1_x = (next_index_1_x + 1:bit<8>);" in inlined
    declared = dump_ir(LVALUE_ONCE, "declare")
    assert "no IR yet" in declared and "next_index" in declared


def test_dump_ir_of_an_unknown_pass_is_one_line(capsys):
    assert cli.main(["compile", "--dump-ir", "resolve", LVALUE_ONCE]) != 0
    err = capsys.readouterr().err
    assert "no front end pass is named 'resolve' (passes: declare, elaborate," in err
    assert err.count("\n") == 1


# ina_k1024.p4 is ina.p4 with a larger K (and takes long to lower): ina.p4 stands for it
REPOSITORY_PROGRAMS = sorted(
    p
    for p in [*glob.glob(str(ROOT / "p4src" / "*.p4")), *glob.glob(os.path.join(PROGRAMS, "lang", "*.p4"))]
    if "k1024" not in p
)


@pytest.mark.parametrize("path", REPOSITORY_PROGRAMS, ids=os.path.basename)
def test_the_ir_printer_prints_every_program(path):
    text = program_text(lower_program(path))
    assert text.startswith(f"// program {Path(path).stem}:")
    assert "apply {" in text and "state start {" in text


@dataclasses.dataclass(eq=False, kw_only=True)
class Teleport(ir.Statement):
    """A statement no back end knows."""


def test_a_statement_without_code_is_refused_with_its_position():
    expressions = ExpressionEmitter(GeneratedNames())
    emitter = StatementEmitter(expressions, expressions.names, NameAllocator())
    with pytest.raises(UnsupportedConstruct, match=r"^x\.p4:7:3: the Python back end has no code for Teleport$"):
        emitter.statement(SourceWriter(), Teleport(position=Pos("x.p4", 7, 3)), None)
