"""The agents' errors: every one a user can cause derives from ``AgentError``.

The worker and server agents, the allreduce API and the torch backend raise these for what a caller
can fix or must know (a lost peer, an input out of range, an option the backend does not take); the
launchers print them as one line, anything else shows its traceback. Each class also derives from
the built-in exception a caller would expect (``ValueError`` for a bad input...).
"""

from __future__ import annotations


class AgentError(Exception):
    """Base of the agents' user-facing errors; the message names the problem in one line."""


class AgentConfigError(AgentError, ValueError):
    """An agent given a plan or an option it cannot use (the message names which)."""


class Int32OverflowError(AgentError, OverflowError):
    """Values, or their sum in the network, outside the int32 range the switches add."""
