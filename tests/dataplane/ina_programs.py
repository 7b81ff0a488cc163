"""Fixtures of the data-plane tests: p4src/ina.p4 compiled once per session by softswitch.

A plain module (not conftest.py, whose module name other folders import): test modules import the
fixtures from here.
"""

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INA_P4 = ROOT / "p4src" / "ina.p4"


@pytest.fixture(scope="session")
def ina_program():
    from softswitch.compiler import compile_program

    return compile_program(str(INA_P4))


@pytest.fixture(scope="session")
def ina_program_k4():
    """The same program built with -DVALUES_PER_PACKET=4 (the size of the golden vectors)."""
    from softswitch.compiler import compile_program

    return compile_program(str(INA_P4), defines={"VALUES_PER_PACKET": "4"})
