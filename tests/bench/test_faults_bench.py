"""bench/faults.py in its quick mode: exit 0 (every row ok), and the JSON it saves has the loss rows
exact, the spine and link rows exact with a re-plan, the dead peers' rows ending in errors on the
victim only, and every forged packet dropped as not admitted."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_campaign_every_row_exact_or_a_clear_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "faults.py"), "--quick", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((tmp_path / "faults.json").read_text())
    rows = {r["row"]: r for r in summary["rows"]}
    assert summary["all_ok"] and (tmp_path / "faults.png").stat().st_size > 0
    assert rows["loss 20% +dup 5% +reorder 10%"]["exact_runs"] == 1
    assert rows["loss 20% +dup 5% +reorder 10%"]["resent_share"] > 0.3
    spine = next(r for name, r in rows.items() if name.startswith("spine"))
    assert spine["victim"]["exact"] == 4 and spine["replan_s"] is not None and spine["chunks_moved"] > 0
    dead_worker = rows["victim worker h7 dead from the start"]
    assert dead_worker["victim"]["errors"] == 4 and dead_worker["bystander"]["exact"] == 4
    # the victim's leaf-spine tree has a switch aggregating every worker: it sends the results itself, and a
    # dead server stops no round (docs/protocol.md, "Root multicast")
    dead_server = rows["victim's server h9 killed"]
    assert dead_server["expect"] == "exact" and dead_server["victim"]["exact"] == 4
    assert dead_server["bystander"]["exact"] == 4
    storm = rows["forged-packet storm from the bystander's hosts"]
    assert storm["not_admitted"] == storm["forged"] > 0
