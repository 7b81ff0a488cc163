"""TNA only: no register is accessed twice in one pass of a packet, as Tofino's compiler requires."""

from __future__ import annotations

from ...arch import tna
from ..pass_manager import Compilation


def run(c: Compilation) -> None:
    if c.ir.pipeline.architecture == "tna":
        tna.check_register_accesses(c.ir)
