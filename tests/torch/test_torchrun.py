"""torchrun's environment is enough to start the ina backend (plus the INA_* variables)."""

import os
import re
import subprocess
import sys
from pathlib import Path

from ina_jobs import ina_job
from torch_ranks import free_port

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def test_torchrun_two_ranks(tmp_path):
    with ina_job(2, tmp_path) as job:
        env = dict(os.environ, **job.common_env(), PYTHONPATH=str(REPO), OMP_NUM_THREADS="1")
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "torch.distributed.run",
                "--nproc-per-node",
                "2",
                "--master-addr",
                "127.0.0.1",
                "--master-port",
                str(free_port()),
                str(HERE / "torchrun_script.py"),
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            cwd=str(REPO),
        )
    assert proc.returncode == 0, proc.stderr[-2000:]
    # the two ranks share stdout: lines may interleave, so find the reports anywhere
    reports = sorted(re.findall(r"rank \d/\d backend \w+ avg [\d.]+", proc.stdout))
    assert reports == ["rank 0/2 backend ina avg 1.5000", "rank 1/2 backend ina avg 1.5000"], proc.stdout
    assert job.switch_counters["s1"]["grad_completed"] > 0
