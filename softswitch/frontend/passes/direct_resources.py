"""Every direct_counter and direct_meter is attached to a table (its counters = / meters = property)."""

from __future__ import annotations

from ..errors import P4Error
from ..pass_manager import Compilation


def run(c: Compilation) -> None:
    for qualified_name, use in c.context.direct_counters.items():
        if use.instance.table is None:
            prop = "counters" if use.instance.kind == "direct_counter" else "meters"
            raise P4Error(
                use.position, f"{use.instance.kind} {qualified_name} is not attached to any table ({prop} = ...)"
            )
