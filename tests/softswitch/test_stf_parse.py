"""STF parsing: commands, values, patterns, and the errors for malformed lines."""

import pytest

from softswitch.stf import Expectation, StfError, parse_hex_pattern, parse_key_value, parse_stf


def test_add_with_priority_keys_of_every_kind_and_action_args():
    (cmd,) = parse_stf(
        "add MyIngress.acl 10 hdr.ipv4.src_addr:0x0a000000&&&0xff000000 "
        "hdr.udp.dst_port:1000->2000 dst:0x0a000001/24 meta.x:7 "
        "MyIngress.fwd(port:3, dst_mac:0x000000000002)\n"
    )
    assert cmd.op == "add"
    assert cmd.args == {
        "table": "MyIngress.acl",
        "priority": 10,
        "action": "MyIngress.fwd",
        "args": {"port": 3, "dst_mac": 2},
        "handle": None,
        "keys": {
            "hdr.ipv4.src_addr": ("ternary", 0x0A000000, 0xFF000000),
            "hdr.udp.dst_port": ("range", 1000, 2000),
            "dst": ("lpm", 0x0A000001, 24),
            "meta.x": ("value", 7),
        },
    }


def test_add_without_priority_and_empty_args():
    (cmd,) = parse_stf("add t k:1 NoAction()")
    assert cmd.args["priority"] is None and cmd.args["args"] == {} and cmd.args["action"] == "NoAction"


def test_setdefault_packet_expect_wait_and_comments():
    cmds = parse_stf(
        "# a comment\n\nsetdefault t drop()  # trailing\npacket 1 00 11 22 33\nexpect 2 00**2233 $\nwait\n"
    )
    assert [c.op for c in cmds] == ["setdefault", "packet", "expect", "wait"]
    assert [c.line for c in cmds] == [3, 4, 5, 6]
    assert cmds[0].args == {"table": "t", "action": "drop", "args": {}}
    assert cmds[1].args == {"port": 1, "data": bytes.fromhex("00112233")}
    exp = cmds[2].args["expectation"]
    assert (exp.data, exp.mask, exp.exact_length) == (bytes.fromhex("00002233"), bytes.fromhex("ff00ffff"), True)


def test_multicast_and_mirroring_commands():
    cmds = parse_stf("mc_mgrp_create 1\nmc_node_create 5 1 2 3\nmc_node_associate 1 0\nmirroring_add 7 4\n")
    assert [(c.op, c.args) for c in cmds] == [
        ("mc_mgrp_create", {"group": 1}),
        ("mc_node_create", {"rid": 5, "ports": [1, 2, 3]}),
        ("mc_node_associate", {"group": 1, "handle": 0}),
        ("mirroring_add", {"session": 7, "port": 4}),
    ]


def test_expectation_matching_rules():
    data, mask, exact = parse_hex_pattern("aa**cc")
    loose = Expectation(data, mask, False, "aa**cc", 1)
    assert loose.matches(bytes.fromhex("aa00cc")) and loose.matches(bytes.fromhex("aaffccdd"))
    assert not loose.matches(bytes.fromhex("ab00cc")) and not loose.matches(bytes.fromhex("aa00"))
    strict = Expectation(data, mask, True, "aa**cc$", 1)
    assert strict.matches(bytes.fromhex("aa12cc")) and not strict.matches(bytes.fromhex("aa12ccdd"))
    nibble = Expectation(*parse_hex_pattern("a*"), "a*", 1)
    assert nibble.matches(b"\xa7") and not nibble.matches(b"\xb7")


def test_an_odd_number_of_hex_digits_reads_as_p4cs_bmv2_driver_reads_it():
    # a packet's last lone digit is a byte of its own; an expectation's is the high nibble of its last byte
    (packet, expect) = parse_stf("packet 1 0a 1\nexpect 2 0a 1\n")
    assert packet.args["data"] == b"\x0a\x01"
    expectation = expect.args["expectation"]
    assert expectation.matches(b"\x0a\x1f") and expectation.matches(b"\x0a\x10\x00")
    assert not expectation.matches(b"\x0a\x21") and not expectation.matches(b"\x0a")


def test_key_values():
    assert parse_key_value("0x0A") == ("value", 10)
    assert parse_key_value("0x**01") == ("ternary", 0x0001, 0x00FF)
    assert parse_key_value("10/8") == ("lpm", 10, 8)


@pytest.mark.parametrize(
    "line, message",
    [
        ("frobnicate 1", "x.stf:2: unknown command 'frobnicate'"),
        ("packet 1 0g", "x.stf:2: not hex: '0g'"),
        ("packet 1 0*", "x.stf:2: '*' and '$' are only allowed in expect"),
        ("add t k:1 act", "x.stf:2: add needs an ACTION(...) at the end"),
        ("add t k:zz act()", "x.stf:2: bad number 'zz'"),
        ("add t k act()", "x.stf:2: key 'k' is not FIELD:VALUE"),
        ("setdefault t act(x)", "x.stf:2: action argument 'x' is not PARAM:VALUE"),
        ("mc_node_create 1", "x.stf:2: usage: mc_node_create RID PORT..."),
    ],
)
def test_malformed_lines_name_file_line_and_problem(line, message):
    with pytest.raises(StfError) as err:
        parse_stf("wait\n" + line + "\n", "x.stf")
    assert str(err.value) == message
