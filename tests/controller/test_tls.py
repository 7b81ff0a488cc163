"""TLS on the control plane: softswitch's P4Runtime server (simple_switch_grpc's --grpc-server-ssl flags)
and the job service (TLS and tokens), with certificates made by openssl for the test."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from controller.errors import JobServiceError, P4RuntimeError
from controller.generators import leaf_spine, star
from controller.jobservice import JobClient, JobManager, JobServer
from controller.p4rt import SwitchConnection
from controller.tls import TlsFiles, make_certificates

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "p4src" / "ina.p4"


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    """A CA, a server certificate for 127.0.0.1/localhost and a client certificate, all signed by the CA."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (scripts/setup.sh installs it)")
    c = make_certificates(tmp_path_factory.mktemp("pki"))
    return {
        "ca": c.ca,
        "cert": c.server_cert,
        "key": c.server_key,
        "client_cert": c.client_cert,
        "client_key": c.client_key,
    }


def _p4runtime_server(credentials):
    from softswitch.p4runtime_server import P4RuntimeServer, P4RuntimeService
    from softswitch.switch import Switch

    service = P4RuntimeService(
        None, device_id=1, include_dirs=[str(PROGRAM.parent)], make_switch=lambda prog: Switch(prog, device_id=1)
    )
    return P4RuntimeServer(service, "127.0.0.1:0", credentials=credentials).start()


def test_p4runtime_over_tls_with_client_authentication(pki):
    from softswitch.p4runtime_server import server_credentials

    server = _p4runtime_server(server_credentials(pki["cert"], pki["key"], pki["ca"], client_auth=True))
    try:
        client = TlsFiles(cert=pki["client_cert"], key=pki["client_key"], ca=pki["ca"])
        with SwitchConnection(server.address, 1, timeout=5, name="s1", tls=client).open() as conn:
            with pytest.raises(P4RuntimeError, match="no forwarding pipeline config set"):
                conn.get_p4info()  # the server's own answer, over the TLS session (arbitration passed)
        for tls in (None, TlsFiles(ca=pki["ca"])):  # plaintext, or TLS without a client certificate
            with pytest.raises(P4RuntimeError, match="switch s1: no P4Runtime server at 127.0.0.1"):
                SwitchConnection(server.address, 1, timeout=1, name="s1", tls=tls).open()
    finally:
        server.stop()


def test_softswitch_refuses_tls_flags_without_their_files(tmp_path):
    out = subprocess.run(
        [sys.executable, "-m", "softswitch", "--no-p4", "--grpc-server-addr", "127.0.0.1:0", "--grpc-server-ssl"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert out.returncode != 0
    assert "--grpc-server-ssl needs --grpc-server-cert and --grpc-server-key" in out.stderr


def test_job_service_over_tls_with_tokens_keeps_jobs_apart(pki):
    manager = JobManager(leaf_spine())
    server = JobServer(manager, tls=TlsFiles(pki["cert"], pki["key"]), token="service-secret").start()
    tls = TlsFiles(ca=pki["ca"])
    admin = JobClient(server.address, tls=tls, token="service-secret")
    try:
        a = admin.register(["h1", "h2"], ["h9"])
        b = admin.register(["h3", "h4"], ["h9"])
        token_a = admin.job_tokens[a.job_id]
        assert len(token_a) == 32 and token_a != admin.job_tokens[b.job_id]
        agent_a = JobClient(server.address, tls=tls, token=token_a)
        assert agent_a.get_plan(a.job_id) == a
        with pytest.raises(JobServiceError, match=f"needs the service's token or job {b.job_id}'s"):
            agent_a.get_plan(b.job_id)
        with pytest.raises(JobServiceError, match=f"needs the service's token or job {b.job_id}'s"):
            agent_a.release(b.job_id)
        with pytest.raises(JobServiceError, match="needs the service's token"):
            agent_a.register(["h5"], ["h9"])
        with pytest.raises(JobServiceError, match="needs the service's token"):
            JobClient(server.address, tls=tls).list()
        with pytest.raises(JobServiceError):  # plaintext to a TLS server
            JobClient(server.address, timeout=2, token="service-secret").list()
        assert [j.job_id for j in admin.list()] == [a.job_id, b.job_id]
        agent_a.release(a.job_id)
        assert [j.job_id for j in admin.list()] == [b.job_id]
    finally:
        admin.close()
        server.stop()


def test_plaintext_servers_warn_only_off_loopback(capfd):
    JobServer(JobManager(star(2)), "127.0.0.1:0").stop()
    assert "without TLS" not in capfd.readouterr().err
    JobServer(JobManager(star(2)), "0.0.0.0:0").stop()
    assert "warning: the job service listens on 0.0.0.0:0 without TLS" in capfd.readouterr().err
    server = _p4runtime_server(None)
    server.stop()
    assert "without TLS" not in capfd.readouterr().err
