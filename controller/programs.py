"""Which aggregation program a switch runs, learnt from its P4Info, and the names that differ between them.

Two programs implement the same data plane (docs/protocol.md): ``p4src/ina.p4`` (v1model: BMv2,
softswitch) and ``p4src/tna/ina_tna.p4`` (TNA: Tofino, softswitch). Their tables, keys, actions and
parameters have the same names, so the installer writes the same entries to both; what differs is how
the per-job statistics are counted (docs/tofino.md, "Controller"): the v1model program counts them in
``InaIngress.ina_stats``, the TNA program spreads them over four counters with the same index layout
(a Tofino counter counts once per packet pass), whose sum is the statistic.

The program is read off the P4Info, never guessed: ``pkg_info.arch`` ("v1model" or "tna", as p4c and
softswitch write it) and, for a P4Info without it, the counters it publishes.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from p4.config.v1 import p4info_pb2

from controller.errors import P4RuntimeError

REPO = Path(__file__).resolve().parents[1]
PROGRAM_FILES = {"v1model": REPO / "p4src" / "ina.p4", "tna": REPO / "p4src" / "tna" / "ina_tna.p4"}
STATS = "InaIngress.ina_stats"
DROPS = "InaIngress.drop_stats"
TNA_STAT_COUNTERS = (STATS, "InaIngress.ina_stats_slot", "InaIngress.ina_stats_evicted", "InaIngress.ina_stats_end")


def program_kind(p4info: p4info_pb2.P4Info) -> str:
    """The aggregation program a P4Info describes: "v1model" or "tna".

    >>> info = p4info_pb2.P4Info()
    >>> info.pkg_info.arch = "tna"
    >>> program_kind(info)
    'tna'
    """
    counters = {c.preamble.name for c in p4info.counters}
    arch = p4info.pkg_info.arch
    if arch in PROGRAM_FILES:
        return str(arch)
    if not arch and STATS in counters:
        return "tna" if set(TNA_STAT_COUNTERS) <= counters else "v1model"
    raise P4RuntimeError(
        f"the switch runs a program of architecture {arch or 'unknown'!r} without InaIngress.ina_stats: "
        "not an ina aggregation program (p4src/ina.p4 or p4src/tna/ina_tna.p4)"
    )


def stat_counters(counter_names: Iterable[str]) -> tuple[str, ...]:
    """The counters whose sum is a per-job statistic, given the counters a program publishes.

    >>> stat_counters(["InaIngress.ina_stats", "InaIngress.drop_stats"])
    ('InaIngress.ina_stats',)
    """
    names = set(counter_names)
    if set(TNA_STAT_COUNTERS) <= names:
        return TNA_STAT_COUNTERS
    if STATS in names:
        return (STATS,)
    raise P4RuntimeError(f"no per-job statistics counter {STATS} among the program's counters")


def program_file(name_or_path: str | Path) -> Path:
    """The P4 source a ``--program`` option names: "v1model" / "tna" for the repository's programs, else a
    path (to a P4 source or a compiled BMv2 JSON).

    >>> program_file("tna").name
    'ina_tna.p4'
    """
    text = str(name_or_path)
    return PROGRAM_FILES[text] if text in PROGRAM_FILES else Path(text)
