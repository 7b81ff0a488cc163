"""How a re-planned job reaches the processes that run it: the controller's job manager tells its watchers
of every new plan version, and ``PlanHandover`` hands it on -- to the server agent first (it must know the
new trees before chunks arrive on them), then to the worker agents (the lab's jobs) or the plan file the
training ranks follow (worker.plan_updates.PlanFileWatch). A job that cannot go on has its rounds or
collectives fail with the reason, never hang.

``training_job`` is the life of a job for processes that join through the torch backend: registered,
followed, served by the server agent, removed afterwards.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from controller.plan import JobPlan
from topologies.errors import LabJobError
from topologies.lab_agents import LabAgents
from topologies.lab_control import LabControl
from worker.plan_updates import publish_failure, publish_plan


class PlanHandover:
    """Hands the lab's jobs' new plan versions to the agents; ``failed`` once one could not take it."""

    def __init__(self, control: LabControl, agents: LabAgents, workdir: Callable[[], Path], log: Callable[[str], None]):
        self.control = control
        self.agents = agents
        self.workdir = workdir  # the run's work directory, where each version's file goes
        self.log = log
        self.failed = False

    def follow_lab_jobs(self) -> None:
        """Watch the lab's job and its baseline: new versions to the server agent, then to the workers."""
        for plan in (self.control.plan, self.control.ps_plan):
            self.control.manager().watch(plan.job_id, functools.partial(self.plan_changed, plan.job_id))

    def plan_changed(self, job_id: int, plan: JobPlan | None, reason: str) -> None:
        """A job manager watcher of the lab's jobs: a new plan version goes to the server agent, then to
        every worker; ``plan`` None fails the job's rounds with ``reason``, and so does an agent that does
        not take the version (a server agent that does not answer, an agent whose pipe broke: it died).
        Raises nothing: the job manager calls it while re-planning, and the other jobs must be re-planned too."""
        if plan is None:
            self.log(f"[lab] job {job_id} cannot go on: {reason}")
            self._tell_workers({"cmd": "plan_failed", "job": job_id, "reason": reason})
            return
        try:
            path = self._server_takes(job_id, plan)
        except (LabJobError, OSError) as exc:  # the old trees' entries are gone: the job cannot go on
            self.failed = True
            self.plan_changed(job_id, None, f"the server agent did not take plan version {plan.version}: {exc}")
            return
        refused = self._tell_workers({"cmd": "plan", "plan": str(path)})
        if refused:
            name, why = refused[0]
            self.plan_changed(job_id, None, f"the worker agent {name} did not take plan version {plan.version}: {why}")
            return
        if job_id == self.control.plan.job_id:
            self.control.plan = plan
        elif job_id == self.control.ps_plan.job_id:
            self.control.ps_plan = plan
        self._log_version("job", job_id, plan)

    def training_plan_changed(self, plan_path: Path, job_id: int, plan: JobPlan | None, reason: str) -> None:
        """A job manager watcher of a training job: the ranks follow the plan file they were started with,
        so a new version goes to the server agent, then replaces that file; ``plan`` None makes the ranks'
        collectives fail with ``reason``, and so does a server agent that does not take the version (as
        ``plan_changed``, raises nothing)."""
        if plan is None:
            self.log(f"[lab] training job {job_id} cannot go on: {reason}")
            publish_failure(plan_path, reason)
            return
        try:
            self._server_takes(job_id, plan)
        except (LabJobError, OSError) as exc:  # the old trees' entries are gone: the job cannot go on
            self.failed = True
            self.training_plan_changed(
                plan_path, job_id, None, f"the server agent did not take plan version {plan.version}: {exc}"
            )
            return
        publish_plan(plan_path, plan)
        self._log_version("training job", job_id, plan)

    def _tell_workers(self, cmd: dict[str, Any]) -> list[tuple[str, OSError]]:
        refused = self.agents.tell_workers(cmd)
        if refused:
            self.failed = True
        return refused

    def _server_takes(self, job_id: int, plan: JobPlan) -> Path:
        """Give the server agent a job's new plan version (before any worker sends on its trees); return
        the version's file."""
        path = self.workdir() / f"plan-job{job_id}-v{plan.version}.json"
        path.write_text(plan.to_json(indent=1))
        self.agents.server_call({"cmd": "update_job", "plan": str(path)})
        return path

    def _log_version(self, what: str, job_id: int, plan: JobPlan) -> None:
        """The line saying a job runs on a new plan version, and where it aggregates (tests that kill an
        aggregating switch wait for it)."""
        aggregating = sorted({c.switch for c in plan.switches if c.aggregates})
        where = ", ".join(aggregating) or "none"
        self.log(f"[lab] {what} {job_id} runs on plan version {plan.version} (aggregating: {where})")

    @contextlib.contextmanager
    def training_job(self) -> Iterator[tuple[JobPlan, Path]]:
        """A job of its own for processes that join the network through the torch backend (training,
        bench/allreduce_latency.py): a job id never used before in this lab, its plan file written for
        INA_PLAN, served by the lab's server agent; yields (plan, plan file) and removes the job from
        server and switches afterwards."""
        early: list[tuple[JobPlan | None, str]] | None = []  # told before the server agent has the job (then None)

        def follow(new: JobPlan | None, reason: str) -> None:
            if early is not None:
                early.append((new, reason))
            else:
                self.training_plan_changed(plan_path, plan.job_id, new, reason)

        plan = self.control.register(follow)
        plan_path = self.workdir() / f"train-job{plan.job_id}.json"
        try:
            publish_plan(plan_path, plan)
            self.agents.server_call({"cmd": "add_job", "plan": str(plan_path)})
            with (
                self.control.manager().lock
            ):  # the fault monitor re-planned meanwhile: the server and ranks take the last word
                told, early = early, None
                if told:
                    self.training_plan_changed(plan_path, plan.job_id, *told[-1])
            yield plan, plan_path
        finally:
            self.control.manager().unwatch(plan.job_id, follow)
            self._release(plan)

    def _release(self, plan: JobPlan) -> None:
        """Remove a training job from server and switches. Runs in ``finally``: a failure here is noted, not
        raised over the training's own error (teardown removes everything anyway)."""
        for what, step in (
            ("server agent", lambda: self.agents.server_call({"cmd": "remove_job", "job": plan.job_id})),
            ("switches", lambda: self.control.manager().release(plan.job_id)),
        ):
            try:
                step()
            except Exception as exc:
                self.log(f"[lab] note: could not remove training job {plan.job_id} from the {what}: {exc}")
