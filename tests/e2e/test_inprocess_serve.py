"""``python -m topologies.inprocess serve``: the in-process network in a child process, joined by
worker agents in this process over attach endpoints; jobs registered over gRPC while packets flow."""

import signal
from pathlib import Path

import numpy as np
import pytest

from topologies.errors import LabError

STAR = Path(__file__).resolve().parents[2] / "topologies" / "star.yaml"


def _agents(served, plan, loop):
    from worker.agent import WorkerAgent
    from worker.transport import AttachTransport

    neighbours = {h.ip: h.mac for h in plan.workers + plan.servers}
    return [
        WorkerAgent(
            plan, w.rank, AttachTransport(served.endpoints[w.name], w.ip, w.mac, neighbours, loop=loop), timeout=0.05
        )
        for w in plan.workers
    ]


def _allreduce(agents, xs, loop):
    handles = [a.allreduce_async(x) for a, x in zip(agents, xs, strict=True)]
    assert loop.run_until(lambda: all(h.done() for h in handles), 60)
    return [h.wait() for h in handles]


def test_serve_a_job_register_another_while_running_and_stop_on_sigterm():
    pytest.importorskip("softswitch.switch")
    from controller.jobservice import JobClient
    from topologies.inprocess.serve import ServedNetwork
    from worker.loop import RealTimeLoop

    loop = RealTimeLoop()
    with ServedNetwork(STAR, "--workers", "2") as served:
        assert served.workers == ["h1", "h2"] and served.servers == ["h5"] and served.switches == ["s1"]
        assert set(served.endpoints) == {"h1", "h2", "h3", "h4"}
        client = JobClient(served.controller)
        first = client.get_plan(served.job_id)
        a = _agents(served, first, loop)
        xs = [np.arange(300, dtype=np.int32) * (r + 1) for r in range(2)]
        for out in _allreduce(a, xs, loop):
            np.testing.assert_array_equal(out, sum(xs))
        # a second job, registered from a gRPC thread of the server while the first one runs
        ys = [np.full(200, 0.5 * (r + 1)) for r in range(2)]
        handles = [ag.allreduce_async(y) for ag, y in zip(a, ys, strict=True)]
        second = client.register(["h3", "h4"], ["h5"])
        assert second.job_id != first.job_id
        b = _agents(served, second, loop)
        zs = [np.full(100, 7 + r, dtype=np.int64) for r in range(2)]
        for out in _allreduce(b, zs, loop):
            np.testing.assert_array_equal(out, 15)
        assert loop.run_until(lambda: all(h.done() for h in handles), 60)
        for h in handles:
            np.testing.assert_allclose(h.wait(), 1.5)
        client.close()
        served.proc.send_signal(signal.SIGTERM)
        assert served.proc.wait(15) == 0
    loop.close()
    # both jobs' chunks were completed by the switch (its P4 counters, read at exit)
    k = first.value_count  # the default program's K (256 on star.yaml's 1500-byte links)
    ints, exps, floats = -(-300 // k), 1, -(-200 // k)
    assert served.all_counters[first.job_id]["s1"]["grad_completed"] == ints + exps + floats
    assert served.all_counters[second.job_id]["s1"]["grad_completed"] == 1 + -(-100 // k)  # range round + ints
    assert served.switch_counters == served.all_counters[first.job_id]


def test_serve_reports_a_bad_request_in_one_line():
    from topologies.inprocess.serve import ServedNetwork

    with pytest.raises(LabError, match="did not start: serve: error: .*'h9'"):
        with ServedNetwork(STAR, "--workers", "h1", "h9", startup_timeout=60):
            pass
