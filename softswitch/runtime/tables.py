"""Match-action tables: entries by P4 name, validated against the table's P4Info-like TableInfo, and the
match engine (exact: one dict; lpm: a dict per prefix length; ternary/range/optional: priority scan)."""

from __future__ import annotations

from dataclasses import dataclass, field

from protocol.p4names import P4NameError, find_named
from softswitch.errors import SwitchError


class TableError(SwitchError):
    """Base of the control-plane errors of table writes."""


class InvalidEntry(TableError):
    """The entry does not fit the table (names the field/action/param at fault)."""


class EntryExists(TableError):
    pass


class EntryNotFound(TableError):
    pass


class ConstDefaultAction(TableError):
    pass


class TableFull(TableError):
    pass


class InUse(TableError):
    """An action profile member or group still referenced by a table entry (or a member by a group)."""


@dataclass(frozen=True)
class Exact:
    value: int


@dataclass(frozen=True)
class Lpm:
    value: int
    prefix_len: int


@dataclass(frozen=True)
class Ternary:
    value: int
    mask: int


@dataclass(frozen=True)
class Range:
    low: int
    high: int


@dataclass(frozen=True)
class Optional:
    value: int


MEMBER, GROUP = "@member", "@group"  # what _check_action gives for indirect entries (no P4 action name)

_KIND_CLASS = {"exact": Exact, "lpm": Lpm, "ternary": Ternary, "range": Range, "optional": Optional}


@dataclass
class TableEntry:
    matches: dict = field(default_factory=dict)  # key name -> Exact/Lpm/Ternary/Range/Optional
    action: str = "NoAction"
    args: dict = field(default_factory=dict)  # param name -> int
    priority: int | None = None
    packets: int = 0  # from the table's direct counter
    bytes: int = 0
    # a table with an `implementation` (action profile/selector): the entry runs this member's action, or
    # one member of this group picked by the selector's hash (then `action` and `args` are not used)
    member: int | None = None
    group: int | None = None


class Result:
    """What a lookup returns to generated code: the action function, its args, hit, the action's name."""

    __slots__ = ("fn", "args", "hit", "name", "entry")

    def __init__(self, fn, args, hit, name, entry):
        self.fn, self.args, self.hit, self.name, self.entry = fn, args, hit, name, entry


def _mask(w):
    return (1 << w) - 1


class TableSchema:
    """A table's entries checked against its TableInfo: the names, widths and priorities an entry must
    have, and the error messages when it does not. Shared by the Python TableState and the native
    runtime's tables (softswitch/native), so both raise the same errors."""

    profile = None  # the ActionProfileState of a table with an `implementation` (TableState sets it)

    def __init__(self, info, actions_info):
        self.info = info
        self.name = info.name
        self._actions_info = {a.name: a for a in actions_info}
        self._refs = {r.name: r for r in info.actions}
        kinds = [k.match_kind for k in info.keys]
        self._needs_priority = any(k in ("ternary", "range", "optional") for k in kinds)

    def check_default(self, action, args):
        """(action name, args tuple) for a new default action; raises ConstDefaultAction/InvalidEntry."""
        if self.info.const_default_action:
            raise ConstDefaultAction(
                f"table {self.name}: the default action is const ({self.info.default_action}) and cannot be changed"
            )
        action = self._action_name(action)
        ref = self._refs[action]
        if ref.scope == "TABLE_ONLY":
            raise InvalidEntry(f"table {self.name}: action {action} is @tableonly and cannot be the default")
        return action, self._arg_tuple(action, args or {})

    # ------------------------------------------------------------------ validation
    def _check_mutable(self):
        if self.info.is_const:
            raise InvalidEntry(f"table {self.name} has const entries and cannot be changed")

    def _action_name(self, action):
        """The full name of one of the table's actions, by its full or short name (protocol/p4names.py)."""
        if action in self._refs:
            return action
        try:
            return find_named({name: name for name in self._refs}, action, "action")
        except P4NameError as e:
            if e.candidates:
                raise InvalidEntry(f"table {self.name}: {e.args[0]}") from None
            raise InvalidEntry(
                f"table {self.name}: action {action!r} is not one of its actions ({', '.join(sorted(self._refs))})"
            ) from None

    def _arg_tuple(self, action, args):
        ai = self._actions_info.get(action)
        params = ai.params if ai else ()
        names = {p.name for p in params}
        for a in args:
            if a not in names:
                raise InvalidEntry(f"table {self.name}: action {action} has no parameter {a!r}")
        out = []
        for p in params:
            if p.name not in args:
                raise InvalidEntry(f"table {self.name}: action {action} needs parameter {p.name!r}")
            v = args[p.name]
            if not isinstance(v, int) or v < 0 or v >> p.bitwidth:
                raise InvalidEntry(
                    f"table {self.name}: value {v!r} of parameter {p.name!r} of action {action} "
                    f"does not fit bit<{p.bitwidth}>"
                )
            out.append(v)
        return tuple(out)

    def _named_args(self, action, args):
        ai = self._actions_info.get(action)
        return {p.name: v for p, v in zip(ai.params if ai else (), args, strict=False)}

    def _check_action(self, entry):
        if self.info.implementation is not None:
            return self._check_indirect(entry)
        action = self._action_name(entry.action)
        if self._refs[action].scope == "DEFAULT_ONLY":
            raise InvalidEntry(f"table {self.name}: action {action} is @defaultonly and cannot be used in an entry")
        return action, self._arg_tuple(action, entry.args or {})

    def _check_indirect(self, entry):
        """(MEMBER, id) or (GROUP, id) for an entry of a table with an action profile/selector."""
        profile = self.profile
        if (entry.member is None) == (entry.group is None):
            raise InvalidEntry(
                f"table {self.name} is implemented by action profile {profile.name}: an entry gives a member "
                f"or a group (not an action)"
            )
        if entry.member is not None:
            if entry.member not in profile.members:
                raise InvalidEntry(f"table {self.name}: action profile {profile.name} has no member {entry.member}")
            return MEMBER, entry.member
        if not profile.info.with_selector:
            raise InvalidEntry(f"table {self.name}: action profile {profile.name} has no selector: no groups")
        if entry.group not in profile.groups:
            raise InvalidEntry(f"table {self.name}: action profile {profile.name} has no group {entry.group}")
        return GROUP, entry.group

    def check_member_action(self, action, args):
        """(action name, args tuple) of an action profile member, checked against this table's actions."""
        action = self._action_name(action)
        if self._refs[action].scope == "DEFAULT_ONLY":
            raise InvalidEntry(f"table {self.name}: action {action} is @defaultonly and cannot be used in a member")
        return action, self._arg_tuple(action, args or {})

    def _key_of(self, entry):
        keys = {k.name: k for k in self.info.keys}
        for name in entry.matches:
            if name not in keys:
                raise InvalidEntry(
                    f"table {self.name}: no match field named {name!r} (fields: {', '.join(keys) or 'none'})"
                )
        norm = []
        for k in self.info.keys:
            m = entry.matches.get(k.name)
            w = k.bitwidth
            full = _mask(w)
            kind = k.match_kind
            if m is None:
                if kind == "exact":
                    raise InvalidEntry(f"table {self.name}: exact match field {k.name!r} needs a value")
                norm.append((kind, 0, 0) if kind != "range" else ("range", 0, full))
                continue
            if not isinstance(m, _KIND_CLASS[kind]):
                raise InvalidEntry(f"table {self.name}: match field {k.name!r} is {kind}, got {type(m).__name__}")

            def fit(v, what, full=full, k=k, w=w):
                if not isinstance(v, int) or v < 0 or v > full:
                    raise InvalidEntry(
                        f"table {self.name}: {what} {v!r} of match field {k.name!r} does not fit bit<{w}>"
                    )
                return v

            if kind == "exact":
                norm.append(("exact", fit(m.value, "value")))
            elif kind == "optional":
                norm.append(("optional", fit(m.value, "value"), full))
            elif kind == "lpm":
                v = fit(m.value, "value")
                if not isinstance(m.prefix_len, int) or not 0 <= m.prefix_len <= w:
                    raise InvalidEntry(
                        f"table {self.name}: prefix length {m.prefix_len!r} of match field {k.name!r} is outside 0..{w}"
                    )
                mask = full ^ _mask(w - m.prefix_len)
                if v & ~mask:
                    raise InvalidEntry(
                        f"table {self.name}: value 0x{v:x} of lpm field {k.name!r} has bits set "
                        f"beyond its /{m.prefix_len} prefix"
                    )
                norm.append(("lpm", v, m.prefix_len))
            elif kind == "ternary":
                v, mask = fit(m.value, "value"), fit(m.mask, "mask")
                if v & ~mask:
                    raise InvalidEntry(
                        f"table {self.name}: value 0x{v:x} of ternary field {k.name!r} has bits "
                        f"outside its mask 0x{mask:x}"
                    )
                norm.append(("ternary", v, mask))
            else:
                lo, hi = fit(m.low, "low bound"), fit(m.high, "high bound")
                if lo > hi:
                    raise InvalidEntry(f"table {self.name}: range {lo}..{hi} of match field {k.name!r} is empty")
                norm.append(("range", lo, hi))
        if self._needs_priority:
            if not isinstance(entry.priority, int) or entry.priority <= 0:
                raise InvalidEntry(
                    f"table {self.name} has ternary/range/optional keys: an entry needs a priority > 0 (higher wins)"
                )
            prio = entry.priority
        else:
            if entry.priority not in (None, 0):
                raise InvalidEntry(f"table {self.name} has only exact/lpm keys: entries take no priority")
            prio = None
        return tuple(norm), prio

    def _from_const(self, ce):
        matches = {}
        for k, m in zip(self.info.keys, ce.matches, strict=False):
            kind = m[0]
            if kind == "dontcare":
                continue
            if kind == "exact":
                matches[k.name] = Exact(m[1])
            elif kind == "lpm":
                matches[k.name] = Lpm(m[1], m[2])
            elif kind == "ternary":
                matches[k.name] = Ternary(m[1], m[2])
            elif kind == "range":
                matches[k.name] = Range(m[1], m[2])
            else:
                matches[k.name] = Optional(m[1])
        ai = self._actions_info.get(ce.action)
        args = {p.name: v for p, v in zip(ai.params if ai else (), ce.args, strict=False)}
        return TableEntry(matches, ce.action, args, ce.priority)


class TableState(TableSchema):
    def __init__(self, info, actions_info, state=None):
        super().__init__(info, actions_info)
        self.state = state  # the pipeline's per-packet state (packet_length)
        self._fns = {}
        self._entries: dict[tuple, TableEntry] = {}
        self._index = None
        self._counted = info.direct_counter is not None
        kinds = [k.match_kind for k in info.keys]
        self._single = len(kinds) == 1
        if not kinds:
            self._mode = "none"
        elif all(k == "exact" for k in kinds):
            self._mode = "exact"
        elif not self._needs_priority:
            self._mode = "lpm"
        else:
            self._mode = "scan"
        self._default = (info.default_action, tuple(info.default_args))
        self._default_result = None
        self._selector_bits = sum(k.bitwidth for k in info.selector_keys)
        self.direct_meter = None  # the MeterState of `meters = ...` (set by the Runtime): entries' cells
        for ce in info.const_entries:
            self._insert(self._from_const(ce), check_const=False)

    # ------------------------------------------------------------------ binding to generated code
    def bind(self, fns):
        """Called by the generated module: action name -> Python function."""
        self._fns = fns
        self._invalidate()

    def _invalidate(self):
        """Entries, the default action or the action functions changed: the next lookup rebuilds the
        index and the lookup function specialised for it."""
        self._index = None
        self._default_result = None
        self.__dict__.pop("lookup", None)

    # ------------------------------------------------------------------ control API
    @property
    def default(self):
        return self._default[0], self._named_args(self._default[0], self._default[1])

    def set_default(self, action, args=None):
        self._default = self.check_default(action, args)
        self._invalidate()

    def reset_default(self):
        self._default = (self.info.default_action, tuple(self.info.default_args))
        self._invalidate()

    def insert(self, entry: TableEntry):
        self._check_mutable()
        self._insert(entry, check_const=True)

    def modify(self, entry: TableEntry):
        self._check_mutable()
        key = self._key_of(entry)
        old = self._entries.get(key)
        if old is None:
            raise EntryNotFound(f"table {self.name}: no entry with this key to modify")
        action, args = self._check_action(entry)
        if action in (MEMBER, GROUP):
            old.member, old.group = (args, None) if action == MEMBER else (None, args)
        else:
            old.action, old.args = action, self._named_args(action, args)
        self._invalidate()

    def delete(self, entry: TableEntry):
        self._check_mutable()
        key = self._key_of(entry)
        if key not in self._entries:
            raise EntryNotFound(f"table {self.name}: no entry with this key to delete")
        self._forget_meter_cell(self._entries.pop(key))
        self._invalidate()

    def entries(self):
        return [
            TableEntry(dict(e.matches), e.action, dict(e.args), e.priority, e.packets, e.bytes, e.member, e.group)
            for e in self._entries.values()
        ]

    def find(self, entry: TableEntry):
        """The stored entry with entry's key (its counters are live), or None."""
        return self._entries.get(self._key_of(entry))

    def clear(self):
        self._check_mutable()
        for entry in self._entries.values():
            self._forget_meter_cell(entry)
        self._entries.clear()
        self._invalidate()

    def _forget_meter_cell(self, entry):
        """A deleted entry's direct meter cell goes with it (cells are keyed by the stored entry's id,
        which a later entry may get)."""
        if self.direct_meter is not None:
            self.direct_meter.clear_config(id(entry))

    def __len__(self):
        return len(self._entries)

    def _insert(self, entry, check_const):
        key = self._key_of(entry)
        action, args = self._check_action(entry)
        if key in self._entries:
            raise EntryExists(f"table {self.name}: an entry with this key already exists")
        if len(self._entries) >= self.info.size and check_const:
            raise TableFull(f"table {self.name} is full ({self.info.size} entries)")
        if action == MEMBER:
            stored = TableEntry(dict(entry.matches), "", {}, key[1], 0, 0, member=args)
        elif action == GROUP:
            stored = TableEntry(dict(entry.matches), "", {}, key[1], 0, 0, group=args)
        else:
            stored = TableEntry(dict(entry.matches), action, self._named_args(action, args), key[1], 0, 0)
        self._entries[key] = stored
        self._invalidate()

    # ------------------------------------------------------------------ match engine
    def _result(self, action, args, hit, entry):
        return Result(self._fns[action], args, hit, action, entry)

    def _build(self):
        if self._default_result is None:
            self._default_result = self._result(self._default[0], self._default[1], False, None)
        mode = self._mode
        items = []
        for (norm, prio), e in self._entries.items():
            if self.profile is not None:
                items.append((norm, prio, self._indirect_result(e)))
                continue
            ai = self._actions_info.get(e.action)
            args = tuple(e.args[p.name] for p in (ai.params if ai else ()))
            items.append((norm, prio, self._result(e.action, args, True, e)))
        if mode == "exact":
            if self._single:
                idx = {norm[0][1]: r for norm, _, r in items}
            else:
                idx = {tuple(m[1] for m in norm): r for norm, _, r in items}
        elif mode == "lpm":
            widths = [k.bitwidth for k in self.info.keys]
            li = [k.match_kind for k in self.info.keys].index("lpm")
            by_len = {}
            for norm, _, r in items:
                plen = norm[li][2]
                key = tuple(m[1] for m in norm)
                by_len.setdefault(plen, {})[key if not self._single else key[0]] = r
            w = widths[li]
            idx = [(_mask(w) ^ _mask(w - plen), li, d) for plen, d in sorted(by_len.items(), reverse=True)]
        elif mode == "scan":
            rows = []
            for order, (norm, prio, r) in enumerate(items):
                checks = []
                for m in norm:
                    if m[0] == "exact":
                        checks.append((0, m[1], None))
                    elif m[0] == "range":
                        checks.append((2, m[1], m[2]))
                    elif m[0] == "lpm":
                        w = None
                        checks.append((1, m[1], None, m[2]))
                    else:
                        checks.append((1, m[1], m[2]))
                rows.append((-prio, order, checks, r))
            rows.sort(key=lambda x: (x[0], x[1]))
            widths = [k.bitwidth for k in self.info.keys]
            fixed = []
            for _, _, checks, r in rows:
                cc = []
                for i, c in enumerate(checks):
                    if len(c) == 4:  # lpm inside a priority table: a ternary with a prefix mask
                        wi = widths[i]
                        cc.append((1, c[1], _mask(wi) ^ _mask(wi - c[3])))
                    else:
                        cc.append(c)
                fixed.append((cc, r))
            idx = fixed
        else:
            idx = None
        self._index = idx

    def _indirect_result(self, e):
        """A member entry's result; for a group entry, a result without function whose args are the
        results of the group's members in selection order (`select` picks one per packet)."""
        profile = self.profile
        if e.member is not None:
            action, args = profile.members[e.member]
            return self._result(action, args, True, e)
        members = [self._result(*profile.members[m], True, e) for m in profile.selection_order(e.group)]
        return Result(None, members, True, None, e)

    def select(self, r, selector_value):
        """The member of a group entry's result that the selector picks for these selector key bits (an
        empty group: the default action, as a miss)."""
        members = r.args
        if not members:
            return self._default_result
        h = self.profile.hash(selector_value, self._selector_bits)
        return members[h % len(members)]

    def lookup(self, key):
        """The result for `key` (an int, or a tuple of ints for several keys; None without keys): the
        hit entry's action or the default. This generic version builds the index and installs, as this
        instance's `lookup`, a function specialised for the table's match kinds and direct counter."""
        if self._index is None:
            self._build()
        self.lookup = self._specialised()
        return self.lookup(key)

    def _specialised(self):
        idx, mode, default = self._index, self._mode, self._default_result
        if mode == "exact":
            find = idx.get
        elif mode == "lpm" and self._single:

            def find(key):
                for mask, _, d in idx:
                    r = d.get(key & mask)
                    if r is not None:
                        return r
                return None
        elif mode == "lpm":

            def find(key):
                for mask, li, d in idx:
                    r = d.get(key[:li] + (key[li] & mask,) + key[li + 1 :])
                    if r is not None:
                        return r
                return None
        elif mode == "scan":
            single = self._single

            def find(key):
                keys = (key,) if single else key
                for checks, r in idx:
                    for (kind, a, b), k in zip(checks, keys, strict=True):
                        if kind == 0:
                            if k != a:
                                break
                        elif kind == 1:
                            if (k & b) != a:
                                break
                        elif not (a <= k <= b):
                            break
                    else:
                        return r
                return None
        else:
            return lambda key: default
        if not self._counted:

            def lookup(key):
                r = find(key)
                return default if r is None else r

            return lookup
        state = self.state

        def counted_lookup(key):
            r = find(key)
            if r is None:
                return default
            e = r.entry
            e.packets += 1
            e.bytes += state.sm.packet_length
            return r

        return counted_lookup
