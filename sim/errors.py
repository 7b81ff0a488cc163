"""Errors a user of the simulator can cause."""

from __future__ import annotations


class SimError(ValueError):
    """A simulation that cannot be set up as asked (the message names the problem)."""
