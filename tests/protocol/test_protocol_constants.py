"""protocol/constants.py must hold exactly the values of p4src/include/ina_constants.p4.

The P4 include is read with a small #define reader (plain integer literals only, which the include
promises) and cross-checked with softswitch's preprocessor; every P4 define must exist in Python with the same value, and every protocol constant in
Python must come from the P4 file.
"""

import re
from pathlib import Path

from protocol import constants

P4_CONSTANTS = Path(__file__).resolve().parents[2] / "p4src" / "include" / "ina_constants.p4"
_DEFINE = re.compile(r"^\s*#\s*define\s+([A-Za-z_]\w*)\s+(\S+)?")


def read_p4_defines(path: Path) -> dict[str, int]:
    text = re.sub(r"/\*.*?\*/", " ", path.read_text(), flags=re.S)
    defines = {}
    for line in text.splitlines():
        m = _DEFINE.match(line)
        if m and m.group(2) is not None:  # skip the include guard (no value)
            defines[m.group(1)] = int(m.group(2), 0)
    return defines


def test_softswitch_preprocessor_agrees():
    """The macro table the P4 compiler actually sees (softswitch's preprocessor) holds the same values."""
    from softswitch.frontend.preprocess import Preprocessor

    pp = Preprocessor()
    pp.run_file(str(P4_CONSTANTS))
    seen = {
        name: int("".join(t.text for t in m.body), 0) for name, m in pp.macros.items() if m.params is None and m.body
    }
    assert seen == read_p4_defines(P4_CONSTANTS)
    overridden = Preprocessor(defines={"VALUES_PER_PACKET": "32"})
    overridden.run_file(str(P4_CONSTANTS))
    assert [t.text for t in overridden.macros["VALUES_PER_PACKET"].body] == ["32"]


def test_reader_reads_the_file():
    defines = read_p4_defines(P4_CONSTANTS)
    assert defines["INA_UDP_PORT"] == 40000 and defines["FLAG_STORED"] == 0x10
    assert len(defines) > 60


def test_every_p4_constant_matches_python():
    defines = read_p4_defines(P4_CONSTANTS)
    mismatched = {
        name: (value, getattr(constants, name, None))
        for name, value in defines.items()
        if getattr(constants, name, None) != value
    }
    assert not mismatched, f"P4 value vs Python value: {mismatched}"


def test_python_has_no_constant_missing_from_p4():
    defines = read_p4_defines(P4_CONSTANTS)
    python_only = [n for n, v in vars(constants).items() if n.isupper() and isinstance(v, int) and n not in defines]
    assert not python_only


def test_stat_and_drop_numbers_are_unique_and_in_range():
    stats = [v for n, v in vars(constants).items() if n.startswith("STAT_") and isinstance(v, int)]
    drops = [v for n, v in vars(constants).items() if n.startswith("DROP_") and isinstance(v, int)]
    assert len(set(stats)) == len(stats) and max(stats) < constants.NUM_STATS
    assert len(set(drops)) == len(drops) and max(drops) < constants.NUM_DROP_REASONS
