"""Encode/decode rate of protocol.codec for full packets (K lanes, 3 hops): agents do this per chunk.

Prints packets per second and saves bench/results/codec_speed.json.
"""

import json
import time
from pathlib import Path

import numpy as np

from protocol import codec
from protocol import constants as C
from protocol.codec import Hop


def rate(fn, seconds: float = 1.0) -> float:
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(1000):
            fn()
        count += 1000
    return count / (time.perf_counter() - start)


def main() -> None:
    values = np.arange(C.VALUES_PER_PACKET, dtype=np.int32)
    hops = [Hop(1, True, 2, 0, 3), Hop(2, True, 2, 1, 3), Hop(C.HOST_NODE_ID_BASE, True, 1, 0, 0)]
    pkt = codec.grad(1, 7, hops, values)
    raw = codec.encode(pkt)
    frame = codec.build_frame(pkt, "02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2")
    results = {
        "values_per_packet": C.VALUES_PER_PACKET,
        "encode_pps": rate(lambda: codec.encode(pkt)),
        "decode_pps": rate(lambda: codec.decode(raw, C.VALUES_PER_PACKET)),
        "build_frame_pps": rate(
            lambda: codec.build_frame(pkt, "02:00:00:00:00:01", "02:00:00:00:00:02", "10.0.0.1", "10.0.0.2")
        ),
        "parse_frame_pps": rate(lambda: codec.parse_frame(frame, C.VALUES_PER_PACKET)),
    }
    for name, value in results.items():
        print(f"{name:>18}: {value:,.0f}")
    out = Path(__file__).with_name("results")
    out.mkdir(exist_ok=True)
    (out / "codec_speed.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
