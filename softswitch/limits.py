"""The limits softswitch holds programs to, so that what runs here runs on BMv2 too.

BMv2's simple_switch gives a received frame a packet buffer of its length + 512 bytes
(targets/simple_switch/simple_switch.cpp, receive_), which its resubmissions, recirculations, clones and
multicast copies keep (bm_sim/packet_buffer.h, PacketBuffer::clone): a deparser that makes a longer frame
makes BMv2 fail (PacketBuffer::push's assertion). softswitch drops such a frame and counts it in
``buffer_limit_drops``. This module is softswitch's one copy of the figure: the native runtime is given it
(``ss_switch_set_headroom``) by NativeSwitch. p4src/include/ina_constants.p4's PACKET_GROWTH_LIMIT_BYTES,
which sizes the aggregation program's MASKED layouts, is the same figure on the program's side; a test
(tests/softswitch/test_bmv2_limits.py) holds the two equal.

``limits="none"`` (or SOFTSWITCH_LIMITS=none in the environment) lifts it, for running a program already
known not to fit BMv2 (p4src/ina.p4's 1:4 masked results, until their layout is redesigned).
"""

from __future__ import annotations

import os

from .errors import SwitchError

BMV2_PACKET_HEADROOM = 512
LIMITS = ("bmv2", "none")
ENVIRONMENT = "SOFTSWITCH_LIMITS"


class UnknownLimits(SwitchError, ValueError):
    """A limits name that is not one of LIMITS."""


def packet_headroom(limits: str | None = None) -> int | None:
    """The bytes a deparser may add to a received frame under `limits` (None: $SOFTSWITCH_LIMITS, else
    "bmv2"); None when there is no limit."""
    name = limits if limits is not None else os.environ.get(ENVIRONMENT) or "bmv2"
    if name not in LIMITS:
        raise UnknownLimits(f"unknown softswitch limits {name!r} (known: {', '.join(LIMITS)})")
    return BMV2_PACKET_HEADROOM if name == "bmv2" else None
