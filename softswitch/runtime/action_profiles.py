"""Action profiles and action selectors (v1model `action_profile`, `action_selector`), as BMv2 runs them.

A table with `implementation = ap` holds no actions of its own: its entries point at a member of the
profile (an action with its data) or, for a selector, at a group of members. For a group entry the
selector hashes the table's `selector` keys (their bits concatenated in key order, MSB first, zero bits
appended up to a whole byte, as every v1model hash input) with its algorithm, and runs member number
`hash % n` of the group's n members ordered by handle, as BMv2 does (it keeps a group's members sorted
by member handle and picks the (hash mod size)-th; the selector's outputWidth is not used). A member's
handle is BMv2's: the lowest handle no other member holds when it is added (its P4Runtime or Switch API
id is the control plane's name for it). A member of weight w counts w times (BMv2 itself has no
weights). A group without members runs the table's default action, as a miss.
"""

from __future__ import annotations

from .support import HASHES, bits_to_bytes
from .tables import EntryExists, EntryNotFound, InUse, InvalidEntry, TableFull

# The member places (sum of weights) a group may have when the selector has no @max_group_size: every
# place is an entry of the selection list here and in native memory, so an unbounded weight (1e9) would
# build a list that size. (p4c's v1model P4Info leaves max_group_size 0 then; its Tofino BF-RT handler
# uses 120. This limit is ours, high enough for any weighted ECMP the lab writes.)
GROUP_SIZE_WITHOUT_ANNOTATION = 4096


class ActionProfileState:
    """The members and groups of one action profile/selector, shared by the tables it implements."""

    def __init__(self, info, tables: list) -> None:
        self.info = info
        self.name = info.name
        self.tables = tables  # the TableStates it implements (their caches are invalidated on changes)
        self.members: dict[int, tuple[str, tuple[int, ...]]] = {}  # member id -> (action, data)
        self.groups: dict[int, dict[int, int]] = {}  # group id -> {member id: weight}
        self.group_max_sizes: dict[int, int] = {}  # group id -> its max_size (P4Runtime's; 0: none)
        self.handles: dict[int, int] = {}  # member id -> BMv2's member handle (the order within groups)
        self._hash = HASHES[info.algorithm] if info.with_selector else None
        for table in tables:
            table.profile = self

    # ------------------------------------------------------------------ members
    def add_member(self, member_id: int, action: str, args: dict | None = None) -> None:
        if member_id in self.members:
            raise EntryExists(f"action profile {self.name}: member {member_id} already exists")
        if len(self.members) >= self.info.size:
            raise TableFull(f"action profile {self.name} is full ({self.info.size} members)")
        checked = self._checked(member_id, action, args)
        self._member_written(member_id, *checked)
        self.members[member_id] = checked
        taken = set(self.handles.values())
        self.handles[member_id] = next(h for h in range(len(taken) + 1) if h not in taken)

    def modify_member(self, member_id: int, action: str, args: dict | None = None) -> None:
        if member_id not in self.members:
            raise EntryNotFound(f"action profile {self.name}: no member {member_id}")
        checked = self._checked(member_id, action, args)
        self._member_written(member_id, *checked)
        self.members[member_id] = checked

    def delete_member(self, member_id: int) -> None:
        if member_id not in self.members:
            raise EntryNotFound(f"action profile {self.name}: no member {member_id}")
        groups = sorted(g for g, members in self.groups.items() if member_id in members)
        if groups:
            raise InUse(f"action profile {self.name}: member {member_id} is in group(s) {groups}")
        self._check_unreferenced("member", member_id)
        self._member_deleted(member_id)
        del self.members[member_id]
        del self.handles[member_id]

    def member(self, member_id: int) -> tuple[str, dict]:
        """(action, {param: value}) of a member."""
        if member_id not in self.members:
            raise EntryNotFound(f"action profile {self.name}: no member {member_id}")
        action, data = self.members[member_id]
        return action, self.tables[0]._named_args(action, data)

    def _checked(self, member_id: int, action: str, args: dict | None) -> tuple[str, tuple[int, ...]]:
        if not isinstance(member_id, int):  # (negative ids: the P4Runtime server's one-shot members)
            raise InvalidEntry(f"action profile {self.name}: member id {member_id!r} is not an int")
        checked = [table.check_member_action(action, args) for table in self.tables]
        return checked[0]

    # ------------------------------------------------------------------ groups
    def set_group(
        self, group_id: int, members: dict[int, int], create: bool = False, max_size: int | None = None
    ) -> None:
        """Creates (create=True) or replaces a group: {member id: weight}. max_size (P4Runtime's): the most
        member places the group may have (0: no bound of its own). Only the create sets it: the P4Runtime
        specification requires a MODIFY to give the same value (INVALID_ARGUMENT otherwise); None on a
        replace (the Switch API's callers) keeps the group's own."""
        if not self.info.with_selector:
            raise InvalidEntry(f"action profile {self.name} has no selector: it has no groups")
        if create and group_id in self.groups:
            raise EntryExists(f"action profile {self.name}: group {group_id} already exists")
        if not create and group_id not in self.groups:
            raise EntryNotFound(f"action profile {self.name}: no group {group_id}")
        if not isinstance(group_id, int):
            raise InvalidEntry(f"action profile {self.name}: group id {group_id!r} is not an int")
        for member_id, weight in members.items():
            if member_id not in self.members:
                raise InvalidEntry(f"action profile {self.name}: group {group_id}: no member {member_id}")
            if not isinstance(weight, int) or weight < 1:
                raise InvalidEntry(
                    f"action profile {self.name}: group {group_id}: weight {weight!r} of member {member_id} is not >= 1"
                )
        if not create:
            own = self.group_max_sizes[group_id]
            if max_size is not None and max_size != own:
                raise InvalidEntry(
                    f"action profile {self.name}: group {group_id}: max_size {max_size} differs from the {own} "
                    "it was inserted with (only an INSERT sets a group's max_size)"
                )
            max_size = own
        elif max_size is None:
            max_size = 0
        elif not isinstance(max_size, int) or max_size < 0:
            raise InvalidEntry(f"action profile {self.name}: group {group_id}: max_size {max_size!r} is not >= 0")
        if self.info.max_group_size and max_size > self.info.max_group_size:
            raise InvalidEntry(
                f"action profile {self.name}: group {group_id}: max_size {max_size} exceeds "
                f"@max_group_size({self.info.max_group_size})"
            )
        if not self.info.max_group_size and max_size > GROUP_SIZE_WITHOUT_ANNOTATION:  # spec: at creation
            raise TableFull(
                f"action profile {self.name}: group {group_id}: max_size {max_size} is more than this switch "
                f"supports for a selector without @max_group_size ({GROUP_SIZE_WITHOUT_ANNOTATION})"
            )
        limit, what = max_size, "its max_size"
        if not limit:
            limit, what = self.info.max_group_size, "@max_group_size"
        if not limit:
            limit, what = GROUP_SIZE_WITHOUT_ANNOTATION, "the limit for a selector without @max_group_size"
        places = sum(members.values())
        if places > limit:
            raise TableFull(
                f"action profile {self.name}: group {group_id} has {places} member places, more than {what} ({limit})"
            )
        self._group_written(group_id, self._selection_order(members))
        self.groups[group_id] = dict(members)
        self.group_max_sizes[group_id] = max_size

    def delete_group(self, group_id: int) -> None:
        if group_id not in self.groups:
            raise EntryNotFound(f"action profile {self.name}: no group {group_id}")
        self._check_unreferenced("group", group_id)
        self._group_deleted(group_id)
        del self.groups[group_id]
        del self.group_max_sizes[group_id]

    def selection_order(self, group_id: int) -> list[int]:
        """The member ids a group's hash indexes: by handle, each repeated by its weight."""
        return self._selection_order(self.groups[group_id])

    def _selection_order(self, members: dict[int, int]) -> list[int]:
        return [m for m in sorted(members, key=self.handles.__getitem__) for _ in range(members[m])]

    def hash(self, value: int, nbits: int) -> int:
        """The selector's hash of the selector keys' concatenated bits."""
        assert self._hash is not None
        return self._hash(bits_to_bytes(value, nbits))

    def clear(self) -> None:
        """Removes every group and member (the tables' entries must be gone first)."""
        for table in self.tables:
            if len(table):
                raise InUse(f"action profile {self.name}: table {table.name} still has entries")
        for group_id in list(self.groups):
            self._group_deleted(group_id)
            del self.groups[group_id]
        self.group_max_sizes.clear()
        for member_id in list(self.members):
            self._member_deleted(member_id)
            del self.members[member_id]
        self.handles.clear()

    # ------------------------------------------------------------------ helpers
    def _check_unreferenced(self, kind: str, ident: int) -> None:
        for table in self.tables:
            for entry in table.entries():
                if getattr(entry, kind) == ident:
                    raise InUse(f"action profile {self.name}: {kind} {ident} is used by an entry of table {table.name}")

    # ------------------------------------------------------------------ what the back end keeps of them
    # Called once a change is checked, before this object records it (a back end that refuses it raises).
    # The Python back end's tables read members and groups here at lookup: their caches are dropped.
    def _member_written(self, member_id: int, action: str, data: tuple[int, ...]) -> None:
        self._changed()

    def _member_deleted(self, member_id: int) -> None:
        self._changed()

    def _group_written(self, group_id: int, order: list[int]) -> None:
        """`order`: the group's member ids in selection order."""
        self._changed()

    def _group_deleted(self, group_id: int) -> None:
        self._changed()

    def _changed(self) -> None:
        for table in self.tables:
            table._invalidate()
