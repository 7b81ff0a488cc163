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
