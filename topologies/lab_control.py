"""The controller's side of a lab run: the installer that talks P4Runtime to the switches, the job manager
that plans and installs jobs, and the lab's two jobs (the aggregation job and its parameter-server baseline
on the same hosts).

``pick_hosts`` chooses the job's hosts from a topology (also the in-process lab's); ``LabControl``
``install``s routes and both jobs once the switches run, registers more jobs (training), reads the switches'
counters, and is closed at teardown.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from controller.installer import Installer
from controller.jobservice import JobManager
from controller.plan import JobPlan
from controller.planner import PlanOptions
from controller.tls import TlsFiles
from controller.topology import Topology
from protocol import constants as C
from protocol.layouts import link_mtu
from topologies.errors import LabError
from worker.baselines import parameter_server_options


def pick_hosts(
    topo: Topology, workers: int | Sequence[str] | None = None, server: str | None = None
) -> tuple[list[str], str]:
    """Workers and server by name, or by the topology's role hints (``workers`` may be a count)."""
    hinted_servers = [h.name for h in topo.hosts if h.role == "server"]
    server = server or (hinted_servers[0] if hinted_servers else topo.hosts[-1].name)
    if isinstance(workers, int) or workers is None:
        pool = [h.name for h in topo.hosts if h.role == "worker"] or [
            h.name for h in topo.hosts if h.name != server and h.role != "server"
        ]
        count = len(pool) if workers is None else workers
        if count > len(pool):
            raise LabError(f"asked for {count} workers, the topology has {len(pool)} worker hosts")
        workers = pool[:count]
    for name in list(workers) + [server]:
        topo.host(name)  # raises TopologyError naming an unknown host
    return list(workers), server


class LabControl:
    """Installer, job manager and the lab's jobs: ``install``, then ``register``/``switch_counters``, ``close``."""

    def __init__(
        self,
        topo: Topology,
        workers: list[str],
        server: str,
        plan_options: PlanOptions | None = None,  # None: the controller's defaults
    ):
        self.topo = topo
        self.workers, self.server = workers, server
        self.plan_options = plan_options
        self.installer: Installer | None = None
        self.jobs: JobManager | None = None  # the lab's job and training jobs share its resources
        self._plan: JobPlan | None = None
        self._ps_plan: JobPlan | None = None  # the parameter-server baseline: same hosts, no aggregating switch
        self.next_job_id = 0

    @property
    def plan(self) -> JobPlan:
        """The lab's aggregation job, as it runs now (a re-plan gives a new version)."""
        if self._plan is None:
            raise LabError("the lab's job is not installed yet")
        return self._plan

    @plan.setter
    def plan(self, plan: JobPlan) -> None:
        self._plan = plan

    @property
    def ps_plan(self) -> JobPlan:
        """The parameter-server baseline's job, as it runs now."""
        if self._ps_plan is None:
            raise LabError("the lab's job is not installed yet")
        return self._ps_plan

    @ps_plan.setter
    def ps_plan(self, plan: JobPlan) -> None:
        self._ps_plan = plan

    def manager(self) -> JobManager:
        if self.jobs is None:
            raise LabError("the lab's controller is not running")
        return self.jobs

    def options(self, **changes: Any) -> PlanOptions:
        """The lab's plan options with ``changes``."""
        return dataclasses.replace(self.plan_options or PlanOptions(), **changes)

    def install(
        self,
        addresses: dict[str, str],
        tls: TlsFiles | None,
        links_mtu: int,
        p4info: str | None = None,
        device_config: str | None = None,
    ) -> None:
        """Routes, then the lab's two jobs (planned and installed by the job manager) over P4Runtime. A switch
        started with a program reports its own P4Info; one started with --no-p4 (BMv2) first gets the
        pipeline from ``p4info``/``device_config``."""
        self.installer = Installer(self.topo, p4info, device_config, addresses=addresses, tls=tls)
        if p4info and device_config:
            self.installer.push_pipeline()
        self.installer.install_topology()
        self.jobs = JobManager(self.topo, installer=self.installer)
        self.plan_jobs(links_mtu)

    def plan_jobs(self, links_mtu: int) -> None:
        """Register the lab's job and its baseline with the job manager; the job's packets must fit the
        links' MTU (``links_mtu``)."""
        jobs = self.manager()
        self.plan, _ = jobs.register(self.workers, [self.server], self.options())
        needed = link_mtu(self.plan.value_count)
        if needed > links_mtu:
            raise LabError(
                f"the switches run K = {self.plan.value_count} (their P4Info), whose packets need an MTU of "
                f"{needed}, but the links were set to {links_mtu} from the program's source: start the "
                "lab with --program naming the P4 source (e.g. v1model-k1024)"
            )
        self.ps_plan, _ = jobs.register(self.workers, [self.server], parameter_server_options(self.options()))
        self.next_job_id = max(self.plan.job_id, self.ps_plan.job_id) + 1

    def register(self, watch: Callable[[JobPlan | None, str], None]) -> JobPlan:
        """A job of its own on the lab's hosts with a job id never used before in this lab, watched by
        ``watch`` from its registration on (a re-plan tells its watchers under the manager's lock)."""
        jobs = self.manager()
        with jobs.lock:
            plan, _ = jobs.register(
                [w.name for w in self.plan.workers], [self.server], self.options(job_id=self.next_job_id)
            )
            self.next_job_id += 1
            jobs.watch(plan.job_id, watch)
        return plan

    def dead(self) -> tuple[set[str], set[tuple[str, str]]]:
        """The switches and links the controller knows are dead."""
        jobs = self.manager()
        return set(jobs.dead_switches), set(jobs.dead_links)

    def switch_counters(self, plan: JobPlan | None = None) -> dict[str, dict[str, int]]:
        """Non-zero per-job packet counts (Installer.read_stats, either program) of ``plan`` (default: the lab's job)
        and drop reasons (drop_stats, all jobs) of every switch, read over P4Runtime (switches the
        controller found dead are left out)."""
        out = {}
        base = (plan or self.plan).job_index * C.NUM_STATS
        dead = self.jobs.dead_switches if self.jobs is not None else set()
        for s in self.topo.switches:
            if s.name not in dead:
                out[s.name] = self._switch_row(s.name, base)
        return out

    def _switch_row(self, switch: str, base: int) -> dict[str, int]:
        assert self.installer is not None
        stats = self.installer.read_stats(switch, [base + i for i in C.STAT_NAMES])
        drops = self.installer.read_counter(switch, "InaIngress.drop_stats", list(C.DROP_REASON_NAMES))
        row = {C.STAT_NAMES[i - base].removeprefix("STAT_").lower(): v[0] for i, v in stats.items() if v[0]}
        row.update(
            {
                "drop " + C.DROP_REASON_NAMES[i].removeprefix("DROP_").lower(): v[0]
                for i, v in drops.items()
                if v[0] and i
            }
        )
        return row

    def close(self) -> None:
        """Forget the jobs and close the installer's P4Runtime connections (teardown: errors ignored)."""
        self.jobs = None
        if self.installer is not None:
            try:
                self.installer.close()
            except Exception:
                pass
            self.installer = None
