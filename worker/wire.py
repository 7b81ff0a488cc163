"""Plan hop entries -> codec hop entries (the codec owns the layout; bos is derived when encoding)."""

from __future__ import annotations

from protocol import codec


def codec_hops(plan_hops) -> list[codec.Hop]:
    return [
        codec.Hop(
            switch_id=h.switch_id,
            aggregate=bool(h.aggregate),
            fan_in=h.fan_in,
            child=h.child,
            egress_port=h.egress_port,
        )
        for h in plan_hops
    ]
