"""Runner for STF ("simple test format") files, the packet tests p4c uses for BMv2.

A test file is a list of commands, one a line (``#`` starts a comment)::

    add TABLE [PRIORITY] KEY:VALUE ... ACTION(PARAM:VALUE, ...)
    setdefault TABLE ACTION(PARAM:VALUE, ...)
    mc_mgrp_create GROUP            mc_node_create RID PORT...     mc_node_associate GROUP NODE_HANDLE
    mirroring_add SESSION PORT
    packet PORT HEX                 expect PORT HEX[$]             wait
    expect PORT (any number of packets on PORT)                   no_packet
    remove all                      check_counter NAME(INDEX | HANDLE) [packets|bytes OP VALUE]

Values are decimal or 0x-hex; a ternary key is ``VALUE&&&MASK`` (or hex with ``*`` nibbles), an lpm key
``VALUE/LENGTH``, a range ``LOW->HIGH``; a header stack element in a key name is ``stack$0.field``. In
``expect``, ``*`` is a wildcard nibble and a trailing ``$`` requires the exact length (otherwise the packet
may be longer than the expectation). A higher STF priority number wins, as in P4Runtime (p4c's BMv2 test
driver hands BMv2, where a lower number wins, ``10000 - priority``).
Multicast node handles are numbered from 0 in creation order, like BMv2's.

Expectations are matched per output port in order; a missing packet, an extra packet and a mismatch
are each reported as one failure line naming the port and showing expected vs got.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from protocol.p4names import P4NameError, find_named
from softswitch.errors import SwitchError


class StfError(SwitchError, ValueError):
    """A malformed STF file or a command the program cannot accept (message starts with file:line)."""


@dataclass
class Command:
    line: int
    op: str
    args: dict


@dataclass
class Expectation:
    data: bytes
    mask: bytes
    exact_length: bool
    text: str
    line: int

    def matches(self, packet: bytes) -> bool:
        if len(packet) < len(self.data) or (self.exact_length and len(packet) != len(self.data)):
            return False
        # a longer packet (without exact_length) matches on its first len(data) bytes
        return all((p & m) == (d & m) for p, d, m in zip(packet, self.data, self.mask, strict=False))


@dataclass
class StfResult:
    ok: bool
    failures: list[str] = field(default_factory=list)
    packets_sent: int = 0
    packets_checked: int = 0

    def __str__(self):
        if self.ok:
            return f"PASS: {self.packets_sent} packet(s) sent, {self.packets_checked} expectation(s) met"
        return "FAIL:\n" + "\n".join("  " + f for f in self.failures)


# ---------------------------------------------------------------- parsing


def parse_int(text: str) -> int:
    text = text.strip().replace("_", "")
    try:
        if text.lower().startswith("0x"):
            return int(text, 16)
        if text.lower().startswith("0b"):
            return int(text, 2)
        return int(text, 10)
    except ValueError:
        raise ValueError(f"bad number {text!r}") from None


def parse_key_value(text: str):
    """One key value: ('ternary', v, m) | ('lpm', v, len) | ('range', lo, hi) | ('value', v)."""
    if "&&&" in text:
        value, mask = text.split("&&&", 1)
        return ("ternary", parse_int(value), parse_int(mask))
    if "->" in text:
        low, high = text.split("->", 1)
        return ("range", parse_int(low), parse_int(high))
    if "/" in text:
        value, length = text.split("/", 1)
        return ("lpm", parse_int(value), parse_int(length))
    if "*" in text:
        digits = text[2:] if text.lower().startswith("0x") else None
        if digits is None:
            raise ValueError(f"wildcard '*' needs a hex value: {text!r}")
        value = int("".join("0" if c == "*" else c for c in digits), 16)
        mask = int("".join("0" if c == "*" else "f" for c in digits), 16)
        return ("ternary", value, mask)
    return ("value", parse_int(text))


def parse_hex_pattern(text: str, expectation: bool = False) -> tuple[bytes, bytes, bool]:
    """Hex with optional spaces, '*' wildcard nibbles and a trailing '$' -> (data, mask, exact_length).

    An odd number of digits is read as p4c's BMv2 driver reads it: in a packet the last digit alone is a
    byte (`...1 0` ends with 0x10 0x00); in an expectation it is the high nibble of the last byte, the
    low nibble being left unchecked (the driver compares hex digit by digit)."""
    text = "".join(text.split())
    exact = text.endswith("$")
    if exact:
        text = text[:-1]
    if text.lower().startswith("0x"):
        text = text[2:]
    if not re.fullmatch(r"[0-9a-fA-F*]*", text):
        raise ValueError(f"not hex: {text!r}")
    if len(text) % 2:
        text = text + "*" if expectation else text[:-1] + "0" + text[-1]
    data = bytes.fromhex("".join("0" if c == "*" else c for c in text))
    mask = bytes.fromhex("".join("0" if c == "*" else "f" for c in text))
    return data, mask, exact


_ACTION_RE = re.compile(r"^(?P<name>[A-Za-z_][\w.$]*)\s*\((?P<args>.*)\)\s*(=\s*(?P<handle>\S+))?$")
_CHECK_COUNTER_RE = re.compile(
    r"^(?P<name>[\w.$]+)\s*\(\s*(?P<index>[\w$]+)\s*\)\s*"
    r"(?:(?P<unit>packets|bytes)\s*(?P<op>==|!=|<=|<|>=|>)\s*(?P<value>\S+))?$"
)


def parse_action(text: str) -> tuple[str, dict[str, int]]:
    match = _ACTION_RE.match(text.strip())
    if not match:
        raise ValueError(f"expected ACTION(PARAM:VALUE,...), got {text!r}")
    args = {}
    for part in match.group("args").split(","):
        part = part.strip()
        if not part:
            continue
        if ":" not in part:
            raise ValueError(f"action argument {part!r} is not PARAM:VALUE")
        name, value = part.split(":", 1)
        args[name.strip()] = parse_int(value)
    return match.group("name"), args


def entry_handle(text: str) -> str | None:
    """The `= ID` an `add` command may end with (a name for the entry, used by check_counter)."""
    match = _ACTION_RE.match(text.strip())
    return match.group("handle") if match else None


def parse_line(line: str, lineno: int) -> Command | None:
    text = line.split("#", 1)[0].strip()
    if not text:
        return None
    op, _, rest = text.partition(" ")
    op = op.lower()  # p4c's STF grammar takes its keywords in any case
    rest = rest.strip()
    words = rest.split()
    if op == "add":
        paren = rest.find("(")
        if paren < 0:
            raise ValueError("add needs an ACTION(...) at the end")
        head = rest[:paren].split()
        if len(head) < 2:
            raise ValueError("add needs TABLE [PRIORITY] KEY:VALUE... ACTION(...)")
        action_start = rest.rfind(head[-1], 0, paren + 1)
        action, args = parse_action(rest[action_start:])
        table, tokens = head[0], head[1:-1]
        priority = None
        if tokens and re.fullmatch(r"(0[xX][0-9a-fA-F_]+|[0-9_]+)", tokens[0]):
            priority = parse_int(tokens.pop(0))
        keys = {}
        for token in tokens:
            if ":" not in token:
                raise ValueError(f"key {token!r} is not FIELD:VALUE")
            name, value = token.split(":", 1)
            keys[name] = parse_key_value(value)
        handle = entry_handle(rest[action_start:])
        return Command(
            lineno,
            op,
            {"table": table, "priority": priority, "keys": keys, "action": action, "args": args, "handle": handle},
        )
    if op == "setdefault":
        if len(words) < 2:
            raise ValueError("setdefault needs TABLE ACTION(...)")
        action, args = parse_action(rest[len(words[0]) :])
        return Command(lineno, op, {"table": words[0], "action": action, "args": args})
    if op == "expect" and len(words) == 1:  # `expect PORT`: any number of packets there is fine
        return Command(lineno, "expect_any", {"port": parse_int(words[0])})
    if op == "no_packet":  # nothing may come out that is not expected anyway
        return Command(lineno, "wait", {})
    if op == "remove":
        if words != ["all"]:
            raise ValueError("only 'remove all' is supported (as in p4c's STF)")
        return Command(lineno, "remove_all", {})
    if op == "check_counter":
        match = _CHECK_COUNTER_RE.match(rest)
        if not match:
            raise ValueError("usage: check_counter NAME(INDEX) [packets|bytes OP VALUE]")
        unit, cmp, value = match.group("unit") or "packets", match.group("op") or "==", match.group("value") or "0"
        return Command(
            lineno,
            op,
            {
                "name": match.group("name"),
                "index": match.group("index"),
                "unit": unit,
                "op": cmp,
                "value": parse_int(value),
            },
        )
    if op in ("packet", "expect"):
        if not words:
            raise ValueError(f"{op} needs PORT HEX")
        port = parse_int(words[0])
        data, mask, exact = parse_hex_pattern(rest[len(words[0]) :], expectation=op == "expect")
        if op == "packet":
            if mask.count(0xFF) != len(mask) or exact:
                raise ValueError("'*' and '$' are only allowed in expect")
            return Command(lineno, op, {"port": port, "data": data})
        text = "".join(rest[len(words[0]) :].split())
        return Command(lineno, op, {"port": port, "expectation": Expectation(data, mask, exact, text, lineno)})
    if op == "wait":
        return Command(lineno, op, {})
    if op == "mc_mgrp_create":
        _need(words, 1, "mc_mgrp_create GROUP")
        return Command(lineno, op, {"group": parse_int(words[0])})
    if op == "mc_node_create":
        _need(words, 2, "mc_node_create RID PORT...")
        return Command(lineno, op, {"rid": parse_int(words[0]), "ports": [parse_int(w) for w in words[1:]]})
    if op == "mc_node_associate":
        _need(words, 2, "mc_node_associate GROUP NODE_HANDLE")
        return Command(lineno, op, {"group": parse_int(words[0]), "handle": parse_int(words[1])})
    if op == "mirroring_add":
        _need(words, 2, "mirroring_add SESSION PORT")
        return Command(lineno, op, {"session": parse_int(words[0]), "port": parse_int(words[1])})
    raise ValueError(f"unknown command {op!r}")


def _need(words, count, usage):
    if len(words) < count:
        raise ValueError(f"usage: {usage}")


def parse_stf(text: str, filename: str = "<stf>") -> list[Command]:
    commands = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        try:
            command = parse_line(line, lineno)
        except ValueError as e:
            raise StfError(f"{filename}:{lineno}: {e}") from None
        if command is not None:
            commands.append(command)
    return commands


# ---------------------------------------------------------------- running

_STACK_INDEX = re.compile(r"\$(\d+)")


def _table_entry(info, command: Command):
    """The Switch TableEntry for an ``add`` command (names resolved against ProgramInfo)."""
    from softswitch.switch import Exact, Lpm, Optional, Range, TableEntry, Ternary

    table = info.table(command.args["table"])
    by_name = {k.name: k for k in table.keys}
    matches = {}
    for name, value in command.args["keys"].items():
        name = _STACK_INDEX.sub(r"[\1]", name)  # p4c's STF writes stack[0].f as stack$0.f
        key = _named_in_table(table, by_name, name, "key")
        full = (1 << key.bitwidth) - 1
        kind, *vals = value
        if key.match_kind == "exact":
            if kind != "value":
                raise ValueError(f"key {key.name} is exact; {kind} value given")
            matches[key.name] = Exact(vals[0])
        elif key.match_kind == "lpm":
            matches[key.name] = (
                Lpm(vals[0], key.bitwidth)
                if kind == "value"
                else (Lpm(vals[0], vals[1]) if kind == "lpm" else _bad(key, kind))
            )
        elif key.match_kind == "ternary":
            matches[key.name] = (
                Ternary(vals[0], full)
                if kind == "value"
                else (Ternary(vals[0], vals[1]) if kind == "ternary" else _bad(key, kind))
            )
        elif key.match_kind == "range":
            matches[key.name] = (
                Range(vals[0], vals[0])
                if kind == "value"
                else (Range(vals[0], vals[1]) if kind == "range" else _bad(key, kind))
            )
        elif key.match_kind == "optional":
            matches[key.name] = Optional(vals[0]) if kind == "value" else _bad(key, kind)
        else:
            raise ValueError(f"key {key.name}: unsupported match kind {key.match_kind}")
    priority = command.args["priority"]
    if priority is None and any(k.match_kind in ("ternary", "range", "optional") for k in table.keys):
        priority = 0
    if priority is not None:
        priority += 1  # P4Runtime priorities start at 1
    action = _action_of(table, command.args["action"])
    return table.name, TableEntry(matches=matches, action=action, args=command.args["args"], priority=priority)


def _named_in_table(table, by_name: dict, name: str, kind: str):
    """A key or action of ``table`` by its full or short name (protocol/p4names.py), or a one-line error
    naming the table."""
    try:
        return find_named(by_name, name, kind)
    except P4NameError as e:
        raise ValueError(f"table {table.name}: {e.args[0]}") from None


def _action_of(table, name: str) -> str:
    """The full name of one of the table's actions (or its default action), by its full or short name."""
    names = [a.name for a in table.actions] + [table.default_action]
    return _named_in_table(table, {n: n for n in names}, name, "action")


def _bad(key, kind):
    raise ValueError(f"key {key.name} is {key.match_kind}; {kind} value given")


class StfRunner:
    """Feeds one STF file's commands to a Switch and checks what comes out."""

    def __init__(self, switch, filename="<stf>"):
        self.sw = switch
        self.filename = filename
        self.expected: dict[int, list[Expectation]] = {}
        self.received: dict[int, list[bytes]] = {}
        self.mc_nodes: list[list[tuple[int, int]]] = []
        self.mc_groups: dict[int, list[tuple[int, int]]] = {}
        self.sent = 0
        self.handles: dict[str, tuple] = {}  # `add ... = HANDLE`: (table, entry)
        self.any_count: set[int] = set()  # ports of an `expect PORT` without data
        self.counter_failures: list[str] = []

    def run(self, commands) -> StfResult:
        for command in commands:
            try:
                self.execute(command)
            except StfError:
                raise
            except (ValueError, KeyError, LookupError) as e:
                message = e.args[0] if isinstance(e, KeyError) and e.args else e
                raise StfError(f"{self.filename}:{command.line}: {command.op}: {message}") from None
            except Exception as e:  # the Switch's own errors (InvalidEntry, EntryExists, ...)
                raise StfError(f"{self.filename}:{command.line}: {command.op}: {type(e).__name__}: {e}") from None
        return self.check()

    def execute(self, command: Command):
        a = command.args
        op = command.op
        if op == "add":
            table, entry = _table_entry(self.sw.info, command)
            self.sw.table(table).insert(entry)
            if a.get("handle"):
                self.handles[a["handle"]] = (table, entry)
        elif op == "remove_all":
            for table in self.sw.tables():
                table.clear()
        elif op == "expect_any":
            self.any_count.add(a["port"])
        elif op == "check_counter":
            self.check_counter(command)
        elif op == "setdefault":
            table = self.sw.info.table(a["table"])
            self.sw.table(table.name).set_default(_action_of(table, a["action"]), a["args"])
        elif op == "packet":
            self.sent += 1
            for port, data in self.sw.process(a["port"], a["data"]):
                self.received.setdefault(port, []).append(bytes(data))
        elif op == "expect":
            self.expected.setdefault(a["port"], []).append(a["expectation"])
        elif op == "mc_mgrp_create":
            self.mc_groups[a["group"]] = []
            self.sw.set_multicast_group(a["group"], [])
        elif op == "mc_node_create":
            self.mc_nodes.append([(port, a["rid"]) for port in a["ports"]])
        elif op == "mc_node_associate":
            if a["group"] not in self.mc_groups:
                raise ValueError(f"multicast group {a['group']} was not created")
            if not 0 <= a["handle"] < len(self.mc_nodes):
                raise ValueError(f"no multicast node with handle {a['handle']}")
            self.mc_groups[a["group"]].extend(self.mc_nodes[a["handle"]])
            self.sw.set_multicast_group(a["group"], list(self.mc_groups[a["group"]]))
        elif op == "mirroring_add":
            self.sw.set_clone_session(a["session"], [(a["port"], 0)])
        elif op == "wait":
            pass  # Switch.process is synchronous: every packet is done when it returns

    def check_counter(self, command: Command) -> None:
        """`check_counter NAME(INDEX | ENTRY_HANDLE) [packets|bytes OP VALUE]` (default: packets == 0)."""
        a = command.args
        index = a["index"]
        if index in self.handles:  # a direct counter: the entry an `add ... = HANDLE` made
            table, entry = self.handles[index]
            packets, nbytes = self.sw.direct_counter_of(table, entry)
        else:
            packets, nbytes = self.sw.counter(a["name"]).read(parse_int(index))  # full or short name
        got = packets if a["unit"] == "packets" else nbytes
        compare = {
            "==": got == a["value"],
            "!=": got != a["value"],
            "<": got < a["value"],
            "<=": got <= a["value"],
            ">": got > a["value"],
            ">=": got >= a["value"],
        }[a["op"]]
        if not compare:
            self.counter_failures.append(
                f"line {command.line}: counter {a['name']}({index}) {a['unit']} is {got}, expected {a['op']} {a['value']}"
            )

    def check(self) -> StfResult:
        failures = list(self.counter_failures)
        checked = 0
        for port in sorted(set(self.expected) | set(self.received)):
            if port in self.any_count:
                continue
            expected = self.expected.get(port, [])
            got = self.received.get(port, [])
            for i in range(max(len(expected), len(got))):
                exp = expected[i] if i < len(expected) else None
                pkt = got[i] if i < len(got) else None
                if exp is None:
                    failures.append(f"port {port}: unexpected packet #{i + 1}: got {pkt.hex()}")
                elif pkt is None:
                    failures.append(
                        f"port {port}: missing packet #{i + 1} (line {exp.line}): expected {exp.text}, got nothing"
                    )
                elif not exp.matches(pkt):
                    failures.append(
                        f"port {port}: packet #{i + 1} (line {exp.line}) differs: expected {exp.text}, got {pkt.hex()}"
                    )
                else:
                    checked += 1
        return StfResult(ok=not failures, failures=failures, packets_sent=self.sent, packets_checked=checked)


def run_stf(program_path, stf_path, switch=None) -> StfResult:
    """Compile ``program_path`` (unless a Switch is given), run the STF file on it, return the result."""
    with open(stf_path) as f:
        commands = parse_stf(f.read(), str(stf_path))
    if switch is None:
        from softswitch.compiler import compile_program
        from softswitch.switch import Switch

        switch = Switch(compile_program(str(program_path)), name="stf")
    return StfRunner(switch, str(stf_path)).run(commands)
