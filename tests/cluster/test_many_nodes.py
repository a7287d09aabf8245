"""Nodes lost and added during a sweep, on a three-node Ray cluster (logical GPUs, the fake
backend): the tasks of the lost node run again elsewhere, the added node takes work, and
every task ends with exactly one trace, in the logs and in the store.

The cluster is changed from what the tasks report (which node runs one), never after a
time, and the tasks finish only once the test opens their gate (``many_nodes_proc.py``), so
a loaded machine makes it slower, not different.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from .conftest import REPO, read_traces, write_config, write_dataset

_TASKS = 24


@pytest.mark.slow
def test_a_node_lost_and_one_added_mid_sweep_leave_one_trace_per_task(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    data = write_dataset(
        tmp_path / "data", {"gate": f"# gate {gate}\ndef run(x):\n    return x + 1\n"}, _TASKS
    )
    results = tmp_path / "results"
    cfg = write_config(tmp_path / "h100.yaml", [data], results, hardware="H100")
    proc = subprocess.run(
        [sys.executable, str(Path(__file__).with_name("many_nodes_proc.py")), str(cfg), str(gate)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
        cwd=REPO,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["b_ran"] and out.get("d_ran"), out  # B ran a task before it was removed; D after it came
    assert "error" not in out, out
    assert out["statuses"] == {"PASSED": _TASKS} and out["ran"] == _TASKS, out
    # B's worker died with its tasks in flight: the running one retried, the queued one requeued
    assert out["workers_died"] >= 1 and out["retried"] >= 1 and out["workers_started"] >= 4, out

    traces = read_traces(results)
    ids = Counter(t["provenance"]["task_id"] for t in traces)  # type: ignore[index]
    assert len(ids) == _TASKS and set(ids.values()) == {1}, ids  # none lost, none twice
    nodes = Counter(t["provenance"]["node_id"] for t in traces)  # type: ignore[index]
    assert out["b"] not in nodes, nodes  # its tasks waited at the gate when it was removed
    assert out["d"] in nodes and set(nodes) <= {out["a"], out["c"], out["d"]}, nodes

    import duckdb

    con = duckdb.connect(str(results / "sweep.duckdb"), read_only=True)  # the file alone, no log tail
    try:
        rows = con.execute("SELECT task_id, count(*) FROM traces GROUP BY task_id").fetchall()
    finally:
        con.close()
    assert len(rows) == _TASKS and {n for _, n in rows} == {1}, rows
