"""State of v1model's stateful externs: registers and indexed counters.

Out-of-bounds indices from the data plane: a register read gives 0 and a write is ignored; a counter
update is ignored (BMv2 logs an error and leaves the state alone; softswitch does not stop the packet).
From the control plane they raise IndexError naming the extern.
"""

from __future__ import annotations


class RegisterState:
    def __init__(self, info):
        self.info = info
        self.name = info.name
        self.size = info.size
        self.values = [0] * info.size  # generated code indexes this list directly

    def _check(self, i):
        if not isinstance(i, int) or not 0 <= i < self.size:
            raise IndexError(f"register {self.name}: index {i!r} is outside 0..{self.size - 1}")

    def read(self, i):
        self._check(i)
        return self.values[i]

    def write(self, i, v):
        self._check(i)
        w = self.info.bitwidth
        if not isinstance(v, int):
            raise ValueError(f"register {self.name}: value {v!r} is not an integer")
        if self.info.signed:
            if not -(1 << (w - 1)) <= v < (1 << (w - 1)):
                raise ValueError(f"register {self.name}: value {v} does not fit int<{w}>")
        elif not 0 <= v < (1 << w):
            raise ValueError(f"register {self.name}: value {v} does not fit bit<{w}>")
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

    def _check(self, i):
        if not isinstance(i, int) or not 0 <= i < self.size:
            raise IndexError(f"counter {self.name}: index {i!r} is outside 0..{self.size - 1}")

    def read(self, i):
        self._check(i)
        return self.packets[i], self.bytes[i]

    def write(self, i, packets, nbytes):
        self._check(i)
        self.packets[i], self.bytes[i] = packets, nbytes

    def reset(self):
        self.packets[:] = [0] * self.size
        self.bytes[:] = [0] * self.size
