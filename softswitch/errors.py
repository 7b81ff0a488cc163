"""softswitch's errors: every one a user can cause derives from ``SwitchError``.

A program the compiler cannot take (``P4Error``, in the front end), a table write the switch refuses
(``TableError``), a P4Runtime request it cannot serve (``P4RTError``), a bad STF or P4Info file: the
command line (``softswitch``) and the launchers print these as one line and let anything else, a bug,
show its traceback. The parser's ``ParserError`` and ``ExitCtl`` are not here: they steer a packet
through the generated code and never reach a user.
"""

from __future__ import annotations


class SwitchError(Exception):
    """Base of softswitch's user-facing errors; the message names the problem in one line."""


class UnsupportedConstruct(SwitchError, NotImplementedError):
    """A construct the front end accepts but a back end has no code for (the message names it)."""
