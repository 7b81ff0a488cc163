"""The backend's link to the network: this rank's worker agent, built from the job's plan.

The plan comes from the controller's job service (INA_CONTROLLER + INA_JOB) or from a plan file
(INA_PLAN). The transport is kernel UDP on the plan's address of this worker (mininet, real hosts)
or an attach endpoint of an in-process network running in another OS process.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from worker.torch_backend.options import InaConfigError, InaOptions
from worker.torch_backend.process_group import SwitchChannel


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
    return fetch_plan(options.controller, options.job, options.timeout, options.token)


def fetch_plan(controller: str, job: str, timeout: float, token: str | None = None):
    """The current plan of job ``job`` (its id) from the job service at ``controller`` (host:port),
    presenting ``token`` (INA_TOKEN) when the service has one."""
    from controller.jobservice import JobClient, JobServiceError
    from controller.plan import PlanFormatError

    try:
        job_id = int(job)
    except ValueError:
        raise InaConfigError(f"INA_JOB must be the job's id (a number), got {job!r}") from None
    client = JobClient(controller, timeout=min(timeout, 30.0), token=token)
    try:
        return client.get_plan(job_id)
    except (JobServiceError, PlanFormatError) as exc:
        raise InaConfigError(f"job {job_id} from {controller}: {exc}") from None
    finally:
        client.close()


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
    """A WorkerAgent of the job; ``aggregate`` is one blocking allreduce through the switches."""

    def __init__(self, agent, transport, timeout: float):
        self.agent = agent
        self.transport = transport
        self.timeout = timeout

    @classmethod
    def connect(cls, options: InaOptions, rank: int, size: int) -> AgentChannel:
        """A worker agent of this rank on the job's plan, over the configured transport."""
        from worker.agent import WorkerAgent

        plan = load_plan(options)
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
        return cls(agent, transport, options.timeout)

    def aggregate(self, array: np.ndarray, op: str) -> np.ndarray:
        """One exchange of ``array`` through the switches (``op`` "sum" or "max")."""
        return self.agent.allreduce(array, op, timeout=self.timeout)

    def close(self) -> None:
        """Close the agent and its transport."""
        self.agent.close()
        self.transport.close()
