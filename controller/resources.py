"""Switch and network resources that jobs share: aggregation slots, job ids/indices, multicast
group ids and reserved link bandwidth.

``Resources`` is their one owner: planning takes through ``open_job``/``take_slots``/``take_group``/
``reserve`` (under a ``JobGrant``), a failed plan is rolled back with ``roll_back`` and a finished job
released with ``release``; nothing else writes the pools."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from controller.errors import ResourceError
from controller.limits import MAX_GROUP_ID, MAX_JOB_ID, MAX_JOB_INDEX

if TYPE_CHECKING:
    from controller.plan import JobPlan
    from controller.topology import Topology


SlotOwner = tuple[int, int]  # (job id, tree id)


class SlotAllocator:
    """First-fit ranges of slot entries per switch. A job's range at a switch holds pool_size * 2
    entries (the two shadow sets); a switch with no room simply does not aggregate for the job."""

    def __init__(self, capacities: dict[str, int]):
        self.capacity = dict(capacities)
        self._ranges: dict[str, list[tuple[int, int, SlotOwner]]] = {s: [] for s in capacities}

    def allocate(self, switch: str, size: int, owner: SlotOwner) -> int | None:
        """Base of a free range of ``size`` entries at ``switch`` (first fit), or None when there is no room.

        Examples
        --------
        >>> slots = SlotAllocator({"s1": 256})
        >>> slots.allocate("s1", 128, (1, 0)), slots.allocate("s1", 128, (2, 0)), slots.allocate("s1", 1, (3, 0))
        (0, 128, None)
        """
        ranges = self._ranges.setdefault(switch, [])
        start = 0
        for i, (base, n, _) in enumerate(ranges):
            if base - start >= size:
                ranges.insert(i, (start, size, owner))
                return start
            start = base + n
        if self.capacity.get(switch, 0) - start >= size:
            ranges.append((start, size, owner))
            return start
        return None

    def claim(self, switch: str, base: int, size: int, owner: SlotOwner) -> list[SlotOwner]:
        """Take the entries from ``base`` to ``base + size`` at ``switch`` (a running job's, read off the switch)
        that are free and within its capacity; return the owners of those that are not (sorted).

        Examples
        --------
        >>> slots = SlotAllocator({"s1": 256})
        >>> slots.claim("s1", 64, 64, (5, 0)); slots.allocate("s1", 64, (6, 0)), slots.allocate("s1", 64, (6, 1))
        []
        (0, 128)
        >>> slots.claim("s1", 100, 200, (7, 0)), slots.used("s1"), slots.free("s1")
        ([(5, 0), (6, 1)], 256, 0)
        """
        end = min(base + size, self.capacity.get(switch, 0))
        ranges = self._ranges.setdefault(switch, [])
        shared: set[SlotOwner] = set()
        start = base
        for b, n, other in list(ranges):  # sorted by base, none overlapping
            if b + n <= start:
                continue
            if b >= end:
                break
            if b > start:
                ranges.append((start, b - start, owner))
            shared.add(other)
            start = b + n
        if start < end:
            ranges.append((start, end - start, owner))
        ranges.sort(key=lambda r: r[0])
        return sorted(shared)

    def owners(self) -> list[SlotOwner]:
        """Every owner of a range, over all switches, sorted and without repeats."""
        return sorted({r[2] for ranges in self._ranges.values() for r in ranges})

    def free_owner(self, predicate: Callable[[SlotOwner], bool]) -> int:
        """Free every range whose owner satisfies ``predicate``; return how many were freed.

        Examples
        --------
        >>> slots = SlotAllocator({"s1": 256})
        >>> _ = slots.allocate("s1", 128, (1, 0))
        >>> slots.free_owner(lambda owner: owner[0] == 1), slots.used("s1")
        (1, 0)
        """
        freed = 0
        for switch, ranges in self._ranges.items():
            keep = [r for r in ranges if not predicate(r[2])]
            freed += len(ranges) - len(keep)
            self._ranges[switch] = keep
        return freed

    def used(self, switch: str) -> int:
        """Slot entries taken at ``switch``."""
        return sum(n for _, n, _ in self._ranges.get(switch, []))

    def free(self, switch: str) -> int:
        """Slot entries still free at ``switch`` (0 for a switch it does not know)."""
        return self.capacity.get(switch, 0) - self.used(switch)


class IdPool:
    """Free integer ids in [low, high]: the lowest free one, or with ``rotate`` the first free one after
    the id taken last (wrapping around), so a freed id is not handed out again until every other id has
    been. Job ids rotate: a switch's slot cells remember their owner as (job id, sequence number) and a new
    job's agents start again at sequence 1, so a job that reused the id of the job before it on the same
    cells would find its chunks "older" than the cells' owner and dropped as stale."""

    def __init__(self, low: int, high: int, what: str, rotate: bool = False):
        self.low, self.high, self.what = low, high, what
        self.rotate = rotate
        self._used: set[int] = set()
        self._last = high  # the id taken last: a rotating pool starts at low

    def take(self, wanted: int | None = None) -> int:
        """Take ``wanted``, or the lowest free id.

        Raises
        ------
        ResourceError
            ``wanted`` is out of range or taken, or no id is left.

        Examples
        --------
        >>> ids = IdPool(1, 3, "job id")
        >>> ids.take(), ids.take(3), ids.take()
        (1, 3, 2)
        >>> ids.take()
        Traceback (most recent call last):
        ...
        controller.errors.ResourceError: no free job id left (1..3 all in use)
        >>> jobs = IdPool(1, 3, "job id", rotate=True)
        >>> first = jobs.take()
        >>> jobs.give(first)
        >>> first, jobs.take(), jobs.take(), jobs.take()
        (1, 2, 3, 1)
        """
        if wanted is not None:
            if not self.low <= wanted <= self.high:
                raise ResourceError(f"{self.what} {wanted} outside {self.low}..{self.high}")
            if wanted in self._used:
                raise ResourceError(f"{self.what} {wanted} is already in use")
            self._used.add(wanted)
            self._last = wanted
            return wanted
        span = self.high - self.low + 1
        start = (self._last + 1 - self.low) % span if self.rotate else 0
        for step in range(span):
            i = self.low + (start + step) % span
            if i not in self._used:
                self._used.add(i)
                self._last = i
                return i
        raise ResourceError(f"no free {self.what} left ({self.low}..{self.high} all in use)")

    @property
    def last(self) -> int:
        """The id taken last (a rotating pool's next is the first free one after it): what a job service's
        state file keeps, so a restarted controller continues the rotation (``continue_after``)."""
        return self._last

    def give(self, value: int) -> None:
        """Return ``value`` to the pool (nothing happens if it was not taken)."""
        self._used.discard(value)

    def continue_after(self, seen: Iterable[int]) -> None:
        """Carry on a rotation that handed out ``seen`` before (a restarted controller's ids that the switches
        still hold): the next id is the first after the latest of them, which, in a rotation that may have
        wrapped around, is the one before the widest run of ids none of ``seen`` holds. Ids outside the pool's
        range are ignored; with none left, nothing changes.

        Examples
        --------
        >>> jobs = IdPool(1, 9, "job id", rotate=True)
        >>> jobs.continue_after([2, 3]); jobs.take()
        4
        >>> jobs = IdPool(1, 9, "job id", rotate=True)
        >>> jobs.continue_after([9, 1, 0]); jobs.take()  # wrapped around after 9; 0 is no job id
        2
        """
        ids = sorted({i for i in seen if self.low <= i <= self.high})
        if not ids:
            return
        span = self.high - self.low + 1

        def free_after(k: int) -> int:
            return (ids[(k + 1) % len(ids)] - ids[k] - 1) % span

        self._last = ids[max(range(len(ids)), key=free_after)]


@dataclass
class JobGrant:
    """What one job holds while it is planned and after: its id, counter row and multicast groups.

    Slots are held under the owner ``(job_id, tree_id)`` and reserved bandwidth under the job id, so
    the grant needs no list of them.
    """

    job_id: int
    job_index: int
    groups: list[int] = field(default_factory=list)


@dataclass
class AdoptedJob:
    """A job found running on the switches that this controller did not plan (it ran before a restart):
    what its entries hold, read back from the switches (``Installer.jobs_on_switches``). It cannot be
    re-planned; its slots, counter rows and multicast groups stay taken until it is released."""

    job_id: int
    job_indices: set[int] = field(default_factory=set)
    slots: dict[tuple[str, int], tuple[int, int]] = field(default_factory=dict)  # (switch, tree) -> (base, size)
    groups: set[int] = field(default_factory=set)
    switches: set[str] = field(default_factory=set)  # where it has entries
    trees: set[int] = field(default_factory=set)


@dataclass
class Resources:
    """Everything the planner allocates for a job, shared by all jobs on one topology."""

    slots: SlotAllocator
    job_ids: IdPool = field(default_factory=lambda: IdPool(1, MAX_JOB_ID, "job id", rotate=True))
    job_indices: IdPool = field(default_factory=lambda: IdPool(0, MAX_JOB_INDEX, "job index"))
    groups: IdPool = field(default_factory=lambda: IdPool(1, MAX_GROUP_ID, "multicast group id"))
    reservations: dict[int, dict[int, float]] = field(default_factory=dict)  # job -> link id -> Mbit/s
    adopted: dict[int, AdoptedJob] = field(default_factory=dict)  # jobs found running on the switches
    lock: threading.RLock = field(default_factory=threading.RLock)

    @classmethod
    def for_topology(cls, topo: Topology) -> Resources:
        """Empty resources for the switches of ``topo`` (each with its slot capacity).

        Examples
        --------
        >>> from controller.generators import star
        >>> Resources.for_topology(star(2)).slots.free("s1")
        4096
        """
        return cls(SlotAllocator({s.name: s.slots for s in topo.switches}))

    # -- taking ---------------------------------------------------------------------------------------
    def open_job(self, job_id: int | None = None) -> JobGrant:
        """Take a job id (``job_id``, or the lowest free one) and a counter row for a new job.

        Returns
        -------
        JobGrant
            What the job holds; planning adds its multicast groups.

        Raises
        ------
        ResourceError
            The id is taken or out of range, or no id or counter row is left (nothing is kept).

        Examples
        --------
        >>> from controller.generators import star
        >>> resources = Resources.for_topology(star(2))
        >>> grant = resources.open_job()
        >>> grant.job_id, grant.job_index
        (1, 0)
        >>> resources.roll_back(grant)
        >>> resources.open_job(job_id=7).job_id
        7
        """
        with self.lock:
            taken = self.job_ids.take(job_id)
            try:
                return JobGrant(taken, self.job_indices.take())
            except ResourceError:
                self.job_ids.give(taken)
                raise

    def take_slots(self, grant: JobGrant, switch: str, tree_id: int, size: int) -> int | None:
        """Base of ``size`` free slot entries at ``switch`` for one tree of the job, or None (no room)."""
        with self.lock:
            return self.slots.allocate(switch, size, (grant.job_id, tree_id))

    def take_group(self, grant: JobGrant) -> int:
        """A multicast group id for the job (raises ResourceError when none is left)."""
        with self.lock:
            group = self.groups.take()
            grant.groups.append(group)
            return group

    def reserve(self, grant: JobGrant, per_link: dict[int, float]) -> None:
        """Reserve bandwidth for the job: link id -> Mbit/s (what the multi-tree planner gave its trees),
        in place of what it reserved before (a re-plan's trees replace the old ones')."""
        with self.lock:
            self.reservations[grant.job_id] = dict(per_link)

    def reservation(self, job_id: int) -> dict[int, float] | None:
        """What job ``job_id`` reserves (link id -> Mbit/s), or None: kept by a re-plan to put back if
        it fails (``restore_reservation``)."""
        with self.lock:
            per_link = self.reservations.get(job_id)
            return None if per_link is None else dict(per_link)

    def restore_reservation(self, job_id: int, per_link: dict[int, float] | None) -> None:
        """Put back what ``reservation`` returned for the job (None: it reserved nothing)."""
        with self.lock:
            if per_link is None:
                self.reservations.pop(job_id, None)
            else:
                self.reservations[job_id] = dict(per_link)

    def adopt(self, job: AdoptedJob) -> list[str]:
        """Take what a job running on the switches holds (its id, counter rows, slots and groups), so no new
        job is planned onto them; return what of it another adopted job holds too (both jobs' sums are at risk:
        the switches' state was not planned by one controller), having taken the rest.

        Examples
        --------
        >>> from controller.generators import star
        >>> resources = Resources.for_topology(star(2))
        >>> resources.adopt(AdoptedJob(3, {0}, {("s1", 0): (0, 128)}, {1}))
        []
        >>> resources.adopt(AdoptedJob(5, {0}, {("s1", 0): (64, 128)}, {2}))
        ['job index 0 is already in use', "s1's slots 64..191 overlap job 3's"]
        >>> grant = resources.open_job()
        >>> grant.job_id, grant.job_index, resources.take_slots(grant, "s1", 0, 128), resources.take_group(grant)
        (6, 1, 192, 3)
        >>> resources.release_adopted(3); resources.slots.owners(), resources.job_indices.take()
        ([(5, 0), (6, 0)], 2)
        """
        with self.lock:
            shared: list[str] = []
            self.adopted[job.job_id] = job
            for pool, ids in self._adopted_ids(job):
                for i in sorted(ids):
                    try:
                        pool.take(i)
                    except ResourceError as exc:
                        shared.append(str(exc))
            for (switch, tree), (base, size) in sorted(job.slots.items()):
                shared += self._claim(switch, base, size, (job.job_id, tree))
            return shared

    def _claim(self, switch: str, base: int, size: int, owner: SlotOwner) -> list[str]:
        """Claim a running job's slot range (``SlotAllocator.claim``); what it overlaps, as a message."""
        owners = self.slots.claim(switch, base, size, owner)
        if not owners:
            return []
        jobs = ", ".join(f"job {j}'s" for j in sorted({o[0] for o in owners}))
        return [f"{switch}'s slots {base}..{base + size - 1} overlap {jobs}"]

    def restore(self, plan: JobPlan, reservation: dict[int, float], stray: AdoptedJob | None = None) -> list[str]:
        """Take what ``plan`` holds (a job a restarted controller takes back from its state file, the latest
        version of its plan): its id, counter row, result groups, its trees' slot ranges and its reserved
        bandwidth, and the slots and groups of ``stray`` (trees of the job the switches hold that its plan
        has not: ``free_trees`` gives them back); return what of it another job already holds (both keep it),
        having taken the rest.

        Examples
        --------
        >>> from controller.generators import star
        >>> from controller.planner import plan_job
        >>> plan = plan_job(star(2), ["h1", "h2"], ["h3"])
        >>> resources = Resources.for_topology(star(2))
        >>> resources.restore(plan, {}), resources.slots.owners(), resources.open_job().job_index
        ([], [(1, 0)], 1)
        >>> resources.restore(plan, {})[0]
        'job id 1 is already in use'
        """
        with self.lock:
            shared: list[str] = []
            groups = {c.result_group for c in plan.switches if c.result_group} | (stray.groups if stray else set())
            for pool, ids in (
                (self.job_ids, {plan.job_id}),
                (self.job_indices, {plan.job_index}),
                (self.groups, groups),
            ):
                for i in sorted(ids):
                    try:
                        pool.take(i)
                    except ResourceError as exc:
                        shared.append(str(exc))
            for c in plan.switches:
                if c.aggregates:
                    shared += self._claim(c.switch, c.slot_base, 2 * c.pool_size, (plan.job_id, c.tree_id))
            for (switch, tree), (base, size) in sorted(stray.slots.items() if stray else ()):
                shared += self._claim(switch, base, size, (plan.job_id, tree))
            if reservation:
                self.reservations[plan.job_id] = dict(reservation)
            return shared

    def _adopted_ids(self, job: AdoptedJob) -> tuple[tuple[IdPool, set[int]], ...]:
        return (self.job_ids, {job.job_id}), (self.job_indices, job.job_indices), (self.groups, job.groups)

    def release_adopted(self, job_id: int) -> None:
        """Give back what adopted job ``job_id`` held (it was released), but what another adopted job holds too."""
        with self.lock:
            job = self.adopted.pop(job_id, None)
            if job is None:
                return
            self.slots.free_owner(lambda owner: owner[0] == job_id)
            for other in self.adopted.values():  # the cells they share are theirs now
                for (switch, tree), (base, size) in other.slots.items():
                    self.slots.claim(switch, base, size, (other.job_id, tree))
            for (pool, ids), *others in zip(
                self._adopted_ids(job), *(self._adopted_ids(o) for o in self.adopted.values()), strict=True
            ):
                for i in ids - set().union(*(o[1] for o in others)):
                    pool.give(i)

    # -- giving back ----------------------------------------------------------------------------------
    def roll_back(self, grant: JobGrant) -> None:
        """Give back everything a job took while it was being planned (planning failed)."""
        self._release(grant.job_id, grant.job_index, grant.groups)

    def release(self, plan: JobPlan) -> None:
        """Give back what ``plan`` holds (slots, ids, counter row, groups, reserved bandwidth).

        Examples
        --------
        >>> from controller.generators import star
        >>> from controller.planner import plan_job
        >>> resources = Resources.for_topology(star(2))
        >>> plan = plan_job(star(2), ["h1", "h2"], ["h3"], resources=resources)
        >>> resources.slots.used("s1") > 0
        True
        >>> resources.release(plan)
        >>> resources.slots.used("s1")
        0
        """
        self._release(plan.job_id, plan.job_index, [c.result_group for c in plan.switches if c.result_group])

    def _release(self, job_id: int, job_index: int, groups: Iterable[int]) -> None:
        with self.lock:
            self.slots.free_owner(lambda owner: owner[0] == job_id)
            self.job_ids.give(job_id)
            self.job_indices.give(job_index)
            for gid in set(groups):
                self.groups.give(gid)
            self.reservations.pop(job_id, None)

    def free_trees(self, job_id: int, tree_ids: Iterable[int], groups: Iterable[int] = ()) -> None:
        """Give back the slots of some trees of a job (and multicast groups): a re-planned job's old trees.

        Examples
        --------
        >>> from controller.generators import star
        >>> resources = Resources.for_topology(star(2))
        >>> _ = resources.slots.allocate("s1", 128, (1, 0)), resources.slots.allocate("s1", 128, (1, 1))
        >>> resources.free_trees(1, [0]); resources.slots.owners()
        [(1, 1)]
        """
        trees = set(tree_ids)
        with self.lock:
            self.slots.free_owner(lambda owner: owner[0] == job_id and owner[1] in trees)
            for gid in set(groups):
                self.groups.give(gid)

    def reserved(self, excluding: int | None = None) -> dict[int, float]:
        """Mbit/s reserved on each link (by link id) by the multi-tree jobs planned so far, but job
        ``excluding``: a job being re-planned replaces its own reservation (``reserve``), so it must not
        count against its new trees."""
        total: dict[int, float] = {}
        for job_id, per_link in self.reservations.items():
            if job_id == excluding:
                continue
            for eid, bw in per_link.items():
                total[eid] = total.get(eid, 0.0) + bw
        return total
