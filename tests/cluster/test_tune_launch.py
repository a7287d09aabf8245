"""``sweep tune`` end to end on an embedded Ray (the shipped CPU search, the Triton
interpreter): every round's traces are read back, and the rounds share their workers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from sweep.store import query

from .conftest import REPO, run_fresh

# The driver, with every worker the rounds ask for counted by kind (new, or a warm one reused).
_DRIVER = """
import json, sys
from sweep.cluster import warm, workers
from sweep.launch.driver import LaunchOptions
from sweep.launch.tune import tune

starts = []
for cls in (warm.WarmWorkers, workers.FreshWorkers):
    def counted(self, pool, spec, _start=cls.start):
        got = _start(self, pool, spec)
        starts.append(got.reused)
        return got
    cls.start = counted
tune(sys.argv[1], LaunchOptions(quiet=True))
print(json.dumps({"new": starts.count(False), "reused": starts.count(True)}))
"""


@pytest.mark.slow
def test_a_guided_search_reads_every_round_and_reuses_its_workers(tmp_path: Path) -> None:
    results = tmp_path / "results"
    config = tmp_path / "tune-cpu.yaml"
    text = (REPO / "configs" / "tune-cpu.yaml").read_text()
    config.write_text(text.replace("  - ..\n", f"  - {REPO}\n").replace("../results/tune-cpu", str(results)))
    out = run_fresh([sys.executable, "-c", _DRIVER, str(config)])
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    starts = json.loads(out.stdout.strip().splitlines()[-1])
    decisions = json.loads((results / "tuning" / "tune-cpu.search.json").read_text())["decisions"]
    assert len(decisions) == 1
    d = decisions[0]
    # Each round's latencies come back from the store by the round's run id: none lost.
    assert d["evaluations"] == d["ran"] == 6 and d["objective_ms"] is not None
    assert all(v is not None for v in d["trajectory"])
    runs, traces = query(
        results / "sweep.duckdb", "SELECT count(DISTINCT run_id), count(*) FROM traces"
    ).rows[0]
    # Three search rounds, re-measurement and the confirmation: each a launch of its own...
    assert int(str(runs)) >= 4 and int(str(traces)) >= 6
    # ...served by the first round's two workers (parallel: 2), not new ones each round.
    assert starts["new"] <= 2 and starts["reused"] >= int(str(runs)) - 1, (starts, runs)
