"""controller.replan.FaultMonitor keeps watching after a check that raised."""

import pytest

from controller.replan import FaultMonitor
from worker.loop import VirtualLoop


class FlakyProbe:
    """Raises a bug's exception on its first probe, then says s2 is dead."""

    def __init__(self):
        self.calls = 0

    def probe(self, switch: str) -> str | None:
        self.calls += 1
        if self.calls == 1:
            raise RuntimeError("probe bug")
        return "no answer" if switch == "s2" else None


def test_a_check_that_raises_is_seen_and_the_next_tick_still_probes():
    loop = VirtualLoop()
    failures = []
    monitor = FaultMonitor(FlakyProbe(), lambda: ["s1", "s2"], lambda s, r: failures.append((s, r)), loop, 0.1)
    monitor.start()
    with pytest.raises(RuntimeError, match="probe bug"):
        loop.run_until(lambda: False, 0.15)
    loop.run_until(lambda: bool(failures), 1.0)
    assert failures == [("s2", "no answer")]
    monitor.stop()
