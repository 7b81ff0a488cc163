"""Receive coalescing's hold policy (worker/transport.py), on a clock the test moves: a burst of a few
milliseconds (an all_reduce of some 10k values) is held for at most a quarter of its age, so that its
tail is not kept waiting for a batch that will never fill, while a long stream still gets the whole wait
its rate calls for."""

from protocol import constants as C
from worker.transport import MAX_HOLD_SHARE, UdpTransport

PORT = C.INA_UDP_PORT


class ManualClock:
    """The loop's clock, moved by the test (the policy reads nothing else of the loop)."""

    def __init__(self) -> None:
        self.time = 1000.0

    def now(self) -> float:
        return self.time


def reads(transport: UdpTransport, clock: ManualClock, count: int, per_read: int, every: float) -> list[tuple]:
    """``count`` reads of ``per_read`` datagrams ``every`` seconds apart, as ``_readable`` takes them;
    returns (age of the stream, hold) of every read after which the port was streaming."""
    holds = []
    start = clock.time
    for _ in range(count):
        clock.time += every
        if transport._streaming(PORT, per_read, False):
            holds.append((clock.time - start, transport._wait(PORT, per_read)))
    return holds


def transport_on(clock: ManualClock) -> UdpTransport:
    transport = UdpTransport(ip="127.0.0.31", loop=clock, batch_wait=0.008)  # type: ignore[arg-type]
    transport.expect_batches(PORT, 64)  # a server with a large pool: batches of 64
    return transport


def test_a_burst_of_a_few_milliseconds_is_held_at_most_a_quarter_of_its_age():
    clock = ManualClock()
    # 40 sums at 10k/s, read 4 at a time: a streaming port after 32, with a known rate after 36
    holds = reads(transport_on(clock), clock, 10, 4, 0.0004)
    assert holds, "40 datagrams within 4 ms stream"
    held = [(age, wait) for age, wait in holds if wait > 0]
    assert held, "the port is held once its rate is known"
    for age, wait in held:
        assert wait <= MAX_HOLD_SHARE * age + 1e-9, (age, wait)
        assert wait < 0.001  # a whole batch of 64 at 10k/s would be a 6.4 ms wait, longer than the burst


def test_a_long_stream_gets_the_wait_its_rate_calls_for():
    clock = ManualClock()
    # 100 ms at 10k/s: a batch of 64 gathers in 6.4 ms, below the 8 ms cap
    holds = reads(transport_on(clock), clock, 250, 4, 0.0004)
    assert abs(holds[-1][1] - 64 / 10_000) < 1e-6, holds[-1]


def test_a_new_burst_after_a_pause_starts_young_again():
    clock = ManualClock()
    transport = transport_on(clock)
    reads(transport, clock, 250, 4, 0.0004)  # a long stream
    clock.time += 0.001
    assert not transport._streaming(PORT, 0, True)  # a wait that gathered nothing: the stream ended
    clock.time += 0.05  # 50 ms later, a short burst
    holds = reads(transport, clock, 10, 4, 0.0004)
    assert holds, "the new burst streams"
    assert all(wait <= MAX_HOLD_SHARE * age + 1e-9 for age, wait in holds), holds


def test_a_port_that_expects_small_batches_stops_streaming_and_starts_afresh():
    clock = ManualClock()
    transport = transport_on(clock)
    assert reads(transport, clock, 250, 4, 0.0004)  # a long stream
    transport.expect_batches(PORT, 4)  # the tail of a worker's round: a few chunks in flight
    assert not reads(transport, clock, 10, 4, 0.0004)  # never held
    transport.expect_batches(PORT, 64)  # the next exchange
    clock.time += 0.05
    holds = reads(transport, clock, 10, 4, 0.0004)
    assert holds, "40 datagrams within 4 ms stream again"
    assert len(holds) == 3  # streaming from the 32nd datagram on (the 8th read), not from the first
    assert all(wait <= MAX_HOLD_SHARE * age + 1e-9 for age, wait in holds), holds  # aged from this burst
