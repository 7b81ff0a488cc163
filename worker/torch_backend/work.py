"""Async work objects of the ina backend and the one thread that talks to the worker agent.

Every process has one worker agent per job, driven by one event loop; torch calls collectives from
the training thread and, inside DDP, from autograd hooks. So all switch exchanges are queued to a
single ``SwitchThread`` that runs them in issue order (the order is the same on every rank, which is
what keeps chunk sequence numbers aligned) and completes a torch Future per call. ``InaWork`` is
the ``dist.Work`` torch hands back: ``wait()`` blocks (with an optional timeout), ``get_future()``
completes with the list of result tensors, which were written in place.
"""

from __future__ import annotations

import datetime
import queue
import threading
from collections.abc import Callable

import torch
import torch.distributed as dist


class InaWork(dist.Work):
    """A collective in flight on the switch thread."""

    def __init__(self, outcome: torch.futures.Future, done: threading.Event, what: str):
        """``outcome`` completes with the result tensors, or with the error via ``set_exception``."""
        super().__init__()
        self._outcome = outcome
        # torch's set_exception stores the exception as the future's *value* (only Python's wait and
        # value raise it): C++ sees a success. DDP's reducer reads a failed bucket's "tensors" from
        # that value and crashed with SIGSEGV (parseCppCommHookResult indexing an empty tensor list).
        # The future torch gets is chained so that a failure is a C++ error DDP raises as one.
        self._future = outcome.then(_result_or_raise)
        self._done = done
        self._what = what

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Block until the operation completes; raise its error, or TimeoutError after ``timeout``."""
        seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
        if not self._done.wait(seconds if seconds and seconds > 0 else None):
            raise TimeoutError(f"ina {self._what} did not complete within {seconds:g} s")
        self._outcome.wait()  # raises the collective's error (its own type), if any
        return True

    def get_future(self) -> torch.futures.Future:
        """A torch Future completed with the result, or failed (a RuntimeError naming the error)."""
        return self._future

    def is_completed(self) -> bool:
        """Whether the operation finished (successfully or not)."""
        return self._done.is_set()

    def is_success(self) -> bool:
        """Whether it finished without an error."""
        if not self._done.is_set():
            return False
        try:
            self._outcome.value()
        except Exception:
            return False
        return True

    def exception(self):
        """Its error, or None (also while running)."""
        if not self._done.is_set():
            return None
        try:
            self._outcome.value()
        except Exception as exc:  # the stored error
            return exc
        return None

    def result(self):
        """The output tensors (waits)."""
        self.wait()
        return self._outcome.value()


def _result_or_raise(outcome: torch.futures.Future):
    """The outcome's value; raises its error, which makes the chained future fail in C++ too."""
    return outcome.value()


class SwitchThread:
    """Runs queued jobs one after another on a private daemon thread, or a job on its caller's thread
    when nothing is queued or running (``run_inline``): never two jobs at once, always in issue order."""

    def __init__(self, name: str = "ina-switch"):
        self._queue: queue.Queue[tuple] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._closed = False
        self._state = threading.Lock()  # guards _unfinished and the inline check
        self._unfinished = 0  # jobs submitted to the thread and not finished yet
        self._running = threading.Lock()  # held while a job runs, on the thread or inline
        self.inline_runs = 0  # jobs run on their caller's thread
        self._thread.start()

    def submit(self, job: Callable[[], list], what: str) -> InaWork:
        """Queue ``job`` (returns the result tensors); the work completes when it has run."""
        if self._closed:
            raise RuntimeError(f"ina {what}: the process group was destroyed")
        future: torch.futures.Future = torch.futures.Future()
        done = threading.Event()
        with self._state:
            self._unfinished += 1
        self._queue.put((job, future, done, what))
        return InaWork(future, done, what)

    def run_inline(self, job: Callable[[], list], what: str) -> InaWork | None:
        """Run ``job`` now on the calling thread if no job is queued or running, and return its completed
        work; None (nothing run) otherwise, or once closed. A latency-bound exchange saves the two thread
        hand-overs (to the switch thread and back to the waiting caller), each a wake-up of a sleeping
        thread and a GIL hand-over: tens to hundreds of microseconds on a busy 2-core machine."""
        with self._state:
            if self._closed or self._unfinished or not self._running.acquire(blocking=False):
                return None
        try:
            future: torch.futures.Future = torch.futures.Future()
            done = threading.Event()
            self.inline_runs += 1
            _complete(job, future, done, what)
        finally:
            self._running.release()
        return InaWork(future, done, what)

    def close(self, finally_run: Callable[[], None] | None = None, timeout: float = 5.0) -> bool:
        """Stop after the queued jobs, then run ``finally_run`` on the thread (it owns the agent);
        False if the thread is still busy after ``timeout`` seconds (it is a daemon)."""
        if not self._closed:
            with self._state:
                self._closed = True
            self._queue.put(("close", finally_run))
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item[0] == "close":
                if item[1] is not None:
                    with self._running:  # an inline job still running finishes first
                        item[1]()
                return
            with self._running:
                _complete(*item)
            with self._state:
                self._unfinished -= 1


def _complete(job: Callable[[], list], future: torch.futures.Future, done: threading.Event, what: str) -> None:
    """Run ``job`` and complete its future with the result, or with its error (never lost)."""
    try:
        result = job()
    except Exception as exc:  # handed to the waiter, never lost in this thread
        error = (
            exc
            if isinstance(exc, (ValueError, OverflowError, TimeoutError))
            else RuntimeError(f"ina {what} failed: {exc}")
        )
        future.set_exception(error)
    else:
        future.set_result(result)
    finally:
        done.set()
