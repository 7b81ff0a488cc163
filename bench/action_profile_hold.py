"""How long an action profile change stops softswitch's native data path, in process.

The native pipeline runs a batch under the switch's native lock (sw->lock), and so does every control
call; a change that holds that lock for long stops every port for as long (receive rings fill and drop).
A table of N entries (N = --entries) points at one member of an action selector (half of them) or at a
group of three members (the other half). While the main thread changes the member (modify_member),
changes the group (set_group) or adds and deletes an unused member, a native probe thread calls a
control function that takes only sw->lock (ss_ctl_table_count, as the I/O thread takes it for a batch)
in a loop: its longest call during a change is how long the data path waited for the lock (a probe
thread the scheduler put off for the whole change shows 0; one preempted in a call shows the time it
lost). Prints, per change, the median and the longest of --repeats such waits and the median wall time
of the Python call, with the machine's load.

    .venv/bin/python bench/action_profile_hold.py [--entries 10000] [--repeats 10]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from controller.cli_options import add_deprecated  # noqa: E402
from native.build import load_library  # noqa: E402
from softswitch.compiler import compile_program  # noqa: E402
from softswitch.switch import Exact, Switch, TableEntry  # noqa: E402

PROGRAM = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
struct headers_t { ethernet_t ethernet; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_nhop(bit<48> dmac, bit<9> port) { hdr.ethernet.dst = dmac; sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    action_selector(HashAlgorithm.crc16, 32w64, 32w14) nhops;
    table routes {
        key = { hdr.ethernet.dst : exact; hdr.ethernet.src : selector; }
        actions = { set_nhop; drop; }
        default_action = drop();
        implementation = nhops;
        size = %d;
    }
    apply { routes.apply(); }
}
control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""


PROBE_C = r"""
#include <pthread.h>
#include <stdint.h>
#include <time.h>
typedef uint64_t (*count_fn)(void *sw, uint32_t table);
static count_fn fn;
static void *sw;
static uint32_t table;
static volatile int stop;
static volatile uint64_t longest; /* the longest call (waiting for the lock) since probe_take_max */
static pthread_t thread;
static uint64_t now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
static void *run(void *arg) {
    (void)arg;
    while (!stop) {
        uint64_t t0 = now();
        fn(sw, table);
        uint64_t t = now() - t0;
        if (t > longest) longest = t;
    }
    return 0;
}
int probe_start(void *f, void *s, uint32_t t) { fn = (count_fn)f; sw = s; table = t; return pthread_create(&thread, 0, run, 0); }
uint64_t probe_take_max(void) { uint64_t m = longest; longest = 0; return m; }
void probe_stop(void) { stop = 1; pthread_join(thread, 0); }
"""


class Probe:
    """A native thread that takes the native switch's lock in a loop (ss_ctl_table_count, as the I/O
    thread takes it for a batch) and keeps its longest call: the longest wait for the lock."""

    def __init__(self, sw) -> None:
        self._lib = load_library("action_profile_hold_probe", [], generated={"probe.c": PROBE_C}, libs=["pthread"])
        self._lib.probe_start.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_uint32]
        self._lib.probe_take_max.restype = ctypes.c_uint64
        self._args = (ctypes.cast(sw._lib.api.ss_ctl_table_count, ctypes.c_void_p), sw._sw, sw.table("I.routes")._index)

    def __enter__(self) -> Probe:
        if self._lib.probe_start(*self._args):
            raise OSError("pthread_create failed")
        return self

    def __exit__(self, *exc) -> None:
        self._lib.probe_stop()

    def take_max(self) -> int:
        """The longest probe call (ns) since the last take."""
        return self._lib.probe_take_max()


def selector_switch(entries: int):
    """A native switch running PROGRAM: members 1-3 of I.nhops, group 10 of all three, and ``entries``
    entries of I.routes, half on member 1, half on group 10. Returns (switch, profile, table)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "hold.p4")
        with open(path, "w") as f:
            f.write(PROGRAM % entries)
        sw = Switch(compile_program(path, backend="native"))
    profile = sw.action_profile("I.nhops")
    for member in (1, 2, 3):
        profile.add_member(member, "I.set_nhop", {"dmac": member, "port": member})
    profile.set_group(10, {1: 1, 2: 1, 3: 1}, create=True)
    table = sw.table("I.routes")
    for i in range(entries):
        target = {"member": 1} if i % 2 else {"group": 10}
        table.insert(TableEntry(matches={"hdr.ethernet.dst": Exact(0x020000000000 + i)}, **target))
    return sw, profile, table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=10, help="changes per measurement (default 10)")
    add_deprecated(parser, "--repeat", "--repeats", "repeats", type=int)
    args = parser.parse_args()
    sw, profile, table = selector_switch(args.entries)
    changes = {
        "modify_member (used by half the entries, in the group the others use)": lambda v: profile.modify_member(
            1, "I.set_nhop", {"dmac": v, "port": 1}
        ),
        "set_group (used by half the entries)": lambda v: profile.set_group(10, {1: 1, 2: 1, 3: 1 + v % 2}),
        "add_member + delete_member (unused)": lambda v: (
            profile.add_member(4, "I.set_nhop", {"dmac": v, "port": 4}),
            profile.delete_member(4),
        ),
    }
    print(f"{args.entries} entries, {args.repeats} changes each, load {os.getloadavg()[0]:.2f}")
    with Probe(sw) as probe:
        for name, change in changes.items():
            waits, walls = [], []
            for v in range(args.repeats):
                time.sleep(0.01)
                probe.take_max()
                start = time.perf_counter_ns()
                change(v + 100)
                end = time.perf_counter_ns()
                waits.append(probe.take_max())
                walls.append(end - start)
            print(
                f"  {name}: data path waited {statistics.median(waits) / 1e3:,.1f} µs median, "
                f"{max(waits) / 1e3:,.1f} max; the call took {statistics.median(walls) / 1e3:,.0f} µs"
            )
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
