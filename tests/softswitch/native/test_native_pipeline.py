"""The v1model pipeline of the native runtime, driven by the fixture program's commands: forwarding,
drops, multicast replication, clones, resubmit and recirculation with preserved metadata, the pass
limit, truncation, digests, packet-in/out, parser errors, fatal errors, logs, statistics and batches.
Expected outputs follow BMv2 simple_switch's semantics (docs/softswitch-internals.md)."""

from __future__ import annotations

import pytest
from native_fixture import (
    CLONE_E2E,
    CLONE_I2E,
    DIGEST,
    DROP,
    FAIL,
    FORWARD,
    LOG,
    MULTICAST,
    RANDOM,
    RECIRCULATE,
    RESUBMIT,
    STATEFUL,
    TRUNCATE,
    fixture_switch,
    make_frame,
)

from softswitch.native.switch import FrameBatch
from softswitch.switch import STAT_KEYS


def meta_of(frame: bytes):
    """What the fixture's egress wrote: (instance_type, egress_port, egress_rid, meta.passes)."""
    return tuple(frame[12:16])


def test_forward_keeps_the_payload_and_drop_counts():
    sw = fixture_switch()
    payload = bytes(range(200))
    out = sw.process(3, make_frame(FORWARD, 7, payload=payload))
    assert len(out) == 1
    port, frame = out[0]
    assert port == 7 and frame[16:] == payload and frame[:4] == bytes([FORWARD, 7, 0, 0])
    assert meta_of(frame) == (0, 7, 0, 0)
    assert sw.process(3, make_frame(DROP)) == []
    assert dict(sw.stats) == {**dict.fromkeys(STAT_KEYS, 0), "received": 2, "transmitted": 1, "dropped": 1}


def test_short_frame_is_a_parser_error_and_still_runs_ingress():
    sw = fixture_switch()
    assert sw.process(1, b"\x00\x02abc") == [(2, b"\x00\x02abc")]  # no header: payload only, to port 2
    assert sw.stats["parser_errors"] == 1


def test_multicast_replicas_in_group_order_with_rids():
    sw = fixture_switch()
    sw.set_multicast_group(0x0102, [(4, 40), (2, 20), (9, 90)])
    out = sw.process(1, make_frame(MULTICAST, 0x01, 0x02, payload=b"p"))
    assert [(p, meta_of(f)) for p, f in out] == [(4, (5, 4, 40, 0)), (2, (5, 2, 20, 0)), (9, (5, 9, 90, 0))]
    assert sw.stats["replicated"] == 3 and sw.stats["transmitted"] == 3
    sw.set_multicast_group(0x0102, [])
    assert sw.process(1, make_frame(MULTICAST, 0x01, 0x02)) == []  # empty group: dropped
    assert sw.process(1, make_frame(MULTICAST, 0x05, 0x05)) == []  # no such group: dropped
    assert sw.stats["dropped"] == 2
    assert sw.multicast_groups() == {0x0102: []}
    sw.delete_multicast_group(0x0102)
    with pytest.raises(KeyError, match="multicast group 258 does not exist"):
        sw.delete_multicast_group(0x0102)
    with pytest.raises(ValueError, match="port 512 is outside 0..511"):
        sw.set_multicast_group(1, [(512, 0)])


def test_ingress_clone_reparses_the_original_and_preserves_listed_metadata():
    sw = fixture_switch()
    sw.set_clone_session(5, [(6, 60)], truncate=0)
    frame = make_frame(CLONE_I2E, 5, 2, 1, payload=b"payload")
    out = sw.process(1, frame)
    # the clone goes first (BMv2 emits it before the original's egress), with meta.passes preserved
    assert [(p, meta_of(f)) for p, f in out] == [(6, (1, 6, 60, 7)), (2, (0, 2, 0, 7))]
    assert out[0][1][16:] == b"payload"
    out = sw.process(1, make_frame(CLONE_I2E, 5, 2, 0))  # no field list: the clone's metadata is fresh
    assert meta_of(out[0][1]) == (1, 6, 60, 0)
    sw.set_clone_session(5, [(6, 60)], truncate=20)
    out = sw.process(1, make_frame(CLONE_I2E, 5, 2, 1, payload=bytes(100)))
    assert [len(f) for _, f in out] == [20, 116]
    assert sw.process(1, make_frame(CLONE_I2E, 77, 2, 1)) == [(2, sw.process(1, make_frame(CLONE_I2E, 77, 2, 1))[0][1])]
    assert sw.clone_sessions() == {5: ([(6, 60)], 20)}
    assert sw.stats["cloned"] == 3


def test_egress_clone_copies_headers_as_egress_left_them():
    sw = fixture_switch()
    sw.set_clone_session(3, [(8, 1), (9, 2)])
    out = sw.process(1, make_frame(CLONE_E2E, 3, 4))
    assert [(p, meta_of(f)) for p, f in out] == [(8, (2, 8, 1, 9)), (9, (2, 9, 2, 9)), (4, (0, 4, 0, 9))]


def test_resubmit_preserves_the_field_list_and_stops_at_the_pass_limit():
    sw = fixture_switch()
    out = sw.process(1, make_frame(RESUBMIT, 4, 3))
    assert [(p, meta_of(f)) for p, f in out] == [(3, (6, 3, 0, 4))]  # passes 1, 2, 3 resubmitted; 4th goes out
    assert sw.stats["resubmitted"] == 3
    assert sw.process(1, make_frame(RESUBMIT, 100, 3)) == []
    assert sw.stats["loop_limit_drops"] == 1 and sw.stats["resubmitted"] == 3 + 17


def test_recirculate_runs_the_deparsed_frame_again():
    sw = fixture_switch()
    out = sw.process(1, make_frame(RECIRCULATE, 3, 5, payload=b"abc"))
    assert [(p, meta_of(f)) for p, f in out] == [(5, (4, 5, 0, 3))]
    assert out[0][1][16:] == b"abc"
    assert sw.stats["recirculated"] == 2


def test_truncate_in_egress():
    sw = fixture_switch()
    out = sw.process(1, make_frame(TRUNCATE, 10, 2, payload=bytes(50)))
    assert [(p, len(f)) for p, f in out] == [(2, 10)]


def test_digests_and_packet_in_reach_python_callbacks():
    sw = fixture_switch(cpu_port=64)
    digests, packet_ins = [], []
    sw.on_digest = lambda name, values: digests.append((name, values))
    out = sw.process(1, make_frame(DIGEST, 0x11, 0x22, 0x33))
    assert [p for p, _ in out] == [1]
    assert digests == [("learn_t", {"a": 0x11, "b": 0x2233})]
    assert sw.process(1, make_frame(FORWARD, 64))[0][0] == 64  # no packet-in callback: returned
    sw.on_packet_in = packet_ins.append
    frame = make_frame(FORWARD, 64, payload=b"to the controller")
    assert sw.process(1, frame) == []
    assert packet_ins[0][16:] == b"to the controller"
    assert sw.stats["to_cpu"] == 2 and sw.stats["digests"] == 1 and sw.stats["transmitted"] == 3
    sent = []
    sw.on_transmit = lambda port, f: sent.append(port)
    assert [p for p, _ in sw.packet_out(make_frame(FORWARD, 3))] == [3]
    assert sent == [3] and sw.stats["from_cpu"] == 1


def test_fatal_error_drops_counts_and_logs():
    lines = []
    sw = fixture_switch(log=lines.append)
    assert sw.process(1, make_frame(FAIL)) == []
    assert sw.stats["errors"] == 1 and sw.stats["dropped"] == 1
    assert lines == ["packet dropped: internal error: fixture command 11"]
    sw.process(1, make_frame(LOG, 200, 0xFE, 1))
    assert lines[-1] == "u=200 s=-2 b=True"


def test_malformed_inputs_never_raise():
    sw = fixture_switch()
    assert sw.process(512, make_frame(FORWARD, 1)) == []
    assert sw.process(-1, make_frame(FORWARD, 1)) == []
    assert sw.process(1, object()) == []
    assert sw.stats["malformed"] == 3 and sw.stats["received"] == 0


def test_registers_and_counters_from_the_data_path_and_the_control_plane():
    sw = fixture_switch()
    for _ in range(3):
        out = sw.process(1, make_frame(STATEFUL, 5, 10, 2, payload=bytes(4)))
    assert out[0][1][4:8] == (20).to_bytes(4, "big")  # the old value, read in ingress
    assert sw.register("Fixture.r32").read(5) == 30
    assert sw.counter("Fixture.c0").read(5) == (3, 3 * 20)
    sw.process(1, make_frame(STATEFUL, 200, 1, 2))  # out of bounds: read 0, write and count ignored
    assert sw.register("r32").values == [0] * 5 + [30] + [0] * 10
    assert sum(sw.counter("c0").read(i)[0] for i in range(8)) == 3
    r128, s16, r48 = sw.register("r128"), sw.register("s16"), sw.register("r48")
    r128.write(3, (1 << 128) - 2)
    s16.write(1, -300)
    r48.write(0, (1 << 48) - 1)
    assert (r128.read(3), s16.read(1), r48.read(0)) == ((1 << 128) - 2, -300, (1 << 48) - 1)
    assert s16.values == [0, -300, 0, 0]
    with pytest.raises(ValueError, match="does not fit int<16>"):
        s16.write(0, 1 << 15)
    with pytest.raises(IndexError, match="index 4 is outside 0..3"):
        r48.read(4)
    sw.counter("c1").write(2, 7, 700)
    assert sw.counter("c1").read(2) == (7, 700)
    r128.reset()
    assert r128.values == [0, 0, 0, 0]


def test_random_stays_in_its_bounds():
    sw = fixture_switch()
    seen = set()
    for _ in range(300):
        frame = sw.process(1, make_frame(RANDOM, 3, 9))[0][1]
        seen.add(int.from_bytes(frame[4:8], "big"))
    assert seen == set(range(3, 10))


def test_batches_give_each_input_its_outputs():
    sw = fixture_switch()
    sw.set_multicast_group(7, [(1, 0), (2, 0)])
    frames = [
        (1, make_frame(FORWARD, 3)),
        (1, make_frame(DROP)),
        (2, b"bad port later"),
        (1, make_frame(MULTICAST, 0, 7)),
    ]
    frames.insert(2, (999, make_frame(FORWARD, 3)))
    result = sw.process_batch(frames)
    assert [[p for p, _ in outs] for outs in result] == [[3], [], [], [2], [1, 2]]
    assert sw.stats["malformed"] == 1
    batch = FrameBatch([(1, make_frame(FORWARD, 3))] * 100 + [(1, make_frame(MULTICAST, 0, 7))] * 10)
    assert sw.process_batch(batch, outputs=False) == 120
    assert sw.stats["transmitted"] == 4 + 120


def test_random_frames_never_crash_and_fatal_errors_are_counted():
    """20,000 random frames (random commands and arguments, truncated and oversized frames) with
    multicast groups and clone sessions configured: the runtime never crashes, every frame is counted
    received, and exactly the frames that asked for a fatal error are counted as errors."""
    import random

    rng = random.Random(10)
    sw = fixture_switch(cpu_port=64)
    sw.on_packet_in = lambda frame: None
    sw.on_digest = lambda name, values: None
    for gid in range(1, 6):
        sw.set_multicast_group(gid, [(rng.randrange(512), rng.randrange(65536)) for _ in range(rng.randrange(4))])
    for sid in range(0, 6):
        sw.set_clone_session(sid, [(rng.randrange(512), rng.randrange(5))], truncate=rng.choice([0, 10, 20]))
    frames, fails = [], 0
    for _ in range(20_000):
        size = rng.choice([0, 1, 15, 16, 17, 64, 300, 1500, 9000])
        frame = bytearray(rng.randbytes(size))
        if size >= 4:
            frame[0] = rng.randrange(16)
            frame[1], frame[2] = rng.randrange(8), rng.randrange(8)
        if size >= 16 and frame[0] == FAIL:
            fails += 1
        frames.append((rng.randrange(512), bytes(frame)))
    results = []
    for start in range(0, len(frames), 1000):
        results.extend(sw.process_batch(frames[start : start + 1000]))
    assert len(results) == len(frames)
    assert all(0 <= port < 512 for outs in results for port, _ in outs)
    assert sw.stats["received"] == len(frames) and sw.stats["errors"] == fails > 0
