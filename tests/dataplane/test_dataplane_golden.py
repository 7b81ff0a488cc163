"""The P4 program reads and writes the golden vectors' layout byte for byte (built with the vectors' K: 4 for
dense ones, 8 and 16 for the 2:4 and 1:4 ones, and the K = 256 variant p4src/ina_k256.p4 for that K's)."""

from pathlib import Path

import pytest

from protocol import codec
from protocol import constants as C
from softswitch.compiler import compile_program
from softswitch.switch import Exact, Switch, TableEntry

INA_P4 = Path(__file__).resolve().parents[2] / "p4src" / "ina.p4"

MACS = ("02:00:00:00:00:01", "02:00:00:00:00:02")
IPS = ("10.0.0.1", "10.0.0.2")


def _switch(program, switch_id, job_id, tree_id, group=0):
    sw = Switch(program, name="golden")
    sw.table("InaIngress.switch_identity").set_default("InaIngress.set_switch_id", {"switch_id": switch_id})
    sw.table("InaIngress.ina_jobs").insert(
        TableEntry(
            matches={"hdr.ina.job_id": Exact(job_id), "hdr.ina.tree_id": Exact(tree_id)},
            action="InaIngress.set_job",
            args={
                "job_index": 0,
                "slot_base": 0,
                "pool_size": 8,
                "max_fan_in": 2,
                "aggregates": 1,
                "result_group": group,
            },
        )
    )
    return sw


def _frame(payload):
    return codec.build_udp_frame(payload, *MACS, *IPS)


def test_golden_grad_aggregated_and_rewritten(ina_program_k4, golden_vectors):
    vector = golden_vectors["grad_two_hops_retx"]
    sw = _switch(ina_program_k4, 7, 258, 2)
    golden = vector["bytes"]
    # child 0 contributes zeros first (same header, child byte of hop 0 = 0, values zero)
    zeros = golden[: 16 + 4] + b"\x00" + golden[16 + 5 : 16 + 16] + bytes(16)
    assert sw.process(1, _frame(zeros)) == []
    out = sw.process(2, _frame(golden))
    assert len(out) == 1 and out[0][0] == 3  # hop 0's egress port
    # expected: hop 0 deleted, hop_count 1, RETX cleared (a sum completed here is new data),
    # contributor = switch 7, values = the golden values (the other child sent zeros)
    expected = golden[:1] + b"\x01\x00" + golden[3:12] + b"\x00\x07" + golden[14:16] + golden[24:]
    assert out[0][1] == _frame(expected)


def test_golden_multicast_result_replicated(ina_program_k4, golden_vectors):
    vector = golden_vectors["result_multicast_no_hops"]
    sw = _switch(ina_program_k4, 1, 3, 0, group=9)
    sw.set_multicast_group(9, [(4, 0), (5, 1)])
    out = sw.process(1, _frame(vector["bytes"]))
    assert sorted(port for port, _ in out) == [4, 5]
    assert all(frame == _frame(vector["bytes"]) for _, frame in out)


@pytest.fixture(scope="module")
def ina_program_k8():
    """ina.p4 built with K = 8: the size of the golden 2:4 vectors (a 2:4 chunk of 8 positions)."""
    return compile_program(str(INA_P4), defines={"VALUES_PER_PACKET": "8"})


@pytest.fixture(scope="module")
def ina_program_k16():
    """ina.p4 built with K = 16: the size of the golden 1:4 vectors (a 1:4 chunk of 16 positions)."""
    return compile_program(str(INA_P4), defines={"VALUES_PER_PACKET": "16"})


def test_golden_2of4_expanded_and_sent_up_as_its_sum(ina_program_k8, golden_vectors):
    """The 2:4 vector behind a hop of switch 7 (aggregate, fan-in 1): the switch sends the chunk's positions
    up in order (its dense sum: flags 0x20, MASKED cleared), 8 * 4 - 1 - 4 * 4 = 15 bytes longer."""
    vector = golden_vectors["grad_2of4_masked"]
    sw = _switch(ina_program_k8, 7, 3, 0)
    golden = vector["bytes"]
    hop = bytes.fromhex("0007 80 01 00 00 0003")  # switch 7, aggregate, fan-in 1, child 0, egress port 3
    payload = golden[:1] + b"\x02" + golden[2:16] + hop + golden[16:]
    out = sw.process(1, _frame(payload))
    assert len(out) == 1 and out[0][0] == 3
    lanes = b"".join((v & 0xFFFFFFFF).to_bytes(4, "big") for v in vector["positions"])
    # flags 0x20 (a 2:4 chunk, not MASKED), contributor = switch 7, the server's hop, the positions in order
    expected = golden[:2] + b"\x20" + golden[3:12] + b"\x00\x07" + golden[14:16] + golden[16:24] + lanes
    assert out[0][1] == _frame(expected)
    assert len(out[0][1]) - len(_frame(payload)) == 15 - C.HOP_BYTES  # grown by 15, one hop popped
    assert sw.counter("InaIngress.ina_stats").read(C.STAT_GRAD_MASKED)[0] == 1


def test_golden_sum_results_pass_and_replicate(ina_program_k8, ina_program_k16, golden_vectors):
    vector = golden_vectors["result_2of4_sum_multicast"]
    sw = _switch(ina_program_k8, 1, 3, 0, group=9)
    sw.set_multicast_group(9, [(4, 0), (5, 1)])
    out = sw.process(1, _frame(vector["bytes"]))
    assert sorted(port for port, _ in out) == [4, 5]
    assert all(frame == _frame(vector["bytes"]) for _, frame in out)
    unicast = golden_vectors["result_1of4_sum_unicast_overflow"]
    sw = _switch(ina_program_k16, 5, 3, 1)
    out = sw.process(1, _frame(unicast["bytes"]))
    golden = unicast["bytes"]
    assert out == [(9, _frame(golden[:1] + b"\x00" + golden[2:16] + golden[24:]))]  # hop popped, values as they were


def test_golden_k256_value_count_0_means_256_lanes(ina_program_k256, golden_vectors):
    """value_count's byte 0 is 256 on the K = 256 program: lane 255 is meaningful, so its overflow is flagged.
    The vector's hop (switch 9) is the next hop after switch 7, which sums the golden values with a child
    whose lanes are 0 except lane 255 = 1 (2^31 - 1 + 1 overflows)."""
    vector = golden_vectors["grad_k256_value_count_256"]
    golden = vector["bytes"]
    sw = _switch(ina_program_k256, 7, 5, 0)
    hop = bytes.fromhex("0007 80 02 00 00 0003")  # switch 7, aggregate, not bos, fan-in 2, child 0, port 3
    values_at = 16 + 8
    other = golden[:1] + b"\x02" + golden[2:16] + hop + golden[16:values_at] + bytes(4 * 255) + (1).to_bytes(4, "big")
    mine = golden[:1] + b"\x02" + golden[2:16] + hop[:4] + b"\x01" + hop[5:] + golden[16:]
    assert sw.process(1, _frame(other)) == []
    out = sw.process(2, _frame(mine))
    assert len(out) == 1 and out[0][0] == 3
    wrapped = (-(2**31)).to_bytes(4, "big", signed=True)
    # hop_count 1 (switch 9's entry left), OVERFLOW, value_count still the byte 0, contributor = switch 7
    expected = golden[:2] + b"\x02" + golden[3:12] + b"\x00\x07" + golden[14:][:-4] + wrapped
    assert out[0][1] == _frame(expected)
    assert sw.counter("InaIngress.ina_stats").read(C.STAT_OVERFLOW)[0] == 1


def test_golden_value_count_256_is_malformed_below_k256(ina_program_k4, golden_invalid_vectors):
    """The byte 0 means 256 values, more than a K = 4 program carries: dropped as malformed, counted."""
    vector = golden_invalid_vectors["value_count_256_with_k4"]
    sw = _switch(ina_program_k4, 7, 1, 0)
    assert sw.process(1, _frame(vector["bytes"])) == []
    assert sw.counter("InaIngress.drop_stats").read(C.DROP_MALFORMED)[0] == 1
