"""A Ray node lost mid-sweep (removed from the cluster, not just its worker killed): the tasks
it was running run again on the other node, and every task ends with exactly one trace."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

from .conftest import read_traces, write_config, write_dataset

_SLOW = "import time\n\n\ndef run(x):\n    time.sleep(0.4)\n    return x + 1\n"


def test_tasks_of_a_lost_node_run_again_on_another(tmp_path: Path) -> None:
    data = write_dataset(tmp_path / "data", {"slow": _SLOW}, 12)
    cfg = write_config(tmp_path / "h100.yaml", [data], tmp_path / "results", hardware="H100")
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("node_loss_proc.py")), str(cfg)],
        capture_output=True,
        text=True,
        timeout=400,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["removed"], out
    assert "error" not in out, out
    assert out["statuses"] == {"PASSED": 12} and out["ran"] == 12, out
    assert out["workers_died"] >= 1, out
    traces = read_traces(tmp_path / "results")
    ids = Counter(t["provenance"]["task_id"] for t in traces)  # type: ignore[index]
    assert len(ids) == 12 and set(ids.values()) == {1}, ids  # none lost, none twice
    nodes = Counter(t["provenance"]["node_id"] for t in traces)  # type: ignore[index]
    assert nodes[out["head"]] >= 1 and set(nodes) <= {out["head"], out["doomed"]}, nodes
    # the task that was running on the lost node ran again, on the head, as attempt 1
    rerun = [t for t in traces if t["provenance"].get("attempt")]  # type: ignore[union-attr]
    assert out["retried"] >= 1 and rerun, out
    assert all(t["provenance"]["node_id"] == out["head"] for t in rerun)  # type: ignore[index]
