"""The job service's state file: what a restarted controller needs to take its jobs back with their plans.

It holds every running job's plan versions (all of them: agents ask for any with ``GetPlan(version)``, and the
latest is what a re-plan starts from), its ``PlanOptions`` (a re-plan plans with them), its reserved bandwidth
(multi-tree), its own token (so its agents are let in again; the file is its owner's only), the job-id rotation's last id and the ids released since (their chunks may still sit in slot
cells that the switches cannot give back: BMv2 reads no registers). docs/design-decisions.md, "A controller
that restarts", says how a restart uses it.

One JSON document, rewritten whole after every change (register, re-plan, release): written to a temporary
file beside it, flushed to disk, then renamed over it, so a crash leaves the old state or the new one, never
half of either. JSON, not the columnar plan file: one document holds many jobs and the rotation, the plans in
it are the job service's own JSON, loaded back through ``JobPlan.from_dict`` and its checks, and a person can
read it; a job service's jobs are registered over gRPC as JSON, so their size is what the service handles.

    state = StateFile("jobs.json", topo)
    state.save(JobState(jobs={3: SavedJob([plan], options, {})}, last_job_id=3))
    state.load().jobs[3].plans == [plan]
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from controller.errors import ControllerError, StateFileError
from controller.options import PlanOptions
from controller.plan import JobPlan
from controller.topology import Topology

STATE_FORMAT = 1  # layout of the state file
KEEP_RELEASED = 1024  # released job ids the file remembers (the latest ones)


@dataclass
class SavedJob:
    """One running job as the state file keeps it."""

    plans: list[JobPlan]  # every version, oldest first
    options: PlanOptions
    reservation: dict[int, float] = field(default_factory=dict)  # link id -> Mbit/s (multi-tree)
    token: str = ""  # the job's own token (a service with --token-file): its agents present it again


@dataclass
class JobState:
    """What the job service keeps across a restart."""

    jobs: dict[int, SavedJob] = field(default_factory=dict)
    last_job_id: int | None = None  # the id the rotation took last
    released: list[int] = field(default_factory=list)  # ids released, oldest first


def topology_fingerprint(topo: Topology) -> str:
    """A digest of what plans depend on: switches (name, device id, slots), hosts (name, address, MAC, order)
    and links (ends, ports, id). Bandwidths and delays are left out: a plan stays valid when they change.

    Examples
    --------
    >>> from controller.generators import star
    >>> topology_fingerprint(star(2)) == topology_fingerprint(star(2)), topology_fingerprint(star(3)) == topology_fingerprint(star(2))
    (True, False)
    """
    shape = {
        "switches": [[s.name, s.device_id, s.slots] for s in topo.switches],
        "hosts": [[h.name, h.ip, h.mac] for h in topo.hosts],
        "links": [[link.id, link.a, link.a_port, link.b, link.b_port] for link in topo.links],
    }
    return hashlib.sha256(json.dumps(shape, sort_keys=True).encode()).hexdigest()[:16]


def _options_from_dict(data: Any) -> PlanOptions:
    """PlanOptions from the state file's object, checked (``PlanOptions.check``)."""
    if not isinstance(data, dict):
        raise StateFileError("options are not an object")
    known = {f.name for f in dataclasses.fields(PlanOptions)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise StateFileError(f"unknown option {unknown[0]!r}")
    try:
        options = PlanOptions(**data)
        options.check()
    except (ControllerError, TypeError) as exc:
        raise StateFileError(str(exc)) from None
    return options


def _job_from_dict(data: Any) -> SavedJob:
    if not isinstance(data, dict):
        raise StateFileError("a job is not an object")
    plans = [JobPlan.from_dict(p) for p in data["plans"]]
    if not plans:
        raise StateFileError("a job has no plan")
    reservation = {int(link): float(bw) for link, bw in data.get("reservation", {}).items()}
    token = data.get("token", "")
    if not isinstance(token, str):
        raise StateFileError("a job's token is not a string")
    return SavedJob(plans, _options_from_dict(data["options"]), reservation, token)


class StateFile:
    """The state file at ``path`` of a job service over ``topo``.

    Raises (``load``, ``save``)
    ------
    StateFileError
        The file cannot be read or written, is not a state file, is corrupt, or was written for another
        topology; the message names the file and the problem in one line.
    """

    def __init__(self, path: str | Path, topo: Topology):
        self.path = Path(path)
        self.topo = topo
        self.fingerprint = topology_fingerprint(topo)

    def _error(self, problem: str) -> StateFileError:
        return StateFileError(f"state file {self.path}: {problem}")

    def load(self) -> JobState | None:
        """The state in the file, or None when there is no file yet (a first start).

        Raises
        ------
        StateFileError
            Unreadable, not JSON, another format or topology, or a job that does not load.
        """
        try:
            text = self.path.read_text()
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as exc:
            raise self._error(f"cannot read it ({getattr(exc, 'strerror', None) or exc})") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise self._error(f"not JSON ({exc}): corrupt, or not a state file") from None
        if not isinstance(data, dict) or data.get("state_format") != STATE_FORMAT:
            found = data.get("state_format") if isinstance(data, dict) else None
            raise self._error(f"state format {found!r} is not supported (this code reads {STATE_FORMAT})")
        self._check_topology(data)
        return self._state(data)

    def _check_topology(self, data: dict[str, Any]) -> None:
        name, fingerprint = data.get("topology"), data.get("topology_fingerprint")
        if name != self.topo.name or fingerprint != self.fingerprint:
            what = "" if name != self.topo.name else " of other switches, hosts or links"
            raise self._error(
                f"written for topology {name!r}{what}, not this {self.topo.name!r} (give another --state file)"
            )

    def _state(self, data: dict[str, Any]) -> JobState:
        job_id = None
        try:
            jobs = {}
            for key, job in data["jobs"].items():
                job_id = int(key)
                jobs[job_id] = saved = _job_from_dict(job)
                if any(p.job_id != job_id for p in saved.plans):
                    raise StateFileError("its plans carry another job id")
            job_id = None
            last = data["last_job_id"]
            return JobState(jobs, None if last is None else int(last), [int(i) for i in data["released"]])
        except (ControllerError, KeyError, TypeError, ValueError, AttributeError) as exc:
            where = f"job {job_id}: " if job_id is not None else ""
            problem = str(exc) if isinstance(exc, ControllerError) else f"missing or mistyped {exc!s}"
            raise self._error(f"{where}{problem}") from None

    def save(self, state: JobState) -> None:
        """Write ``state``: a temporary file beside the file (readable by its owner only: it says what runs
        where), synced, then renamed over it.

        Raises
        ------
        StateFileError
            The file or its directory cannot be written.
        """
        doc = {
            "state_format": STATE_FORMAT,
            "topology": self.topo.name,
            "topology_fingerprint": self.fingerprint,
            "last_job_id": state.last_job_id,
            "released": state.released[-KEEP_RELEASED:],
            "jobs": {
                str(job_id): {
                    "options": dataclasses.asdict(job.options),
                    "reservation": {str(link): bw for link, bw in job.reservation.items()},
                    "token": job.token,
                    "plans": [p.to_dict() for p in job.plans],
                }
                for job_id, job in sorted(state.jobs.items())
            },
        }
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                json.dump(doc, out)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, self.path)
            directory = os.open(self.path.parent, os.O_RDONLY)  # the rename itself, on disk
            try:
                os.fsync(directory)
            finally:
                os.close(directory)
        except OSError as exc:
            raise self._error(f"cannot write it ({exc.strerror or exc})") from None
