"""bench/allreduce_latency.py's reading of one all_reduce: the ranks' stamps and the frames seen at the
switch's ports become consecutive stages that add up to the call's time, each the difference the
stage names; frames of another call (other sequence numbers, outside its window) do not count."""

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import allreduce_latency as bench  # noqa: E402

from protocol.constants import PKT_TYPE_GRAD, PKT_TYPE_RESULT  # noqa: E402

PORTS = {"h1": "s1-eth1", "h2": "s1-eth2"}
SERVER = "s1-eth5"


def one_call(start: float, seq: int) -> tuple[list[dict], list[tuple]]:
    """Two ranks' records of one call of two chunks (seq, seq + 1) and the frames the switch saw;
    rank 1 sends 0.3 ms after rank 0. Times in ms from ``start``, as seconds."""
    ms = 1e-3
    records = []
    for late in (0.0, 0.3):
        t = start + late * ms
        records.append(
            {
                "call": t,
                "queued": t + 0.05 * ms,
                "picked": t + 0.06 * ms,
                "first_send": t + 0.2 * ms,
                "last_send": t + 0.2 * ms,
                "last_receive": start + 3.0 * ms,
                "executed": start + 3.2 * ms,
                "returned": start + 3.25 * ms,
            }
        )
    frames = []
    for chunk, s in enumerate((seq, seq + 1)):
        extra = 0.1 * chunk * ms
        frames += [
            (start + 0.5 * ms + extra, "s1-eth1", False, PKT_TYPE_GRAD, s),  # rank 0's GRAD in
            (start + 0.8 * ms + extra, "s1-eth2", False, PKT_TYPE_GRAD, s),  # rank 1's, last
            (start + 0.9 * ms + extra, SERVER, True, PKT_TYPE_GRAD, s),  # the sum out to the server
            (start + 2.0 * ms + extra, SERVER, False, PKT_TYPE_RESULT, s),  # its RESULT back
            (start + 2.2 * ms + extra, "s1-eth1", True, PKT_TYPE_RESULT, s),  # the copies out
            (start + 2.3 * ms + extra, "s1-eth2", True, PKT_TYPE_RESULT, s),
        ]
    return records, frames


def test_stages_are_the_differences_they_name_and_add_up_to_the_call():
    first, frames_1 = one_call(100.0, seq=1)
    second, frames_2 = one_call(100.01, seq=3)
    records = [[first[0], second[0]], [first[1], second[1]]]
    # a stray RESULT of an older call inside the window must not count
    stray = [(100.0 + 2.9e-3, "s1-eth1", True, PKT_TYPE_RESULT, 77)]
    bench.port_stamps(records, frames_1 + frames_2 + stray, PORTS, SERVER)
    rank0 = bench.stage_table(records[0], bench.STAGES)
    rank1 = bench.stage_table(records[1], bench.STAGES)
    expected_rank0 = {  # microseconds; the last chunk (seq + 1) is 0.1 ms later than the first
        "torch: checks, copy, queue": 50,
        "hand-over to the thread that runs it": 10,
        "scales, quantize, encode, send": 140,
        "send the rest (window)": 0,
        "link to the switch": 400,  # last_send 0.2 -> its last GRAD in at 0.6
        "waiting for the slowest rank": 300,  # -> rank 1's last GRAD at 0.9
        "switch: GRAD in to sum out": 100,  # -> the last sum out at 1.0
        "server: link both ways + agent": 1100,  # -> its RESULT back at 2.1
        "switch: RESULT in to copy out": 200,  # -> rank 0's copy at 2.3
        "link + agent wake-up": 700,  # -> last receive at 3.0
        "decode, dequantize, write back": 200,
        "back to the caller": 50,
        "total": 3250,
    }
    for name, us in expected_rank0.items():
        assert rank0[name]["median_us"] == pytest.approx(us, abs=0.01), name
        assert rank0[name]["calls"] == 2
    assert rank1["link to the switch"]["median_us"] == pytest.approx(400, abs=0.01)  # its own GRADs
    assert rank1["waiting for the slowest rank"]["median_us"] == pytest.approx(0, abs=0.01)  # it is the slowest
    assert rank1["switch: RESULT in to copy out"]["median_us"] == pytest.approx(300, abs=0.01)
    for table in (rank0, rank1):
        stages = sum(table[name]["median_us"] for name, _, _ in bench.STAGES)
        assert stages == pytest.approx(table["total"]["median_us"], abs=0.01)
    both = bench.stage_table(records[0] + records[1], bench.STAGES)  # means add up whatever the spread
    assert sum(both[name]["mean_us"] for name, _, _ in bench.STAGES) == pytest.approx(both["total"]["mean_us"])


def test_a_send_stamped_after_the_switch_saw_its_frames_gives_no_negative_stage():
    """The rank stamps a batch sent after sendmmsg returned; over veth the kernel timestamps the frame at
    the switch's port during that call, so the stamps can come in the wrong order (seen: -96 us "link to
    the switch" at 2,410 floats). The send stages end at the frames' arrival then, and nothing is negative."""
    records, frames = one_call(100.0, seq=1)
    ms = 1e-3
    for record in records:  # one batch, its system call returned 0.55 ms after the call (0.25 for rank 1)
        record["first_send"] = record["last_send"] = 100.0 + 0.85 * ms
    bench.port_stamps([[records[0]], [records[1]]], frames, PORTS, SERVER)
    rank0 = bench.stage_table([records[0]], bench.STAGES)
    expected = {
        "scales, quantize, encode, send": 440,  # picked 0.06 -> its first GRAD in at 0.5
        "send the rest (window)": 100,  # -> its last GRAD in at 0.6, before the send's stamp (0.85)
        "link to the switch": 0,
        "waiting for the slowest rank": 300,
    }
    for name, us in expected.items():
        assert rank0[name]["median_us"] == pytest.approx(us, abs=0.01), name
    rank1 = bench.stage_table([records[1]], bench.STAGES)  # its own GRADs: in at 0.8 and 0.9
    assert rank1["scales, quantize, encode, send"]["median_us"] == pytest.approx(440, abs=0.01)  # 0.36 -> 0.8
    assert rank1["send the rest (window)"]["median_us"] == pytest.approx(50, abs=0.01)  # -> its stamp, 0.85
    assert rank1["link to the switch"]["median_us"] == pytest.approx(50, abs=0.01)  # -> its last GRAD in, 0.9
    for table in (rank0, rank1):
        assert all(table[name]["median_us"] >= 0 for name, _, _ in bench.STAGES), table
        stages = sum(table[name]["median_us"] for name, _, _ in bench.STAGES)
        assert stages == pytest.approx(table["total"]["median_us"], abs=0.01)


def test_without_captured_frames_the_timeline_stages_still_add_up():
    records, _ = one_call(5.0, seq=1)
    table = bench.stage_table(records, bench.TIMELINE_STAGES)
    assert table["network round trip (send to receive)"]["median_us"] == pytest.approx(
        (2800 + 2500) / 2, abs=0.01
    )  # rank 0: 0.2 -> 3.0 ms, rank 1: 0.5 -> 3.0 ms
    for record in records:
        one = bench.stage_table([record], bench.TIMELINE_STAGES)
        assert sum(one[name]["median_us"] for name, _, _ in bench.TIMELINE_STAGES) == pytest.approx(
            one["total"]["median_us"], abs=0.01
        )


def test_a_fast_ranks_next_call_does_not_count_in_a_slow_ranks_call():
    records, frames = one_call(50.0, seq=1)
    records[0]["last_receive"] = 50.0 + 2.95e-3  # rank 0 is done first and starts its next call at once
    next_grad = (50.0 + 2.98e-3, "s1-eth1", False, PKT_TYPE_GRAD, 3)  # inside rank 1's call, seq of the next
    bench.port_stamps([[records[0]], [records[1]]], [*frames, next_grad], PORTS, SERVER)
    assert records[0]["port:grad_in"] == pytest.approx(50.0 + 0.6e-3)
    assert records[1]["port:grad_in_all"] == pytest.approx(50.0 + 0.9e-3)


def test_each_sum_is_checked_against_gloo_within_the_documented_bounds():
    inputs = bench.rank_inputs(5, 4, 1000)
    assert np.array_equal(inputs[2], np.random.default_rng([5, 2, 1000]).standard_normal(1000).astype(np.float32))
    tolerance = bench.gloo_tolerance(inputs)
    exact = inputs.astype(np.float64).sum(0)
    gloo = inputs.sum(0, dtype=np.float32)
    # 16 N^3 2^-30 of the largest input, about 1e-6 of it at N = 4, then float32 roundings
    assert np.all(tolerance >= 16 * 64 * 2.0**-30 * np.abs(inputs).max()) and np.all(tolerance < 1e-4)
    quantized = (exact + 0.9 * 16 * 64 * 2.0**-30 * np.abs(inputs).max()).astype(np.float32)
    assert 0 < bench.check_sum("ok", quantized, gloo, tolerance) < 1e-5
    wrong = quantized.copy()
    wrong[417] += 1e-3  # one element off by far more than the bounds
    with pytest.raises(bench.SumMismatch, match=r"rank 1, call 7, ina: .* element 417: .*allowed"):
        bench.check_sum("rank 1, call 7, ina", wrong, gloo, tolerance)
    wrong[417] = np.nan
    with pytest.raises(bench.SumMismatch, match="element 417: nan"):
        bench.check_sum("nan", wrong, gloo, tolerance)
