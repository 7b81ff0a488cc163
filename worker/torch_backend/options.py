"""Job options of the ``ina`` backend: environment variables, overridable by ``pg_options``.

torchrun provides MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE (the store and the ranks); the
``INA_*`` variables below say where the in-network aggregation comes from. Parsing happens once,
at process-group creation, so a typo is reported as one clear line before any training starts.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from controller.options import RTO_PYTHON_SWITCHES_S
from worker.errors import AgentError
from worker.torch_backend.scales import ONE_ROUND_MAX_WORLD, ROUNDS_CHOICES, float_sum_rounds

if TYPE_CHECKING:
    from controller.tls import TlsFiles


class InaConfigError(AgentError, ValueError):
    """An INA_* setting or pg_options field that cannot be used."""


@dataclass
class InaOptions:
    """Options of one ``ina`` process group (pass an instance as ``pg_options`` to override env).

    controller:  "host:port" of the controller's job service (INA_CONTROLLER).
    job:         job name or id registered with the controller (INA_JOB).
    plan:        path of a JobPlan JSON file, instead of asking a controller (INA_PLAN).
    transport:   "udp" (kernel UDP sockets, e.g. in mininet) or "attach:HOST:PORT" (join an
                 in-process network running in another OS process) (INA_TRANSPORT); with
                 "attach:HOST:PORT0,PORT1,..." rank r uses PORTr, so one environment serves every
                 rank (torchrun).
    host:        this rank's host name in the plan; default: the plan's worker with this rank
                 (INA_HOST).
    timeout:     seconds a switch allreduce may go without a new result before it fails (INA_TIMEOUT):
                 a chunk is resent until then (counted from its first send or the last result,
                 whichever is later), so a lossy path that still delivers is ridden out.
    rto:         first retransmission timeout of a chunk, seconds (INA_RTO); the agent raises it
                 to twice the measured round trip and doubles it per resend.
    retries:     if set, also fail after this many resends of one chunk (INA_RETRIES; default: no
                 count, only the time budget).
    token:       the job's token (or the service's) when the job service has one (INA_TOKEN).
    tls_ca:      PEM CA that signs the job service's certificate: talk to it over TLS (INA_TLS_CA).
    tls_cert, tls_key: this rank's client certificate and key, when the service checks clients
                 (INA_TLS_CERT, INA_TLS_KEY).
    tls_server_name: the name in the service's certificate, when INA_CONTROLLER gives an address
                 (INA_TLS_SERVER_NAME).
    float_sum_rounds: the path of float SUM/AVG all_reduces (INA_FLOAT_SUM_ROUNDS, scales.py): "1"
                 sends the values at once at the scales the last call of the size ended with (one round
                 trip; error below 16 N^3 2^-30 of a block's largest value), "2" agrees on the scales
                 first in every call (two round trips; below 2 N^2 2^-30), "auto" takes 1 up to
                 ``one_round_max_world`` ranks and 2 above.
    one_round_max_world: the largest group "auto" sends in one round trip (INA_ONE_ROUND_MAX_WORLD,
                 default 8: there the one-round bound is 2^-17, 64 float32 ulps).

    With a controller, the rank also follows the job's plan (WatchPlan): when the controller re-plans
    the job around a failed switch or link, the next chunks go over the new trees and those in flight
    move to its recovery tree; when no tree remains, the collective fails with the controller's reason.
    """

    controller: str | None = None
    job: str | None = None
    plan: str | None = None
    transport: str = "udp"
    host: str | None = None
    timeout: float = 60.0
    rto: float = RTO_PYTHON_SWITCHES_S
    retries: int | None = None
    token: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_server_name: str | None = None
    float_sum_rounds: str = "auto"
    one_round_max_world: int = ONE_ROUND_MAX_WORLD

    ENV = {
        "controller": "INA_CONTROLLER",
        "job": "INA_JOB",
        "plan": "INA_PLAN",
        "transport": "INA_TRANSPORT",
        "host": "INA_HOST",
        "timeout": "INA_TIMEOUT",
        "rto": "INA_RTO",
        "retries": "INA_RETRIES",
        "token": "INA_TOKEN",
        "tls_ca": "INA_TLS_CA",
        "tls_cert": "INA_TLS_CERT",
        "tls_key": "INA_TLS_KEY",
        "tls_server_name": "INA_TLS_SERVER_NAME",
        "float_sum_rounds": "INA_FLOAT_SUM_ROUNDS",
        "one_round_max_world": "INA_ONE_ROUND_MAX_WORLD",
    }

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, overrides: InaOptions | None = None) -> InaOptions:
        """Options from INA_* variables; fields set (not None) on ``overrides`` win."""
        env = os.environ if environ is None else environ
        values = {}
        for name, var in cls.ENV.items():
            if env.get(var, "") != "":
                values[name] = _convert(name, var, env[var])
        opts = cls(**values)
        if overrides is not None:
            for f in dataclasses.fields(cls):
                v = getattr(overrides, f.name)
                if v is not None and v != f.default:
                    setattr(opts, f.name, v)
        opts.validate()
        return opts

    def validate(self) -> None:  # noqa: C901 (a chain of independent option checks, each raising its own one-line error)
        """Raise InaConfigError naming the first option that cannot be used."""
        if not self.plan:
            if not self.controller:
                raise InaConfigError(
                    "INA_CONTROLLER is not set: the ina backend needs the controller's "
                    "job service address (host:port) or a plan file (INA_PLAN)"
                )
            parse_host_port(self.controller, "INA_CONTROLLER")
            if not self.job:
                raise InaConfigError("INA_JOB is not set: the ina backend needs the job's name or id")
        self.transport_kind()
        if not self.timeout > 0:
            raise InaConfigError(f"INA_TIMEOUT must be positive, got {self.timeout}")
        if not self.rto > 0:
            raise InaConfigError(f"INA_RTO must be positive, got {self.rto}")
        if self.retries is not None and self.retries < 0:
            raise InaConfigError(f"INA_RETRIES must be >= 0, got {self.retries}")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise InaConfigError("INA_TLS_CERT and INA_TLS_KEY go together (a client certificate and its key)")
        if (self.tls_cert or self.tls_server_name) and not self.tls_ca:
            raise InaConfigError("INA_TLS_CERT / INA_TLS_SERVER_NAME need INA_TLS_CA (the CA of the job service)")
        if self.float_sum_rounds not in ROUNDS_CHOICES:
            raise InaConfigError(f"INA_FLOAT_SUM_ROUNDS must be auto, 1 or 2, got {self.float_sum_rounds!r}")
        if self.one_round_max_world < 1:
            raise InaConfigError(f"INA_ONE_ROUND_MAX_WORLD must be >= 1, got {self.one_round_max_world}")

    def float_sum_path(self, world_size: int) -> int:
        """Round trips of the float SUM/AVG path (1 or 2) a group of ``world_size`` ranks takes."""
        return float_sum_rounds(world_size, self.float_sum_rounds, self.one_round_max_world)

    def float_sum_setting(self) -> str:
        """The options that choose the float sum path, as a rank's error message names them."""
        return f"INA_FLOAT_SUM_ROUNDS={self.float_sum_rounds}, INA_ONE_ROUND_MAX_WORLD={self.one_round_max_world}"

    def tls_files(self) -> TlsFiles | None:
        """The job service's TLS files (controller.tls.TlsFiles), or None for plaintext."""
        if not self.tls_ca:
            return None
        from controller.tls import TlsFiles

        return TlsFiles(cert=self.tls_cert, key=self.tls_key, ca=self.tls_ca, server_name=self.tls_server_name)

    def transport_kind(self) -> tuple[str, list[tuple[str, int]]]:
        """("udp", []) or ("attach", [(host, port), ...]) (one endpoint, or one per rank)."""
        if self.transport == "udp":
            return "udp", []
        if self.transport.startswith("attach:"):
            host, sep, ports = self.transport[len("attach:") :].rpartition(":")
            endpoints = [parse_host_port(f"{host}:{p}", "INA_TRANSPORT attach") for p in ports.split(",")]
            return "attach", endpoints
        raise InaConfigError(f"INA_TRANSPORT {self.transport!r} is not 'udp' or 'attach:HOST:PORT[,PORT...]'")


def parse_host_port(text: str, what: str) -> tuple[str, int]:
    """``HOST:PORT`` as (host, port).

    Raises
    ------
    InaConfigError
        Not of that form, or a port outside 1..65535.

    Examples
    --------
    >>> parse_host_port("127.0.0.1:50050", "INA_CONTROLLER")
    ('127.0.0.1', 50050)
    """
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise InaConfigError(f"{what} must be HOST:PORT, got {text!r}")
    return host, int(port)


def _convert(name: str, var: str, text: str):
    kind = {f.name: f.type for f in dataclasses.fields(InaOptions)}[name]
    try:
        if kind == "float":
            return float(text)
        if kind in ("int", "int | None"):
            return int(text)
    except ValueError:
        raise InaConfigError(f"{var} must be a number, got {text!r}") from None
    return text


def attach_env(served, rank: int | None = None, rto: float = 0.05) -> dict[str, str]:
    """INA_* variables for ranks of the start job of an in-process network served by
    ``python -m topologies.inprocess serve`` (``topologies.inprocess.serve.ServedNetwork``): rank
    ``rank``'s attach endpoint, or with ``rank=None`` one environment for every rank (torchrun:
    rank r uses the r-th port)."""
    ranks = range(len(served.workers)) if rank is None else [rank]
    endpoints = [served.rank_endpoint(r) for r in ranks]
    ports = ",".join(str(port) for _, port in endpoints)
    return {
        "INA_CONTROLLER": served.controller,
        "INA_JOB": str(served.job_id),
        "INA_TRANSPORT": f"attach:{endpoints[0][0]}:{ports}",
        "INA_RTO": str(rto),
    }
