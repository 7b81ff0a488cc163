"""The job service's state file (controller/job_state.py) without switches: what it keeps (every plan version,
the options, the reserved bandwidth, each job's token, the id rotation), how it is written (whole, by a rename,
its owner's only), the one-line errors of a bad file, and ``inactl serve --state`` restarted for real."""

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from controller.cli import main
from controller.errors import JobServiceError, StateFileError
from controller.generators import leaf_spine, star
from controller.job_state import StateFile
from controller.jobservice import JobClient, JobManager, JobServer
from controller.options import PlanOptions

ROOT = Path(__file__).resolve().parents[2]
STAR = ROOT / "topologies" / "star.yaml"


def test_a_restarted_manager_has_every_version_options_bandwidth_and_the_rotation(tmp_path):
    topo = leaf_spine()
    state = tmp_path / "jobs.json"
    manager = JobManager(topo, state=state)
    options = PlanOptions(planner="multitree", trees=2, pool_size=64)
    multi, _ = manager.register(["h1", "h2", "h3"], ["h9"], options)
    other, _ = manager.register(["h4", "h5"], ["h9"], PlanOptions())
    manager.release(other.job_id)
    (replanned,) = manager.switch_failed("sp1")
    assert not list(tmp_path.glob(".*.tmp"))  # written by a rename: no temporary left
    assert stat.S_IMODE(os.stat(state).st_mode) == 0o600

    again = JobManager(topo, state=state)
    assert again.list() == [replanned] and again.plan(multi.job_id, 1) == multi
    assert again.options[multi.job_id] == manager.options[multi.job_id]
    assert again.resources.reservations == manager.resources.reservations and again.resources.reservations
    assert again.resources.slots.owners() == manager.resources.slots.owners()
    assert again.released == [other.job_id]
    third, _ = again.register(["h4", "h5"], ["h9"], PlanOptions())
    assert third.job_id == other.job_id + 1  # not the released id: the rotation goes on
    assert third.job_index != multi.job_index


def test_a_jobs_token_lets_its_agent_in_after_the_restart(tmp_path):
    state = tmp_path / "jobs.json"
    server = JobServer(JobManager(star(2), state=state), token="service-secret").start()
    admin = JobClient(server.address, token="service-secret")
    plan = admin.register(["h1", "h2"], ["h3"])
    admin.close()
    server.stop()
    server = JobServer(JobManager(star(2), state=state), token="service-secret").start()
    agent = JobClient(server.address, token=admin.job_tokens[plan.job_id])
    try:
        assert agent.get_plan(plan.job_id) == plan
        assert agent.release(plan.job_id) is False
        with pytest.raises(JobServiceError, match=f"needs the service's token or job {plan.job_id}'s"):
            agent.get_plan(plan.job_id)
    finally:
        agent.close()
        server.stop()


def test_a_state_file_that_cannot_be_written_refuses_the_job_and_keeps_nothing(tmp_path):
    directory = tmp_path / "state"
    directory.mkdir()
    manager = JobManager(star(2), state=directory / "jobs.json")
    shutil.rmtree(directory)  # the disk it was on went away
    with pytest.raises(StateFileError, match=rf"^state file {directory}/jobs.json: cannot write it \(No such file"):
        manager.register(["h1", "h2"], ["h3"], PlanOptions())
    assert manager.list() == [] and manager.resources.slots.used("s1") == 0
    directory.mkdir()  # back: the next job is kept
    assert manager.register(["h1", "h2"], ["h3"], PlanOptions())[0].job_id == 2


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "not JSON (Expecting value: line 1 column 1 (char 0)): corrupt, or not a state file"),
        ("[1, 2]", "state format None is not supported (this code reads 1)"),
        ('{"state_format": 9}', "state format 9 is not supported (this code reads 1)"),
        (
            '{"state_format": 1, "topology": "star", "topology_fingerprint": "x"}',
            "written for topology 'star' of other switches, hosts or links, not this 'star' (give another --state file)",
        ),
    ],
)
def test_a_bad_state_file_is_one_line_naming_it(tmp_path, text, problem):
    path = tmp_path / "jobs.json"
    path.write_text(text)
    with pytest.raises(StateFileError) as err:
        JobManager(star(2), state=path)
    assert str(err.value) == f"state file {path}: {problem}"


def test_a_state_file_with_a_job_missing_a_field_names_the_job(tmp_path):
    path = tmp_path / "jobs.json"
    JobManager(star(2), state=path).register(["h1", "h2"], ["h3"], PlanOptions())
    doc = json.loads(path.read_text())
    del doc["jobs"]["1"]["options"]
    doc["jobs"]["1"]["plans"][0]["job_id"] = 1
    path.write_text(json.dumps(doc))
    with pytest.raises(StateFileError, match=rf"^state file {path}: job 1: missing or mistyped 'options'$"):
        StateFile(path, star(2)).load()


def _free_address() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def _serve(state: Path, address: str) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "controller.cli", "serve", str(STAR), "--listen", address, "--state", str(state)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stdout is not None
    line = proc.stdout.readline()  # the service is up once it says so
    assert line == f"job service for star on {address}\n", proc.stderr.read() if proc.stderr else ""
    return proc


def _stop(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0
    return err


def test_inactl_serve_with_state_takes_its_jobs_back_after_a_restart(tmp_path):
    state, address = tmp_path / "jobs.json", _free_address()
    proc = _serve(state, address)
    client = JobClient(address)
    try:
        plan = client.register(["h1", "h2"], ["h5"])
    finally:
        client.close()
        assert _stop(proc) == ""
    proc = _serve(state, address)
    client = JobClient(address)
    try:
        assert client.get_plan(plan.job_id) == plan
    finally:
        client.close()
        err = _stop(proc)
    assert err == f"took back 1 job(s) from {state}: 1 (plan version 1)\n"


def test_inactl_serve_with_a_corrupt_state_file_is_one_line(tmp_path, capsys):
    state = tmp_path / "jobs.json"
    state.write_text("{not json")
    assert main(["serve", str(STAR), "--listen", _free_address(), "--state", str(state)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"inactl: error: state file {state}: not JSON (") and err.count("\n") == 1
    state.write_text(json.dumps({"state_format": 1, "topology": "leaf_spine"}))
    assert main(["serve", str(STAR), "--listen", _free_address(), "--state", str(state)]) == 1
    assert capsys.readouterr().err == (
        f"inactl: error: state file {state}: written for topology 'leaf_spine', not this 'star' "
        "(give another --state file)\n"
    )
    assert main(["serve", str(STAR), "--listen", _free_address(), "--state", str(tmp_path)]) == 1
    assert capsys.readouterr().err == f"inactl: error: state file {tmp_path}: cannot read it (Is a directory)\n"
