"""The mininet-style path without root: kernel UDP sockets on loopback addresses and a plan file
(INA_PLAN, INA_TRANSPORT=udp). The plan has no switches, so the aggregation server completes the
sums: this checks the backend's transport and plan-file handling, not in-network aggregation."""

import numpy as np
from ina_jobs import server_only_job
from rank_bodies import small_sums
from torch_ranks import run_ranks


def test_udp_transport_with_plan_file(tmp_path):
    with server_only_job(2, tmp_path, job_id=12) as env:
        out = run_ranks(small_sums, 2, env=env)
    for f, i in out:
        np.testing.assert_allclose(f, np.full(130, 0.75), rtol=1e-7)
        np.testing.assert_array_equal(i, np.arange(10) * 2)
