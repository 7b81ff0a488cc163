"""A local ina job for runs without root: switches, controller plan and server in a child process.

``LocalInaJob`` starts ``python -m worker.torch_backend.local_network`` which builds the in-process
network of a topology (softswitch switches running p4src/ina.p4, on the wall clock), plans the job
with the controller's planner, installs it into the switches, runs the aggregation server agent and
opens one attach endpoint per worker host, and serves the plan with the controller's job service.
It prints one JSON line (job service address, job id, endpoints) and runs until its stdin closes, so
it never outlives the parent. Worker processes join with INA_CONTROLLER, INA_JOB and
INA_TRANSPORT=attach:HOST:PORT (``worker_env(rank)``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_TOPOLOGY = REPO / "topologies" / "star.yaml"


class LocalInaJob:
    """Context manager: the network child process for ``workers`` ranks, and each rank's env."""

    def __init__(self, workers: int, topology: str | Path = DEFAULT_TOPOLOGY, job_id: int = 1,
                 startup_timeout: float = 120.0, rto: float = 0.05):
        self.workers = workers
        self.topology = Path(topology)
        self.job_id = job_id
        self.startup_timeout = startup_timeout
        self.rto = rto
        self.proc: subprocess.Popen | None = None
        self.switch_counters: dict = {}     # after exit: per switch, the job's P4 counters
        self._dir: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> "LocalInaJob":
        self._dir = tempfile.TemporaryDirectory(prefix="ina-job-")
        self.plan_path = Path(self._dir.name) / "plan.json"
        env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "worker.torch_backend.local_network", "--topology", str(self.topology),
             "--workers", str(self.workers), "--job-id", str(self.job_id), "--plan-out", str(self.plan_path)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
            cwd=str(REPO))
        line = _readline(self.proc, self.startup_timeout)
        if not line:
            err = self._stop()
            last = err.strip().splitlines()[-1] if err.strip() else "no output"
            raise RuntimeError(f"the local ina network did not start: {last}")
        info = json.loads(line)
        self.endpoints = {int(r): tuple(ep) for r, ep in info["endpoints"].items()}
        self.switches = info["switches"]
        self.controller, self.job_id = info["controller"], info["job_id"]
        return self

    def worker_env(self, rank: int) -> dict:
        host, port = self.endpoints[rank]
        return {"INA_CONTROLLER": self.controller, "INA_JOB": str(self.job_id),
                "INA_TRANSPORT": f"attach:{host}:{port}", "INA_RTO": str(self.rto)}

    def common_env(self) -> dict:
        """One environment for every rank (torchrun): rank r attaches to the r-th port."""
        host = self.endpoints[0][0]
        ports = ",".join(str(self.endpoints[r][1]) for r in range(self.workers))
        return {"INA_CONTROLLER": self.controller, "INA_JOB": str(self.job_id),
                "INA_TRANSPORT": f"attach:{host}:{ports}", "INA_RTO": str(self.rto)}

    def __exit__(self, *exc) -> None:
        self._stop()

    def _stop(self) -> str:
        err = ""
        if self.proc is not None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
                err = self.proc.stderr.read()
                for line in err.splitlines():
                    if line.startswith('{"switch_counters"'):
                        self.switch_counters = json.loads(line)["switch_counters"]
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                err = self.proc.stderr.read()
            self.proc = None
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None
        return err or ""


def _readline(proc: subprocess.Popen, timeout: float) -> str:
    import selectors

    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    if not sel.select(timeout):
        return ""
    return proc.stdout.readline()


# -- the child process -------------------------------------------------------------------------------

def serve(topology: str, n_workers: int, job_id: int, plan_out: str) -> None:
    from controller.jobservice import JobManager, JobServer
    from controller.planner import PlanOptions
    from controller.topology_yaml import load_topology
    from server.agent import ServerAgent
    from topologies.inprocess.fabric import AttachServer, InProcessNetwork
    from worker.loop import RealTimeLoop

    topo = load_topology(topology)
    workers = [h.name for h in topo.role_hosts("worker")]
    servers = [h.name for h in topo.role_hosts("server")]
    if len(workers) < n_workers or not servers:
        raise SystemExit(f"topology {topo.name} has {len(workers)} worker hosts and {len(servers)} servers; "
                         f"{n_workers} workers and a server are needed (choose a larger topology)")
    loop = RealTimeLoop()
    net = InProcessNetwork(topo, loop=loop, seed=0)
    net.install_routes()
    # the controller's job service plans the job and installs it into the switches; the workers
    # fetch the plan from it over gRPC
    manager = JobManager(topo, installer=net)
    plan, _ = manager.register(workers[:n_workers], servers[:1], PlanOptions(job_id=job_id))
    jobs = JobServer(manager).start()
    server = ServerAgent(net.transport(servers[0]), servers[0])
    server.add_job(plan)
    attach = AttachServer(net, hosts=[w.name for w in plan.workers])
    Path(plan_out).write_text(plan.to_json())
    endpoints = {w.rank: attach.endpoints[w.name] for w in plan.workers}
    print(json.dumps({"endpoints": endpoints, "switches": sorted(net.switches), "controller": jobs.address,
                      "job_id": plan.job_id}), flush=True)
    loop.add_reader(sys.stdin, lambda: loop.stop() if not os.read(sys.stdin.fileno(), 4096) else None)
    loop.run_forever()
    attach.close()
    jobs.stop()
    print(json.dumps({"switch_counters": job_counters(net, plan)}), file=sys.stderr, flush=True)


def job_counters(net, plan) -> dict:
    """Per switch, the job's P4 counters (InaIngress.ina_stats): what the data plane itself did."""
    from protocol import constants as C

    names = {"grad_aggregated": C.STAT_GRAD_AGGREGATED, "grad_completed": C.STAT_GRAD_COMPLETED,
             "grad_duplicate": C.STAT_GRAD_DUPLICATE, "overflow": C.STAT_OVERFLOW}
    out = {}
    for name, sw in net.switches.items():
        counter = sw.counter("InaIngress.ina_stats")
        base = plan.job_index * C.NUM_STATS
        out[name] = {k: counter.read(base + i)[0] for k, i in names.items()}
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description="in-process ina network for local torch runs")
    p.add_argument("--topology", default=str(DEFAULT_TOPOLOGY))
    p.add_argument("--workers", type=int, required=True)
    p.add_argument("--job-id", type=int, default=1)
    p.add_argument("--plan-out", required=True)
    a = p.parse_args(argv)
    serve(a.topology, a.workers, a.job_id, a.plan_out)


if __name__ == "__main__":
    main()
