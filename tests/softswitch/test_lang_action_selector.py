"""Action profiles and selectors as v1model/BMv2 define them: entries point at members (or groups of
members); for a group, the selector's hash of the `selector` keys picks member number hash % n of the
group's n members ordered by BMv2's member handles (the lowest free handle when a member is added).
The expected packets are built here from that
definition, with the hashes (CRC-16/ARC, CRC-32) computed in this file, never from softswitch's output."""

import os
import struct
import zlib

import pytest
from softswitch_testlib import PROGRAMS, assert_runs_on_asked_backend, each_backend  # noqa: F401 (a fixture)

from softswitch import p4info
from softswitch.compiler import BACKEND_ENV, compile_program
from softswitch.frontend.errors import P4Error
from softswitch.runtime.tables import InUse, InvalidEntry, TableFull
from softswitch.switch import Exact, Lpm, Switch, TableEntry

PROGRAM = os.path.join(PROGRAMS, "lang", "action_selector.p4")
SRC_MAC = 0x02_00_00_00_00_AA


pytestmark = pytest.mark.usefixtures("each_backend")


def test_the_program_runs_on_the_back_end_asked_for():
    """The native back end compiles action profiles and selectors (it used to fall back to Python)."""
    assert_runs_on_asked_backend(PROGRAM, "action profiles and selectors")


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (v1model's crc16 as BMv2 computes it): reflected polynomial 0x8005, initial value 0."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def test_the_crc16_of_this_file_is_crc16_arc():
    assert crc16_arc(b"123456789") == 0xBB3D  # the catalogued check value of CRC-16/ARC


def frame(src: int, dst: int, protocol: int, tos: int = 0, ttl: int = 64, dmac: int = 0x02_00_00_00_00_01) -> bytes:
    ethernet = dmac.to_bytes(6, "big") + SRC_MAC.to_bytes(6, "big") + b"\x08\x00"
    ipv4 = struct.pack("!BBHHHBBHII", 0x45, tos, 20, 0, 0, ttl, protocol, 0, src, dst)
    return ethernet + ipv4


def ecmp_pick(members: list[int], src: int, protocol: int) -> int:
    """The member v1model's selector picks: crc16 over src_addr ++ protocol (40 bits, 5 bytes), indexing
    the members in handle order (`members` lists them in that order)."""
    h = crc16_arc(src.to_bytes(4, "big") + bytes([protocol]))
    return members[h % len(members)]


NEXT_HOPS = {1: (0x02_00_00_00_01_01, 1), 2: (0x02_00_00_00_02_02, 2), 3: (0x02_00_00_00_03_03, 3)}


def ecmp_switch():
    sw = Switch(compile_program(PROGRAM))
    selector = sw.action_profile("I.ecmp_selector")
    for member, (dmac, port) in NEXT_HOPS.items():
        selector.add_member(member, "I.set_nhop", {"dmac": dmac, "port": port})
    selector.set_group(10, {1: 1, 2: 1, 3: 1}, create=True)
    sw.table("I.ecmp").insert(TableEntry(matches={"hdr.ipv4.dst_addr": Lpm(0x0A000000, 8)}, group=10))
    return sw


FLOWS = [(0x0B000000 + 37 * i, 6 if i % 2 else 17) for i in range(24)]


def test_a_group_entry_sends_each_flow_to_the_member_its_hash_picks():
    sw = ecmp_switch()
    ports = set()
    for src, protocol in FLOWS:
        member = ecmp_pick([1, 2, 3], src, protocol)
        dmac, port = NEXT_HOPS[member]
        out = sw.process(0, frame(src, 0x0A010203, protocol))
        assert out == [(port, frame(src, 0x0A010203, protocol, ttl=63, dmac=dmac))]
        ports.add(port)
    assert ports == {1, 2, 3}  # the flows spread over every member
    assert sw.process(0, frame(1, 0x0C000001, 6)) == []  # no route: the default action drops


def test_members_are_ordered_by_id_and_weights_repeat_them():
    sw = ecmp_switch()
    selector = sw.action_profile("ecmp_selector")
    selector.set_group(10, {3: 2, 1: 1})  # selection order 1, 3, 3
    for src, protocol in FLOWS:
        h = crc16_arc(src.to_bytes(4, "big") + bytes([protocol]))
        dmac, port = NEXT_HOPS[[1, 3, 3][h % 3]]
        assert sw.process(0, frame(src, 0x0A000001, protocol)) == [
            (port, frame(src, 0x0A000001, protocol, ttl=63, dmac=dmac))
        ]


def test_members_are_ordered_by_the_handle_bmv2_gives_them_when_added():
    sw = Switch(compile_program(PROGRAM))
    selector = sw.action_profile("I.ecmp_selector")
    for member in (3, 1, 2):  # handles 0, 1, 2
        selector.add_member(member, "I.set_nhop", {"dmac": NEXT_HOPS[member][0], "port": NEXT_HOPS[member][1]})
    selector.delete_member(1)  # frees handle 1 ...
    selector.add_member(7, "I.set_nhop", {"dmac": 0x0200000000FF, "port": 7})  # ... which member 7 gets
    selector.set_group(10, {2: 1, 3: 1, 7: 1}, create=True)
    sw.table("I.ecmp").insert(TableEntry(matches={"hdr.ipv4.dst_addr": Lpm(0x0A000000, 8)}, group=10))
    hops = {**NEXT_HOPS, 7: (0x0200000000FF, 7)}
    seen = set()
    for src, protocol in FLOWS:
        member = ecmp_pick([3, 7, 2], src, protocol)
        dmac, port = hops[member]
        assert sw.process(0, frame(src, 0x0A000001, protocol)) == [
            (port, frame(src, 0x0A000001, protocol, ttl=63, dmac=dmac))
        ]
        seen.add(member)
    assert seen == {2, 3, 7}


def test_modifying_a_member_changes_what_its_entries_do():
    sw = ecmp_switch()
    selector = sw.action_profile("I.ecmp_selector")
    selector.set_group(10, {2: 1})
    selector.modify_member(2, "I.set_nhop", {"dmac": 0x0200000000FF, "port": 7})
    assert sw.process(0, frame(5, 0x0A000001, 6)) == [(7, frame(5, 0x0A000001, 6, ttl=63, dmac=0x0200000000FF))]
    assert selector.member(2) == ("I.set_nhop", {"dmac": 0x0200000000FF, "port": 7})


def test_an_empty_group_runs_the_default_action():
    sw = ecmp_switch()
    sw.action_profile("I.ecmp_selector").set_group(10, {})
    assert sw.process(0, frame(5, 0x0A000001, 6)) == []  # default: drop


def test_members_and_groups_in_use_cannot_be_deleted():
    sw = ecmp_switch()
    selector = sw.action_profile("I.ecmp_selector")
    with pytest.raises(InUse, match="member 1 is in group"):
        selector.delete_member(1)
    with pytest.raises(InUse, match="group 10 is used by an entry of table I.ecmp"):
        selector.delete_group(10)
    sw.table("I.ecmp").clear()
    selector.delete_group(10)
    selector.delete_member(1)
    assert sorted(selector.members) == [2, 3]


def test_entries_of_an_indirect_table_name_a_member_or_group_that_exists():
    sw = ecmp_switch()
    table = sw.table("I.ecmp")
    with pytest.raises(InvalidEntry, match="has no group 11"):
        table.insert(TableEntry(matches={"hdr.ipv4.dst_addr": Lpm(0x0B000000, 8)}, group=11))
    with pytest.raises(InvalidEntry, match="an entry gives a member or a group"):
        table.insert(TableEntry(matches={"hdr.ipv4.dst_addr": Lpm(0x0B000000, 8)}, action="I.drop"))
    with pytest.raises(InvalidEntry, match="has no parameter 'vlan'"):
        sw.action_profile("I.ecmp_selector").add_member(4, "I.set_nhop", {"dmac": 1, "port": 1, "vlan": 3})
    with pytest.raises(InvalidEntry, match="has no selector: no groups"):
        sw.table("I.tos").insert(TableEntry(matches={"hdr.ipv4.src_addr": Exact(1)}, group=1))


def test_a_member_entry_of_a_plain_action_profile_runs_that_member():
    sw = ecmp_switch()
    profile = sw.action_profile("I.tos_profile")
    profile.add_member(5, "I.set_tos", {"tos": 0xB8})
    sw.table("I.tos").insert(TableEntry(matches={"hdr.ipv4.src_addr": Exact(0x0B000001)}, member=5))
    dmac, port = NEXT_HOPS[ecmp_pick([1, 2, 3], 0x0B000001, 17)]
    assert sw.process(0, frame(0x0B000001, 0x0A000009, 17)) == [
        (port, frame(0x0B000001, 0x0A000009, 17, tos=0xB8, ttl=63, dmac=dmac))
    ]


def test_a_selector_constructed_in_place_hashes_its_own_keys_with_its_algorithm():
    sw = ecmp_switch()
    lanes = sw.action_profile("I.lane_selector")
    for member in (4, 9):
        lanes.add_member(member, "I.set_lane", {"lane": member})
    lanes.set_group(1, {4: 1, 9: 1}, create=True)
    sw.table("I.by_dst").insert(TableEntry(matches={"hdr.ipv4.protocol": Exact(6)}, group=1))
    for dst in range(0x0A000000, 0x0A000000 + 16):
        lane = [4, 9][zlib.crc32(dst.to_bytes(4, "big")) % 2]
        member = ecmp_pick([1, 2, 3], 7, 6)
        dmac, port = NEXT_HOPS[member]
        ((out_port, out),) = sw.process(0, frame(7, dst, 6))
        expected = bytearray(frame(7, dst, 6, ttl=63, dmac=dmac))
        expected[11] = lane  # the low byte of the source MAC
        assert (out_port, out) == (port, bytes(expected))


def test_p4info_lists_the_profiles_and_the_tables_they_implement():
    info = p4info.build_p4info(compile_program(PROGRAM).info)
    profiles = {p.preamble.name: p for p in info.action_profiles}
    tables = {t.preamble.name: t for t in info.tables}
    ecmp, tos, lanes = profiles["I.ecmp_selector"], profiles["I.tos_profile"], profiles["I.lane_selector"]
    assert ecmp.preamble.id >> 24 == 0x11
    assert (ecmp.with_selector, ecmp.size, list(ecmp.table_ids)) == (True, 64, [tables["I.ecmp"].preamble.id])
    assert (tos.with_selector, tos.size, list(tos.table_ids)) == (False, 8, [tables["I.tos"].preamble.id])
    assert (lanes.with_selector, lanes.size) == (True, 16)
    assert tables["I.ecmp"].implementation_id == ecmp.preamble.id
    # selector keys are not match fields; ids count every key element, as p4c numbers them
    assert [(m.name, m.id) for m in tables["I.ecmp"].match_fields] == [("hdr.ipv4.dst_addr", 1)]
    assert [(m.name, m.id) for m in tables["I.by_dst"].match_fields] == [("hdr.ipv4.protocol", 1)]


def _ingress(body: str) -> str:
    return (
        "#include <core.p4>\n#include <v1model.p4>\nheader h_t { bit<8> a; }\nstruct hs { h_t h; }\nstruct m_t { }\n"
        "parser P(packet_in p, out hs hdr, inout m_t m, inout standard_metadata_t sm) "
        "{ state start { p.extract(hdr.h); transition accept; } }\n"
        "control VC(inout hs hdr, inout m_t m) { apply { } }\n"
        "control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {\n" + body + "\n}\n"
        "control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }\n"
        "control CC(inout hs hdr, inout m_t m) { apply { } }\n"
        "control D(packet_out p, in hs hdr) { apply { p.emit(hdr); } }\n"
        "V1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"
    )


@pytest.mark.parametrize(
    "body, message",
    [
        (
            "table t { key = { hdr.h.a : selector; } actions = { NoAction; } } apply { t.apply(); }",
            "t has selector keys but its implementation is not an action_selector",
        ),
        (
            "action_selector(HashAlgorithm.random, 4, 8) s; table t { key = { hdr.h.a : exact; } "
            "actions = { NoAction; } implementation = s; } apply { t.apply(); }",
            "hash algorithm random is not supported",
        ),
        (
            "counter(4, CounterType.packets) c; table t { key = { hdr.h.a : exact; } actions = { NoAction; } "
            "implementation = c; } apply { t.apply(); }",
            "implementation of table t must be an action_profile or action_selector",
        ),
        (
            "action_selector(HashAlgorithm.crc16, 4, 8) s; table t { key = { hdr.h.a : exact; } "
            "actions = { NoAction; } implementation = s; } apply { t.apply(); }",
            r"table t is implemented by action_selector I\.s but has no selector keys",
        ),
    ],
)
def test_bad_implementations_are_refused_naming_the_place(tmp_path, body, message):
    path = tmp_path / "bad.p4"
    path.write_text(_ingress(body))
    with pytest.raises(P4Error, match=message) as caught:
        compile_program(str(path), backend="python")
    assert "bad.p4:" in str(caught.value)


def test_a_shared_selector_lists_its_tables_and_bounds_its_groups(tmp_path):
    body = (
        "action set(bit<8> v) { hdr.h.a = v; }\n"
        '@max_group_size(2) @custom("shared") action_selector(HashAlgorithm.crc16, 8, 16) shared;\n'
        "table zeta { key = { hdr.h.a : exact; hdr.h.a : selector; } actions = { set; } implementation = shared; }\n"
        "table alpha { key = { hdr.h.a : selector; hdr.h.a : ternary; } actions = { set; } implementation = shared; }\n"
        "apply { zeta.apply(); alpha.apply(); }"
    )
    path = tmp_path / "shared.p4"
    path.write_text(_ingress(body))
    prog = compile_program(str(path), backend="python")
    info = p4info.build_p4info(prog.info)
    (profile,) = info.action_profiles
    tables = {t.preamble.name: t for t in info.tables}
    # p4c: the tables sorted by name; @max_group_size is a field, not an annotation
    assert list(profile.table_ids) == [tables["I.alpha"].preamble.id, tables["I.zeta"].preamble.id]
    assert (profile.max_group_size, list(profile.preamble.annotations)) == (2, ['@custom("shared")'])
    assert [(m.name, m.id) for m in tables["I.alpha"].match_fields] == [("hdr.h.a", 2)]  # position 2 of the key
    sw = Switch(prog)
    selector = sw.action_profile("I.shared")
    for member in (1, 2, 3):
        selector.add_member(member, "I.set", {"v": member})
    with pytest.raises(TableFull, match=r"group 7 has 3 member places, more than @max_group_size \(2\)"):
        selector.set_group(7, {1: 1, 2: 1, 3: 1}, create=True)
    selector.set_group(7, {1: 1, 3: 1}, create=True)
    sw.table("I.zeta").insert(TableEntry(matches={"hdr.h.a": Exact(5)}, group=7))
    expected = [1, 3][crc16_arc(bytes([5])) % 2]
    assert sw.process(0, bytes([5])) == [(0, bytes([expected]))]


WIDE_IDENTITY_SELECTOR = """
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> k; bit<64> x; bit<8> y; bit<8> picked; }
struct hs { h_t h; }
struct m_t { }
parser P(packet_in p, out hs hdr, inout m_t m, inout standard_metadata_t sm) {
    state start { p.extract(hdr.h); transition accept; }
}
control VC(inout hs hdr, inout m_t m) { apply { } }
control I(inout hs hdr, inout m_t m, inout standard_metadata_t sm) {
    action pick(bit<8> member) { hdr.h.picked = member; sm.egress_spec = 1; }
    action_selector(HashAlgorithm.identity, 32w16, 32w72) wide_selector;
    table spread {
        key = { hdr.h.k : exact; hdr.h.x : selector; hdr.h.y : selector; }
        actions = { pick; NoAction; }
        implementation = wide_selector;
    }
    apply { spread.apply(); }
}
control E(inout hs hdr, inout m_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout hs hdr, inout m_t m) { apply { } }
control D(packet_out p, in hs hdr) { apply { p.emit(hdr); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


def test_an_identity_selector_over_more_than_64_bits_picks_by_the_whole_number(tmp_path):
    """The identity hash of 72 selector bits (x: 64, y: 8) is the 72-bit number x ++ y itself, and the
    group's member number (x ++ y) % n runs. The C back end's hashes keep 64 bits (it picked by the low
    64 bits, another member whenever x's top byte is not a multiple of 3, as 2^64 % 3 == 1): it refuses
    such a selector, naming it, and the program runs on the Python back end."""
    path = tmp_path / "wide.p4"
    path.write_text(WIDE_IDENTITY_SELECTOR)
    prog = compile_program(str(path))
    if os.environ[BACKEND_ENV] == "native":
        assert prog.backend == "python"
        assert "identity hash of I.wide_selector over more than 64 selector bits" in str(prog.fallback_reason)
        assert "table I.spread" in str(prog.fallback_reason)
    sw = Switch(prog)
    selector = sw.action_profile("I.wide_selector")
    for member in (1, 2, 3):
        selector.add_member(member, "I.pick", {"member": member})
    selector.set_group(1, {1: 1, 2: 1, 3: 1}, create=True)
    sw.table("I.spread").insert(TableEntry(matches={"hdr.h.k": Exact(7)}, group=1))
    low_64_differs = 0
    for x, y in [(1 << 56, 0), (2 << 56, 5), (0xFE << 56 | 0x1234, 9), (0x0300000000000001, 1), (4, 200)]:
        number = x << 8 | y
        member = [1, 2, 3][number % 3]
        low_64_differs += [1, 2, 3][(number & (1 << 64) - 1) % 3] != member
        frame = bytes([7]) + x.to_bytes(8, "big") + bytes([y, 0])
        assert sw.process(0, frame) == [(1, frame[:-1] + bytes([member]))], (hex(x), y)
    assert low_64_differs == 3  # the cases the low 64 bits get wrong
