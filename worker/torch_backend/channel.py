"""The backend's link to the network: this rank's worker agent, built from the job's plan.

The plan comes from the controller's job service (INA_CONTROLLER + INA_JOB, over TLS with INA_TLS_CA)
or from a plan file (INA_PLAN). The rank keeps watching the job's plan (``PlanFollower``), at the job
service or in the plan file (``PlanFileWatch``: whoever wrote it replaces it with each new version, as the
mininet lab does when it re-plans): a new version re-routes the agent's chunks, a failed re-plan fails its
collectives. The transport is kernel UDP on the plan's address of this worker (mininet, real hosts)
or an attach endpoint of an in-process network running in another OS process.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from worker.torch_backend.options import InaConfigError, InaOptions
from worker.torch_backend.process_group import SwitchChannel

if TYPE_CHECKING:
    from controller.jobservice import JobClient
    from controller.plan import JobPlan
    from worker.plan_updates import PlanFollower, PlanSource


def load_plan(options: InaOptions):
    """The job's plan: from the INA_PLAN file, or fetched from the controller's job service.

    Raises
    ------
    InaConfigError
        The plan file cannot be read or parsed, or the service cannot give the job.
    """
    from controller.plan import JobPlan, PlanFormatError

    if options.plan:
        try:
            text = Path(options.plan).read_text()
        except OSError as exc:
            raise InaConfigError(f"INA_PLAN {options.plan}: {exc.strerror}") from None
        try:
            return JobPlan.from_json(text)
        except PlanFormatError as exc:
            raise InaConfigError(f"INA_PLAN {options.plan}: {exc}") from None
    client = job_client(options)
    try:
        return fetch_plan(client, options.job)
    finally:
        client.close()


def job_client(options: InaOptions) -> JobClient:
    """A client of the job service INA_CONTROLLER names, over TLS with INA_TLS_CA, presenting INA_TOKEN.

    Raises
    ------
    InaConfigError
        A TLS file that cannot be read.
    """
    from controller.jobservice import JobClient
    from controller.tls import TlsError

    try:
        return JobClient(
            str(options.controller), timeout=min(options.timeout, 30.0), tls=options.tls_files(), token=options.token
        )
    except TlsError as exc:
        raise InaConfigError(f"INA_TLS_*: {exc}") from None


def fetch_plan(client: JobClient, job: str | None) -> JobPlan:
    """The current plan of job ``job`` (its id) from the job service of ``client``."""
    from controller.jobservice import JobServiceError
    from controller.plan import PlanFormatError

    job_id = job_number(job)
    try:
        return client.get_plan(job_id)
    except (JobServiceError, PlanFormatError) as exc:
        raise InaConfigError(f"job {job_id} from {client.address}: {exc}") from None


def job_number(job: str | None) -> int:
    """INA_JOB as the job's id."""
    try:
        return int(str(job))
    except ValueError:
        raise InaConfigError(f"INA_JOB must be the job's id (a number), got {job!r}") from None


def make_transport(options: InaOptions, plan, me):
    """The transport INA_TRANSPORT names for host ``me`` of ``plan`` (kernel UDP or an attach endpoint)."""
    kind, endpoints = options.transport_kind()
    if kind == "udp":
        from worker.transport import UdpTransport

        return UdpTransport(ip=me.ip, bind_ip=me.ip)
    if len(endpoints) == 1:
        endpoint = endpoints[0]
    elif len(endpoints) == len(plan.workers):
        endpoint = endpoints[me.rank]
    else:
        raise InaConfigError(
            f"INA_TRANSPORT lists {len(endpoints)} attach ports for a job of "
            f"{len(plan.workers)} workers (give one, or one per rank)"
        )
    from worker.transport import AttachTransport

    neighbours = {h.ip: h.mac for h in list(plan.servers) + list(plan.workers)}
    return AttachTransport(endpoint, me.ip, me.mac, neighbours=neighbours)


class AgentChannel(SwitchChannel):
    """A WorkerAgent of the job; ``aggregate`` is one blocking allreduce through the switches.
    ``source``/``follower``: where new versions of the job's plan come from (the job service's client,
    or the plan file) and the watch that hands them to the agent."""

    def __init__(
        self,
        agent,
        transport,
        source: PlanSource | None = None,
        follower: PlanFollower | None = None,
    ):
        self.agent = agent
        self.transport = transport
        self.source, self.follower = source, follower

    @classmethod
    def connect(cls, options: InaOptions, rank: int, size: int) -> AgentChannel:
        """A worker agent of this rank on the job's plan, over the configured transport."""
        client = None if options.plan else job_client(options)
        try:
            plan = load_plan(options) if client is None else fetch_plan(client, options.job)
            return cls._connect(options, rank, size, plan, client)
        except BaseException:
            if client is not None:
                client.close()
            raise

    @classmethod
    def _connect(
        cls, options: InaOptions, rank: int, size: int, plan: JobPlan, client: JobClient | None
    ) -> AgentChannel:
        from worker.agent import WorkerAgent
        from worker.plan_updates import PlanFileWatch, PlanFollower

        if len(plan.workers) != size:
            raise InaConfigError(
                f"job {plan.job_id} has {len(plan.workers)} workers but the process group "
                f"has {size} ranks; an ina group must span all the job's workers"
            )
        me = plan.worker(options.host) if options.host else plan.worker(rank)
        if me.rank != rank:
            raise InaConfigError(
                f"INA_HOST {options.host} is rank {me.rank} in job {plan.job_id}, but this process is rank {rank}"
            )
        transport = make_transport(options, plan, me)
        agent = WorkerAgent(
            plan, rank, transport, timeout=options.rto, retries=options.retries, give_up_after=options.timeout
        )
        source: PlanSource = client if client is not None else PlanFileWatch(str(options.plan))
        # new plan versions reach the agent on its loop, between two events
        follower = PlanFollower(source, plan.job_id, agent.update_plan, transport.loop.call_soon_threadsafe).start()
        return cls(agent, transport, source, follower)

    def aggregate(self, array: np.ndarray, op: str) -> np.ndarray:
        """One exchange of ``array`` through the switches (``op`` "sum" or "max"). Bounded by the agent's
        time budget (INA_TIMEOUT without a new result), whose error says what was heard."""
        return self.agent.allreduce(array, op)

    def close(self) -> None:
        """Close the agent and its transport, and stop watching the plan."""
        if self.source is not None:
            self.source.close()  # ends the watch (a job service's: CANCELLED)
        if self.follower is not None:
            self.follower.join(5)
        self.agent.close()
        self.transport.close()
