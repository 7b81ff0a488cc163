"""One worker agent (and its switch thread) per process and job, shared by every ina group.

A job's plan fixes one host per rank, so a process can only have one agent for it: a second agent
would bind the same UDP port or attach endpoint. Groups created after the first (``new_group``
with backend "ina", or a default group plus a hook group) therefore share the session; their
collectives queue on the same thread in program order, which is the same on every rank.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable

from worker.torch_backend.work import SwitchThread

_sessions: dict[Hashable, Session] = {}
_lock = threading.Lock()


class Session:
    def __init__(self, key: Hashable, channel, rank: int):
        self.key = key
        self.channel = channel
        self.thread = SwitchThread(name=f"ina-switch-r{rank}")
        self.users = 0

    def release(self) -> None:
        """Drop one user; the last one stops the thread and closes the agent on it."""
        with _lock:
            self.users -= 1
            if self.users > 0:
                return
            _sessions.pop(self.key, None)
        self.thread.close(self.channel.close)


def open_session(key: Hashable, rank: int, connect: Callable[[], object]) -> Session:
    """The process-wide session for ``key`` (one agent per job and rank), made with ``connect`` once."""
    with _lock:
        session = _sessions.get(key)
        if session is None:
            session = _sessions[key] = Session(key, connect(), rank)
        session.users += 1
        return session
