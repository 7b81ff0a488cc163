"""The agents' batch path: many packets per call in and out, with the guarantees of one at a time.

Crafted batches (built with the scalar codec, the reference) go straight into a server or worker agent
on a transport that records what it sends; expected packets come from docs/protocol.md's rules. Then
time-bounded retransmission, K taken from the plan, and agents on kernel UDP sockets over loopback
(native batched I/O and the Python fallback)."""

import json
import select
import socket

import numpy as np
import pytest
from agents_hub import HubJob, direct_plan

from native import udp
from protocol import codec
from protocol import constants as C
from server.agent import ServerAgent
from worker.agent import AllreduceTimeout, WorkerAgent
from worker.loop import RealTimeLoop, VirtualLoop
from worker.transport import MIN_HOLD_ROWS, ReceivedBatch, Transport, UdpTransport

K = 4


class RecordingTransport(Transport):
    """Records every datagram sent (decoded with the scalar codec) instead of sending it."""

    def __init__(self, loop, ip):
        super().__init__()
        self.loop, self.ip = loop, ip
        self.sent: list[tuple[str, codec.InaPacket]] = []

    def sendto(self, payload, dst_ip, port=C.INA_UDP_PORT):
        self.sent.append((dst_ip, codec.decode(payload)))

    def take(self) -> list[tuple[str, codec.InaPacket]]:
        sent, self.sent = self.sent, []
        return sent

    def deliver(self, packets: list[codec.InaPacket], src_ip: str = "10.9.9.9", k: int = K) -> None:
        """One batch of these packets (K = ``k``), as a socket would hand them over."""
        payloads = [codec.encode(p, k) for p in packets]
        rows = np.zeros((len(payloads), max(256, 2 * max(map(len, payloads)))), dtype=np.uint8)
        for i, payload in enumerate(payloads):
            rows[i, : len(payload)] = np.frombuffer(payload, dtype=np.uint8)
        lengths = np.array([len(p) for p in payloads], dtype=np.uint32)
        self._deliver_batch(C.INA_UDP_PORT, ReceivedBatch(rows, lengths, np.full(len(rows), udp.ip_number(src_ip))))


def _grad(plan, rank, seq, values, flags=0, op=C.OP_SUM):
    hops = [h.to_codec() for h in plan.trees[0].grad_hops[plan.worker(rank).name]]
    return codec.grad(plan.job_id, seq, hops, values, contributor=rank, flags=flags, op=op, slot=seq % 8)


def _results(sent):
    return sorted((dst, p.header.seq, p.values.tolist(), p.header.flags) for dst, p in sent)


@pytest.fixture
def server():
    plan = direct_plan(3, pool_size=8, value_count=K)
    transport = RecordingTransport(VirtualLoop(), "10.0.1.1")
    agent = ServerAgent(transport, "ps")
    agent.add_job(plan)
    return plan, agent, transport


def test_server_completes_each_chunk_once_from_a_batch_with_duplicates_and_interleaved_chunks(server):
    plan, agent, transport = server
    ips = [w.ip for w in plan.workers]
    transport.deliver(
        [
            _grad(plan, 0, 1, [1, 2, 3, 4]),
            _grad(plan, 1, 1, [10, 20, 30, 40]),
            _grad(plan, 0, 1, [1, 2, 3, 4]),  # the same child twice: counted once
            _grad(plan, 2, 2, [5, 5, 5, 5]),
            _grad(plan, 1, 2, [6, 6, 6, 6]),
        ]
    )
    assert transport.take() == []
    assert (agent.stats["contributions"], agent.stats["duplicates"]) == (4, 1)
    transport.deliver([_grad(plan, 2, 1, [100, 200, 300, 400]), _grad(plan, 0, 2, [7, 7, 7, 7])])
    assert _results(transport.take()) == sorted(
        [(ip, 1, [111, 222, 333, 444], 0) for ip in ips] + [(ip, 2, [18, 18, 18, 18], 0) for ip in ips]
    )
    assert agent.stats["completed"] == 2


def test_server_answers_a_retransmission_of_a_finished_chunk_to_the_ranks_behind_that_child(server):
    plan, agent, transport = server
    transport.deliver([_grad(plan, r, 5, [r, r, r, r]) for r in range(3)])
    assert len(transport.take()) == 3
    transport.deliver([_grad(plan, 1, 5, [1, 1, 1, 1], flags=C.FLAG_RETX), _grad(plan, 2, 5, [2, 2, 2, 2])])
    assert _results(transport.take()) == [(plan.workers[1].ip, 5, [3, 3, 3, 3], 0)]
    assert (agent.stats["answered_retransmissions"], agent.stats["duplicates"]) == (1, 1)


def test_server_ring_keeps_newer_chunks_and_refuses_older_ones_for_the_same_cell(server):
    plan, agent, transport = server
    ring = agent.jobs[plan.job_id].trees[0].ring
    # two chunks one ring apart in one batch: taken one at a time, the newer one takes the cell
    transport.deliver([_grad(plan, 0, 3, [1, 1, 1, 1]), _grad(plan, 0, 3 + ring, [2, 2, 2, 2])])
    transport.deliver([_grad(plan, r, 3 + ring, [2, 2, 2, 2]) for r in (1, 2)])
    assert _results(transport.take()) == [(w.ip, 3 + ring, [6, 6, 6, 6], 0) for w in plan.workers]
    transport.deliver([_grad(plan, 1, 3, [1, 1, 1, 1], flags=C.FLAG_RETX)])  # older than the cell's chunk
    assert transport.take() == [] and agent.stats["stale"] == 1


def test_server_max_overflow_and_bad_packets(server):
    plan, agent, transport = server
    big = 2**31 - 10
    transport.deliver(
        [_grad(plan, r, 9, [r, -r, 7, big], op=C.OP_MAX) for r in range(3)]
        + [_grad(plan, r, 10, [big, 1, 1, 1]) for r in range(3)]
    )
    results = {(dst, p.header.seq): p for dst, p in transport.take()}
    for w in plan.workers:
        assert results[(w.ip, 9)].values.tolist() == [2, 0, 7, big]
        assert results[(w.ip, 9)].header.op == C.OP_MAX and not results[(w.ip, 9)].header.flags
        assert results[(w.ip, 10)].header.flags == C.FLAG_OVERFLOW  # int32 sum out of range
    stray = _grad(plan, 0, 11, [1, 1, 1, 1])
    stray.header.job_id = 99
    wrong_server = _grad(plan, 0, 12, [1, 1, 1, 1])
    wrong_server.hops[0].switch_id = 0x8001
    result = codec.result(plan.job_id, 13, [], [1, 1, 1, 1])
    transport.deliver([stray, wrong_server, result])
    assert transport.take() == []
    assert (agent.stats["unknown_job"], agent.stats["bad_terminal_hop"], agent.stats["not_grad"]) == (1, 1, 1)
    assert json.loads(json.dumps(agent.stats)) == dict(agent.stats)  # plain ints: the lab reports them


def test_worker_takes_a_batch_of_results_out_of_order_with_duplicates_and_stale_ones():
    plan = direct_plan(2, pool_size=2, value_count=K)
    loop = VirtualLoop()
    transport = RecordingTransport(loop, plan.workers[0].ip)
    agent = WorkerAgent(plan, 0, transport, timeout=1.0)
    handle = agent.allreduce_async(np.arange(14, dtype=np.int32))  # 4 chunks, seqs 1..4
    sent = transport.take()
    # window = pool: chunks 0 and 1 only; chunk j uses slot j mod pool, shadow (j div pool) mod 2
    assert [(p.header.seq, p.header.slot, p.header.shadow, p.header.value_count) for _, p in sent] == [
        (1, 0, 0, K),
        (2, 1, 0, K),
    ]

    def result(seq, values, flags=0):
        return codec.result(plan.job_id, seq, [], values, flags=flags)

    transport.deliver([result(2, [5, 5, 5, 5]), result(1, [1, 1, 1, 1]), result(1, [9, 9, 9, 9]), result(77, [0] * K)])
    assert (agent.stats["duplicate_results"], agent.stats["stale_results"]) == (1, 1)
    sent = transport.take()
    assert [(p.header.seq, p.header.slot, p.header.shadow, p.header.value_count) for _, p in sent] == [
        (3, 0, 1, K),
        (4, 1, 1, 2),  # the last chunk holds 2 values
    ]
    transport.deliver([result(4, [8, 8, 0, 0]), result(3, [7, 7, 7, 7])])
    np.testing.assert_array_equal(handle.wait(), [1, 1, 1, 1, 5, 5, 5, 5, 7, 7, 7, 7, 8, 8])


def test_a_lost_result_is_retransmitted_by_the_rounds_one_timer_with_retx_set():
    plan = direct_plan(2, pool_size=8, value_count=K)
    loop = VirtualLoop()
    transport = RecordingTransport(loop, plan.workers[0].ip)
    agent = WorkerAgent(plan, 0, transport, timeout=0.01)
    handle = agent.allreduce_async(np.ones(3 * K, dtype=np.int32))
    assert len(transport.take()) == 3
    transport.deliver([codec.result(plan.job_id, seq, [], [2] * K) for seq in (1, 3)])
    loop.run_until(lambda: bool(transport.sent), 1.0)
    resent = transport.take()
    assert [(p.header.seq, p.header.flags) for _, p in resent] == [(2, C.FLAG_RETX)]
    assert agent.stats["retransmissions"] == 1
    transport.deliver([codec.result(plan.job_id, 2, [], [2] * K)])
    np.testing.assert_array_equal(handle.wait(), 2)


def test_time_budget_carries_a_job_through_loss_a_retry_count_gives_up_on():
    rng = np.random.default_rng(3)
    xs = [rng.integers(-1000, 1000, 3000).astype(np.int32) for _ in range(3)]
    with pytest.raises(AllreduceTimeout, match="after 2 retransmissions"):
        HubJob(3, seed=1, loss=0.3, timeout=0.01, retries=2).allreduce(xs)
    job = HubJob(3, seed=1, loss=0.3, timeout=0.01, retries=None, give_up_after=30.0)
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    assert max(a.stats["retransmissions"] for a in job.agents) > 0


def test_time_budget_ends_a_job_with_a_dead_server_within_the_budget():
    job = HubJob(2, timeout=0.01, retries=None, give_up_after=0.5)
    job.hub.hosts["10.0.1.1"].alive = False
    handle = job.agents[0].allreduce_async(np.ones(10, dtype=np.int32))
    with pytest.raises(AllreduceTimeout, match=r"no result for chunk seq 1 .* over 0\.\d+ s"):
        handle.wait()
    # the budget, then at most one capped backoff period (16 x 10 ms) to notice it
    assert 0.5 <= job.loop.now() <= 0.5 + 0.16 + 1e-9


def test_retries_none_needs_a_time_budget():
    plan = direct_plan(2)
    with pytest.raises(ValueError, match="give_up_after"):
        WorkerAgent(plan, 0, RecordingTransport(VirtualLoop(), plan.workers[0].ip), retries=None, give_up_after=None)


@pytest.mark.parametrize("k", [16, C.VALUES_PER_PACKET])
def test_packets_carry_the_plans_k_lanes(k):
    job = HubJob(3, value_count=k)
    xs = [np.arange(1000, dtype=np.int32) * (r + 1) for r in range(3)]
    for out in job.allreduce(xs):
        np.testing.assert_array_equal(out, sum(xs))
    agent = job.agents[0]
    assert agent.transport.sent_bytes == agent.stats["packets_sent"] * codec.payload_size(1, k)
    assert agent.stats["packets_sent"] == -(-1000 // k)


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
def test_agents_on_kernel_udp_over_loopback(native):
    if native and udp.native_library() is None:
        pytest.skip("no C compiler: the native helper cannot be built")
    plan = direct_plan(3, pool_size=16)
    for w in plan.workers:
        w.ip = f"127.0.0.{11 + w.rank}"
    plan.servers[0].ip = "127.0.0.10"
    loop = RealTimeLoop()
    transports = []

    def transport(ip):
        transports.append(UdpTransport(ip=ip, loop=loop, bind_ip=ip, native=native))
        return transports[-1]

    try:
        server = ServerAgent(transport("127.0.0.10"), "ps")
        server.add_job(plan)
        agents = [WorkerAgent(plan, w.rank, transport(w.ip), timeout=0.2, retries=10) for w in plan.workers]
        rng = np.random.default_rng(5)
        ints = [rng.integers(-(10**6), 10**6, 20_000).astype(np.int32) for _ in agents]
        floats = [rng.normal(size=5_000) for _ in agents]
        for xs in (ints, floats):
            handles = [a.allreduce_async(x) for a, x in zip(agents, xs, strict=True)]
            assert loop.run_until(lambda hs=handles: all(h.done() for h in hs), 60)
            exact = np.sum(xs, axis=0)
            for h in handles:
                got = h.wait()
                if got.dtype.kind == "i":
                    np.testing.assert_array_equal(got, exact)
                else:
                    assert np.abs(got - exact).max() <= 1e-6 * np.abs(exact).max()
        k = C.VALUES_PER_PACKET
        blocks = -(-5_000 // k)  # float rounds: one exponent per block of K values, then the values
        assert server.stats["completed"] == -(-20_000 // k) + -(-blocks // k) + blocks
        assert all(t.send_errors == 0 for t in transports)
    finally:
        for t in transports:
            t.close()
        loop.close()


def _window_job(k: int, pool: int):
    """A worker of a two-worker job with K = ``k`` on a recording transport, and a function answering
    the packets it sent (the result: 2 at every value)."""
    plan = direct_plan(2, pool_size=pool, value_count=k)
    loop = VirtualLoop()
    transport = RecordingTransport(loop, plan.workers[0].ip)
    agent = WorkerAgent(plan, 0, transport, timeout=0.01)

    def answer(sent):
        transport.deliver([codec.result(plan.job_id, p.header.seq, [], [2] * k) for _, p in sent], k=k)

    return loop, transport, agent, answer


def _finish(loop, transport, handle, answer):
    while not handle.done():
        sent = transport.take()
        if sent:
            answer(sent)
        else:
            loop.run_until(lambda: bool(transport.sent) or handle.done(), 1.0)
    np.testing.assert_array_equal(handle.wait(), 2)


def test_the_window_starts_small_grows_with_results_and_halves_on_a_timeout():
    loop, transport, agent, answer = _window_job(64, 512)
    handle = agent.allreduce_async(np.ones(400 * 64, dtype=np.int32))
    first = transport.take()
    assert [p.header.seq for _, p in first] == list(range(1, 33))  # 32 chunks (8 KiB), not the pool's 512
    answer(first)
    second = transport.take()
    assert [p.header.seq for _, p in second] == list(range(33, 97))  # slow start: the window doubled
    loop.run_until(lambda: bool(transport.sent), 1.0)  # all lost: the round's timer resends them
    resent = transport.take()
    assert [(p.header.seq, p.header.flags) for _, p in resent] == [(s, C.FLAG_RETX) for s in range(33, 97)]
    answer(resent)
    # halved to 32 at the timeout, then one chunk more per window of results: 32 + 64/32 = 34
    assert [p.header.seq for _, p in transport.take()] == list(range(97, 131))
    _finish(loop, transport, handle, answer)


def test_at_k256_slow_start_ends_at_256_kib_a_quarter_of_the_chunks_of_k64():
    loop, transport, agent, answer = _window_job(256, 2048)
    handle = agent.allreduce_async(np.ones(1200 * 256, dtype=np.int32))
    sent = transport.take()
    assert [p.header.seq for _, p in sent] == list(range(1, 33))  # 32 chunks, as at K = 64
    in_flight = []
    while len(sent):  # every window answered at once: slow start doubles it up to 256 KiB, then +1 per window
        in_flight.append(len(sent))
        answer(sent)
        sent = transport.take()
        if in_flight[-1] >= 256:
            break
    assert in_flight == [32, 64, 128, 256]  # 256 chunks of 1 KiB of values
    assert len(sent) == 256 + 1  # past 256 KiB the window grows by one chunk per round trip
    _finish(loop, transport, handle, answer)


def test_a_burst_of_losses_halves_the_window_once_per_round_trip():
    loop, transport, agent, answer = _window_job(64, 512)
    handle = agent.allreduce_async(np.ones(400 * 64, dtype=np.int32))
    answer(transport.take())  # 32 answered: the window is 64
    lost = transport.take()
    assert len(lost) == 64
    answer(lost[:16])  # the first 16 answered (16 more go out), the 48 after them lost
    later = transport.take()
    loop.run_until(lambda: bool(transport.sent), 1.0)  # the first timer: the 48 lost ones time out
    resent = transport.take()
    loop.run_until(lambda: bool(transport.sent), 1.0)  # the next: the 16 sent later, one batch after
    resent += transport.take()
    assert {p.header.seq for _, p in resent} == {p.header.seq for _, p in lost[16:] + later}
    # two timer events of one loss burst, within one retransmission timeout: halved once (80 / 2 = 40)
    cursor = agent.cursors[0]
    assert (cursor.window, cursor.threshold) == (40.0, 40.0)
    _finish(loop, transport, handle, answer)


@pytest.mark.parametrize("detect", [True, False])
@pytest.mark.parametrize("answered_after_resend", [0.0002, 0.002])
def test_a_result_back_sooner_after_its_resend_than_the_minimum_round_trip_takes_back_the_halving(
    answered_after_resend, detect
):
    loop, transport, agent, answer = _window_job(64, 512)
    agent.detect_spurious = detect
    handle = agent.allreduce_async(np.ones(400 * 64, dtype=np.int32))
    loop.call_later(0.001, answer, transport.take())  # the path's round trip: 1 ms
    loop.run_until(lambda: bool(transport.sent), 1.0)
    assert len(transport.take()) == 64  # slow start, sent at 1 ms, then no result within the 10 ms timeout
    loop.run_until(lambda: bool(transport.sent), 1.0)
    resent = transport.take()
    assert len(resent) == 64 and all(p.header.flags == C.FLAG_RETX for _, p in resent)
    cursor = agent.cursors[0]
    assert cursor.window == 32.0  # halved at the timeout
    loop.call_later(answered_after_resend, answer, resent)
    loop.run_until(lambda: bool(transport.sent), 1.0)
    sent = [p.header.seq for _, p in transport.take()]
    if answered_after_resend < 0.001 and detect:
        # back 0.2 ms after the resend, 5x sooner than any round trip: the first sends' results (delayed,
        # not lost): the halving is taken back (64 again, still in slow start: 128 after 64 results)
        assert sent == list(range(97, 97 + 128))
        assert agent.stats["window_halvings_undone"] == 1 and agent.stats["spurious_resends"] == 64
    else:  # answered a round trip after the resend (lost), or no detection: halved, 32 + 64/32 chunks
        assert sent == list(range(97, 97 + 34))
        assert agent.stats["window_halvings_undone"] == 0 and agent.stats["spurious_resends"] == 0
    assert float(agent.rto(0)) == 0.02  # Karn: doubled until a chunk sent once is answered
    _finish(loop, transport, handle, answer)


def _paced_datagrams(
    count: int, batch_wait: float, expected_rows: int = 64, burst: int = 8, gap: float = 0.0005
) -> tuple[list[int], UdpTransport]:
    """``count`` numbered datagrams sent over loopback in bursts of ``burst`` every ``gap`` seconds to a
    transport with ``batch_wait`` whose handler expects batches of ``expected_rows``; returns the size of
    every batch it delivered (all must arrive, in order) and the transport."""
    loop = RealTimeLoop()
    receiver = UdpTransport(ip="127.0.0.21", loop=loop, bind_ip="127.0.0.21", batch_wait=batch_wait)
    batches: list[int] = []
    numbers: list[int] = []

    def on_batch(batch):
        batches.append(len(batch))
        numbers.extend(int.from_bytes(batch.payload(i), "big") for i in range(len(batch)))

    receiver.bind_batch(C.INA_UDP_PORT, on_batch)
    receiver.expect_batches(C.INA_UDP_PORT, expected_rows)  # 64: the handler takes 64 at once, waits of 4 ms
    sender = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sender.bind(("127.0.0.22", 0))
    try:
        for i in range(count):
            sender.sendto(i.to_bytes(4, "big"), ("127.0.0.21", C.INA_UDP_PORT))
            if i % burst == burst - 1:
                loop.run_until(lambda: False, gap)
        assert loop.run_until(lambda: len(numbers) == count, 5.0)
        assert numbers == list(range(count))
        return batches, receiver
    finally:
        sender.close()
        receiver.close()
        loop.close()


def test_a_streaming_port_is_read_in_batches_and_a_short_exchange_is_not_held():
    # 400 datagrams, 16 a millisecond: after the first 32, each read takes what 4 ms gathered
    batches, receiver = _paced_datagrams(400, batch_wait=0.008)
    assert receiver.held_batches > 0
    assert len(batches) <= 0.75 * 400 / 8, f"{len(batches)} batches: the port was read burst by burst"
    # a short exchange (fewer than STREAM_PACKETS datagrams) is handed over at once, never held
    batches, receiver = _paced_datagrams(24, batch_wait=0.008)
    assert receiver.held_batches == 0 and sum(batches) == 24
    # batch_wait 0: every burst as soon as it arrives (a reader the machine runs late may find two bursts
    # waiting: that is not a hold, so the count of batches only has to stay far above a held port's)
    batches, receiver = _paced_datagrams(400, batch_wait=0.0)
    assert receiver.held_batches == 0 and len(batches) >= 0.5 * 400 / 8
    # a handler expecting small batches (a worker with few chunks in flight: a small model's all_reduce
    # every few ms streams too) is never held, so its last results are not kept waiting
    batches, receiver = _paced_datagrams(400, batch_wait=0.008, expected_rows=MIN_HOLD_ROWS - 1)
    assert receiver.held_batches == 0 and len(batches) >= 0.5 * 400 / 8
    # bursts of 20 every 10 ms stream (40 within 20 ms) but would take 32 ms to fill a batch of 64: a
    # server under a small model's all_reduces; holding them would only delay each burst
    batches, receiver = _paced_datagrams(400, batch_wait=0.008, burst=20, gap=0.01)
    assert receiver.held_batches == 0 and len(batches) >= 0.5 * 400 / 20


class _RecordingEpoll:
    """An epoll object that records how long each ``poll`` may sleep (seconds; None or < 0: no limit)."""

    def __init__(self, epoll, slept: list[float]):
        self._epoll, self._slept = epoll, slept

    def poll(self, timeout=None, maxevents=-1):
        self._slept.append(float("inf") if timeout is None or timeout < 0 else timeout)
        return self._epoll.poll(timeout, maxevents)

    def __getattr__(self, name):
        return getattr(self._epoll, name)


def test_the_wall_clock_loop_never_sleeps_past_a_sub_millisecond_timer(monkeypatch):
    # epoll_wait sleeps in whole milliseconds: a 0.3 ms receive hold (the worker's quarter of a 64-chunk
    # window) lasted 1-1.3 ms and the window's round trip with it; select() on the epoll descriptor times it
    loop = RealTimeLoop()
    slept: list[float] = []
    loop._selector._selector = _RecordingEpoll(loop._selector._selector, slept)  # type: ignore[attr-defined]
    real_select = select.select

    def recording_select(readers, writers, errors, timeout=None):
        slept.append(float("inf") if timeout is None else timeout)
        return real_select(readers, writers, errors, timeout)

    monkeypatch.setattr(select, "select", recording_select)
    fired = []
    try:
        for delay in (0.0003, 0.0017, 0.0042):
            start = loop.now()
            loop.call_later(delay, lambda: fired.append(True))
            slept.clear()
            assert loop.run_until(lambda: len(fired) == 1, 1.0)
            fired.clear()
            assert loop.now() - start >= delay
            assert slept and max(slept) <= delay, f"asked the kernel to sleep {max(slept)} s for a {delay} s timer"
    finally:
        loop.close()


@pytest.mark.parametrize("dtype", [np.int32, np.float32])
def test_a_dense_round_sums_in_the_snapshot_rows_and_leaves_the_input_alone(dtype):
    """allreduce_async takes one snapshot of a dense input, laid out as the round's chunk rows (the last one
    padded with zeros); the round sends and sums in those rows (a float input's quantized values): no
    vector-sized copy of its own. The caller's array is never written, and the padding adds nothing."""
    loop, transport, agent, answer = _window_job(64, 512)
    values = np.arange(1, 64 * 5 + 17 + 1).astype(dtype)  # 5 full chunks and one of 17 values
    before = values.copy()
    handle = agent.allreduce_async(values)
    if dtype == np.int32:
        assert handle.rows is not None and handle.rows.shape == (6, 64)
        assert agent._round is not None and agent._round.values is handle.rows
        assert not handle.rows[-1, 17:].any()
    sent = transport.take()
    while not handle.done():
        if dtype == np.int32 or any(p.header.op == C.OP_SUM for _, p in sent):
            # the other worker gives the same values: every RESULT holds twice this worker's (or its max)
            transport.deliver(
                [codec.result(agent.job_id, p.header.seq, [], 2 * p.values[: p.header.value_count]) for _, p in sent],
                k=64,
            )
        else:
            transport.deliver([codec.result(agent.job_id, p.header.seq, [], p.values) for _, p in sent], k=64)
        sent = transport.take()
        if not sent and not handle.done():
            loop.run_until(lambda: bool(transport.sent) or handle.done(), 1.0)
            sent = transport.take()
    np.testing.assert_array_equal(handle.wait(), 2 * before)
    np.testing.assert_array_equal(values, before)


def test_a_replan_offers_finished_chunks_with_this_workers_values_not_the_sums():
    """On a re-plan a worker offers the recovery tree the chunks it finished in the last pool (a root that
    died mid-multicast may have left the server without their sums). The server may have to sum them from
    every worker's offer, so each carries the worker's own values, although a dense round has written the
    sums over them."""
    k, pool = 64, 512
    loop, transport, agent, answer = _window_job(k, pool)
    values = np.arange(1, 100 * k + 1, dtype=np.int32)
    handle = agent.allreduce_async(values)
    first = transport.take()  # slow start: the first 32 chunks
    transport.deliver(
        [codec.result(agent.job_id, p.header.seq, [], 2 * p.values) for _, p in first[:20]], k=k
    )  # 20 finished (their sums written over the round's values), 12 still in flight
    transport.take()  # the window's next sends on tree 0

    moved = direct_plan(2, pool_size=pool, value_count=k, trees=2)
    moved.trees[0].tree_id, moved.trees[0].weight = 1, 1.0  # tree 0 is gone: a new one and a recovery tree
    moved.trees[1].tree_id, moved.trees[1].weight = 2, 0.0
    moved.version = agent.plan.version + 1
    agent.update_plan(moved)
    offered = [p for _, p in transport.take() if p.header.tree_id == 2]
    assert agent.stats["finished_chunks_offered"] == 20
    finished = {p.header.seq for _, p in first[:20]}
    assert {p.header.seq for p in offered} >= finished
    for p in offered:
        chunk = p.header.seq - first[0][1].header.seq
        np.testing.assert_array_equal(p.values, values[chunk * k : (chunk + 1) * k], err_msg=f"seq {p.header.seq}")
    assert not handle.done()


def test_a_replan_gives_the_recovery_tree_a_whole_time_budget():
    """A failure is noticed and re-planned some time after the chunks in flight were sent. The chunks
    moved to the recovery tree then get the whole time budget from the re-plan, not what is left of it:
    with a 2 s budget, a re-plan at 1.5 s keeps the round going past 2 s, and the round still ends a
    budget after the re-plan when the recovery tree answers nothing either."""
    k, pool = 64, 512
    plan = direct_plan(2, pool_size=pool, value_count=k)
    loop = VirtualLoop()
    transport = RecordingTransport(loop, plan.workers[0].ip)
    agent = WorkerAgent(plan, 0, transport, timeout=0.01, give_up_after=2.0)
    handle = agent.allreduce_async(np.ones(10 * k, dtype=np.int32))
    loop.run_until(lambda: False, 1.5)  # every GRAD lost: the old tree's switch died
    assert not handle.done()

    moved = direct_plan(2, pool_size=pool, value_count=k, trees=2)
    moved.trees[0].tree_id, moved.trees[0].weight = 1, 1.0  # tree 0 is gone: a new one and a recovery tree
    moved.trees[1].tree_id, moved.trees[1].weight = 2, 0.0
    moved.version = agent.plan.version + 1
    agent.update_plan(moved)
    assert agent.stats["chunks_moved"] == 10
    loop.run_until(handle.done, 1.9)  # 3.4 s after the first sends, 1.9 s after the re-plan
    assert not handle.done()
    loop.run_until(handle.done, 0.5)
    with pytest.raises(AllreduceTimeout, match=r"no result for chunk seq \d+ .*tree 2"):
        handle.wait()
    assert 3.5 <= loop.now() <= 3.5 + 0.16 + 1e-9


def test_a_replan_gives_the_recovery_tree_the_whole_resend_count():
    """With ``retries=N`` a chunk moved to the recovery tree gets N resends there, whatever it spent on
    the dead tree: the moving send, then N resends, then AllreduceTimeout."""
    k, pool, retries = 64, 512, 3
    plan = direct_plan(2, pool_size=pool, value_count=k)
    loop = VirtualLoop()
    transport = RecordingTransport(loop, plan.workers[0].ip)
    agent = WorkerAgent(plan, 0, transport, timeout=0.01, retries=retries, give_up_after=30.0)
    handle = agent.allreduce_async(np.ones(4 * k, dtype=np.int32))
    assert loop.run_until(lambda: agent.stats["retransmissions"] >= 2 * 4, 5.0)  # every GRAD lost twice
    assert not handle.done()

    moved = direct_plan(2, pool_size=pool, value_count=k, trees=2)
    moved.trees[0].tree_id, moved.trees[0].weight = 1, 1.0
    moved.trees[1].tree_id, moved.trees[1].weight = 2, 0.0
    moved.version = agent.plan.version + 1
    transport.take()
    agent.update_plan(moved)
    assert loop.run_until(handle.done, 30.0)
    with pytest.raises(AllreduceTimeout, match=rf"after {retries} retransmissions"):
        handle.wait()
    on_recovery = [p.header.seq for _, p in transport.take() if p.header.tree_id == 2]
    first = min(on_recovery)
    assert on_recovery.count(first) == 1 + retries
