"""bench/softswitch_pps.py in its quick mode: exit 0, the JSON it saves has every packet kind with positive
rates, and the veth part either ran (root: frames crossed the softswitch process) or says why not."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KINDS = {
    "ipv4_router_forward",
    "ina_ipv4_forward",
    "grad_absorbed",
    "grad_completing",
    "grad_aggregation",
    "result_release",
    "grad_passthrough",
}


def test_quick_run_saves_positive_rates_for_every_kind(tmp_path):
    proc = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "softswitch_pps.py"),
            "--quick",
            "--seconds",
            "0.2",
            "--out",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stderr
    assert "100k" in proc.stdout
    result = json.loads((tmp_path / "softswitch_pps.json").read_text())
    assert (tmp_path / "softswitch_pps.png").stat().st_size > 0
    assert result["values_per_packet"] == 64 and result["bmv2_reference_pps"] == 100_000
    rows = {r["kind"]: r for r in result["in_process"]}
    assert set(rows) == KINDS
    for row in rows.values():
        assert row["pps_median"] > 0 and row["pps_min"] <= row["pps_median"] <= row["pps_max"]
        assert row["ratio_to_bmv2_reference"] == row["pps_median"] / 100_000

    veth = result["veth"]
    if os.geteuid() != 0:
        assert veth["skipped"] and "root" in veth["skipped"] and veth["cases"] == []
        assert f"skipped: {veth['skipped']}" in proc.stdout
        return
    assert veth["skipped"] is None, veth["skipped"]
    assert [c["case"] for c in veth["cases"]] == [
        "plain IPv4 forward",
        "GRAD aggregation, fan-in 4",
        "GRAD pass-through hop",
    ]
    for case in veth["cases"]:
        assert case["sent"] > 0 and 0 < case["delivered"] <= case["expected_delivered"]
        assert case["delivered_pps"] > 0
    aggregation = veth["cases"][1]
    assert aggregation["expected_delivered"] == aggregation["sent"] // 4
    assert aggregation["processed"] >= aggregation["delivered"] * 4 and aggregation["processed_pps"] > 0
