"""State of v1model's stateful externs: registers and indexed counters.

Out-of-bounds indices from the data plane: a register read gives 0 and a write is ignored; a counter
update is ignored (BMv2 logs an error and leaves the state alone; softswitch does not stop the packet).
From the control plane they raise IndexError naming the extern.
"""

from __future__ import annotations


def check_index(kind, name, size, i):
    """Control-plane index check of a register or counter (IndexError naming the extern)."""
    if not isinstance(i, int) or not 0 <= i < size:
        raise IndexError(f"{kind} {name}: index {i!r} is outside 0..{size - 1}")


def check_register_value(info, v):
    """A value written to a register from the control plane must fit its bit<W> / int<W>."""
    w = info.bitwidth
    if not isinstance(v, int):
        raise ValueError(f"register {info.name}: value {v!r} is not an integer")
    if info.signed:
        if not -(1 << (w - 1)) <= v < (1 << (w - 1)):
            raise ValueError(f"register {info.name}: value {v} does not fit int<{w}>")
    elif not 0 <= v < (1 << w):
        raise ValueError(f"register {info.name}: value {v} does not fit bit<{w}>")


class RegisterState:
    def __init__(self, info):
        self.info = info
        self.name = info.name
        self.size = info.size
        self.values = [0] * info.size  # generated code indexes this list directly

    def read(self, i):
        check_index("register", self.name, self.size, i)
        return self.values[i]

    def write(self, i, v):
        check_index("register", self.name, self.size, i)
        check_register_value(self.info, v)
        self.values[i] = v

    def reset(self):
        self.values[:] = [0] * self.size


class CounterState:
    def __init__(self, info, state):
        self.info = info
        self.name = info.name
        self.size = info.size
        self.packets = [0] * info.size
        self.bytes = [0] * info.size
        self._state = state

    def count(self, i):
        if 0 <= i < self.size:
            self.packets[i] += 1
            self.bytes[i] += self._state.sm.packet_length

    def read(self, i):
        check_index("counter", self.name, self.size, i)
        return self.packets[i], self.bytes[i]

    def write(self, i, packets, nbytes):
        check_index("counter", self.name, self.size, i)
        self.packets[i], self.bytes[i] = packets, nbytes

    def reset(self):
        self.packets[:] = [0] * self.size
        self.bytes[:] = [0] * self.size


class ValueSetState:
    """A parser value set: up to `size` (value, mask) members the control plane adds; a select case on it
    matches a key whose bits under a member's mask equal that member's value."""

    def __init__(self, info):
        self.info = info
        self.members: list[tuple[int, int]] = []

    @property
    def size(self):
        return self.info.size

    def add(self, value, mask=None):
        full = (1 << self.info.bitwidth) - 1
        mask = full if mask is None else mask & full
        if not 0 <= value <= full:
            raise ValueError(f"value set {self.info.name}: {value} does not fit {self.info.bitwidth} bits")
        if (value & mask, mask) in self.members:
            return
        if len(self.members) >= self.info.size:
            raise ValueError(f"value set {self.info.name} is full ({self.info.size} members)")
        self.members.append((value & mask, mask))

    def clear(self):
        self.members.clear()


GREEN, YELLOW, RED = 0, 1, 2  # v1model's meter colors (BMv2's numbering)


class TwoRateMeter:
    """One meter cell: RFC 2698 two-rate three-color marking, color-blind, as BMv2 meters. Rates are
    in units (packets or bytes) per second, bursts in units; both buckets start full."""

    __slots__ = ("cir", "cburst", "pir", "pburst", "committed", "peak", "last")

    def __init__(self, cir, cburst, pir, pburst, now):
        if pir < cir:
            raise ValueError(f"meter peak rate {pir} is below its committed rate {cir}")
        self.cir, self.cburst, self.pir, self.pburst = cir, cburst, pir, pburst
        self.committed, self.peak, self.last = float(cburst), float(pburst), now

    def mark(self, units, now):
        elapsed = max(0.0, now - self.last)
        self.last = now
        self.committed = min(self.cburst, self.committed + self.cir * elapsed)
        self.peak = min(self.pburst, self.peak + self.pir * elapsed)
        if self.peak < units:
            return RED
        self.peak -= units
        if self.committed < units:
            return YELLOW
        self.committed -= units
        return GREEN


class MeterState:
    """An indexed meter (or, keyed by table entry, a direct meter): cells without a configuration mark
    every packet GREEN, as BMv2 does. `clock` gives seconds (tests pass their own)."""

    def __init__(self, info, state, clock=None):
        import time

        self.info = info
        self.name = info.name
        self.size = getattr(info, "size", 0)
        self._state = state
        self.clock = clock or time.monotonic
        self.cells: dict = {}
        self.color = GREEN  # a direct meter: the color the table's last hit marked

    def units(self):
        return self._state.sm.packet_length if self.info.unit == "bytes" else 1

    def set_config(self, index, cir, cburst, pir, pburst):
        if self.size:
            check_index("meter", self.name, self.size, index)
        self.cells[index] = TwoRateMeter(cir, cburst, pir, pburst, self.clock())

    def clear_config(self, index):
        self.cells.pop(index, None)

    def config(self, index):
        cell = self.cells.get(index)
        return None if cell is None else (cell.cir, cell.cburst, cell.pir, cell.pburst)

    def execute(self, index):
        cell = self.cells.get(index)
        return GREEN if cell is None else cell.mark(self.units(), self.clock())
