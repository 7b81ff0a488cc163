"""One rule for P4 names in the controller and softswitch: the full name wins, a short name must be unique."""

import pytest
from p4.config.v1 import p4info_pb2

from controller.errors import P4RuntimeError
from controller.p4rt import P4Names
from protocol.p4names import P4NameError, find_named
from softswitch.program import _by_name

OBJECTS = {"InaIngress.stats": "ingress", "InaEgress.stats": "egress", "InaIngress.ina_jobs": "jobs"}


def test_full_and_unique_short_names_find_the_object():
    assert find_named(OBJECTS, "InaEgress.stats", "counter") == "egress"
    assert find_named(OBJECTS, "ina_jobs", "table") == "jobs"


def test_a_shared_short_name_raises_naming_both_objects():
    with pytest.raises(P4NameError, match="counter name 'stats' is ambiguous: InaEgress.stats, InaIngress.stats"):
        find_named(OBJECTS, "stats", "counter")


def test_an_unknown_name_lists_the_known_ones():
    with pytest.raises(KeyError, match=r"no table named 'nope' \(known: InaEgress.stats, InaIngress.ina_jobs"):
        find_named(OBJECTS, "nope", "table")


def _info_with_two_counters_named_stats() -> p4info_pb2.P4Info:
    info = p4info_pb2.P4Info()
    for cid, name in ((1, "InaIngress.stats"), (2, "InaEgress.stats")):
        counter = info.counters.add()
        counter.preamble.id, counter.preamble.name, counter.size = cid, name, 4
    return info


def test_the_controller_refuses_an_ambiguous_short_name_instead_of_taking_the_first():
    names = P4Names(_info_with_two_counters_named_stats())
    assert names.counter("InaEgress.stats") == (2, 4)
    with pytest.raises(P4RuntimeError, match="counter name stats is ambiguous: InaEgress.stats, InaIngress.stats"):
        names.counter("stats")
    with pytest.raises(P4RuntimeError, match="the P4 program has no counter drops"):
        names.counter("drops")


def test_softswitch_uses_the_same_rule():
    class Item:
        def __init__(self, name):
            self.name = name

    items = [Item(name) for name in OBJECTS]
    assert _by_name(items, "ina_jobs", "table").name == "InaIngress.ina_jobs"
    with pytest.raises(P4NameError, match="ambiguous"):
        _by_name(items, "stats", "counter")


def test_a_short_name_is_a_suffix_that_starts_after_a_dot():
    nested = {"InaIngress.lane_pair_0.lanes": 0, "InaIngress.lane_pair_1.lanes": 1, "InaIngress.ina_jobs": 2}
    assert find_named(nested, "lane_pair_1.lanes", "register") == 1
    assert find_named(nested, "InaIngress.ina_jobs", "table") == 2
    with pytest.raises(P4NameError, match="no table named 'jobs'"):  # a suffix, but not after a dot
        find_named(nested, "jobs", "table")
    with pytest.raises(P4NameError) as e:
        find_named(nested, "lanes", "register")
    assert e.value.candidates == ["InaIngress.lane_pair_0.lanes", "InaIngress.lane_pair_1.lanes"]
