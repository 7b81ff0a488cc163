"""A VirtualLoop driving another simulator (worker.loop.EventSource, what the in-process network's sim
engine is): the source runs up to each timer's time first, what it delivers runs at its instant, and a
deadline stops both."""

import pytest

from worker.loop import VirtualLoop


class ScriptedSource:
    """Deliveries at given instants (what a core's outbox would hand over)."""

    def __init__(self, loop: VirtualLoop, times: list[float], seen: list):
        self.loop, self.times, self.seen = loop, sorted(times), seen
        self.asked: list[float | None] = []
        self._due: float | None = None

    def advance(self, until):
        self.asked.append(until)
        if self.times and (until is None or self.times[0] <= until):
            self._due = self.times.pop(0)
            return self._due
        return None

    def deliver(self):
        self.seen.append(("source", self._due, self.loop.now()))

    def pending(self):
        return bool(self.times)


def test_source_events_interleave_with_timers_in_time_order():
    loop, seen = VirtualLoop(), []
    source = ScriptedSource(loop, [0.1, 0.3, 0.3], seen)
    loop.attach_source(source)
    loop.call_at(0.2, lambda: seen.append(("timer", 0.2, loop.now())))
    loop.call_at(0.3, lambda: seen.append(("timer", 0.3, loop.now())))
    loop.run()
    assert seen == [
        ("source", 0.1, 0.1),
        ("timer", 0.2, 0.2),
        ("source", 0.3, 0.3),  # the source's events at an instant before the loop's timers then
        ("source", 0.3, 0.3),
        ("timer", 0.3, 0.3),
    ]
    assert source.asked[:2] == [0.2, 0.2]  # run up to the next timer's time, again after each delivery


def test_a_deadline_stops_the_source_and_moves_the_clock_when_it_has_later_events():
    loop, seen = VirtualLoop(), []
    source = ScriptedSource(loop, [0.1, 5.0], seen)
    loop.attach_source(source)
    assert loop.run_until(lambda: False, timeout=1.0) is False
    assert seen == [("source", 0.1, 0.1)] and source.asked[-1] == 1.0 and loop.now() == 1.0
    assert loop.run_until(lambda: bool(seen[1:]), timeout=10.0) is True and loop.now() == 5.0
    assert loop.run_until(lambda: False) is False  # nothing left anywhere


def test_one_loop_drives_one_source():
    loop = VirtualLoop()
    loop.attach_source(ScriptedSource(loop, [], []))
    with pytest.raises(ValueError, match="already drives another event source"):
        loop.attach_source(ScriptedSource(loop, [], []))
