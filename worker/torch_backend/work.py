"""Async work objects of the ina backend and the one thread that talks to the worker agent.

Every process has one worker agent per job, driven by one event loop; torch calls collectives from
the training thread and, inside DDP, from autograd hooks. So all switch exchanges are queued to a
single ``SwitchThread`` that runs them in issue order (the order is the same on every rank, which is
what keeps chunk sequence numbers aligned) and records each call's outcome (``Outcome``: a torch Future
is made only when one is asked for). ``InaWork`` is
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


class Outcome:
    """What a collective ended with, and a torch Future of it made only when someone asks for one
    (``InaWork.get_future``: DDP, communication hooks): a synchronous all_reduce waits on the event
    and never pays for a Future and its chained callback (tens of microseconds a call)."""

    __slots__ = ("done", "result", "error", "_finished", "_future", "_chained", "_lock")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: list | None = None
        self.error: BaseException | None = None
        self._finished = False
        self._future: torch.futures.Future | None = None  # settled with the outcome
        self._chained: torch.futures.Future | None = None  # the one torch gets (see ``future``)
        self._lock = threading.Lock()  # orders ``finish`` and the first ``future``: one of them settles it

    def finish(self, result: list | None, error: BaseException | None = None) -> None:
        """The collective ended with ``result`` (its tensors) or ``error``."""
        with self._lock:
            self.result, self.error = result, error
            self._finished = True
            future = self._future
        try:
            if future is not None:
                _settle(future, result, error)  # runs the chained and DDP callbacks inline
        finally:
            self.done.set()  # after the Future: a waiter woken here finds it settled; also if a callback raised

    def future(self) -> torch.futures.Future:
        """A Future completed with the result tensors, or failed (a RuntimeError naming the error)."""
        with self._lock:
            if self._chained is not None:
                return self._chained
            outcome = self._future = torch.futures.Future()
            # torch's set_exception stores the exception as the future's *value* (only Python's wait and
            # value raise it): C++ sees a success. DDP's reducer reads a failed bucket's "tensors" from
            # that value and crashed with SIGSEGV (parseCppCommHookResult indexing an empty tensor list).
            # The future torch gets is chained so that a failure is a C++ error DDP raises as one. The chain
            # cannot be avoided: torch's Future has no C++-visible set_error from Python (torch._C.Future offers
            # set_result, then, add_done_callback and _set_unwrap_func only), so a raising then-callback is the one
            # way to fail it, and DDP's reducer uses this future as it is (without a hook there is no other chain).
            chained = self._chained = cpp_readable(outcome)
            finished = self._finished
        if finished:
            _settle(outcome, self.result, self.error)
        return chained


def _settle(future: torch.futures.Future, result: list | None, error: BaseException | None) -> None:
    if error is not None:
        future.set_exception(error)
    else:
        future.set_result(result)


class InaWork(dist.Work):
    """A collective in flight on the switch thread."""

    def __init__(self, outcome: Outcome, what: str, run_here: Callable[[], None] | None = None):
        """``outcome`` is finished with the result tensors or the error; ``run_here``: runs the exchange
        on the waiting thread if the switch thread has not taken it yet (``SwitchThread.submit``)."""
        super().__init__()
        self._run_here = run_here
        self._outcome = outcome
        self._what = what

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Block until the operation completes; raise its error, or TimeoutError after ``timeout``."""
        seconds = timeout.total_seconds() if isinstance(timeout, datetime.timedelta) else timeout
        done = self._outcome.done
        if self._run_here is not None and not (seconds and seconds > 0) and not done.is_set():
            self._run_here()  # a wait without a timeout may as well do the work (nothing if it started)
        if not done.wait(seconds if seconds and seconds > 0 else None):
            raise TimeoutError(f"ina {self._what} did not complete within {seconds:g} s")
        if self._outcome.error is not None:
            raise self._outcome.error  # the collective's error, its own type
        return True

    def get_future(self) -> torch.futures.Future:
        """A torch Future completed with the result, or failed (a RuntimeError naming the error)."""
        return self._outcome.future()

    def is_completed(self) -> bool:
        """Whether the operation finished (successfully or not)."""
        return self._outcome.done.is_set()

    def is_success(self) -> bool:
        """Whether it finished without an error."""
        return self._outcome.done.is_set() and self._outcome.error is None

    def exception(self):
        """Its error, or None (also while running)."""
        return self._outcome.error if self._outcome.done.is_set() else None

    def result(self):
        """The output tensors (waits)."""
        self.wait()
        return self._outcome.result


def _result_or_raise(outcome: torch.futures.Future):
    """The outcome's value; raises its error, which makes the chained future fail in C++ too."""
    return outcome.value()


def cpp_readable(future: torch.futures.Future) -> torch.futures.Future:
    """``future`` chained so that its failure is an error in C++ too: the Future to hand to DDP (a work's
    ``get_future``, a communication hook's return). ``set_exception`` alone stores the error as the
    Future's value, which DDP's reducer reads as the bucket (docs/design-decisions.md, "A failed
    collective fails in C++")."""
    return future.then(_result_or_raise)


class _Queued:
    """A job in the switch thread's queue; ``taken`` once the thread or a waiter runs it."""

    __slots__ = ("job", "outcome", "what", "taken")

    def __init__(self, job: Callable[[], list], what: str):
        self.job, self.outcome, self.what = job, Outcome(), what
        self.taken = False


class SwitchThread:
    """Runs queued jobs one after another, never two at once, in issue order: on a private daemon
    thread, or on the thread that waits for a job (``InaWork.wait`` without a timeout) when the job is
    the only one not finished and the thread has not taken it yet. A synchronous ``dist.all_reduce``
    then runs on its caller's thread (``run_now`` when nothing else is unfinished: without even queueing
    it): no hand-over to the switch thread and back (a wake-up of a sleeping thread and a GIL hand-over
    each way: tens to hundreds of microseconds on a busy 2-core machine, bench/allreduce_latency.py),
    while an asynchronous one still runs on while the caller computes."""

    def __init__(self, name: str = "ina-switch"):
        self._queue: queue.Queue[_Queued | tuple] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._closed = False
        self._state = threading.Lock()  # guards _unfinished and every job's ``taken``
        self._unfinished = 0  # jobs submitted and not finished yet
        self._running = threading.Lock()  # held while a job runs, on the thread or a waiter
        self.waiter_runs = 0  # jobs run by the thread that waited for them (``run_now`` too)
        self._thread.start()

    def submit(self, job: Callable[[], list], what: str, waiter_may_run: bool = True) -> InaWork:
        """Queue ``job`` (returns the result tensors); the work completes when it has run.
        ``waiter_may_run`` False: it runs on the switch thread whoever waits (bench/allreduce_latency.py
        compares both)."""
        if self._closed:
            raise RuntimeError(f"ina {what}: the process group was destroyed")
        item = _Queued(job, what)
        with self._state:
            self._unfinished += 1
        self._queue.put(item)
        run_here = (lambda: self._run_by_waiter(item)) if waiter_may_run else None
        return InaWork(item.outcome, what, run_here)

    def run_now(self, job: Callable[[], list], what: str) -> InaWork | None:
        """Run ``job`` on the calling thread at once when no other job is queued or running, and return its
        finished work; None (nothing run) otherwise: ``submit`` it, behind the others. For a caller that
        waits for the job as soon as it has it (a synchronous all_reduce, ``asyncOp`` False): the job
        never enters the queue, so the switch thread is not woken for it (``submit``'s put wakes it, and it
        then waits for the GIL only to find the job taken by its waiter: a context switch and a GIL hand-over
        per call on a busy 2-core machine)."""
        with self._state:
            if self._closed or self._unfinished or not self._running.acquire(blocking=False):
                return None
            self._unfinished += 1
        outcome = Outcome()
        try:
            self.waiter_runs += 1
            _complete(job, outcome, what)
        finally:
            self._running.release()
            with self._state:
                self._unfinished -= 1
        return InaWork(outcome, what)

    def _run_by_waiter(self, item: _Queued) -> None:
        """Run ``item`` on the calling thread if it is the only unfinished job and nobody took it."""
        with self._state:
            if item.taken or self._unfinished != 1 or not self._running.acquire(blocking=False):
                return
            item.taken = True
        try:
            self.waiter_runs += 1
            _complete(item.job, item.outcome, item.what)
        finally:
            self._running.release()
            with self._state:
                self._unfinished -= 1

    def close(self, finally_run: Callable[[], None] | None = None, timeout: float = 5.0) -> bool:
        """Stop after the queued jobs, then run ``finally_run`` on the thread (it owns the agent);
        False if the thread is still busy after ``timeout`` seconds (it is a daemon)."""
        if not self._closed:
            self._closed = True
            self._queue.put(("close", finally_run))
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if isinstance(item, tuple):  # ("close", finally_run)
                if item[1] is not None:
                    with self._running:  # a waiter still running its job finishes first
                        item[1]()
                return
            with self._state:
                if item.taken:  # a waiter ran it
                    continue
                item.taken = True
            with self._running:
                _complete(item.job, item.outcome, item.what)
            with self._state:
                self._unfinished -= 1


def _complete(job: Callable[[], list], outcome: Outcome, what: str) -> None:
    """Run ``job`` and finish its outcome with the result, or with its error (never lost)."""
    try:
        result = job()
    except Exception as exc:  # handed to the waiter, never lost in this thread
        error = (
            exc
            if isinstance(exc, (ValueError, OverflowError, TimeoutError))
            else RuntimeError(f"ina {what} failed: {exc}")
        )
        outcome.finish(None, error)
    except BaseException as exc:  # Ctrl-C in a waiter running the job: the work fails, then it propagates
        outcome.finish(None, RuntimeError(f"ina {what} was interrupted: {exc!r}"))
        raise
    else:
        outcome.finish(result)
