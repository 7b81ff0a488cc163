"""Event loops the agents run on: one interface, a virtual clock or the wall clock.

Agents are state machines driven by two kinds of events, "a packet arrived" and "a timer fired".
They never sleep or block; a blocking call (``allreduce``) runs the loop until its condition holds.
With :class:`VirtualLoop` (discrete-event simulation) time jumps from event to event, so a run
depends only on the modelled links and the seed, not on this CPU; several agents in one process
share one loop and progress cooperatively. :class:`RealTimeLoop` runs the same callbacks on the
wall clock and waits on sockets in between (kernel UDP, attach endpoints).
"""

from __future__ import annotations

import heapq
import itertools
import select
import selectors
import socket
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

# Timer waits shorter than this are slept in select() on the epoll descriptor (microseconds) instead of
# in epoll_wait (whole milliseconds, rounded up): a 0.3 ms receive hold (worker/transport.py) lasted
# 1-1.3 ms, which made a 64-chunk window's round trip 1.3 ms instead of 0.45 (bench/agent_pps.py)
PRECISE_WAIT_S = 0.01
SELECT_MAX_FD = 1024  # FD_SETSIZE: select() cannot watch a higher descriptor
Callback = Callable[..., object]  # a timer's or a reader's callback; its arguments are given with it


class Timer:
    """A scheduled callback; ``cancel()`` makes it a no-op."""

    __slots__ = ("when", "callback", "args", "cancelled")

    def __init__(self, when: float, callback: Callback, args: tuple[Any, ...]):
        self.when = when
        self.callback = callback
        self.args = args
        self.cancelled = False

    def cancel(self) -> None:
        """Make the timer a no-op (it is dropped when its time comes)."""
        self.cancelled = True


class EventLoop:
    """The interface agents and the in-process network program against."""

    def now(self) -> float:
        """The loop's clock, in seconds."""
        raise NotImplementedError

    def call_at(self, when: float, callback: Callback, *args: Any) -> Timer:
        """Run ``callback(*args)`` at time ``when`` of this loop's clock; return its Timer."""
        raise NotImplementedError

    def call_later(self, delay: float, callback: Callback, *args: Any) -> Timer:
        """Run ``callback(*args)`` ``delay`` seconds from now."""
        return self.call_at(self.now() + max(0.0, delay), callback, *args)

    def call_soon(self, callback: Callback, *args: Any) -> Timer:
        """Run ``callback(*args)`` as soon as the loop gets to it."""
        return self.call_at(self.now(), callback, *args)

    def run_until(self, done: Callable[[], bool], timeout: float | None = None) -> bool:
        """Process events until ``done()`` is true (-> True) or ``timeout`` seconds of this loop's
        clock passed or nothing is left to happen (-> False)."""
        raise NotImplementedError


class _TimerHeap:
    """Timers by time, then by scheduling order; cancelled ones are dropped when they surface."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Timer]] = []
        self._counter = itertools.count()

    def push(self, timer: Timer) -> None:
        heapq.heappush(self._heap, (timer.when, next(self._counter), timer))

    def next_time(self) -> float | None:
        while self._heap and self._heap[0][2].cancelled:
            heapq.heappop(self._heap)
        return self._heap[0][0] if self._heap else None

    def pop(self) -> Timer:
        return heapq.heappop(self._heap)[2]

    def __len__(self) -> int:
        return len(self._heap)


class EventSource(Protocol):
    """Another simulator whose events a VirtualLoop interleaves with its timers (the in-process network's
    native core: topologies/inprocess/sim_engine.py). It runs its own events in between and stops at an
    instant where it has something for this loop's callbacks."""

    def advance(self, until: float | None) -> float | None:
        """Run the source's events up to ``until`` (inclusive; None: as long as it has any), stopping at the
        first instant at which it has something to deliver: that instant, or None if nothing came."""
        ...

    def deliver(self) -> None:
        """Hand what ``advance`` stopped at to this loop's callbacks (the loop's clock is at its instant)."""
        ...

    def pending(self) -> bool:
        """Whether the source still has events of its own."""
        ...


class VirtualLoop(EventLoop):
    """Discrete-event simulation: the clock is the time of the event being processed.

    Events at the same instant run in the order they were scheduled, so runs are reproducible. An attached
    ``EventSource`` runs its events up to each timer's time before the timer runs (its events at that
    instant first).
    """

    def __init__(self, start: float = 0.0):
        self._now = start
        self._timers = _TimerHeap()
        self.events_processed = 0
        self._source: EventSource | None = None

    def attach_source(self, source: EventSource) -> None:
        """Interleave ``source``'s events with this loop's timers (one source per loop)."""
        if self._source is not None and self._source is not source:
            raise ValueError("this VirtualLoop already drives another event source")
        self._source = source

    def _from_source(self, until: float | None) -> bool:
        """Let the attached source run up to ``until``; True if it delivered something (the clock moved there)."""
        source = self._source
        if source is None:
            return False
        when = source.advance(until)
        if when is None:
            return False
        self._now = max(self._now, when)
        self.events_processed += 1
        source.deliver()
        return True

    def now(self) -> float:
        """The time of the event being processed."""
        return self._now

    def call_at(self, when: float, callback: Callback, *args: Any) -> Timer:
        """Schedule ``callback(*args)`` at ``when`` (never in the past).

        Examples
        --------
        >>> loop, seen = VirtualLoop(), []
        >>> _ = loop.call_later(0.5, seen.append, "b")
        >>> _ = loop.call_at(0.2, seen.append, "a")
        >>> loop.run_until(lambda: len(seen) == 2), seen, loop.now()
        (True, ['a', 'b'], 0.5)
        """
        timer = Timer(max(when, self._now), callback, args)
        self._timers.push(timer)
        return timer

    def step(self) -> bool:
        """Run the next event; False when none is left."""
        when = self._timers.next_time()
        if self._from_source(when):
            return True
        if when is None:
            return False
        self._run_timer(when)
        return True

    def _run_timer(self, when: float) -> None:
        timer = self._timers.pop()
        self._now = when
        self.events_processed += 1
        timer.callback(*timer.args)

    def run_until(self, done: Callable[[], bool], timeout: float | None = None) -> bool:
        """Process events in time order until ``done()`` (True), ``timeout`` seconds of virtual time passed
        or no event is left (False).
        """
        deadline = None if timeout is None else self._now + timeout
        while not done():
            when = self._timers.next_time()
            if self._source is not None:
                limit = when if deadline is None or (when is not None and when < deadline) else deadline
                if self._from_source(limit):
                    continue
                if when is None and deadline is not None and self._source.pending():
                    self._now = deadline  # the source ran up to the deadline and has later events
                    return False
            if when is None:
                return False
            if deadline is not None and when > deadline:
                self._now = deadline
                return False
            self._run_timer(when)
        return True

    def run(self, duration: float | None = None) -> None:
        """Run every event (up to ``duration`` seconds from now)."""
        self.run_until(lambda: False, duration)


class RealTimeLoop(EventLoop):
    """Wall-clock loop: timers plus readiness callbacks on sockets, in one thread.

    ``call_soon_threadsafe`` lets another thread hand work to the loop (it wakes the selector).
    """

    def __init__(self) -> None:
        self._timers = _TimerHeap()
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._pending: list[tuple[Callback, tuple[Any, ...]]] = []
        self._wake_r, self._wake_w = _socketpair()
        self._selector.register(self._wake_r, selectors.EVENT_READ, self._drain_wakeups)
        self._stopped = False
        # epoll (Linux): its own descriptor is readable when a watched socket is, so select() can sleep on it
        fileno = getattr(self._selector, "fileno", None)
        self._precise_fd = fileno() if fileno is not None and fileno() < SELECT_MAX_FD else None

    def now(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()

    def call_at(self, when: float, callback: Callback, *args: Any) -> Timer:
        """Run ``callback(*args)`` at monotonic time ``when`` (from the loop's thread)."""
        timer = Timer(when, callback, args)
        self._timers.push(timer)
        return timer

    def call_soon_threadsafe(self, callback: Callback, *args: Any) -> None:
        """Hand ``callback(*args)`` to the loop from any thread (wakes its selector)."""
        with self._lock:
            self._pending.append((callback, args))
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass

    def add_reader(self, sock: socket.socket, callback: Callable[[], object]) -> None:
        """Call ``callback()`` whenever ``sock`` is readable."""
        self._selector.register(sock, selectors.EVENT_READ, callback)

    def remove_reader(self, sock: socket.socket) -> None:
        """Stop watching ``sock`` (nothing happens if it was not watched)."""
        try:
            self._selector.unregister(sock)
        except (KeyError, ValueError):
            pass

    def _drain_wakeups(self) -> None:
        try:
            self._wake_r.recv(4096)
        except BlockingIOError:
            pass

    def _run_pending(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for callback, args in pending:
            callback(*args)

    def _run_due_timers(self) -> None:
        now = self.now()
        while True:
            when = self._timers.next_time()
            if when is None or when > now:
                return
            timer = self._timers.pop()
            timer.callback(*timer.args)

    def run_until(self, done: Callable[[], bool], timeout: float | None = None) -> bool:
        """Run timers, handed-over callbacks and readers until ``done()`` (True), ``timeout`` wall-clock
        seconds passed, or ``stop()`` was called (False).
        """
        deadline = None if timeout is None else self.now() + timeout
        self._stopped = False
        while not done():
            if self._stopped:
                return False
            self._run_pending()
            self._run_due_timers()
            if done():
                return True
            now = self.now()
            if deadline is not None and now >= deadline:
                return False
            wait = 0.1
            when = self._timers.next_time()
            if when is not None:
                wait = min(wait, max(0.0, when - now))
            if deadline is not None:
                wait = min(wait, max(0.0, deadline - now))
            if 0 < wait < PRECISE_WAIT_S and self._precise_fd is not None:
                select.select([self._precise_fd], [], [], wait)  # until a socket is ready or the timer is due
                wait = 0
            for key, _ in self._selector.select(wait):
                key.data()
        return True

    def run_forever(self) -> None:
        """Run until ``stop()``."""
        self.run_until(lambda: False)

    def stop(self) -> None:
        """Make ``run_until``/``run_forever`` return (callable from any thread)."""
        self._stopped = True
        self.call_soon_threadsafe(lambda: None)

    def close(self) -> None:
        """Close the selector and the wake-up sockets."""
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()


def _socketpair() -> tuple[socket.socket, socket.socket]:
    r, w = socket.socketpair()
    r.setblocking(False)
    w.setblocking(False)
    return r, w
