"""Paced sending: a token bucket at the plan's share of the bottleneck, and the law that moves the rate.

A worker's chunks leave at a rate, not in window-sized bursts: a burst of a whole window at the host's
line rate fills the queue in front of the first shaped link (a tbf in the lab, a switch buffer on real
links) until it drops, while the same chunks spaced at the link's rate cross it with an empty queue. The
plan gives each worker its share of its path's bottleneck (``TreePlan.send_rate``, controller/pacing.py);
the pacer starts there (no slow start) and never goes above it.

The rate adapts once per round trip (an *epoch*) to the share ``F`` of results that came back congested:
marked ECN CE by a switch whose egress queue was deep (the server echoes a mark of the sums it received),
or, where no switch marks, answered later than the path's lowest round trip plus a delay target. As in
DCTCP, ``alpha`` is a moving average of ``F`` (gain ALPHA_GAIN); an epoch with a congested result cuts the
rate by ``alpha / 2``; an epoch without adds INCREASE_SHARE of the share back (additive increase). A
retransmission timeout (loss) halves the rate (the window too, once the rate is at its floor). The rate
stays between MIN_RATE_SHARE of the share and the share, and at SHARED_RATE_SHARE of it while the worker's
own link carries traffic from outside the job (worker/host_link.py). docs/design-decisions.md, "Congestion
control", says why.
"""

from __future__ import annotations

import numpy as np

FRAME_OVERHEAD_BYTES = 14 + 20 + 8  # Ethernet, IPv4 and UDP headers around a payload, as a link counts it
PACING_HEADROOM = 0.97  # pace to this share of the plan's rate (a link shaper's own rounding)
BURST_S = 0.010  # the bucket holds this long at the rate: the largest burst (well under a queue's hold; a loop
# woken late on a busy machine loses less than this of its rate)
MIN_BURST_PACKETS = 4  # but at least this many packets
WAKE_S = 0.002  # a sender waiting for tokens wakes when this long of them has come (the batch it sends then);
# a sender that waited for results or sat idle keeps this long of them too (at least MIN_BURST_PACKETS): the
# batch a backlogged sender sends per wake-up, which the link has carried by the next one
ALPHA_GAIN = 1.0 / 16  # weight of one epoch's congested share in alpha (DCTCP's g)
INCREASE_SHARE = 1.0 / 32  # an uncongested epoch adds this share of the plan's rate
# the rate never falls below this share of the plan's rate: the plan gave the job its links, and traffic from
# outside the job (a TCP flow on a worker's link) takes at most the rest of them (about a fair share with one
# flow); below it a job slowed by a lagging peer (whose wait its round trips and timeouts also show) would
# spiral down with no congestion left to cure
MIN_RATE_SHARE = 0.6
# while the worker's own link carries traffic from outside the job (worker/host_link.py), the rate is this
# share of the plan's rate, no more and no less: a fair share with one other flow, which the job's marks
# cannot give (a flow that halves on a mark, or one that ignores marks, gets a quarter or a third of the link
# against the DCTCP-like law; docs/design-decisions.md, "Congestion control"). A little over half: the job's
# own start and tail leave the link to the flow, so over a collective the job gets about half
SHARED_RATE_SHARE = 0.55
MIN_WAIT_S = 0.00005  # the shortest wait for tokens (a wake-up costs more than it saves below this)
MIN_EPOCH_S = 0.001  # an epoch lasts one smoothed round trip, at least this
DELAY_TARGET_S = 0.005  # a result later than the lowest round trip by more than this (and more than that
# round trip itself) counts as congested where no switch marks: tbf holds 50 ms, so a queue stays short


class Pacer:
    """One tree's token bucket and rate (bytes per second of frames on the wire).

    Examples
    --------
    >>> pacer = Pacer(ceiling=1e6, now=0.0)  # 1 MB/s, 10 kB bucket
    >>> pacer.take(0.0, packets=20, frame_bytes=1000)  # it starts empty: no burst into an idle link
    0
    >>> round(pacer.wait(2, frame_bytes=1000), 6)  # two frames' tokens after 2 ms
    0.002
    >>> pacer.take(0.002, packets=20, frame_bytes=1000), pacer.take(1.0, packets=20, frame_bytes=1000)
    (2, 10)
    """

    def __init__(self, ceiling: float, now: float):
        self.ceiling = float(ceiling)
        self.rate = self.ceiling
        self.alpha = 0.0
        self.stamp = now
        self.tokens = 0.0
        # the last take wanted more than the bucket held: a backlogged sender keeps up to the whole bucket (a
        # late wake-up loses no rate); one that waited for results or sat idle keeps only one wake-up's batch
        # (``_idle_cap``), so a new round or window does not start with a burst that stands in the queue (at
        # 97% of the link's rate a queue drains at 3% of it)
        self.backlogged = False
        self.epoch_start = now
        self.epoch_results = 0
        self.epoch_congested = 0
        self.cuts = 0  # epochs that cut the rate (for the agent's counters)
        self.top = 1.0  # the share of the ceiling the rate may reach: SHARED_RATE_SHARE while the link is shared

    def _depth(self, frame_bytes: int) -> float:
        return max(self.rate * BURST_S, MIN_BURST_PACKETS * max(frame_bytes, 1))

    def _idle_cap(self, frame_bytes: int) -> float:
        """The tokens a sender that was not backlogged keeps: WAKE_S at the rate, at least MIN_BURST_PACKETS
        frames. A round's first batch is then what a backlogged sender sends each wake-up, and the next batch
        comes one wake-up later, when the link (faster than the rate) has carried it: no queue stands, and
        the link is not left idle while the first wake-up's tokens come (with 4 frames, a 40-chunk
        all_reduce at K = 256 on 100 Mbit/s sent 0.35 ms of frames, then waited 2 ms for the next batch)."""
        return max(self.rate * WAKE_S, MIN_BURST_PACKETS * max(frame_bytes, 1))

    def _refill(self, now: float, frame_bytes: int) -> None:
        cap = self._depth(frame_bytes) if self.backlogged else self._idle_cap(frame_bytes)
        self.tokens = min(cap, self.tokens + self.rate * max(0.0, now - self.stamp))
        self.stamp = now

    def take(self, now: float, packets: int, frame_bytes: int) -> int:
        """How many of ``packets`` frames of ``frame_bytes`` may leave now (their tokens are spent)."""
        self._refill(now, frame_bytes)
        allowed = min(packets, max(0, int((self.tokens + 1e-6) // frame_bytes)))
        self.tokens -= allowed * frame_bytes
        self.backlogged = allowed < packets
        return allowed

    def spend(self, now: float, packets: int, frame_bytes: int) -> None:
        """Frames that left without asking (retransmissions): later sends wait for them."""
        self._refill(now, frame_bytes)
        self.tokens -= packets * frame_bytes

    def wait(self, packets: int, frame_bytes: int) -> float:
        """Seconds until ``packets`` frames (at most WAKE_S of the rate) have their tokens."""
        want = min(packets * frame_bytes, self.rate * WAKE_S)
        return max(MIN_WAIT_S, (max(want, frame_bytes) - self.tokens) / self.rate)

    def on_results(self, now: float, results: int, congested: int, round_trip: float) -> None:
        """``results`` results came back, ``congested`` of them marked (or late); an epoch of
        ``round_trip`` seconds ends with the law's step."""
        self.epoch_results += results
        self.epoch_congested += congested
        if now - self.epoch_start < max(round_trip, MIN_EPOCH_S) or not self.epoch_results:
            return
        share = self.epoch_congested / self.epoch_results
        self.alpha = (1.0 - ALPHA_GAIN) * self.alpha + ALPHA_GAIN * share
        if self.epoch_congested:
            self.rate *= 1.0 - self.alpha / 2.0
            self.cuts += 1
        else:
            self.rate += INCREASE_SHARE * self.ceiling
        self._bound()
        self.epoch_start, self.epoch_results, self.epoch_congested = now, 0, 0

    def on_loss(self) -> bool:
        """A retransmission timeout: the rate was above what the path carries. Returns whether the rate fell
        (False: it was at its floor already)."""
        before = self.rate
        self.rate /= 2.0
        self._bound()
        return self.rate < before

    def share_link(self, shared: bool) -> None:
        """The worker's link carries traffic from outside the job (``shared``) or no longer does: the rate
        goes to SHARED_RATE_SHARE of the plan's and stays there, or is free to grow back."""
        top = SHARED_RATE_SHARE if shared else 1.0
        if top != self.top:  # called for every batch of results: the rate moves only on a change
            self.top = top
            self._bound()

    def _bound(self) -> None:
        top = self.top * self.ceiling
        self.rate = float(np.clip(self.rate, min(MIN_RATE_SHARE * self.ceiling, top), top))


def late(samples: np.ndarray, lowest_rtt: float) -> np.ndarray:
    """Which round-trip samples are late enough to count as congested: above the lowest round trip by more
    than DELAY_TARGET_S and more than that round trip itself (the delay signal where no switch marks)."""
    if lowest_rtt <= 0.0:
        return np.zeros(len(samples), dtype=bool)
    out: np.ndarray = samples > lowest_rtt + max(DELAY_TARGET_S, lowest_rtt)
    return out
