"""The launchers' errors, and the one list of user-facing errors they print as one line.

``LabError`` is the base of what the mininet lab, the in-process network and the demo raise
themselves; ``USER_ERRORS`` adds the bases of the parts they drive (controller, softswitch, agents,
the native build cache). A launcher catches exactly ``USER_ERRORS``: any other exception is a bug and
shows its traceback.
"""

from __future__ import annotations

from controller.errors import ControllerError
from native.build import NativeBuildError
from softswitch.errors import SwitchError
from worker.errors import AgentError


class LabError(RuntimeError):
    """The network could not be built or started, or a run in it failed (the message names the cause)."""


class SwitchStartError(LabError):
    """A switch process exited or never opened its gRPC port."""


class LabJobError(LabError):
    """An allreduce in the lab failed or returned a wrong sum (the message says which rank and round)."""


class TrainError(LabError):
    """A training run failed or ran out of time (the message names the host and its last output)."""


USER_ERRORS: tuple[type[Exception], ...] = (ControllerError, LabError, SwitchError, AgentError, NativeBuildError)
