"""Configuration of the ina backend and errors raised before any packet is sent (no network)."""

import datetime
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from ina_jobs import ina_job, server_only_job
from rank_bodies import stalled_all_reduce, wait_timeout
from torch_ranks import run_ranks

from worker.torch_backend import InaConfigError, InaOptions, InaUnsupportedError
from worker.torch_backend.reduction import SwitchReduction, check_op

ROOT = Path(__file__).resolve().parents[2]


def test_options_from_env():
    o = InaOptions.from_env(
        {
            "INA_CONTROLLER": "10.0.0.9:50051",
            "INA_JOB": "3",
            "INA_TRANSPORT": "attach:127.0.0.1:4000",
            "INA_TIMEOUT": "12.5",
            "INA_RETRIES": "3",
        }
    )
    assert (o.controller, o.job, o.timeout, o.retries) == ("10.0.0.9:50051", "3", 12.5, 3)
    assert o.transport_kind() == ("attach", [("127.0.0.1", 4000)])
    o.transport = "attach:127.0.0.1:4000,4001,4002"
    assert o.transport_kind() == ("attach", [("127.0.0.1", 4000), ("127.0.0.1", 4001), ("127.0.0.1", 4002)])


def test_pg_options_override_env():
    o = InaOptions.from_env({"INA_CONTROLLER": "a:1", "INA_JOB": "3"}, overrides=InaOptions(job="7", timeout=5.0))
    assert (o.controller, o.job, o.timeout) == ("a:1", "7", 5.0)


@pytest.mark.parametrize(
    "env, words",
    [
        ({}, "INA_CONTROLLER is not set"),
        ({"INA_CONTROLLER": "nohost"}, "INA_CONTROLLER must be HOST:PORT"),
        ({"INA_CONTROLLER": "h:1"}, "INA_JOB is not set"),
        ({"INA_PLAN": "p.json", "INA_TRANSPORT": "tcp"}, "INA_TRANSPORT 'tcp' is not"),
        ({"INA_PLAN": "p.json", "INA_TRANSPORT": "attach:h:1,x"}, "INA_TRANSPORT attach must be HOST:PORT"),
        ({"INA_PLAN": "p.json", "INA_TIMEOUT": "soon"}, "INA_TIMEOUT must be a number"),
        ({"INA_PLAN": "p.json", "INA_TIMEOUT": "-1"}, "INA_TIMEOUT must be positive"),
    ],
)
def test_bad_settings_are_one_clear_line(env, words):
    with pytest.raises(InaConfigError, match=words):
        InaOptions.from_env(env)


def test_unsupported_ops_and_dtypes_named():
    for op in ("PRODUCT", "BAND", "BOR", "BXOR"):
        with pytest.raises(InaUnsupportedError, match=f"ReduceOp.{op} is not supported"):
            check_op(getattr(dist.ReduceOp, op))
    for dtype in (torch.float64, torch.bool, torch.int8, torch.uint8, torch.complex64):
        with pytest.raises(InaUnsupportedError, match="is not supported"):
            SwitchReduction([torch.zeros(2, dtype=dtype)], dist.ReduceOp.SUM, 2)
    with pytest.raises(InaUnsupportedError, match="one dtype"):
        SwitchReduction([torch.zeros(2), torch.zeros(2, dtype=torch.int32)], dist.ReduceOp.SUM, 2)
    with pytest.raises(InaUnsupportedError, match="dense"):
        SwitchReduction([torch.zeros(2, 2).to_sparse()], dist.ReduceOp.SUM, 2)


def test_missing_plan_file_fails_init_with_one_line(tmp_path):
    def env(rank):
        return {"INA_PLAN": str(tmp_path / "none.json"), "INA_TRANSPORT": "udp"}

    with pytest.raises(AssertionError, match="INA_PLAN .*none.json: No such file"):
        run_ranks(_init_only, 2, env=env, deadline=60)


def _init_only(rank, world):
    from torch_ranks import init

    init("ina", rank, world)


def test_work_wait_times_out_instead_of_hanging(tmp_path):
    with ina_job(2, tmp_path) as job:
        out = run_ranks(wait_timeout, 2, env=lambda r: dict(job.worker_env(r), INA_TIMEOUT="3"))
    assert out[0].startswith("TimeoutError: ina all_reduce did not complete within 0.5 s"), out[0]


def test_an_all_reduce_that_stalls_unseen_by_the_time_budget_fails_at_the_stall_limit(tmp_path):
    """The torch channel's backstop: no progress for 2 x INA_TIMEOUT plus one capped resend period
    (16 x INA_RTO) fails the all_reduce with an error naming the rank, the round and what was heard."""
    with server_only_job(2, tmp_path) as env:
        out = run_ranks(stalled_all_reduce, 2, env=lambda r: dict(env(r), INA_TIMEOUT="1", INA_RTO="0.05"))
    error, took = out[0]
    limit = 2 * 1.0 + 16 * 0.05
    assert limit <= took < limit + 2.0, (took, error)
    assert error.startswith("RuntimeError: ina all_reduce failed: job 11 rank 0: "), error
    assert "no progress (no new result, no new round, no new plan version) for " in error, error
    assert (
        f"past the stall limit of {limit:.3g} s (2 x the time budget of 1 s, INA_TIMEOUT" in error
        and "tree 0 (w0 -> ps): last result" in error
    ), error


def test_the_job_token_reaches_the_job_service():
    from controller.generators import star
    from controller.jobservice import JobClient, JobManager, JobServer
    from worker.torch_backend.channel import load_plan

    server = JobServer(JobManager(star(2)), token="service-secret").start()
    admin = JobClient(server.address, token="service-secret")
    try:
        plan = admin.register(["h1", "h2"], ["h3"])
        env = {"INA_CONTROLLER": server.address, "INA_JOB": str(plan.job_id), "INA_TOKEN": "x"}
        o = InaOptions.from_env(env)
        assert o.token == "x"
        with pytest.raises(InaConfigError, match=f"needs the service's token or job {plan.job_id}'s"):
            load_plan(o)
        assert load_plan(InaOptions.from_env(dict(env, INA_TOKEN=admin.job_tokens[plan.job_id]))) == plan
    finally:
        admin.close()
        server.stop()


def test_the_backend_reaches_a_job_service_over_tls(tmp_path):
    """INA_TLS_CA (and a client certificate where the service checks clients): the plan comes over TLS;
    a rank without the CA gets one clear line."""
    import shutil

    from controller.generators import star
    from controller.jobservice import JobManager, JobServer
    from controller.options import PlanOptions
    from controller.tls import TlsFiles, make_certificates
    from worker.torch_backend.channel import load_plan

    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (scripts/setup.sh installs it)")
    pki = make_certificates(tmp_path)
    manager = JobManager(star(2))
    plan, _ = manager.register(["h1", "h2"], ["h3"], PlanOptions())
    tls = TlsFiles(pki.server_cert, pki.server_key, pki.ca, client_auth=True)
    server = JobServer(manager, tls=tls, token="service-secret").start()
    env = {"INA_CONTROLLER": server.address, "INA_JOB": str(plan.job_id), "INA_TOKEN": "service-secret"}
    try:
        tls_env = dict(env, INA_TLS_CA=pki.ca, INA_TLS_CERT=pki.client_cert, INA_TLS_KEY=pki.client_key)
        assert load_plan(InaOptions.from_env(tls_env)) == plan
        with pytest.raises(InaConfigError, match=f"job {plan.job_id} from {server.address}: "):
            load_plan(InaOptions.from_env(dict(env, INA_TIMEOUT="2")))  # plaintext to a TLS service
        with pytest.raises(InaConfigError, match="INA_TLS_CERT and INA_TLS_KEY go together"):
            InaOptions.from_env(dict(env, INA_TLS_CA=pki.ca, INA_TLS_CERT=pki.client_cert))
        with pytest.raises(InaConfigError, match="cannot read the TLS CA /nonexistent.pem"):
            load_plan(InaOptions.from_env(dict(env, INA_TLS_CA="/nonexistent.pem")))
    finally:
        server.stop()


# DDP with an ina group whose switch exchange fails (as a lost network does); in a child process,
# since the bug this guards against killed the process with SIGSEGV instead of raising
FAILED_BUCKET = """
import datetime
import torch
import torch.distributed as dist
from torch import nn
from worker.stream import AllreduceError
from worker.torch_backend.process_group import InaProcessGroup, SwitchChannel

class LostNetwork(SwitchChannel):
    agent = None
    def aggregate(self, array, op):
        raise AllreduceError("chunk 0 unanswered after 3 retransmissions")
    def close(self):
        pass

group = InaProcessGroup(dist.HashStore(), 0, 1, datetime.timedelta(seconds=10), LostNetwork)
model = nn.parallel.DistributedDataParallel(nn.Linear(4, 2), process_group=group)
try:
    model(torch.ones(3, 4)).sum().backward()
except RuntimeError as exc:
    print(exc)
"""


def test_a_failed_ddp_bucket_raises_its_error_in_backward():
    """DDP's reducer reads the bucket's future in C++: a failed exchange must be an error there too."""
    done = subprocess.run([sys.executable, "-c", FAILED_BUCKET], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"exit status {done.returncode}: {done.stderr[-2000:]}"
    assert "ina all_reduce failed: chunk 0 unanswered after 3 retransmissions" in done.stdout, done.stdout


def test_a_failed_dlgs_exchange_raises_its_error_in_backward():
    """The DLGS hook's future is what DDP reads in C++: a failed exchange must be an error there that names
    the failure, not a value it cannot read as the bucket (was 'Unable to cast ... to Tensor')."""
    from worker.stream import AllreduceError
    from worker.torch_backend.compression_hooks import DlgsState, dlgs_hook
    from worker.torch_backend.process_group import InaProcessGroup, SwitchChannel

    class LostAgent:
        def allreduce(self, array, op="sum"):
            raise AllreduceError("chunk 0 unanswered after 3 retransmissions")

    class LostNetwork(SwitchChannel):
        agent = LostAgent()

        def aggregate(self, array, op):
            raise AssertionError("DLGS exchanges through the agent")

        def close(self):
            pass

    group = InaProcessGroup(dist.HashStore(), 0, 1, datetime.timedelta(seconds=10), LostNetwork)
    try:
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(4, 2), process_group=group)
        model.register_comm_hook(DlgsState(group, ratio=0.5), dlgs_hook)
        with pytest.raises(RuntimeError) as failed:
            model(torch.ones(3, 4)).sum().backward()
        message = str(failed.value)
        assert "exchange of 10 values failed: chunk 0 unanswered after 3 retransmissions" in message, message
        assert "Unable to cast" not in message, message
    finally:
        group.shutdown()
