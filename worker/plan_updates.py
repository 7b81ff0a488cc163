"""Following a job's plan: new versions from the controller's job service reach the agents.

The controller re-plans a running job around a failed switch or link (controller/replan.py) and streams
the new version to whoever watches the job (``WatchPlan``). ``PlanFollower`` watches in a thread of its
own and hands each version to a callback on the agent's event loop (``call_soon_threadsafe``), so the
agent, single-threaded, takes it between two events (``WorkerAgent.update_plan``,
``ServerAgent.update_job``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from controller.errors import JobServiceError

if TYPE_CHECKING:
    from controller.jobservice import JobClient
    from controller.plan import JobPlan

PlanCallback = Callable[["JobPlan | None", str], object]


class PlanFollower:
    """Watches ``job_id`` at the job service of ``client`` and calls ``deliver(plan, reason)`` (through
    ``hand_over``, e.g. a RealTimeLoop's ``call_soon_threadsafe``) for every new version, or with
    ``(None, reason)`` when the job cannot go on. A watch that breaks (the service went away) ends
    without telling the agent: the job runs on with the plan it has; ``error`` says why."""

    def __init__(
        self,
        client: JobClient,
        job_id: int,
        deliver: PlanCallback,
        hand_over: Callable[..., object] | None = None,
    ):
        self.client, self.job_id, self.deliver = client, job_id, deliver
        self.hand_over = hand_over or (lambda fn, *args: fn(*args))
        self.versions_seen = 0
        self.error = ""
        self._thread = threading.Thread(target=self._run, name=f"plan-follower-{job_id}", daemon=True)

    def start(self) -> PlanFollower:
        """Start watching; return self."""
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        """Wait for the watch to end (the job failed or the channel closed)."""
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            for plan, reason in self.client.watch(self.job_id):
                self.versions_seen += 1
                self.hand_over(self.deliver, plan, reason)
        except JobServiceError as exc:
            self.error = str(exc)
