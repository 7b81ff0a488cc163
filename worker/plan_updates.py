"""Following a job's plan: new versions from the controller reach the agents.

The controller re-plans a running job around a failed switch or link (controller/replan.py) and tells
whoever watches the job. Two channels carry the versions, each a ``PlanSource``: the job service's
``WatchPlan`` stream (``controller.jobservice.JobClient``) and, where the ranks cannot reach the controller
(the mininet lab's hosts), the plan file itself (``PlanFileWatch``: the lab replaces the file with each
version, ``publish_plan``, or says why the job cannot go on, ``publish_failure``). ``PlanFollower``
watches a source in a thread of its own and hands each version to a callback on the agent's event loop
(``call_soon_threadsafe``), so the agent, single-threaded, takes it between two events
(``WorkerAgent.update_plan``, ``ServerAgent.update_job``): one way to apply a new plan, whatever carried it.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from controller.errors import JobServiceError, PlanFormatError

if TYPE_CHECKING:
    from controller.plan import JobPlan

PlanCallback = Callable[["JobPlan | None", str], object]
PLAN_FILE_POLL_S = 0.1  # how often a PlanFileWatch looks at the file (a stat: cheap)


class PlanSource(Protocol):
    def watch(self, job_id: int) -> Iterator[tuple[JobPlan | None, str]]:
        """Every plan version of ``job_id`` as ``(plan, "")``, until ``(None, reason)`` (the job cannot go
        on) or the source is closed."""
        ...

    def close(self) -> None:
        """End the watch."""
        ...


def failure_path(plan_path: str | Path) -> Path:
    """Where ``publish_failure`` says why the job of the plan file ``plan_path`` cannot go on."""
    return Path(f"{plan_path}.failed")


def _replace(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (a reader sees the old file or the new one, never half)."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text)
    os.replace(temporary, path)


def publish_plan(plan_path: str | Path, plan: JobPlan) -> None:
    """Replace the plan file with ``plan`` (a new version: the ranks watching it move their chunks)."""
    _replace(Path(plan_path), plan.to_json(indent=1))


def publish_failure(plan_path: str | Path, reason: str) -> None:
    """Tell the ranks watching ``plan_path`` that the job cannot go on, and why (their collectives fail
    with ``reason``)."""
    _replace(failure_path(plan_path), reason)


class PlanFileWatch:
    """A ``PlanSource`` over a plan file: yields each plan version of the job the file holds, once and in
    order of version number (the first look yields the plan it holds), and ``(None, reason)`` once
    ``failure_path`` exists. New is decided by the version, not by the file: a file replaced between two
    reads, or replaced with a version already yielded, yields nothing more. A file that cannot be read or
    parsed at a look is looked at again at the next one (``publish_plan`` replaces it whole, so that is a
    file being removed)."""

    def __init__(self, path: str | Path, interval: float = PLAN_FILE_POLL_S):
        self.path, self.interval = Path(path), interval
        self._closed = threading.Event()

    def watch(self, job_id: int) -> Iterator[tuple[JobPlan | None, str]]:
        from controller.plan import JobPlan

        seen: tuple[int, int, int] | None = None  # the file last read (a stat, cheaper than a parse)
        version = 0  # the newest version yielded
        while not self._closed.is_set():
            try:
                yield None, failure_path(self.path).read_text()
                return
            except FileNotFoundError:
                pass
            plan = None
            try:
                with open(self.path, "rb") as f:  # stat and text of the same file, even if replaced meanwhile
                    st = os.fstat(f.fileno())
                    signature = (st.st_ino, st.st_mtime_ns, st.st_size)
                    if signature != seen:
                        plan = JobPlan.from_json(f.read().decode())
                        seen = signature
            except (OSError, UnicodeDecodeError, PlanFormatError):
                pass
            if plan is not None and plan.job_id == job_id and plan.version > version:
                version = plan.version
                yield plan, ""
            self._closed.wait(self.interval)

    def close(self) -> None:
        self._closed.set()


class PlanFollower:
    """Watches ``job_id`` at ``source`` and calls ``deliver(plan, reason)`` (through ``hand_over``, e.g. a
    RealTimeLoop's ``call_soon_threadsafe``) for every new version, or with ``(None, reason)`` when the
    job cannot go on. A watch that breaks (the service went away) ends without telling the agent: the
    job runs on with the plan it has; ``error`` says why."""

    def __init__(
        self,
        source: PlanSource,
        job_id: int,
        deliver: PlanCallback,
        hand_over: Callable[..., object] | None = None,
    ):
        self.source, self.job_id, self.deliver = source, job_id, deliver
        self.hand_over = hand_over or (lambda fn, *args: fn(*args))
        self.versions_seen = 0
        self.error = ""
        self._thread = threading.Thread(target=self._run, name=f"plan-follower-{job_id}", daemon=True)

    def start(self) -> PlanFollower:
        """Start watching; return self."""
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> None:
        """Wait for the watch to end (the job failed or the source was closed)."""
        self._thread.join(timeout)

    def _run(self) -> None:
        try:
            for plan, reason in self.source.watch(self.job_id):
                self.versions_seen += 1
                self.hand_over(self.deliver, plan, reason)
        except JobServiceError as exc:
            self.error = str(exc)
