"""Switch robustness: random and truncated frames never raise, concurrent packets and table writes are
serialised by the switch's lock, compile results are cached by source hash."""

import random
import threading

from scapy.all import IP, UDP, Ether
from softswitch_testlib import PROGRAMS, program

from softswitch.compiler import compile_program
from softswitch.switch import Lpm, Switch, TableEntry


def test_random_and_truncated_frames_never_raise():
    sw = Switch(program("ipv4_router.p4"))
    sw.table("ipv4_lpm").insert(TableEntry({"hdr.ipv4.dstAddr": Lpm(0, 0)}, "ipv4_forward", {"dstAddr": 1, "port": 1}))
    rnd = random.Random(7)
    good = bytes(Ether() / IP(dst="10.0.0.1") / UDP() / (b"x" * 10))
    n = 0
    for i in range(3000):
        kind = i % 3
        if kind == 0:
            f = bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 80)))
        elif kind == 1:
            f = good[: rnd.randrange(len(good))]
        else:
            b = bytearray(good)
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
            f = bytes(b)
        for port, out in sw.process(rnd.randrange(512), f):
            assert 0 <= port < 512 and isinstance(out, bytes)
            n += 1
    assert sw.stats["errors"] == 0
    assert sw.stats["received"] == 3000
    assert sw.stats["transmitted"] == n and n > 0


def test_concurrent_processing_and_table_writes():
    sw = Switch(program("ipv4_router.p4"))
    t = sw.table("MyIngress.ipv4_lpm")
    t.insert(TableEntry({"hdr.ipv4.dstAddr": Lpm(0x0A000000, 8)}, "ipv4_forward", {"dstAddr": 1, "port": 2}))
    frame = bytes(Ether() / IP(dst="10.1.2.3", ttl=9) / UDP())
    outs = []
    errors = []

    def sender():
        try:
            for _ in range(400):
                outs.append(len(sw.process(1, frame)))
        except Exception as e:  # pragma: no cover - the assertion below reports it
            errors.append(e)

    def writer():
        for i in range(200):
            e = TableEntry({"hdr.ipv4.dstAddr": Lpm((0x0B << 24) | (i << 8), 24)}, "MyIngress.drop")
            t.insert(e)
            t.delete(e)

    threads = [threading.Thread(target=sender) for _ in range(3)] + [threading.Thread(target=writer)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert outs == [1] * 1200
    assert sw.stats["received"] == 1200 and len(t.entries()) == 1


def test_compile_is_cached_and_switches_sharing_a_program_keep_separate_state():
    path = f"{PROGRAMS}/ipv4_router.p4"
    a, b = compile_program(path), compile_program(path)
    assert a is b and len(a.source_hash) == 64
    s1, s2 = Switch(a), Switch(b)
    s1.table("ipv4_lpm").insert(TableEntry({"hdr.ipv4.dstAddr": Lpm(0, 0)}, "ipv4_forward", {"dstAddr": 1, "port": 1}))
    frame = bytes(Ether() / IP(dst="10.1.2.3") / UDP())
    assert len(s1.process(0, frame)) == 1 and s2.process(0, frame) == []
