"""The language test programs (tests/softswitch/programs/lang/*.p4), each run against its STF file.

Their expected packets are worked out from the P4_16 specification and v1model's documented behaviour
(the comments in each .stf file show the arithmetic), never taken from softswitch's output."""

import glob
import os

import pytest
from softswitch_testlib import PROGRAMS

from softswitch.stf import run_stf

LANG = os.path.join(PROGRAMS, "lang")
CASES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(LANG, "*.p4")))


@pytest.mark.parametrize("name", CASES)
def test_program_passes_its_stf(name):
    stf = os.path.join(LANG, name + ".stf")
    result = run_stf(os.path.join(LANG, name + ".p4"), stf)
    assert result.ok, str(result)
    assert result.packets_checked > 0
