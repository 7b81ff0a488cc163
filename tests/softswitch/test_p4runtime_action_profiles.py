"""Action profile members and groups over P4Runtime (a real gRPC client): writes, reads, table entries
pointing at them, the packets a group entry sends (the member picked by v1model's selector hash,
computed in test_lang_action_selector from its definition) and the errors the specification names."""

import pytest
from p4.v1 import p4runtime_pb2
from p4runtime_testlib import running_device
from softswitch_testlib import each_backend  # noqa: F401 (a fixture)
from test_lang_action_selector import NEXT_HOPS, PROGRAM, ecmp_pick, frame

U = p4runtime_pb2.Update
pytestmark = pytest.mark.usefixtures("each_backend")


def member(device, member_id, dmac, port, profile="I.ecmp_selector"):
    msg = p4runtime_pb2.ActionProfileMember(action_profile_id=device.id_of("action_profiles", profile))
    msg.member_id = member_id
    msg.action.action_id = device.id_of("actions", "I.set_nhop")
    msg.action.params.add(param_id=1, value=dmac.to_bytes(6, "big"))
    msg.action.params.add(param_id=2, value=bytes([port]))  # canonical: what reads return
    return msg


def group(device, group_id, members):
    msg = p4runtime_pb2.ActionProfileGroup(action_profile_id=device.id_of("action_profiles", "I.ecmp_selector"))
    msg.group_id = group_id
    for member_id, weight in members.items():
        msg.members.add(member_id=member_id, weight=weight)
    return msg


def route(device, prefix, length, **action):
    msg = p4runtime_pb2.TableEntry(table_id=device.id_of("tables", "I.ecmp"))
    match = msg.match.add(field_id=1)
    match.lpm.value = prefix.to_bytes(4, "big")
    match.lpm.prefix_len = length
    for key, value in action.items():
        setattr(msg.action, key, value)
    return msg


@pytest.fixture
def device():
    with running_device(PROGRAM) as device:
        yield device


def test_members_groups_and_a_group_entry_forward_each_flow_to_its_hashed_member(device):
    members = [(U.INSERT, "action_profile_member", member(device, m, *NEXT_HOPS[m])) for m in NEXT_HOPS]
    assert device.write(*members) is None
    assert device.write((U.INSERT, "action_profile_group", group(device, 10, {1: 1, 2: 1, 3: 1}))) is None
    group_route = route(device, 0x0A000000, 8, action_profile_group_id=10)
    assert device.write((U.INSERT, "table_entry", group_route)) is None
    for src in range(0x0B000000, 0x0B000000 + 12):
        dmac, port = NEXT_HOPS[ecmp_pick([1, 2, 3], src, 6)]
        assert device.service.process(0, frame(src, 0x0A000005, 6)) == [
            (port, frame(src, 0x0A000005, 6, ttl=63, dmac=dmac))
        ]
    # reads give back what was written (wildcards: every member / group of every profile)
    read_members = device.read("action_profile_member", p4runtime_pb2.ActionProfileMember())
    assert read_members == [member(device, m, *NEXT_HOPS[m]) for m in (1, 2, 3)]
    assert device.read("action_profile_group", p4runtime_pb2.ActionProfileGroup()) == [
        group(device, 10, {1: 1, 2: 1, 3: 1})
    ]
    [entry] = device.read("table_entry", p4runtime_pb2.TableEntry(table_id=group_route.table_id))
    assert entry == group_route
    # a member entry, and MODIFY of the group
    assert device.write((U.MODIFY, "table_entry", route(device, 0x0A000000, 8, action_profile_member_id=2))) is None
    dmac, port = NEXT_HOPS[2]
    assert device.service.process(0, frame(9, 0x0A000005, 6)) == [(port, frame(9, 0x0A000005, 6, ttl=63, dmac=dmac))]
    assert device.write((U.MODIFY, "action_profile_group", group(device, 10, {3: 4}))) is None
    assert device.read("action_profile_group", group(device, 10, {})) == [group(device, 10, {3: 4})]


def test_action_profile_writes_fail_with_the_codes_of_the_specification(device):
    assert device.write((U.INSERT, "action_profile_member", member(device, 1, *NEXT_HOPS[1]))) is None
    assert device.write((U.INSERT, "action_profile_group", group(device, 10, {1: 1}))) is None
    assert device.write((U.INSERT, "table_entry", route(device, 0x0A000000, 8, action_profile_group_id=10))) is None
    direct = route(device, 0x0C000000, 8)
    direct.action.action.action_id = device.id_of("actions", "I.drop")
    errors = device.write(
        (U.INSERT, "action_profile_member", member(device, 1, *NEXT_HOPS[2])),
        (U.DELETE, "action_profile_member", member(device, 1, *NEXT_HOPS[1])),
        (U.DELETE, "action_profile_group", group(device, 10, {})),
        (U.INSERT, "action_profile_group", group(device, 11, {1: 0})),
        (U.INSERT, "action_profile_group", group(device, 12, {7: 1})),
        (U.MODIFY, "action_profile_member", member(device, 9, *NEXT_HOPS[1])),
        (U.INSERT, "table_entry", direct),
        (U.INSERT, "table_entry", route(device, 0x0E000000, 8, action_profile_member_id=42)),
    )
    assert errors == [
        ("ALREADY_EXISTS", "action profile I.ecmp_selector: member 1 already exists"),
        ("FAILED_PRECONDITION", "action profile I.ecmp_selector: member 1 is in group(s) [10]"),
        ("FAILED_PRECONDITION", "action profile I.ecmp_selector: group 10 is used by an entry of table I.ecmp"),
        ("INVALID_ARGUMENT", "action profile I.ecmp_selector: weight of member 1 must be >= 1"),
        ("INVALID_ARGUMENT", "action profile I.ecmp_selector: group 12: no member 7"),
        ("NOT_FOUND", "action profile I.ecmp_selector: no member 9"),
        ("INVALID_ARGUMENT", "table I.ecmp is implemented by an action profile: an entry gives a member or group id"),
        ("INVALID_ARGUMENT", "table I.ecmp: action profile I.ecmp_selector has no member 42"),
    ]


def action_set(device, *hops):
    """A one-shot action profile action set of set_nhop actions (weight 1 each)."""
    msg = p4runtime_pb2.TableAction()
    for dmac, port in hops:
        item = msg.action_profile_action_set.action_profile_actions.add(weight=1)
        item.action.action_id = device.id_of("actions", "I.set_nhop")
        item.action.params.add(param_id=1, value=dmac.to_bytes(6, "big"))
        item.action.params.add(param_id=2, value=bytes([port]))
    return msg


def test_a_group_keeps_its_max_size_it_is_read_back_and_a_modify_may_not_change_it(device):
    """P4Runtime spec, ActionProfileGroup: max_size is set when the group is inserted; a MODIFY must give the
    same value (leaving it out gives 0, a different value) or get INVALID_ARGUMENT, and the group is unchanged."""
    assert device.write((U.INSERT, "action_profile_member", member(device, 1, *NEXT_HOPS[1]))) is None
    assert device.write((U.INSERT, "action_profile_member", member(device, 2, *NEXT_HOPS[2]))) is None
    sized = group(device, 10, {1: 1})
    sized.max_size = 2
    assert device.write((U.INSERT, "action_profile_group", sized)) is None
    assert device.read("action_profile_group", group(device, 10, {})) == [sized]
    for new_size in (3, 0):
        bigger = group(device, 10, {1: 2, 2: 1})
        bigger.max_size = new_size
        assert device.write((U.MODIFY, "action_profile_group", bigger)) == [
            (
                "INVALID_ARGUMENT",
                f"action profile I.ecmp_selector: group 10: max_size {new_size} differs from the 2 it was inserted "
                "with (only an INSERT sets a group's max_size)",
            )
        ]
        assert device.read("action_profile_group", group(device, 10, {})) == [sized]
    too_many = group(device, 10, {1: 2, 2: 1})
    too_many.max_size = 2
    assert device.write((U.MODIFY, "action_profile_group", too_many)) == [
        (
            "RESOURCE_EXHAUSTED",
            "action profile I.ecmp_selector: group 10 has 3 member places, more than its max_size (2)",
        )
    ]
    sized.members.add(member_id=2, weight=1)
    assert device.write((U.MODIFY, "action_profile_group", sized)) is None
    assert device.read("action_profile_group", group(device, 10, {})) == [sized]


def test_a_group_of_a_selector_without_max_group_size_is_still_bounded(device):
    assert device.write((U.INSERT, "action_profile_member", member(device, 1, *NEXT_HOPS[1]))) is None
    errors = device.write((U.INSERT, "action_profile_group", group(device, 10, {1: 10**9})))
    assert errors == [
        (
            "RESOURCE_EXHAUSTED",
            "action profile I.ecmp_selector: group 10 has 1000000000 member places, more than the limit "
            "for a selector without @max_group_size (4096)",
        )
    ]
    assert device.read("action_profile_group", p4runtime_pb2.ActionProfileGroup()) == []


def test_a_max_size_the_switch_cannot_give_is_refused_when_the_group_is_inserted(device):
    """Spec, rules on setting max_size (selector without max_group_size): a nonzero value the target does not
    support is RESOURCE_EXHAUSTED at group creation; max_size is a count, so a negative one is invalid."""
    assert device.write((U.INSERT, "action_profile_member", member(device, 1, *NEXT_HOPS[1]))) is None
    huge, negative = group(device, 10, {1: 1}), group(device, 10, {1: 1})
    huge.max_size, negative.max_size = 10**6, -1
    assert device.write((U.INSERT, "action_profile_group", huge)) == [
        (
            "RESOURCE_EXHAUSTED",
            "action profile I.ecmp_selector: group 10: max_size 1000000 is more than this switch supports for "
            "a selector without @max_group_size (4096)",
        )
    ]
    assert device.write((U.INSERT, "action_profile_group", negative)) == [
        ("INVALID_ARGUMENT", "action profile I.ecmp_selector: group 10: max_size -1 is not >= 0")
    ]
    assert device.read("action_profile_group", p4runtime_pb2.ActionProfileGroup()) == []


def test_one_shot_action_sets_make_a_group_the_controller_does_not_see(device):
    entry = route(device, 0x0A000000, 8)
    entry.action.CopyFrom(action_set(device, NEXT_HOPS[2], NEXT_HOPS[3]))
    assert device.write((U.INSERT, "table_entry", entry)) is None
    for src in range(0x0B000000, 0x0B000000 + 8):
        # the set's actions are members added in the order given: handles 0 and 1
        dmac, port = NEXT_HOPS[ecmp_pick([2, 3], src, 17)]
        assert device.service.process(0, frame(src, 0x0A000005, 17)) == [
            (port, frame(src, 0x0A000005, 17, ttl=63, dmac=dmac))
        ]
    assert device.read("table_entry", p4runtime_pb2.TableEntry(table_id=entry.table_id)) == [entry]
    assert device.read("action_profile_member", p4runtime_pb2.ActionProfileMember()) == []
    assert device.read("action_profile_group", p4runtime_pb2.ActionProfileGroup()) == []
    selector = device.service.switch.action_profile("I.ecmp_selector")
    assert (len(selector.members), len(selector.groups)) == (2, 1)
    assert device.write((U.INSERT, "table_entry", entry)) == [
        ("ALREADY_EXISTS", "table I.ecmp: an entry with this key already exists")
    ]
    assert (len(selector.members), len(selector.groups)) == (2, 1)  # the failed insert left nothing behind
    # MODIFY replaces the set; DELETE removes the hidden members and group with the entry
    entry.action.CopyFrom(action_set(device, NEXT_HOPS[1]))
    assert device.write((U.MODIFY, "table_entry", entry)) is None
    dmac, port = NEXT_HOPS[1]
    assert device.service.process(0, frame(4, 0x0A000005, 6)) == [(port, frame(4, 0x0A000005, 6, ttl=63, dmac=dmac))]
    assert (len(selector.members), len(selector.groups)) == (1, 1)
    assert device.write((U.DELETE, "table_entry", entry)) is None
    assert (selector.members, selector.groups) == ({}, {})
    empty = route(device, 0x0A000000, 8)
    empty.action.action_profile_action_set.SetInParent()
    assert device.write((U.INSERT, "table_entry", empty)) == [
        ("INVALID_ARGUMENT", "table I.ecmp: the action profile action set is empty")
    ]
