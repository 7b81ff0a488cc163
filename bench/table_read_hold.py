"""How long reading a large table stops softswitch's native data path, in process.

The data path runs a batch under the switch's native lock (sw->lock) and ss_ctl_table_read copies
entries under it (a P4Runtime Read, `softswitch dump`). It copies READ_PIECE_ENTRIES entries per call
and releases the lock between calls. This bench reads a table of --entries entries (action_profile_hold's:
half on a member, half on a group of its action selector) that way and in one piece (the whole table
under one hold, as before the pieces), alternating, while action_profile_hold's probe thread takes the
lock in a loop: its longest call during a read is how long the data path waited (on a loaded machine
mostly the scheduler's delays). Each ss_ctl_table_read call is timed too: a call holds the lock for
about its whole duration. Prints, per way, the median and longest call (the lock hold), the median and
longest probe wait of --repeats reads, and the median wall time of a read (mostly Python decoding the
entries), with the load.

    .venv/bin/python bench/table_read_hold.py [--entries 10000] [--repeats 10]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.action_profile_hold import Probe, selector_switch  # noqa: E402
from controller.cli_options import add_deprecated  # noqa: E402
from softswitch.native.switch import READ_PIECE_ENTRIES  # noqa: E402

WHOLE_TABLE = 2**32 - 1  # one piece (with a buffer for every entry): the whole table under one hold


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--entries", type=int, default=10000)
    parser.add_argument("--repeats", type=int, default=10, help="reads each way (default 10)")
    add_deprecated(parser, "--repeat", "--repeats", "repeats", type=int)
    args = parser.parse_args()
    sw, _, table = selector_switch(args.entries)
    ways = {  # (entries per piece, buffer bytes)
        f"{READ_PIECE_ENTRIES} entries per hold": (READ_PIECE_ENTRIES, 0),
        "whole table in one hold": (WHOLE_TABLE, 128 * args.entries),  # 64 bytes an entry here
    }
    results: dict[str, tuple[list[int], list[int], list[int]]] = {name: ([], [], []) for name in ways}
    api = sw._lib.api
    read, calls = api.ss_ctl_table_read, []

    def timed_read(*call_args):
        start = time.perf_counter_ns()
        written = read(*call_args)
        calls.append(time.perf_counter_ns() - start)
        return written

    api.ss_ctl_table_read = timed_read
    print(f"{args.entries} entries, {args.repeats} reads each way (alternating), load {os.getloadavg()[0]:.2f}")
    with Probe(sw) as probe:
        for _ in range(args.repeats):
            for name, (piece, buffer_bytes) in ways.items():
                time.sleep(0.01)
                probe.take_max()
                calls.clear()
                start = time.perf_counter_ns()
                got = table._read(piece, buffer_bytes)
                end = time.perf_counter_ns()
                assert len(got) == args.entries
                results[name][0].append(probe.take_max())
                results[name][1].append(end - start)
                results[name][2].extend(calls)
    for name, (waits, walls, holds) in results.items():
        print(
            f"  {name}: each call held the lock {statistics.median(holds) / 1e3:,.1f} µs median, "
            f"{max(holds) / 1e3:,.1f} max ({len(holds)} calls); the probe waited "
            f"{statistics.median(waits) / 1e3:,.1f} µs median, {max(waits) / 1e3:,.1f} max; "
            f"a read took {statistics.median(walls) / 1e3:,.0f} µs"
        )
    print(f"load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
