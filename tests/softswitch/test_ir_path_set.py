"""ir/aliasing.PathSet answers what comparing a path with every member would (the C back end asks it
for each field an action or a lane loop reads, against everything the body writes)."""

import itertools
import random

from softswitch.ir.aliasing import PathSet, overlaps


def test_path_set_answers_as_comparing_with_every_member():
    rng = random.Random(7)
    names = ("hdr", "meta", "f", "g", 0, 1)
    universe = [()] + [tuple(p) for n in (1, 2, 3) for p in itertools.product(names, repeat=n)]
    for _ in range(200):
        members = rng.sample(universe, rng.randint(0, 6))
        paths = PathSet(members)
        for path in rng.sample(universe, 40):
            assert paths.overlaps(path) == any(overlaps(path, m) for m in members), (members, path)
            assert paths.has_prefix_of(path) == any(path[: len(m)] == m for m in members), (members, path)


def test_a_written_struct_overlaps_its_fields_and_a_written_field_its_struct_but_not_a_sibling():
    written = PathSet([("meta", "a"), ("hdr", "s", 1)])
    assert written.overlaps(("meta",)) and written.overlaps(("meta", "a", "x"))
    assert not written.overlaps(("meta", "b")) and not written.overlaps(("hdr", "s", 0, "f"))
    assert written.overlaps(("hdr", "s", 1, "f")) and written.has_prefix_of(("hdr", "s", 1, "f"))
    assert not written.has_prefix_of(("hdr", "s")) and PathSet([()]).overlaps(("anything",))
