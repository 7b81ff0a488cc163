"""C-style preprocessor on tokens: #include, #define (objects and functions, ## pasting), #undef,
#if/#ifdef/#ifndef/#elif/#else/#endif. Tokens keep the position of their original file:line:column."""

from __future__ import annotations

import os
import re
from collections import deque

from .errors import P4Error, Pos
from .lexer import Tok, lex

STD_INCLUDE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "include")

_DIRECTIVE = re.compile(r"\s*([A-Za-z_]+)\s*(.*)$", re.S)


def _inside(path: str, root: str) -> bool:
    """Whether the real path ``path`` is ``root`` or under it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


class Macro:
    __slots__ = ("name", "params", "body", "pos")

    def __init__(self, name, params, body, pos):
        self.name, self.params, self.body, self.pos = name, params, body, pos


class Preprocessor:
    """``confined``: the text comes from someone else (a pipeline pushed over P4Runtime), so ``#include``
    may only name files under ``include_dirs`` and the compiler's own include directory: no absolute
    path, no ``..``, nothing resolved relative to the process (a pushed program must not read the
    switch host's files, nor have an error message quote one)."""

    def __init__(self, defines=None, include_dirs=(), confined: bool = False):
        self.macros: dict[str, Macro] = {}
        self.include_dirs = [os.path.abspath(d) for d in include_dirs]
        self.confined = confined
        self.files: list[str] = []  # every file read, for the source hash
        self.texts: list[str] = []
        self.depth = 0
        for name, value in (defines or {}).items():
            body = lex(str(value), "<command line>") if value is not None else []
            self.macros[name] = Macro(name, None, body, Pos("<command line>", 1, 1))

    # ------------------------------------------------------------------ files
    def run_file(self, path: str) -> list[Tok]:
        path = os.path.abspath(path)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except OSError as e:
            raise P4Error(None, f"cannot read {path}: {e.strerror}") from None
        except UnicodeDecodeError:
            raise P4Error(None, f"{path} is not UTF-8 text") from None
        return self.run_text(text, path)

    def run_text(self, text: str, path: str) -> list[Tok]:
        self.files.append(path)
        self.texts.append(text)
        out: list[Tok] = []
        self._process(lex(text, path), path, out)
        out.append(Tok("eof", "<end of input>", None, Pos(path, text.count("\n") + 1, 1)))
        return out

    def _find_include(self, name: str, angle: bool, including: str, pos: Pos) -> str:
        if self.confined:
            return self._find_confined_include(name, angle, including, pos)
        dirs = []
        if not angle:
            dirs.append(os.path.dirname(including))
        dirs += self.include_dirs
        dirs.append(STD_INCLUDE_DIR)
        for d in dirs:
            p = os.path.join(d, name)
            if os.path.isfile(p):
                return p
        raise P4Error(pos, f"cannot find include file '{name}'")

    def _find_confined_include(self, name: str, angle: bool, including: str, pos: Pos) -> str:
        if os.path.isabs(name) or name.startswith("~") or "\\" in name:
            raise P4Error(pos, f"#include '{name}': only relative paths under the include directories are allowed")
        if ".." in name.split("/"):
            raise P4Error(pos, f"#include '{name}': '..' is not allowed in a pushed program")
        roots = [os.path.realpath(d) for d in (*self.include_dirs, STD_INCLUDE_DIR)]
        dirs = []
        here = os.path.realpath(os.path.dirname(including)) if os.path.isabs(including) else None
        if not angle and here is not None and any(_inside(here, r) for r in roots):
            dirs.append(here)  # a file of an include directory including its neighbour
        for d in dirs + roots:
            found = os.path.realpath(os.path.join(d, name))
            if os.path.isfile(found) and any(_inside(found, r) for r in roots):
                return found
        raise P4Error(pos, f"cannot find include file '{name}'")

    # ------------------------------------------------------------------ directives
    def _process(self, toks: list[Tok], path: str, out: list[Tok]):
        # stack of [taking, any_branch_taken, seen_else, pos]
        conds: list[list] = []
        taking = True
        pending: list[Tok] = []  # ordinary tokens awaiting macro expansion

        def flush():
            if pending:
                out.extend(self.expand(pending))
                pending.clear()

        for tok in toks:
            if tok.kind != "dir":
                if taking:
                    pending.append(tok)
                continue
            flush()
            m = _DIRECTIVE.match(tok.text)
            if not m:
                if tok.text.strip() == "":
                    continue
                raise P4Error(tok.pos, f"malformed preprocessor directive '#{tok.text.strip()}'")
            name, rest = m.group(1), m.group(2).strip()
            if name in ("ifdef", "ifndef"):
                ident = rest.split()[0] if rest else ""
                if not re.fullmatch(r"[A-Za-z_]\w*", ident):
                    raise P4Error(tok.pos, f"#{name} needs a macro name")
                val = (ident in self.macros) == (name == "ifdef")
                conds.append([taking, taking and val, False, tok.pos])
                taking = taking and val
            elif name == "if":
                val = taking and self._eval_if(rest, tok.pos)
                conds.append([taking, val, False, tok.pos])
                taking = val
            elif name == "elif":
                if not conds or conds[-1][2]:
                    raise P4Error(tok.pos, "#elif without #if")
                outer, done = conds[-1][0], conds[-1][1]
                val = outer and not done and self._eval_if(rest, tok.pos)
                conds[-1][1] = done or val
                taking = val
            elif name == "else":
                if not conds or conds[-1][2]:
                    raise P4Error(tok.pos, "#else without #if")
                outer, done = conds[-1][0], conds[-1][1]
                conds[-1][2] = True
                taking = outer and not done
                conds[-1][1] = True
            elif name == "endif":
                if not conds:
                    raise P4Error(tok.pos, "#endif without #if")
                taking = conds.pop()[0]
            elif not taking:
                continue
            elif name == "include":
                mm = re.fullmatch(r'<([^>]+)>|"([^"]+)"', rest)
                if not mm:
                    raise P4Error(tok.pos, f"#include expects <file> or \"file\", got '{rest}'")
                inc = self._find_include(mm.group(1) or mm.group(2), bool(mm.group(1)), path, tok.pos)
                if self.depth > 50:
                    raise P4Error(tok.pos, "#include nested too deeply (recursive include?)")
                try:
                    with open(inc, encoding="utf-8") as f:
                        text = f.read()
                except OSError as e:
                    raise P4Error(tok.pos, f"cannot read include file '{inc}': {e.strerror}") from None
                self.files.append(inc)
                self.texts.append(text)
                self.depth += 1
                self._process(lex(text, inc), inc, out)
                self.depth -= 1
            elif name == "define":
                self._define(rest, tok)
            elif name == "undef":
                self.macros.pop(rest.split()[0] if rest else "", None)
            elif name in ("error",):
                raise P4Error(tok.pos, f"#error {rest}")
            elif name in ("warning", "pragma", "line"):
                continue
            else:
                raise P4Error(tok.pos, f"unknown preprocessor directive '#{name}'")
        flush()
        if conds:
            raise P4Error(conds[-1][3], "unterminated #if (missing #endif)")

    def _define(self, rest: str, tok: Tok):
        m = re.match(r"([A-Za-z_]\w*)(\()?", rest)
        if not m:
            raise P4Error(tok.pos, "#define needs a macro name")
        name = m.group(1)
        params = None
        body_text = rest[m.end() :]
        if m.group(2):
            close = body_text.find(")")
            if close < 0:
                raise P4Error(tok.pos, f"missing ')' in parameter list of macro '{name}'")
            params = [p.strip() for p in body_text[:close].split(",")] if body_text[:close].strip() else []
            for p in params:
                if not re.fullmatch(r"[A-Za-z_]\w*", p):
                    raise P4Error(tok.pos, f"bad parameter '{p}' of macro '{name}'")
            body_text = body_text[close + 1 :]
        # body tokens carry the #define's position
        lexed = lex(body_text, tok.pos.file) if body_text.strip() else []
        body = [t.at(tok.pos, frozenset()) for t in lexed]
        for t, orig in zip(body, lexed, strict=True):
            t.space = orig.space
        self.macros[name] = Macro(name, params, body, tok.pos)

    # ------------------------------------------------------------------ #if expressions
    def _eval_if(self, text: str, pos: Pos) -> bool:
        toks = [t.at(pos, frozenset()) for t in lex(text, pos.file)]
        # replace defined X / defined(X) before expansion
        res: list[Tok] = []
        i = 0
        while i < len(toks):
            t = toks[i]
            if t.kind == "id" and t.text == "defined":
                if i + 1 < len(toks) and toks[i + 1].text == "(":
                    if i + 3 >= len(toks) or toks[i + 3].text != ")":
                        raise P4Error(pos, "malformed defined(...) in #if")
                    ident = toks[i + 2].text
                    i += 4
                else:
                    if i + 1 >= len(toks):
                        raise P4Error(pos, "malformed 'defined' in #if")
                    ident = toks[i + 1].text
                    i += 2
                res.append(
                    Tok(
                        "int",
                        "1" if ident in self.macros else "0",
                        (1 if ident in self.macros else 0, None, False),
                        pos,
                    )
                )
                continue
            res.append(t)
            i += 1
        toks = self.expand(res)
        return _IfEval(toks, pos).run() != 0

    # ------------------------------------------------------------------ macro expansion
    def expand(self, toks: list[Tok]) -> list[Tok]:
        inp = deque(toks)
        out: list[Tok] = []
        macros = self.macros
        while inp:
            t = inp.popleft()
            if t.kind != "id" or t.text not in macros or t.text in t.hide:
                out.append(t)
                continue
            mac = macros[t.text]
            if mac.params is None:
                hide = t.hide | {mac.name}
                body = self._substitute(mac, {}, t, hide)
                inp.extendleft(reversed(body))
                continue
            if not inp or inp[0].text != "(":
                out.append(t)  # a function-like macro's name without arguments is left as it is
                continue
            inp.popleft()
            args: list[list[Tok]] = [[]]
            depth = 0
            while True:
                if not inp:
                    raise P4Error(t.pos, f"unterminated argument list of macro '{mac.name}'")
                a = inp.popleft()
                if a.text in ("(", "[", "{") and a.kind == "op":
                    depth += 1
                elif a.text in (")", "]", "}") and a.kind == "op":
                    if depth == 0 and a.text == ")":
                        break
                    depth -= 1
                elif a.text == "," and a.kind == "op" and depth == 0:
                    args.append([])
                    continue
                args[-1].append(a)
            if len(mac.params) == 0 and args == [[]]:
                args = []
            if len(args) != len(mac.params):
                raise P4Error(t.pos, f"macro '{mac.name}' takes {len(mac.params)} argument(s), {len(args)} given")
            hide = t.hide | {mac.name}
            body = self._substitute(mac, dict(zip(mac.params, args, strict=True)), t, hide)
            inp.extendleft(reversed(body))
        return out

    def _substitute(self, mac: Macro, args: dict, use: Tok, hide) -> list[Tok]:
        body = mac.body
        res: list[Tok] = []
        expanded_cache: dict[str, list[Tok]] = {}
        i = 0
        while i < len(body):
            b = body[i]
            pasted_next = i + 1 < len(body) and body[i + 1].text == "##"
            pasted_prev = i > 0 and body[i - 1].text == "##"
            if b.text == "##" and b.kind == "op":
                i += 1
                continue
            if b.kind == "id" and b.text in args:
                if pasted_next or pasted_prev:
                    piece = list(args[b.text])
                else:
                    if b.text not in expanded_cache:
                        expanded_cache[b.text] = self.expand(list(args[b.text]))
                    piece = expanded_cache[b.text]
                piece = [p.at(use.pos, p.hide | hide) for p in piece]
            else:
                piece = [b.at(use.pos, hide)]
                piece[0].space = b.space
            if pasted_prev and res and piece:
                left = res.pop()
                text = left.text + piece[0].text
                new = lex(text, use.pos.file)
                if len(new) != 1:
                    raise P4Error(use.pos, f"'##' in macro '{mac.name}' does not form one token: '{text}'")
                res.append(new[0].at(use.pos, hide))
                res.extend(piece[1:])
            else:
                res.extend(piece)
            i += 1
        return res


# #if's binary operators on evaluated operands (both sides are evaluated before the operator applies)
_BINARY_OPERATORS = {
    "||": lambda v, w: int(bool(v) or bool(w)),
    "&&": lambda v, w: int(bool(v) and bool(w)),
    "|": lambda v, w: v | w,
    "^": lambda v, w: v ^ w,
    "&": lambda v, w: v & w,
    "==": lambda v, w: int(v == w),
    "!=": lambda v, w: int(v != w),
    "<": lambda v, w: int(v < w),
    ">": lambda v, w: int(v > w),
    "<=": lambda v, w: int(v <= w),
    ">=": lambda v, w: int(v >= w),
    "<<": lambda v, w: v << w,
    ">>": lambda v, w: v >> w,
    "+": lambda v, w: v + w,
    "-": lambda v, w: v - w,
    "*": lambda v, w: v * w,
    "/": lambda v, w: int(v / w),
    "%": lambda v, w: v % w,
}


class _IfEval:
    """Integer expression of #if (after macro expansion; unknown identifiers are 0)."""

    _BIN = [
        ["||"],
        ["&&"],
        ["|"],
        ["^"],
        ["&"],
        ["==", "!="],
        ["<", ">", "<=", ">="],
        ["<<", ">>"],
        ["+", "-"],
        ["*", "/", "%"],
    ]

    def __init__(self, toks, pos):
        # join '>' '>' into '>>'
        merged = []
        for t in toks:
            if merged and t.text == ">" and merged[-1].text == ">" and not t.space:
                merged[-1] = Tok("op", ">>", None, t.pos)
            else:
                merged.append(t)
        self.toks, self.i, self.pos = merged, 0, pos

    def peek(self):
        return self.toks[self.i].text if self.i < len(self.toks) else None

    def run(self):
        if not self.toks:
            raise P4Error(self.pos, "#if with no expression")
        v = self.ternary()
        if self.i != len(self.toks):
            raise P4Error(self.pos, f"unexpected '{self.peek()}' in #if expression")
        return v

    def ternary(self):
        c = self.binary(0)
        if self.peek() == "?":
            self.i += 1
            a = self.ternary()
            if self.peek() != ":":
                raise P4Error(self.pos, "expected ':' in #if expression")
            self.i += 1
            b = self.ternary()
            return a if c else b
        return c

    def binary(self, level):
        if level == len(self._BIN):
            return self.unary()
        v = self.binary(level + 1)
        while self.peek() in self._BIN[level]:
            op = self.peek()
            self.i += 1
            w = self.binary(level + 1)
            if op in ("/", "%") and w == 0:
                raise P4Error(self.pos, "division by zero in #if expression")
            v = _BINARY_OPERATORS[op](v, w)
        return v

    def unary(self):
        t = self.peek()
        if t is None:
            raise P4Error(self.pos, "incomplete #if expression")
        tok = self.toks[self.i]
        self.i += 1
        if t == "!":
            return int(not self.unary())
        if t == "-":
            return -self.unary()
        if t == "~":
            return ~self.unary()
        if t == "(":
            v = self.ternary()
            if self.peek() != ")":
                raise P4Error(self.pos, "expected ')' in #if expression")
            self.i += 1
            return v
        if tok.kind == "int":
            return tok.value[0]
        if tok.kind == "id":
            return 0
        raise P4Error(self.pos, f"unexpected '{t}' in #if expression")
