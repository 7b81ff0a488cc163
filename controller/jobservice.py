"""The job service: agents register jobs and fetch plans over gRPC (controller/jobservice.proto).

``JobManager`` holds the jobs of one topology and their shared resources; it installs and removes
switch entries when it has an Installer. ``JobServicer`` exposes it over gRPC; ``JobClient`` is the
client agents and the CLI use.
"""

from __future__ import annotations

import builtins
import hmac
import queue
import secrets
import threading
from collections.abc import Callable, Collection, Iterator, Mapping
from concurrent import futures
from dataclasses import fields, replace
from pathlib import Path
from typing import Any, Protocol

import grpc

from controller import jobservice_pb2 as pb
from controller import jobservice_pb2_grpc as pb_grpc
from controller.errors import (
    ControllerError,
    JobServiceError,
    PlanError,
    ReplanError,
    StateFileError,
    UnknownJobError,
)
from controller.job_state import KEEP_RELEASED, JobState, SavedJob, StateFile
from controller.options import PlanOptions
from controller.plan import JobPlan
from controller.planner import plan_job
from controller.replan import plan_around, surviving_graph
from controller.resources import AdoptedJob, Resources
from controller.tls import SERVER_OPTIONS, TlsFiles, address_in_use, listen, presented_token, token_metadata
from controller.tls import channel as tls_channel
from controller.topology import Topology


class JobInstaller(Protocol):
    """What the job manager needs to put a job on the network and take it off: the controller's
    ``Installer``, or a network that also starts server agents (``topologies/inprocess/serve.py``)."""

    def install_job(self, plan: JobPlan) -> object:
        """Put ``plan`` on the network (switch entries, and whatever else the network needs)."""
        ...

    def remove_job(self, plan: JobPlan, skip: Collection[str] = ()) -> object:
        """Take ``plan`` off the network (leaving the switches in ``skip`` alone: dead ones)."""
        ...

    def values_per_packet(self) -> int:
        """K of the program the switches run (controller/programs.py): every plan's value_count."""
        ...

    def root_multicast(self) -> bool:
        """Whether the switches' program can send results from a tree's root (controller/programs.py)."""
        ...

    def job_ids_on_switches(self) -> set[int]:
        """The job ids the switches' job entries and slot cells still hold (``Installer.job_ids_on_switches``)."""
        ...

    def jobs_on_switches(self) -> dict[int, AdoptedJob]:
        """The jobs the switches run, read off their job entries (``Installer.jobs_on_switches``)."""
        ...

    def remove_adopted(self, job: AdoptedJob) -> object:
        """Take an adopted job's entries and groups off the switches (``Installer.remove_adopted``)."""
        ...


def adopt_running_jobs(resources: Resources, installer: JobInstaller) -> tuple[dict[int, AdoptedJob], list[str]]:
    """Take, in ``resources``, what the jobs running on the installer's switches hold (a restarted controller's
    jobs: docs/design-decisions.md, "A controller that restarts"), then continue the job-id rotation after the
    ids the switches hold. Returns the adopted jobs and what any of them shares with another (the switches'
    state was not one controller's plan)."""
    adopted = dict(sorted(installer.jobs_on_switches().items()))
    errors = adopt_jobs(resources, adopted)
    resources.job_ids.continue_after(installer.job_ids_on_switches())
    return adopted, errors


def adopt_jobs(resources: Resources, jobs: Mapping[int, AdoptedJob]) -> list[str]:
    """Take, in ``resources``, what ``jobs`` (found running on the switches) hold; return what any of them
    shares with another job, one line per job."""
    errors: list[str] = []
    for job_id, job in sorted(jobs.items()):
        shared = resources.adopt(job)
        if shared:
            errors.append(
                f"job {job_id} found on {', '.join(sorted(job.switches))} shares what another job there holds "
                f"({'; '.join(shared)}): their sums may be wrong, release one"
            )
    return errors


def describe_adopted(job: AdoptedJob) -> str:
    """One line on an adopted job: where it runs and what it holds.

    Examples
    --------
    >>> describe_adopted(AdoptedJob(4, {0}, {("s1", 0): (256, 128)}, {3}, {"s1", "s2"}, {0}))
    'job 4 (adopted: running on the switches, not planned here): switches s1,s2, 1 tree(s), slots s1 256..383, groups 3'
    """
    slots = ", ".join(f"{sw} {base}..{base + size - 1}" for (sw, _), (base, size) in sorted(job.slots.items()))
    groups = ",".join(map(str, sorted(job.groups)))
    return (
        f"job {job.job_id} (adopted: running on the switches, not planned here): switches "
        f"{','.join(sorted(job.switches))}, {len(job.trees)} tree(s), slots {slots or 'none'}, groups {groups or 'none'}"
    )


MAX_WATCHERS = 48  # WatchPlan streams at once (one per agent of the running jobs); more: RESOURCE_EXHAUSTED
UNARY_WORKERS = 16  # threads for every other call, which WatchPlan streams never take

PlanWatcher = Callable[[JobPlan | None, str], object]  # (new plan version, "") or (None, why the job cannot go on)


class JobManager:
    """Jobs of one topology: plan, keep every plan version, re-plan around failures, release.

    ``watch(job_id, callback)`` registers a callback that gets every new plan version of the job (the
    job service streams them to agents: ``WatchPlan``), or, when re-planning fails, ``(None, reason)``.

    With a ``state`` file, every register, re-plan and release rewrites it (controller/job_state.py), and a
    manager that starts with one takes its jobs back with their plans: a job in the file is a job of this
    manager again (its plan versions served, re-planned on a failure, released by its plan), re-installed
    where a switch that answers lost its entries (``restore_notes`` says which; one that cannot be is dropped).
    With an installer, the jobs the switches run that no state file knows (a restarted controller's) are
    ``adopted``: their slots, counter rows, groups and ids stay taken until they are released;
    ``adoption_errors`` says which share resources with another (the installer's ``jobs_unread`` which switches
    could not be read). docs/design-decisions.md, "A controller that restarts".

    Raises
    ------
    StateFileError
        The state file cannot be read or written, is corrupt or is another topology's.
    """

    def __init__(self, topo: Topology, installer: JobInstaller | None = None, state: str | Path | None = None):
        self.topo = topo
        self.graph = topo.to_graph()
        self.resources = Resources.for_topology(topo)
        self.installer = installer
        self.jobs: dict[int, list[JobPlan]] = {}
        self.options: dict[int, PlanOptions] = {}
        self.watchers: dict[int, list[PlanWatcher]] = {}
        self.dead_switches: set[str] = set()
        self.dead_links: set[tuple[str, str]] = set()
        self.lock = threading.RLock()
        self.adoption_errors: list[str] = []
        self.job_tokens: dict[int, str] = {}  # each job's own token (JobServicer: a service with a token)
        # per job of the state file, the trees the switches hold that its plan has not (a re-plan the file missed)
        self.strays: dict[int, AdoptedJob] = {}
        self.restore_notes: list[str] = []  # one line per job of the state file re-installed or dropped
        self.released: list[int] = []  # job ids released, oldest first (kept in the state file)
        self.state = StateFile(state, topo) if state is not None else None
        saved = self.state.load() if self.state is not None else None
        running = dict(sorted(installer.jobs_on_switches().items())) if installer is not None else {}
        if saved is not None:
            self._take_back(saved, running)
        seen = set(self.jobs) | set(self.released) | ({saved.last_job_id} if saved and saved.last_job_id else set())
        if installer is not None:  # a restarted controller: keep off what running jobs hold, ids after theirs
            self.adoption_errors += adopt_jobs(self.resources, {i: j for i, j in running.items() if i not in self.jobs})
            seen |= installer.job_ids_on_switches()
        self.resources.job_ids.continue_after(seen)
        self._save()  # a file that cannot be written fails the start, not the first job

    def _take_back(self, saved: JobState, running: dict[int, AdoptedJob]) -> None:
        """Make the state file's jobs this manager's again: re-install a job where a switch that answers has
        none of its entries (it lost them: a pipeline pushed at start, a switch that restarted), or drop it
        when that fails; then take what its latest plan holds."""
        assert self.state is not None
        unread = set(getattr(self.installer, "jobs_unread", {}))  # switches whose entries could not be read
        self.released = list(saved.released)
        for job_id, job in sorted(saved.jobs.items()):
            plan = job.plans[-1]
            on_switches = running[job_id].switches if job_id in running else set()
            missing = sorted({c.switch for c in plan.switches} - unread - on_switches)
            if self.installer is not None and missing:
                what = f"job {job_id} of {self.state.path} has no entries on {', '.join(missing)}"
                try:
                    self.installer.install_job(plan)
                except ControllerError as exc:
                    self.restore_notes.append(f"{what} and cannot be re-installed ({exc}): dropped")
                    continue
                self.restore_notes.append(f"{what}: re-installed (plan version {plan.version})")
            stray = self._stray_trees(plan, running.get(job_id))
            shared = self.resources.restore(plan, job.reservation, stray)
            if shared:
                self.adoption_errors.append(
                    f"job {job_id} of {self.state.path} shares what another job holds ({'; '.join(shared)}): "
                    "their sums may be wrong, release one"
                )
            self.jobs[job_id] = list(job.plans)
            self.options[job_id] = job.options
            if job.token:
                self.job_tokens[job_id] = job.token

    def _stray_trees(self, plan: JobPlan, found: AdoptedJob | None) -> AdoptedJob | None:
        """What the switches hold of ``plan``'s job on trees the plan has not (a controller that died between
        a re-plan's install and its write of the file): kept off until the job is released, then removed."""
        if found is None or not found.trees - {t.tree_id for t in plan.trees}:
            return None
        assert self.state is not None
        trees = found.trees - {t.tree_id for t in plan.trees}
        groups = found.groups - {c.result_group for c in plan.switches}
        slots = {key: cells for key, cells in found.slots.items() if key[1] in trees}
        self.strays[plan.job_id] = stray = AdoptedJob(plan.job_id, set(), slots, groups, set(found.switches), trees)
        self.restore_notes.append(
            f"job {plan.job_id} of {self.state.path} has entries of tree(s) {', '.join(map(str, sorted(trees)))} on "
            "the switches that its plan has not (a re-plan the file missed): kept until the job is released"
        )
        return stray

    def _save(self) -> None:
        """Write the state file (with one): the jobs' plans and options, the id rotation, released ids."""
        if self.state is None:
            return
        del self.released[:-KEEP_RELEASED]
        jobs = {
            i: SavedJob(
                list(v), self.options[i], dict(self.resources.reservations.get(i, {})), self.job_tokens.get(i, "")
            )
            for i, v in self.jobs.items()
        }
        self.state.save(JobState(jobs, self.resources.job_ids.last, list(self.released)))

    @property
    def adopted(self) -> dict[int, AdoptedJob]:
        """The jobs found running on the switches when the manager started (not released since), by job id."""
        return self.resources.adopted

    def register(
        self, workers: list[str], servers: list[str], options: PlanOptions, token: str = ""
    ) -> tuple[JobPlan, bool]:
        """Plan a job, install it when the manager has an installer, and keep it.

        Parameters
        ----------
        workers, servers : list of str
        options : PlanOptions
        token : str
            The job's own token, kept with it (JobServicer); empty: none.

        Returns
        -------
        plan : JobPlan
        installed : bool
            Whether switch entries were written.

        Raises
        ------
        PlanError
            The job cannot be planned (nothing is taken).
        ControllerError
            The installer failed (the job's resources are given back).

        Examples
        --------
        >>> from controller.generators import star
        >>> manager = JobManager(star(2))
        >>> plan, installed = manager.register(["h1", "h2"], ["h3"], PlanOptions())
        >>> plan.job_id, installed, manager.plan(plan.job_id) is plan
        (1, False, True)
        """
        with self.lock:
            options = self._with_program_k(options)
            graph = surviving_graph(self.graph, self.dead_switches, self.dead_links)
            plan = plan_job(self.topo, workers, servers, options, self.resources, graph)
            installed = False
            if self.installer is not None:
                try:
                    self.installer.install_job(plan)
                    installed = True
                except Exception:
                    self.resources.release(plan)
                    raise
            self.jobs[plan.job_id] = [plan]
            self.options[plan.job_id] = options
            if token:
                self.job_tokens[plan.job_id] = token
            try:
                self._save()
            except StateFileError:  # a job the file does not know would be lost by a restart: not registered
                self._remove(plan.job_id)
                self.released.pop()
                raise
            return plan, installed

    def _with_program_k(self, options: PlanOptions) -> PlanOptions:
        """``options`` with K = the switches' program's (read off its P4Info): a dense packet carries exactly
        the program's K lanes, so a plan of another K could not run. Without an installer, as given."""
        if self.installer is None:
            return options
        if options.root_results is None:  # results from a tree's root where the program can send them
            options = replace(options, root_results=self.installer.root_multicast())
        k = self.installer.values_per_packet()
        if options.value_count is None:
            return replace(options, value_count=k)
        if options.value_count != k:
            raise PlanError(
                f"value_count {options.value_count} differs from the switches' program, built with K={k} "
                "(leave value_count unset to take the program's)"
            )
        return options

    # -- failures ------------------------------------------------------------------------------------
    def watch(self, job_id: int, callback: PlanWatcher) -> None:
        """Call ``callback(plan, "")`` with every new plan version of ``job_id`` from now on (or
        ``callback(None, reason)`` when the job cannot be re-planned)."""
        with self.lock:
            self.plan(job_id)  # an unknown job is an UnknownJobError
            self.watchers.setdefault(job_id, []).append(callback)

    def unwatch(self, job_id: int, callback: PlanWatcher) -> None:
        """Stop calling ``callback`` for ``job_id``."""
        with self.lock:
            if callback in self.watchers.get(job_id, []):
                self.watchers[job_id].remove(callback)

    def switches_in_use(self) -> set[str]:
        """The switches the jobs' latest plans use (what a fault monitor watches). Takes no lock: a
        monitor on a network's loop thread must not wait for a re-plan that waits for that loop."""
        jobs = dict(self.jobs)  # a copy of references, safe against a concurrent change
        return {c.switch for versions in jobs.values() for c in versions[-1].switches}

    def switch_failed(self, switch: str, reason: str = "") -> list[JobPlan]:
        """``switch`` is dead: re-plan every job that uses it; return the new plans.

        Raises
        ------
        ReplanError
            A job could not be re-planned (its watchers were told; the others were re-planned), or a
            watcher raised (the other watchers and jobs were told all the same).
        """
        with self.lock:
            self.dead_switches.add(switch)
            return self._replan_all(lambda plan: switch in {c.switch for c in plan.switches}, f"switch {switch}")

    def link_failed(self, a: str, b: str) -> list[JobPlan]:
        """The link between ``a`` and ``b`` is down: re-plan every job whose trees cross it."""
        with self.lock:
            self.dead_links.add((a, b))

            def crosses(plan: JobPlan) -> bool:
                return any({a, b} == set(edge) for t in plan.trees for edge in t.edges)

            return self._replan_all(crosses, f"link {a}-{b}")

    def _replan_all(self, affected: Callable[[JobPlan], bool], what: str) -> list[JobPlan]:
        """Re-plan every ``affected`` job, each whatever happened to the others (a job that cannot be
        re-planned, a watcher that raised); then raise one ReplanError naming everything that went wrong."""
        out: list[JobPlan] = []
        errors: list[str] = []
        for job_id in sorted(self.jobs):
            if affected(self.jobs[job_id][-1]):
                try:
                    out.append(self._replan(job_id, what, errors))
                except ControllerError as exc:
                    errors.append(str(exc))
        try:
            self._save()
        except StateFileError as exc:
            errors.append(str(exc))
        if errors:
            raise ReplanError("; ".join(errors))
        return out

    def _replan(self, job_id: int, what: str, errors: list[str]) -> JobPlan:
        old = self.jobs[job_id][-1]
        graph = surviving_graph(self.graph, self.dead_switches, self.dead_links)
        try:
            new = plan_around(self.topo, graph, self.resources, old, self.options[job_id])
            if self.installer is not None:
                self.installer.install_job(new)
        except ControllerError as exc:
            message = f"re-planning job {job_id} around the failed {what} failed: {exc}"
            errors.extend(self._tell(job_id, None, message))
            raise ReplanError(message) from None
        if self.installer is not None:  # the old trees' entries, where a switch still answers
            try:
                self.installer.remove_job(old, skip=self.dead_switches)
            except ControllerError:
                pass  # a switch that died meanwhile: its entries went with it
        self.resources.free_trees(
            job_id, {t.tree_id for t in old.trees}, {c.result_group for c in old.switches if c.result_group}
        )
        self.jobs[job_id].append(new)
        errors.extend(self._tell(job_id, new, ""))
        return new

    def _tell(self, job_id: int, plan: JobPlan | None, reason: str) -> list[str]:
        """Call every watcher of ``job_id``; return what the ones that raised said. One watcher's
        exception (an agent's pipe that broke) must reach neither the others nor the re-planning."""
        failures = []
        for callback in list(self.watchers.get(job_id, [])):
            try:
                callback(plan, reason)
            except Exception as exc:
                told = f"plan version {plan.version}" if plan is not None else "that it cannot go on"
                failures.append(f"job {job_id}'s watcher failed on {told}: {type(exc).__name__}: {exc}")
        return failures

    def plan(self, job_id: int, version: int = 0) -> JobPlan:
        """The plan of ``job_id``: its latest version (``version`` 0) or that version.

        Raises
        ------
        UnknownJobError
            No such job, or no such version of it.
        """
        with self.lock:
            versions = self.jobs.get(job_id)
            if not versions and job_id in self.adopted:
                raise UnknownJobError(
                    f"job {job_id} was adopted from the switches (it ran before this controller started): it has no plan here"
                )
            if not versions:
                raise UnknownJobError(f"no job {job_id}")
            if version == 0:
                return versions[-1]
            for p in versions:
                if p.version == version:
                    return p
            raise UnknownJobError(f"job {job_id} has no plan version {version} (latest is {versions[-1].version})")

    def release(self, job_id: int) -> bool:
        """Remove the job from the network (if installed) and give back its resources.

        Returns
        -------
        bool
            Whether switch entries were removed.

        Raises
        ------
        UnknownJobError
            No such job.
        StateFileError
            The job was released but the state file could not be written.

        Examples
        --------
        >>> from controller.generators import star
        >>> manager = JobManager(star(2))
        >>> plan, _ = manager.register(["h1", "h2"], ["h3"], PlanOptions())
        >>> manager.release(plan.job_id), manager.list()
        (False, [])
        """
        with self.lock:
            if job_id in self.adopted and job_id not in self.jobs:
                removed = self._release_adopted(job_id)
            else:
                removed = self._remove(job_id)
            try:
                self._save()
            except StateFileError as exc:
                raise StateFileError(f"job {job_id} released, but {exc}") from None
            return removed

    def _remove(self, job_id: int) -> bool:
        """Take a job of this manager off the network and give back what it held; whether entries were removed."""
        plan = self.plan(job_id)
        removed = False
        stray = self.strays.pop(job_id, None)
        if self.installer is not None:
            self.installer.remove_job(plan, skip=self.dead_switches)
            if stray is not None:  # whatever else of the job's the switches hold, by its job id
                self.installer.remove_adopted(replace(stray, switches=stray.switches - self.dead_switches))
            removed = True
        if stray is not None:
            self.resources.free_trees(job_id, stray.trees, stray.groups)
        self.resources.release(plan)
        del self.jobs[job_id]
        self.options.pop(job_id, None)
        self.watchers.pop(job_id, None)
        self.job_tokens.pop(job_id, None)
        self.released.append(job_id)
        return removed

    def _release_adopted(self, job_id: int) -> bool:
        """Take an adopted job's entries off the switches and give back what it held."""
        job = self.adopted[job_id]
        if self.installer is not None:  # a group another adopted job shares stays on the switches
            others = {g for j in self.adopted.values() if j is not job for g in j.groups}
            self.installer.remove_adopted(
                replace(job, groups=job.groups - others, switches=job.switches - self.dead_switches)
            )
        self.resources.release_adopted(job_id)
        self.released.append(job_id)
        return self.installer is not None

    def list(self) -> list[JobPlan]:
        """The latest plan of every job, by job id."""
        with self.lock:
            return [v[-1] for _, v in sorted(self.jobs.items())]

    def list_adopted(self) -> builtins.list[AdoptedJob]:
        """The adopted jobs (running on the switches before this manager started), by job id."""
        with self.lock:
            return [job for _, job in sorted(self.adopted.items())]


def options_from_pb(msg: pb.PlanOptions) -> PlanOptions:
    """PlanOptions from the protobuf message: fields it sets, the defaults of ``controller.options`` elsewhere."""
    opts = PlanOptions()
    for f in fields(PlanOptions):
        if msg.HasField(f.name):
            setattr(opts, f.name, getattr(msg, f.name))
    return opts


def options_to_pb(opts: PlanOptions) -> pb.PlanOptions:
    """The protobuf message of ``opts`` (fields that are None stay unset).

    Examples
    --------
    >>> options_from_pb(options_to_pb(PlanOptions(pool_size=64))) == PlanOptions(pool_size=64)
    True
    """
    msg = pb.PlanOptions()
    for f in fields(PlanOptions):
        value = getattr(opts, f.name)
        if value is not None:
            setattr(msg, f.name, value)
    return msg


class JobServicer(pb_grpc.JobServiceServicer):  # type: ignore[misc]  # generated, untyped base
    """The job service's calls. With a ``token``, registering and listing jobs need it, and every job
    gets a token of its own (in RegisterJob's reply; the manager keeps it, in its state file too): fetching,
    watching or releasing a job needs the service's token or that job's, so an agent of one job cannot touch
    another."""

    def __init__(self, manager: JobManager, token: str | None = None, max_watchers: int = MAX_WATCHERS):
        self.manager = manager
        self.token = token or ""
        self.max_watchers = max_watchers
        self.watching = 0  # open WatchPlan streams
        self.watching_lock = threading.Lock()

    def _authorize(self, context: grpc.ServicerContext, job_id: int | None = None) -> None:
        if not self.token:
            return
        presented = presented_token(context)
        if presented and hmac.compare_digest(presented, self.token):
            return
        job_token = self.manager.job_tokens.get(job_id or 0, "") if job_id is not None else ""
        if presented and job_token and hmac.compare_digest(presented, job_token):
            return
        what = "the service's token" if job_id is None else f"the service's token or job {job_id}'s"
        context.abort(grpc.StatusCode.UNAUTHENTICATED, f"this call needs {what} (--token)")

    def RegisterJob(self, request: pb.RegisterJobRequest, context: grpc.ServicerContext) -> pb.RegisterJobReply:
        """gRPC: plan (and install) a job; INVALID_ARGUMENT for a plan error, UNAVAILABLE for a switch's."""
        self._authorize(context)
        job_token = secrets.token_hex(16) if self.token else ""
        try:
            plan, installed = self.manager.register(
                list(request.workers), list(request.servers), options_from_pb(request.options), job_token
            )
        except PlanError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        except ControllerError as exc:  # an installer failure: say which switch, keep serving
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return pb.RegisterJobReply(
            job_id=plan.job_id,
            version=plan.version,
            plan_json=plan.to_json(),
            warnings=plan.warnings,
            installed=installed,
            token=job_token,
        )

    def GetPlan(self, request: pb.GetPlanRequest, context: grpc.ServicerContext) -> pb.GetPlanReply:
        """gRPC: a job's plan; NOT_FOUND for an unknown job or version."""
        self._authorize(context, request.job_id)
        try:
            plan = self.manager.plan(request.job_id, request.version)
        except UnknownJobError as exc:
            context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        return pb.GetPlanReply(version=plan.version, plan_json=plan.to_json())

    def ReleaseJob(self, request: pb.ReleaseJobRequest, context: grpc.ServicerContext) -> pb.ReleaseJobReply:
        """gRPC: release a job; NOT_FOUND for an unknown job, UNAVAILABLE when a switch fails."""
        self._authorize(context, request.job_id)
        try:
            removed = self.manager.release(request.job_id)
        except UnknownJobError as exc:
            context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        except ControllerError as exc:  # a switch that refused or went away
            context.abort(grpc.StatusCode.UNAVAILABLE, str(exc))
        return pb.ReleaseJobReply(entries_removed=removed)

    def ListJobs(self, request: pb.ListJobsRequest, context: grpc.ServicerContext) -> pb.ListJobsReply:
        """gRPC: a summary of every job."""
        self._authorize(context)
        return pb.ListJobsReply(
            jobs=[
                pb.JobSummary(
                    job_id=p.job_id,
                    version=p.version,
                    planner=p.planner,
                    workers=[w.name for w in p.workers],
                    servers=[s.name for s in p.servers],
                    trees=len(p.trees),
                    warnings=p.warnings,
                )
                for p in self.manager.list()
            ]
            + [
                pb.JobSummary(
                    job_id=j.job_id,
                    planner="adopted",
                    trees=len(j.trees),
                    adopted=True,
                    switches=sorted(j.switches),
                )
                for j in self.manager.list_adopted()
            ]
        )

    def WatchPlan(self, request: pb.WatchPlanRequest, context: grpc.ServicerContext) -> Iterator[pb.WatchPlanReply]:
        """gRPC: stream every new plan version of a job (NOT_FOUND for an unknown job); a reply with an
        error ends the stream (the job could not be re-planned)."""
        self._authorize(context, request.job_id)
        with self.watching_lock:
            full = self.watching >= self.max_watchers
            if not full:
                self.watching += 1
        if full:
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"too many WatchPlan streams: this service takes {self.max_watchers}",
            )
        try:
            yield from self._watch(request, context)
        finally:
            with self.watching_lock:
                self.watching -= 1

    def _watch(self, request: pb.WatchPlanRequest, context: grpc.ServicerContext) -> Iterator[pb.WatchPlanReply]:
        updates: queue.Queue[tuple[JobPlan | None, str] | None] = queue.Queue()

        def push(plan: JobPlan | None, reason: str) -> None:
            updates.put((plan, reason))

        try:
            self.manager.watch(request.job_id, push)
        except UnknownJobError as exc:
            context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        context.add_callback(lambda: updates.put(None))  # the client went away or the server stops
        try:
            while True:
                item = updates.get()
                if item is None:
                    return
                plan, reason = item
                if plan is None:
                    self.manager.unwatch(request.job_id, push)  # before the client can see the end
                    yield pb.WatchPlanReply(error=reason)
                    return
                yield pb.WatchPlanReply(version=plan.version, plan_json=plan.to_json())
        finally:
            self.manager.unwatch(request.job_id, push)


class JobServer:
    """A gRPC server for one JobManager; ``address`` may use port 0 (see ``.address``). Each agent that
    watches its job's plan (``WatchPlan``) holds a thread while it watches: at most ``max_watchers`` at
    once (more are answered RESOURCE_EXHAUSTED), and the other calls have threads of their own, so idle
    watchers cannot starve them. ``tls``: serve over TLS; ``token``: the service's token (JobServicer).
    Plaintext on an address other than loopback prints a warning.

    Raises
    ------
    JobServiceError
        The address is in use by another process, or cannot be listened on.
    """

    def __init__(
        self,
        manager: JobManager,
        address: str = "127.0.0.1:0",
        max_watchers: int = MAX_WATCHERS,
        tls: TlsFiles | None = None,
        token: str | None = None,
    ):
        self.manager = manager
        self.server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=max_watchers + UNARY_WORKERS, thread_name_prefix="jobs"),
            options=SERVER_OPTIONS,
        )
        pb_grpc.add_JobServiceServicer_to_server(JobServicer(manager, token, max_watchers), self.server)
        port = listen(self.server, address, tls, "the job service")
        if port == 0:
            if address_in_use(address):
                raise JobServiceError(f"address {address} is in use")
            raise JobServiceError(f"cannot listen on {address}")
        self.address = f"{address.rsplit(':', 1)[0]}:{port}"

    def start(self) -> JobServer:
        """Start serving; return self."""
        self.server.start()
        return self

    def stop(self, grace: float | None = 0.5) -> None:
        """Stop serving, letting calls in progress finish within ``grace`` seconds."""
        self.server.stop(grace).wait()


class JobClient:
    """The job service's client: over TLS with ``tls``, presenting ``token`` (the service's or a job's).
    ``job_tokens`` keeps the token of every job this client registered."""

    def __init__(self, address: str, timeout: float = 10.0, tls: TlsFiles | None = None, token: str | None = None):
        self.channel = tls_channel(address, tls)
        self.stub = pb_grpc.JobServiceStub(self.channel)
        self.address, self.timeout = address, timeout
        self.metadata = token_metadata(token)
        self.job_tokens: dict[int, str] = {}

    def _call(self, fn: Callable[..., Any], request: Any) -> Any:
        try:
            return fn(request, timeout=self.timeout, metadata=self.metadata)
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.UNAVAILABLE and "connect" in (exc.details() or ""):
                raise JobServiceError(f"no job service at {self.address}") from None
            raise JobServiceError(exc.details() or f"job service at {self.address}: {exc.code().name}") from None

    def register(self, workers: list[str], servers: list[str], options: PlanOptions | None = None) -> JobPlan:
        """Register a job with the service; return its plan.

        Raises
        ------
        JobServiceError
            No service at the address, or the service's one-line reason for refusing.

        Examples
        --------
        >>> from controller.generators import star
        >>> server = JobServer(JobManager(star(2))).start()
        >>> client = JobClient(server.address)
        >>> plan = client.register(["h1", "h2"], ["h3"])
        >>> client.get_plan(plan.job_id) == plan, client.release(plan.job_id)
        (True, False)
        >>> client.close(); server.stop()
        """
        reply = self._call(
            self.stub.RegisterJob,
            pb.RegisterJobRequest(workers=workers, servers=servers, options=options_to_pb(options or PlanOptions())),
        )
        self.job_tokens[reply.job_id] = reply.token
        return JobPlan.from_json(reply.plan_json)

    def get_plan(self, job_id: int, version: int = 0) -> JobPlan:
        """The plan of ``job_id`` (latest, or ``version``); raises JobServiceError (NOT_FOUND's message) if none."""
        reply = self._call(self.stub.GetPlan, pb.GetPlanRequest(job_id=job_id, version=version))
        return JobPlan.from_json(reply.plan_json)

    def release(self, job_id: int) -> bool:
        """Release a job; whether switch entries were removed."""
        return bool(self._call(self.stub.ReleaseJob, pb.ReleaseJobRequest(job_id=job_id)).entries_removed)

    def watch(self, job_id: int) -> Iterator[tuple[JobPlan | None, str]]:
        """Every new plan version of ``job_id`` as ``(plan, "")``, until ``(None, reason)`` (the job could
        not be re-planned) or the channel closes. Blocks between versions: run it in its own thread
        (``worker.plan_updates.PlanFollower``).

        Raises
        ------
        JobServiceError
            No service at the address, or no such job.
        """
        try:
            for reply in self.stub.WatchPlan(pb.WatchPlanRequest(job_id=job_id), metadata=self.metadata):
                if reply.error:
                    yield None, reply.error
                    return
                yield JobPlan.from_json(reply.plan_json), ""
        except grpc.RpcError as exc:
            if exc.code() == grpc.StatusCode.CANCELLED:
                return
            raise JobServiceError(exc.details() or f"job service at {self.address}: {exc.code().name}") from None

    def list(self) -> list[Any]:
        """The service's job summaries (JobSummary messages)."""
        return list(self._call(self.stub.ListJobs, pb.ListJobsRequest()).jobs)

    def close(self) -> None:
        """Close the channel."""
        self.channel.close()
