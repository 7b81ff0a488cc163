"""The controller's errors: every one a user can cause derives from ``ControllerError``.

``inactl`` and the launchers in ``topologies/`` print a ``ControllerError`` as one line (its message
names the problem: the file, the host, the switch) and let anything else, a bug, show its traceback.
Each class also derives from the built-in exception a caller would expect (a bad topology is a
``ValueError``, an unknown job a ``LookupError``), so code that caught those keeps working.
"""

from __future__ import annotations


class ControllerError(Exception):
    """Base of the controller's user-facing errors; the message is one line naming the problem."""


class TopologyError(ControllerError, ValueError):
    """A topology that cannot be used; the message names the problem in one line."""


class PlanError(ControllerError, ValueError):
    """A job that cannot be planned as asked; the message names the reason in one line."""


class PlanFormatError(ControllerError, ValueError):
    """A plan document that this code cannot use (wrong version, missing field, inconsistent)."""


class ResourceError(ControllerError, RuntimeError):
    """Nothing left of a resource (job ids, counter rows, multicast groups)."""


class P4RuntimeError(ControllerError, RuntimeError):
    """A switch refused or could not be reached; the message says which switch and why."""


class InstallError(ControllerError, RuntimeError):
    """The network could not take a job (a switch or a server agent refused it); the message says which."""


class ReplanError(ControllerError):
    """A running job could not be re-planned around a failure (no tree reaches every worker)."""


class UnknownJobError(ControllerError, LookupError):
    """A request about a job that does not exist (or a plan version it never had)."""


class JobServiceError(ControllerError, RuntimeError):
    """The job service refused a request; the message is the service's one-line reason."""


class CliError(ControllerError):
    """A mistake in ``inactl``'s arguments, reported in one line."""


class StateFileError(ControllerError, ValueError):
    """The job service's state file cannot be read, written or used (corrupt, another topology); the
    message names the file and the problem."""
