"""How the lab's training launcher judges its rank processes (no root: a stand-in network runs
small scripts in place of train_digits.py, one per host, with the launcher's arguments)."""

import json
import subprocess
import sys
import time

import pytest

from topologies.lab_training import RankHost, TrainError, run_ranks

SUMMARY = {
    "workers": 2,
    "epochs": 1,
    "seed": 0,
    "test_accuracy": 0.9,
    "ms_per_iteration": 5.0,
    "iterations": 21,
    "ranks_in_sync": True,
}
WRITE_SUMMARY = (
    "import json, sys; a = sys.argv; open(a[a.index('--json') + 1], 'w').write(json.dumps("
    + repr(SUMMARY)
    + ")); print('rank 0 done', flush=True)"
)
HOSTS = [RankHost("h1", "10.0.0.1", "h1-eth0"), RankHost("h2", "10.0.0.2", "h2-eth0")]


class ScriptedNetwork:
    """``popen`` like LabNetwork's, running ``scripts[host]`` with the launcher's argv appended."""

    def __init__(self, scripts):
        self.scripts = scripts
        self.started = []

    def popen(self, host, argv, what, **kwargs):
        proc = subprocess.Popen([sys.executable, "-c", self.scripts[host], *argv[2:]], start_new_session=True, **kwargs)
        self.started.append(proc)
        return proc


def _run(scripts, tmp_path, **kw):
    net = ScriptedNetwork(scripts)
    try:
        return run_ranks(net, HOSTS, "gloo", 1, 0, tmp_path, log=lambda m: None, **kw), net
    finally:
        assert all(p.poll() is not None for p in net.started)  # nothing left running


def test_a_clean_run_returns_rank_0s_summary(tmp_path):
    result, net = _run({"h1": WRITE_SUMMARY, "h2": "pass"}, tmp_path)
    assert (result.test_accuracy, result.ms_per_iteration, result.iterations) == (0.9, 5.0, 21)
    assert result.notes == []
    argv = net.started[0].args
    assert argv[argv.index("--master-addr") + 1] == "10.0.0.1" and argv[argv.index("--rank") + 1] == "0"


def test_the_first_failing_rank_is_named_with_its_output_and_the_others_are_stopped(tmp_path):
    start = time.monotonic()
    with pytest.raises(TrainError) as err:
        _run(
            {
                "h1": "import time; time.sleep(60)",
                "h2": "import sys; print('loading'); print('boom: peer lost', flush=True); sys.exit(3)",
            },
            tmp_path,
            grace=1,
        )
    assert str(err.value) == (
        "training failed on h2 (rank 1): exit status 3; its last output:\n    loading\n    boom: peer lost"
    )
    assert time.monotonic() - start < 30


def test_the_deadline_names_every_rank_still_running(tmp_path):
    with pytest.raises(
        TrainError,
        match=r"did not finish within 2 s: still running on h1 \(rank 0\), "
        r"h2 \(rank 1\); last output of h1:\n    waiting",
    ):
        _run(
            {"h1": "import time; print('waiting', flush=True); time.sleep(60)", "h2": "import time; time.sleep(60)"},
            tmp_path,
            timeout=2,
        )


def test_the_deadline_shows_the_stacks_of_ina_ranks_still_running(tmp_path):
    """ina ranks dump their stacks on the lab's signal (INA_STACKS_SIGNAL, set by the launcher): the
    deadline's error shows where each rank still running sits."""
    waits = (
        "from worker.stacks import dump_stacks_on_signal; dump_stacks_on_signal()\n"
        "import time\ndef waiting_for_peers():\n    time.sleep(60)\nprint('waiting', flush=True); waiting_for_peers()"
    )
    net = ScriptedNetwork({"h1": waits, "h2": waits})
    with pytest.raises(TrainError) as err:
        run_ranks(net, HOSTS, "ina", 1, 0, tmp_path, plan_path="plan.json", timeout=3, log=lambda m: None)
    assert all(p.poll() is not None for p in net.started)
    message = str(err.value)
    assert message.startswith("training did not finish within 3 s: still running on h1 (rank 0), h2 (rank 1)")
    for rank in ("h1 (rank 0)", "h2 (rank 1)"):
        stacks = message.split(f"stacks of {rank}:\n")[1].split("stacks of")[0]
        assert 'File "<string>", line 4 in waiting_for_peers' in stacks, message


def test_a_rank_without_the_stack_handler_is_named_as_ended_by_the_signal(tmp_path):
    """A rank that has not loaded the ina backend yet (still importing, or in its rendezvous) has no
    handler: the signal ends it, and the error says so instead of a bare "no stack dump"."""
    net = ScriptedNetwork({"h1": "import time; time.sleep(60)", "h2": "import time; time.sleep(60)"})
    with pytest.raises(TrainError) as err:
        run_ranks(net, HOSTS, "ina", 1, 0, tmp_path, plan_path="plan.json", timeout=2, log=lambda m: None)
    message = str(err.value)
    assert "stacks of h1 (rank 0):\n    (no stack dump: SIGUSR1 ended it before the ina backend" in message, message


def test_a_rank_crashing_on_the_way_out_after_the_summary_is_a_note(tmp_path):
    """torch/gloo can abort a process at exit ("terminate called without an active exception")
    after training finished on every rank: the run's result stands, the crash is reported."""
    result, _ = _run(
        {
            "h1": WRITE_SUMMARY,
            "h2": "import os, time; time.sleep(1); print('terminate called', flush=True); os.abort()",
        },
        tmp_path,
    )
    assert result.test_accuracy == 0.9
    assert result.notes == [
        "h2 (rank 1) exited with status -6 after training had finished on every rank; "
        "its last output:\n    terminate called"
    ]


def test_a_rank_hanging_after_the_summary_is_stopped_after_the_grace(tmp_path):
    result, _ = _run({"h1": WRITE_SUMMARY, "h2": "import time; time.sleep(60)"}, tmp_path, grace=1)
    assert result.notes and result.notes[0].startswith("h2 (rank 1) had not exited 1 s later (stopped)")


def test_summary_json_is_what_rank_0_wrote(tmp_path):
    _run({"h1": WRITE_SUMMARY, "h2": "pass"}, tmp_path, port=29999)
    assert json.loads((tmp_path / "train-gloo-29999" / "summary.json").read_text()) == SUMMARY


def test_model_flags_reach_every_rank(tmp_path):
    _, net = _run({"h1": WRITE_SUMMARY, "h2": "pass"}, tmp_path, example_args=("--hidden", "1000", "--depth", "2"))
    for proc in net.started:
        argv = proc.args
        assert argv[argv.index("--hidden") + 1] == "1000" and argv[argv.index("--depth") + 1] == "2"
