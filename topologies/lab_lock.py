"""One mininet lab at a time on a machine: two collide on interface names and on the switches' ports.

A lab network holds ``LAB_LOCK`` (an flock) from before it creates anything until it has removed
everything. A second lab waits for it, saying once which process holds it; it does not fail, so lab
tests and benchmarks of several people queue up instead of failing each other's runs. Within one
process the lock is counted: a script that holds it across several labs (``held``) does not wait on
itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Callable, Iterator
from typing import IO

LAB_LOCK = "/tmp/ina-lab.lock"

_held: dict[str, tuple[IO[str], int]] = {}  # lock path -> (its open file, holders in this process)


def _holder(f: IO[str]) -> str:
    """Who holds the lock, as its holder wrote it ("pid N"), or "" when unknown."""
    try:
        with open(f.name) as again:
            return again.read().strip()
    except OSError:
        return ""


def acquire(log: Callable[[str], None] = print, path: str = LAB_LOCK) -> None:
    """Take the lab lock, waiting (with one line saying so) while another process holds it."""
    if path in _held:
        f, count = _held[path]
        _held[path] = (f, count + 1)
        return
    f = open(path, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        who = _holder(f)
        log(f"[lab] waiting for {path}: another lab run holds it{f' ({who})' if who else ''}")
        fcntl.flock(f, fcntl.LOCK_EX)
    f.truncate(0)
    f.write(f"pid {os.getpid()}\n")
    f.flush()
    _held[path] = (f, 1)


def release(path: str = LAB_LOCK) -> None:
    """Give back one hold of the lab lock; the last one unlocks it."""
    if path not in _held:
        return
    f, count = _held.pop(path)
    if count > 1:
        _held[path] = (f, count - 1)
        return
    f.truncate(0)
    fcntl.flock(f, fcntl.LOCK_UN)
    f.close()


@contextlib.contextmanager
def held(log: Callable[[str], None] = print, path: str = LAB_LOCK) -> Iterator[None]:
    """The lab lock, held for the ``with`` block."""
    acquire(log, path)
    try:
        yield
    finally:
        release(path)
