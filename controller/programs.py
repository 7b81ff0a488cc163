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

import re
from collections.abc import Iterable
from pathlib import Path

from p4.config.v1 import p4info_pb2

from controller.errors import P4RuntimeError, PlanError
from protocol.constants import VALUES_PER_PACKET
from protocol.layouts import largest_packet_bytes

REPO = Path(__file__).resolve().parents[1]
PROGRAM_FILES = {"v1model": REPO / "p4src" / "ina.p4", "tna": REPO / "p4src" / "tna" / "ina_tna.p4"}
# build variants a --program option may name: the same program with another K (docs/design-decisions.md)
VARIANT_FILES = {
    "v1model-k256": REPO / "p4src" / "ina_k256.p4",
    "v1model-k344": REPO / "p4src" / "ina_k344.p4",
    "v1model-k1024": REPO / "p4src" / "ina_k1024.p4",
}
# the v1model builds by K, the largest first: the default is the first whose packets fit the links
V1MODEL_BUILDS = {1024: "v1model-k1024", 344: "v1model-k344", 256: "v1model-k256", VALUES_PER_PACKET: "v1model"}
TARGETS = ("softswitch", "bmv2", "tofino")
STATS = "InaIngress.ina_stats"
DROPS = "InaIngress.drop_stats"


class ProgramChoiceError(PlanError):
    """No program suits the target and the links (controller.programs.default_program)."""


_LANE_REGISTER = re.compile(r"InaIngress\.slot_lane_\d+")
_LANE_PAIR_REGISTER = re.compile(r"InaIngress\.lane_pair_\d+\.lanes")
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


def root_multicast(p4info: p4info_pb2.P4Info) -> bool:
    """Whether the program can be a tree's root that multicasts the RESULT of what it completes
    (docs/protocol.md, "Root multicast"): its ``set_job`` takes ``aggregates`` = ``AGGREGATES_ROOT`` (2 bits,
    ina.p4); the TNA program's takes 0 or 1 and keeps the server hop (docs/tofino.md).

    >>> info = p4info_pb2.P4Info()
    >>> action = info.actions.add()
    >>> action.preamble.name = "InaIngress.set_job"
    >>> _ = action.params.add(name="aggregates", bitwidth=1)
    >>> root_multicast(info)
    False
    """
    for action in p4info.actions:
        if action.preamble.name == "InaIngress.set_job":
            return any(p.name == "aggregates" and p.bitwidth >= 2 for p in action.params)
    return False


def values_per_packet(p4info: p4info_pb2.P4Info) -> int:
    """K, the int32 lanes of a dense packet, of the program a P4Info describes: one register per lane in
    ina.p4 (``InaIngress.slot_lane_<i>``), one per pair of lanes in the TNA program
    (``InaIngress.lane_pair_<p>.lanes``). Plans must use this K: a dense packet carries exactly K lanes.

    >>> info = p4info_pb2.P4Info()
    >>> for i in range(3):
    ...     info.registers.add().preamble.name = f"InaIngress.lane_pair_{i}.lanes"
    >>> values_per_packet(info)
    6
    """
    names = [r.preamble.name for r in p4info.registers]
    lanes = sum(1 for n in names if _LANE_REGISTER.fullmatch(n))
    pairs = sum(1 for n in names if _LANE_PAIR_REGISTER.fullmatch(n))
    if lanes and not pairs:
        return lanes
    if pairs and not lanes:
        return 2 * pairs
    raise P4RuntimeError(
        "the program publishes no lane registers (InaIngress.slot_lane_<i> or InaIngress.lane_pair_<p>.lanes): "
        "not an ina aggregation program, its K is unknown"
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


_VALUES_PER_PACKET_DEFINE = re.compile(r"^\s*#\s*define\s+VALUES_PER_PACKET\s+(\d+)\b", re.MULTILINE)


def declared_values_per_packet(path: str | Path) -> int | None:
    """K of a P4 source as its build variant sets it before including ina.p4 (``#define VALUES_PER_PACKET
    1024`` in p4src/ina_k1024.p4), else ina_constants.p4's default; None for a compiled BMv2 JSON or a
    file it cannot read. Read before anything runs it: the lab sets its links' MTU from it (a
    switch's ports read the MTU when they open).

    >>> declared_values_per_packet(VARIANT_FILES["v1model-k1024"]), declared_values_per_packet(PROGRAM_FILES["v1model"])
    (1024, 64)
    """
    path = Path(path)
    if path.suffix != ".p4":
        return None
    try:
        text = path.read_text()
    except OSError:  # the switch that is to load it says what is wrong with it
        return None
    found = _VALUES_PER_PACKET_DEFINE.search(text)
    return int(found.group(1)) if found else VALUES_PER_PACKET


def program_file(name_or_path: str | Path) -> Path:
    """The P4 source a ``--program`` option names: "v1model" / "tna" for the repository's programs,
    "v1model-k256" / "v1model-k344" / "v1model-k1024" for ina.p4 built with K = 256 / 344 / 1024 (the latter
    for links with a 9000-byte MTU), else a path (to a P4 source or a compiled BMv2 JSON).

    >>> program_file("tna").name, program_file("v1model-k344").name, program_file("v1model-k1024").name
    ('ina_tna.p4', 'ina_k344.p4', 'ina_k1024.p4')
    """
    text = str(name_or_path)
    return {**PROGRAM_FILES, **VARIANT_FILES}.get(text, Path(text))


def default_program(mtu: int, target: str = "softswitch") -> str:
    """The program a switch runs when nobody names one: the fastest the target and the links allow.

    On softswitch and BMv2 that is the v1model build with the largest K whose packets (a dense chunk with
    MAX_HOPS hop entries) fit ``mtu``: K = 344 at a 1500-byte MTU, K = 1024 on jumbo links (9000). Fewer,
    larger packets cost the hosts and the switches less per value (docs/design-decisions.md, "Fast
    defaults"). A Tofino runs the TNA program, whose K its pipeline fixes.

    Parameters
    ----------
    mtu : int
        The smallest MTU of the links the job's packets may cross (``Topology.smallest_mtu()``), bytes.
    target : str
        "softswitch", "bmv2" or "tofino".

    Returns
    -------
    str
        A name ``program_file`` resolves: "v1model-k1024", "v1model-k344", "v1model-k256", "v1model" or "tna".

    Raises
    ------
    ProgramChoiceError
        An unknown target, or links too small for any build.

    Examples
    --------
    >>> default_program(1500), default_program(9000), default_program(1200), default_program(1000)
    ('v1model-k344', 'v1model-k1024', 'v1model-k256', 'v1model')
    >>> default_program(1500, "tofino")
    'tna'
    """
    if target not in TARGETS:
        raise ProgramChoiceError(f"unknown target {target!r} (choose {', '.join(TARGETS)})")
    if target == "tofino":
        return "tna"
    for k, name in V1MODEL_BUILDS.items():
        if largest_packet_bytes(k) <= mtu:
            return name
    smallest = min(V1MODEL_BUILDS)
    raise ProgramChoiceError(
        f"links with an MTU of {mtu} bytes carry no build of the program: K = {smallest} needs "
        f"{largest_packet_bytes(smallest)} bytes"
    )
