"""bench/tune_strategies.py on the CPU: the spaces' sizes and its SIMULATED objective path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_bench_runs_on_cpu_and_labels_its_objective() -> None:
    cmd = [sys.executable, str(REPO / "bench" / "tune_strategies.py"), "--device", "cpu", "--space", "shipped",
           "--size", "512", "--seeds", "1", "--strategies", "grid,random,evolution"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stdout
    assert "227 valid points" in out and "SIMULATED objective" in out
    rows = [r for line in out.splitlines() if len(r := line.split()) == 7 and r[1].isdigit()]
    assert [r[0] for r in rows] == ["grid", "random", "evolution"]
    assert rows[0][5] == "227"  # the grid evaluates every point


def test_the_large_space_has_at_least_5000_points() -> None:
    sys.path.insert(0, str(REPO / "bench"))
    from tune_strategies import LARGE, valid_points

    assert len(valid_points(LARGE, 4096)) >= 5000
