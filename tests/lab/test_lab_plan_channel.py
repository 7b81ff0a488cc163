"""How the lab hands a re-planned job to its server agent and ranks (no network: the controller's job
manager without switches, agents that record what they are told)."""

import subprocess
import sys
from pathlib import Path

import pytest

from controller.jobservice import JobManager
from controller.plan import JobPlan
from topologies.errors import LabJobError
from topologies.lab_agents import AgentProcess
from topologies.mininet_lab import MininetLab
from worker.plan_updates import failure_path

LEAF_SPINE = str(Path(__file__).resolve().parents[2] / "topologies" / "leaf_spine.yaml")
NO_ANSWER = "server h9: no answer within 30 s"


class RecordingAgent:
    """A worker agent: keeps the commands it was sent."""

    def __init__(self):
        self.sent: list[dict] = []

    def send(self, obj: dict) -> None:
        self.sent.append(obj)


class FakeServer:
    """The server agent's side of LabAgents.server_call: records the commands; an ``update_job`` of a
    job in ``refuse`` gets the error a hung agent gives; ``on_add`` runs while the agent adds a job."""

    def __init__(self):
        self.calls: list[dict] = []
        self.refuse: set[int] = set()
        self.on_add = lambda: None

    def __call__(self, cmd: dict, answer: str = "job") -> dict:
        self.calls.append(cmd)
        if cmd["cmd"] == "add_job":
            self.on_add()
        if cmd["cmd"] == "update_job" and JobPlan.from_json(Path(cmd["plan"]).read_text()).job_id in self.refuse:
            raise LabJobError(NO_ANSWER)
        return {answer: True}


@pytest.fixture
def logged() -> list[str]:
    """What the lab logged."""
    return []


@pytest.fixture
def lab(tmp_path, logged):
    """A lab with its two jobs planned and watched, as after start(), but no network or agents."""
    lab = MininetLab(LEAF_SPINE, 4, "h9", log=logged.append, monitor_interval=0)
    lab.network.workdir = tmp_path
    lab.control.jobs = JobManager(lab.topo)
    lab.control.plan_jobs(lab.network.mtu)
    lab.agents.workers = {w: RecordingAgent() for w in lab.workers}
    lab.agents.server_call = FakeServer()
    lab.handover.follow_lab_jobs()  # the watchers (monitor_interval 0: no fault monitor)
    return lab


def spines(plan) -> set[str]:
    """The spines where ``plan`` aggregates (the leaves cannot be routed around: their hosts hang off them)."""
    return {c.switch for c in plan.switches if c.aggregates and c.switch.startswith("sp")}


def test_a_server_agent_that_does_not_take_a_version_fails_that_job_and_the_others_are_re_planned(lab):
    """The lab's job's new version is refused (the agent hangs): its workers are told the job cannot go
    on and why, the manager is not interrupted, and the training job on the same spine moves on."""
    lab.agents.server_call.refuse = {lab.plan.job_id}
    with lab.training_job() as (plan, plan_path):
        spine = sorted(spines(plan) & spines(lab.plan))[0]
        lab.control.jobs.switch_failed(spine, "probe failed")  # raises nothing
        moved = JobPlan.from_json(plan_path.read_text())
        assert moved.version == 2 and spine not in {c.switch for c in moved.switches}
        assert not failure_path(plan_path).exists()
    reason = f"the server agent did not take plan version 2: {NO_ANSWER}"
    for agent in lab.agents.workers.values():
        assert agent.sent[0] == {"cmd": "plan_failed", "job": lab.plan.job_id, "reason": reason}
        assert [m["plan"] for m in agent.sent[1:]] == [str(lab.workdir / f"plan-job{lab.ps_plan.job_id}-v2.json")]
    assert lab.failed


def test_a_training_job_whose_version_the_server_agent_does_not_take_fails_with_why(lab):
    with lab.training_job() as (plan, plan_path):
        lab.agents.server_call.refuse = {plan.job_id}
        lab.control.jobs.switch_failed(sorted(spines(plan))[0], "probe failed")
        assert failure_path(plan_path).read_text() == f"the server agent did not take plan version 2: {NO_ANSWER}"
        assert JobPlan.from_json(plan_path.read_text()).version == 1  # the ranks were not moved


def test_a_re_plan_while_the_server_agent_adds_a_training_job_reaches_server_and_ranks(lab):
    """The fault monitor re-plans the job between its registration and the server agent having it: the
    lab hands that version over once the agent has the job (to the agent first, then the plan file)."""
    dead = []

    def monitor_strikes():
        plan = lab.control.jobs.plan(lab.control.next_job_id - 1)
        dead.append(sorted(spines(plan))[0])
        lab.control.jobs.switch_failed(dead[0], "probe failed")

    lab.agents.server_call.on_add = monitor_strikes
    with lab.training_job() as (plan, plan_path):
        now = JobPlan.from_json(plan_path.read_text())
        assert now.version == 2 and dead[0] not in {c.switch for c in now.switches}
        commands = [(c["cmd"], Path(c["plan"]).name) for c in lab.agents.server_call.calls if c.get("plan")]
        training = [c for c in commands if c[1].startswith(("train-", f"plan-job{plan.job_id}-"))]
        assert training == [("add_job", plan_path.name), ("update_job", f"plan-job{plan.job_id}-v2.json")]
    assert lab.agents.server_call.calls[-1] == {"cmd": "remove_job", "job": plan.job_id}  # released afterwards


class DeadAgent:
    """A worker agent whose process died: its command pipe is broken."""

    def send(self, obj: dict) -> None:
        raise BrokenPipeError(32, "Broken pipe")


def test_a_worker_agent_that_died_fails_its_jobs_with_why_and_the_lab_goes_on(lab, logged):
    """A dead agent's broken pipe fails each re-planned job it is a worker of with a reason naming the agent
    (its peers are told: their rounds end with it instead of a timeout); neither the lab's handler nor the
    job manager's re-planning of the next job stops there."""
    dead = lab.workers[1]
    lab.agents.workers[dead] = DeadAgent()
    spine = sorted(spines(lab.plan) & {c.switch for c in lab.ps_plan.switches})[0]  # both jobs cross it
    lab.control.jobs.switch_failed(spine, "probe failed")  # raises nothing: the lab's watchers do not raise
    live = [agent for name, agent in lab.agents.workers.items() if name != dead]
    for job_id in (lab.plan.job_id, lab.ps_plan.job_id):
        assert lab.control.jobs.plan(job_id).version == 2
        reason = f"the worker agent {dead} did not take plan version 2: [Errno 32] Broken pipe"
        for agent in live:
            assert {"cmd": "plan_failed", "job": job_id, "reason": reason} in agent.sent
        assert f"[lab] job {job_id} cannot go on: {reason}" in logged
    assert lab.failed


def test_the_lab_logs_which_switches_aggregate_each_new_version(lab, logged):
    with lab.training_job() as (plan, plan_path):
        spine = sorted(spines(plan))[0]
        lab.control.jobs.switch_failed(spine, "probe failed")
        for job_id, what in ((lab.plan.job_id, "job"), (plan.job_id, "training job")):
            new = lab.control.jobs.plan(job_id)
            aggregating = ", ".join(sorted({c.switch for c in new.switches if c.aggregates}))
            assert f"[lab] {what} {job_id} runs on plan version 2 (aggregating: {aggregating})" in logged


def test_a_training_job_for_a_server_agent_that_died_fails_in_one_line_naming_server_address_and_why(lab):
    """The server agent's process exited before the training job is added: the launcher gets a LabError
    (one line: which server, its address, the agent's last words), not the broken pipe's OSError."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stderr.write('MemoryError: out of memory\\n'); sys.exit(3)"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc.wait(30)
    del lab.agents.server_call  # the lab's own call, to the real (dead) agent process
    lab.agents.server_agent = AgentProcess(proc, "server h9")
    ip = lab.spec.host("h9").ip
    with pytest.raises(LabJobError) as caught, lab.training_job():
        pytest.fail("the training job was added to a dead server agent")
    assert str(caught.value) == (
        f"server h9 at {ip}: its agent is not running (exit code 3: MemoryError: out of memory), "
        "so it cannot take add_job (Broken pipe); its last line says why it stopped: start the lab again"
    )
    assert "\n" not in str(caught.value)
