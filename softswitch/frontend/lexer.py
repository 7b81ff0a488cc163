"""P4_16 lexer: text of one file -> tokens with their file:line:column.

Preprocessor directives come out as one 'dir' token carrying the raw text of the (continued) line, so the
preprocessor can work on tokens while #include/#define keep their line structure.
"""

from __future__ import annotations

import re

from .errors import P4Error, Pos


class Tok:
    """kind: 'id' | 'int' | 'str' | 'op' | 'dir' | 'eof'. For 'int', value is (value, width|None, signed)."""

    __slots__ = ("kind", "text", "value", "pos", "hide", "space")

    def __init__(self, kind, text, value, pos, hide=frozenset(), space=True):
        self.kind, self.text, self.value, self.pos, self.hide, self.space = kind, text, value, pos, hide, space

    def at(self, pos, hide):
        """A copy placed at `pos` (a macro expansion's tokens take the position of the macro's use)."""
        return Tok(self.kind, self.text, self.value, pos, hide, self.space)

    def __repr__(self):
        return f"Tok({self.kind},{self.text!r})"


_OPS = [
    "|+|=",
    "|-|=",
    "&&&",
    "|+|",
    "|-|",
    "<<=",
    "+=",
    "-=",
    "*=",
    "/=",
    "%=",
    "&=",
    "|=",
    "^=",
    "...",
    "..",
    "++",
    "&&",
    "||",
    "==",
    "!=",
    "<=",
    ">=",
    "<<",
    "##",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    "<",
    ">",
    ";",
    ":",
    ",",
    ".",
    "=",
    "+",
    "-",
    "*",
    "/",
    "%",
    "&",
    "|",
    "^",
    "~",
    "!",
    "?",
    "@",
    "#",
]
_INT = re.compile(
    r"(\d+)([ws])(-?)(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)"
    r"|(0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|0[dD][0-9_]+|[0-9][0-9_]*)"
)
_ID = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_WS = re.compile(r"[ \t\r\f\v]+")


def _skip_block_comment(text, i, file, line, lstart):
    """Skips the /* ... */ starting at i: (index after it, line, start of that line) for positions."""
    j = text.find("*/", i + 2)
    if j < 0:
        raise P4Error(Pos(file, line, i - lstart + 1), "unterminated comment")
    line += text.count("\n", i, j)
    k = text.rfind("\n", i, j)
    if k >= 0:
        lstart = k + 1
    return j + 2, line, lstart


def parse_int_text(text: str) -> int:
    t = text.replace("_", "")
    if len(t) > 1 and t[0] == "0" and t[1] in "xXbBoOdD":
        base = {"x": 16, "b": 2, "o": 8, "d": 10}[t[1].lower()]
        return int(t[2:], base)
    return int(t, 10)


def int_token_value(m) -> tuple:
    if m.group(1):
        width = int(m.group(1))
        signed = m.group(2) == "s"
        v = parse_int_text(m.group(4))
        if m.group(3):
            v = -v
        return (v, width, signed)
    return (parse_int_text(m.group(5)), None, False)


def lex(text: str, file: str) -> list[Tok]:
    toks: list[Tok] = []
    i, n, line, lstart = 0, len(text), 1, 0
    bol = True  # only whitespace/comments so far on this line
    space = True
    while i < n:
        c = text[i]
        if c == "\n":
            i += 1
            line += 1
            lstart = i
            bol = True
            space = True
            continue
        if c in " \t\r\f\v":
            i = _WS.match(text, i).end()
            space = True
            continue
        if c == "\\" and text.startswith("\n", i + 1):
            i += 2
            line += 1
            lstart = i
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            i, line, lstart = _skip_block_comment(text, i, file, line, lstart)
            space = True
            continue
        pos = Pos(file, line, i - lstart + 1)
        if c == "#" and bol:
            # a directive: the rest of the logical line, comments removed, continuations joined
            j = i + 1
            raw = []
            while j < n and text[j] != "\n":
                if text[j] == "\\" and text.startswith("\n", j + 1):
                    j += 2
                    line += 1
                    lstart = j
                    raw.append(" ")
                    continue
                if text.startswith("//", j):
                    while j < n and text[j] != "\n":
                        j += 1
                    break
                if text.startswith("/*", j):
                    j, line, lstart = _skip_block_comment(text, j, file, line, lstart)
                    raw.append(" ")
                    continue
                raw.append(text[j])
                j += 1
            toks.append(Tok("dir", "".join(raw), None, pos))
            i = j
            continue
        bol = False
        if c.isdigit():
            m = _INT.match(text, i)
            toks.append(Tok("int", m.group(0), int_token_value(m), pos, space=space))
            i = m.end()
            if i < n and (text[i].isalnum() or text[i] == "_"):
                raise P4Error(Pos(file, line, i - lstart + 1), f"malformed number '{m.group(0)}{text[i]}'")
        elif c.isalpha() or c == "_":
            m = _ID.match(text, i)
            toks.append(Tok("id", m.group(0), None, pos, space=space))
            i = m.end()
        elif c == '"':
            j = i + 1
            out = []
            while j < n and text[j] != '"':
                if text[j] == "\n":
                    raise P4Error(pos, "unterminated string literal")
                if text[j] == "\\" and j + 1 < n:
                    out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(text[j + 1], text[j + 1]))
                    j += 2
                    continue
                out.append(text[j])
                j += 1
            if j >= n:
                raise P4Error(pos, "unterminated string literal")
            toks.append(Tok("str", text[i : j + 1], "".join(out), pos, space=space))
            i = j + 1
        else:
            for op in _OPS:
                if text.startswith(op, i):
                    toks.append(Tok("op", op, None, pos, space=space))
                    i += len(op)
                    break
            else:
                raise P4Error(pos, f"unexpected character {c!r}")
        space = False
    return toks
