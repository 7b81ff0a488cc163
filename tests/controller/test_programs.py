"""controller/programs.py: which aggregation program a P4Info describes, and its statistics counters."""

import pytest
from p4.config.v1 import p4info_pb2

from controller.errors import P4RuntimeError
from controller.programs import PROGRAM_FILES, TNA_STAT_COUNTERS, program_file, program_kind, stat_counters
from softswitch.compiler import lower_program
from softswitch.frontend.program_info import program_info
from softswitch.p4info import build_p4info


@pytest.mark.parametrize("kind", ["v1model", "tna"])
def test_the_programs_p4info_names_their_kind(kind):
    p4info = build_p4info(program_info(lower_program(str(PROGRAM_FILES[kind]))))
    assert program_kind(p4info) == kind
    counters = [c.preamble.name for c in p4info.counters]
    assert stat_counters(counters) == (TNA_STAT_COUNTERS if kind == "tna" else ("InaIngress.ina_stats",))
    p4info.pkg_info.arch = ""  # a P4Info without pkg_info: told apart by its counters
    assert program_kind(p4info) == kind


def test_another_program_is_refused_by_name():
    p4info = p4info_pb2.P4Info()
    p4info.pkg_info.arch = "psa"
    with pytest.raises(P4RuntimeError, match="architecture 'psa'.*not an ina aggregation program"):
        program_kind(p4info)
    with pytest.raises(P4RuntimeError, match="no per-job statistics counter"):
        stat_counters(["MyIngress.c"])


def test_program_names_and_paths():
    assert program_file("v1model") == PROGRAM_FILES["v1model"]
    assert str(program_file("build/x.json")) == "build/x.json"
