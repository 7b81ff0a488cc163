"""Wall-clock stamps of where one collective's time goes in this process (bench/allreduce_latency.py).

A :class:`Timeline` is off unless someone attaches one: the torch backend's process group
(``InaProcessGroup.timeline``) and the kernel UDP transport (``UdpTransport.timeline``) then stamp
each all_reduce's stages into one record per call. Stamps are ``time.time()`` (CLOCK_REALTIME), the
clock packet sockets timestamp frames with, so the bench can put them next to the moments the frames
crossed the switches' ports (all processes of the lab share one kernel, hence one clock).

Stages, in the order one all_reduce passes them:

- ``call``: the caller entered ``all_reduce``; ``queued``: its tensors were checked and copied and the
  exchange handed to the backend's switch thread; ``picked``: the switch thread took it;
- ``first_send`` / ``last_send``: the transport handed the first and the last batch of this call's
  packets to the kernel; ``first_receive`` / ``last_receive``: it took the first and the last batch of
  datagrams from its socket (the handler then decodes them);
- ``executed``: the result was written into the tensors; ``returned``: the caller's ``wait`` returned.
"""

from __future__ import annotations

import threading
import time

STAGES = (
    "call",
    "queued",
    "picked",
    "first_send",
    "last_send",
    "first_receive",
    "last_receive",
    "executed",
    "returned",
)


class Timeline:
    """One record (stage -> wall-clock time) per collective; ``active`` is the one the network side
    stamps (the switch thread runs one exchange at a time)."""

    def __init__(self) -> None:
        self.records: list[dict[str, float]] = []
        self.active: dict[str, float] | None = None
        self._lock = threading.Lock()

    def begin(self, **facts: float) -> dict[str, float]:
        """A new record, stamped ``call`` now; ``facts`` (e.g. values=n) are kept in it."""
        record: dict[str, float] = {"call": time.time(), **facts}
        with self._lock:
            self.records.append(record)
        return record

    def activate(self, record: dict[str, float] | None) -> None:
        """Send and receive stamps go to ``record`` from now on (None: nowhere)."""
        self.active = record

    def first(self, stage: str) -> None:
        """Stamp ``stage`` in the active record unless it is stamped already."""
        record = self.active
        if record is not None and stage not in record:
            record[stage] = time.time()

    def last(self, stage: str) -> None:
        """Stamp ``stage`` in the active record (a later stamp replaces an earlier one)."""
        record = self.active
        if record is not None:
            record[stage] = time.time()

    def take(self) -> list[dict[str, float]]:
        """The records so far (they are removed)."""
        with self._lock:
            records, self.records = self.records, []
        return records


def stamp(record: dict[str, float] | None, stage: str) -> None:
    """Stamp ``stage`` in ``record`` now (nothing when there is no record: no timeline attached)."""
    if record is not None:
        record[stage] = time.time()
