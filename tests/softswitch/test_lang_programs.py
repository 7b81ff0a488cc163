"""The language test programs (tests/softswitch/programs/lang/*.p4), each run against its STF file.

Their expected packets are worked out from the P4_16 specification and v1model's documented behaviour
(the comments in each .stf file show the arithmetic), never taken from softswitch's output."""

import glob
import os

import pytest
from softswitch_testlib import PROGRAMS, skip_without_c_compiler

from softswitch.compiler import compile_program
from softswitch.stf import run_stf
from softswitch.switch import Switch

LANG = os.path.join(PROGRAMS, "lang")
# programs whose constructs p4c's STF grammar cannot configure, with the test that checks their packets
WITHOUT_STF = {
    "action_selector": "STF has no command for action profile members and groups: test_lang_action_selector.py",
}
CASES = sorted(
    name
    for name in (os.path.basename(p)[:-3] for p in glob.glob(os.path.join(LANG, "*.p4")))
    if name not in WITHOUT_STF
)


@pytest.mark.parametrize("name", CASES)
def test_program_passes_its_stf(name):
    stf = os.path.join(LANG, name + ".stf")
    result = run_stf(os.path.join(LANG, name + ".p4"), stf)
    assert result.ok, str(result)
    assert result.packets_checked > 0


def test_programs_without_stf_have_their_own_tests():
    for name, reason in WITHOUT_STF.items():
        assert not os.path.exists(os.path.join(LANG, name + ".stf")), name
        assert os.path.exists(os.path.join(os.path.dirname(__file__), reason.rsplit(": ", 1)[1])), reason


def test_varbit_headers_run_on_the_native_back_end():
    """extract with a length, emit, copies and == of varbit fields are compiled to C (the program used
    to fall back to Python): its STF passes on a native switch."""
    skip_without_c_compiler("varbit on the native back end")
    prog = compile_program(os.path.join(LANG, "varbit.p4"), backend="native")
    assert (prog.backend, prog.fallback_reason) == ("native", None)
    switch = Switch(prog)
    assert switch.backend == "native"
    result = run_stf(os.path.join(LANG, "varbit.p4"), os.path.join(LANG, "varbit.stf"), switch=switch)
    assert result.ok, str(result)
    assert result.packets_checked == 4


# programs whose packets once differed from BMv2's; each is run on both back ends here (and by the
# differential suite), with its packet count so that a silently shortened STF file fails
BOTH_BACK_ENDS = {
    "instance_arguments": 2,  # a control and a parser instance as constructor arguments, one state
    "ipv4_options_checksum": 4,  # a varbit field (IPv4 options) in verify/update_checksum's field list
    "local_initializers": 3,  # block variables initialized in order by calls with inout arguments
    "lvalue_once": 2,  # an l-value with a call in its index evaluated once (and p4c's order otherwise)
    "varbit_lengths": 7,  # ParserInvalidArgument, PacketTooShort, HeaderTooShort in BMv2's order
}


@pytest.mark.parametrize("backend", ["python", "native"])
@pytest.mark.parametrize("name", sorted(BOTH_BACK_ENDS))
def test_program_on_both_back_ends(name, backend):
    if backend == "native":
        skip_without_c_compiler(f"{name}.p4 on the native back end")
    program_path = os.path.join(LANG, name + ".p4")
    prog = compile_program(program_path, backend=backend)
    assert (prog.backend, prog.fallback_reason) == (backend, None)
    result = run_stf(program_path, os.path.join(LANG, name + ".stf"), switch=Switch(prog))
    assert result.ok, str(result)
    assert result.packets_checked == BOTH_BACK_ENDS[name]
