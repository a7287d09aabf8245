"""bench/tune_strategies.py on the CPU: the spaces' sizes and its SIMULATED objective path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "bench"))

import _tune_replay as rp  # bench/ is no package: on the path first


def test_the_bench_runs_on_cpu_and_labels_its_objective() -> None:
    cmd = [sys.executable, str(REPO / "bench" / "tune_strategies.py"), "--device", "cpu", "--space", "shipped",
           "--size", "512", "--seeds", "1", "--strategies", "grid,random,evolution"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True).stdout
    assert "227 valid points" in out and "SIMULATED objective" in out
    per_seed, medians = out.split("median over seeds")
    rows = [r for line in per_seed.splitlines() if len(r := line.split()) == 7 and r[1].isdigit()]
    assert [r[0] for r in rows] == ["grid", "random", "evolution"]
    assert rows[0][5] == "227"  # the grid evaluates every point
    summary = [r[0] for line in medians.splitlines() if len(r := line.split()) == 7 and r[1].isdigit()]
    assert summary == ["grid", "random", "evolution"]


def test_the_large_space_has_at_least_5000_points() -> None:
    from tune_strategies import LARGE, valid_points

    assert len(valid_points(LARGE, 4096)) >= 5000


# --- the replay's pure parts, --save-grid's table, Kernel Tuner's cache, the compile pool ---


def test_makespan_takes_the_next_cost_on_the_first_free_worker() -> None:
    assert rp.makespan([], 4) == 0.0
    assert rp.makespan([3.0, 1.0, 1.0, 1.0], 2) == 3.0  # 3 | 1+1+1
    assert rp.makespan([1.0, 1.0, 3.0], 2) == 4.0  # 1+3 | 1: in order, not the best packing
    assert rp.makespan([2.0, 2.0], 8) == 2.0


@given(st.lists(st.floats(0, 100), max_size=40), st.integers(1, 16))
def test_makespan_lies_between_the_bounds(costs: list[float], workers: int) -> None:
    m = rp.makespan(costs, workers)
    total = sum(costs)
    assert m <= total + 1e-9
    assert m >= max(costs, default=0.0) - 1e-9
    assert m >= total / workers - 1e-6


def test_hit_is_the_first_evaluation_within_two_percent() -> None:
    traj: rp.Trajectory = [(0, 1.0, 2.0), (1, 1.0, None), (2, 2.0, 1.021), (3, 3.0, 1.019), (4, 4.0, 1.0)]
    assert rp.hit(traj, 1.0) == (4, 3.0)
    assert rp.hit(traj[:3], 1.0) == (None, None)


def test_summarise_takes_medians_and_a_majority_of_misses_is_a_miss() -> None:
    row = rp.summarise("x", [(10, 5.0, 12), (None, None, 40), (20, 9.0, 24)])
    assert (row.found, row.evals, row.seconds, row.spent) == (2, 20, 9.0, 24)
    assert rp.summarise("y", [(10, 5.0, 12), (None, None, 40), (None, None, 40)]).evals is None
    assert rp.format_row(rp.summarise("y", [(None, None, 40)]), 100).split()[3] == "-"


def _table(tmp_path: Path, *extra: str) -> Path:
    out = tmp_path / "grid.json"
    cmd = [sys.executable, str(REPO / "bench" / "tune_strategies.py"), "--device", "cpu", "--space", "shipped",
           "--size", "512", "--save-grid", str(out), *extra]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True)
    assert "saved 227 points" in done.stdout
    return out


def test_save_grid_then_replay_returns_the_tables_latencies_and_the_grids_order(tmp_path: Path) -> None:
    table = rp.load_table(_table(tmp_path, "--no-replay"))
    assert len(table.points) == 227 and table.complete and table.device == "SIMULATED"
    seen: list[int] = []
    for name in ("grid", "random", "evolution"):
        traj = rp.replay(table, name, 1, parallel=8, gpus=2, jobs=4, full=True)
        assert all(v == table.ms[i] for i, _, v in traj)  # every evaluation is the stored latency
        assert len({i for i, _, _ in traj}) == len(traj)  # never a point twice
        assert [t for _, t, _ in traj] == sorted(t for _, t, _ in traj)  # the clock only moves on
        seen.append(len(traj))
    assert seen == [227, 45, 45]  # the grid's every point; a fifth of it for the others
    grid = rp.replay(table, "grid", 0, parallel=8, gpus=2, jobs=4)
    first = next(k for k, v in enumerate(table.ms) if v is not None and v <= table.best * 1.02)
    assert rp.hit(grid, table.best)[0] == first + 1  # the grid's order, stopped at its hit
    # The modelled clock of the grid's first round: compile on 4 processes, then measure on 2 GPUs.
    r0 = list(range(8))
    expect = rp.makespan([table.compile_s[i] for i in r0], 4) + rp.makespan(
        [table.measure_s[i] for i in r0], 2
    )
    assert grid[0][1] >= expect and grid[0][1] < expect + 1.0


def test_a_cut_grid_replays_its_measured_points_only(tmp_path: Path) -> None:
    path = _table(tmp_path, "--no-replay")
    doc: dict[str, Any] = json.loads(path.read_text())
    for row in doc["points"][100:]:
        for k in ("ms", "load_s", "bench_s", "error"):
            row.pop(k)
    doc["complete"] = False
    path.write_text(json.dumps(doc))
    table = rp.load_table(path)
    assert len(table.points) == 100 and not table.complete and table.valid_points == 227


def test_the_replay_prints_every_strategy_for_each_gpu_count(tmp_path: Path) -> None:
    path = _table(tmp_path, "--no-replay")
    cmd = [sys.executable, str(REPO / "bench" / "tune_strategies.py"), "--replay", str(path), "--seeds", "2",
           "--strategies", "grid,random,evolution", "--replay-gpus", "1,4", "--kernel-tuner-path", "/nonexistent"]  # fmt: skip
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, check=True, env=_env()).stdout
    assert "MODELLED" in out and "227 points measured of 227 valid" in out
    names = [
        line.split()[0]
        for line in out.splitlines()
        if line.split()[:1] in (["grid"], ["random"], ["evolution"])
    ]
    assert names == ["grid", "random", "evolution"] * 2
    assert "-- 1 GPU(s), 8 points a round" in out and "-- 4 GPU(s), 32 points a round" in out


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("KERNEL_TUNER_PATH", None)
    return env


def _kernel_tuner() -> str:
    """Kernel Tuner is no dependency of the project: the test runs where it was installed apart
    (KERNEL_TUNER_PATH, or pip install --target /tmp/kt kernel_tuner==1.5.0)."""
    import _tune_kt

    path = os.environ.get("KERNEL_TUNER_PATH", "/tmp/kt")
    if _tune_kt.available(path) is None:
        pytest.skip("kernel_tuner not installed (KERNEL_TUNER_PATH)")
    return path


def test_our_cache_file_is_what_kernel_tuners_own_writer_writes(tmp_path: Path) -> None:
    _kernel_tuner()
    import _tune_kt
    from kernel_tuner import util

    table = rp.load_table(_table(tmp_path, "--no-replay"))
    ms = list(table.ms)
    ms[5] = None  # a point that failed at run time
    table = rp.Table(**{**table.__dict__, "ms": ms})
    ours = _tune_kt.write_cache(table, tmp_path / "ours.json")
    theirs = tmp_path / "theirs.json"
    theirs.write_text(json.dumps({**_tune_kt.header(table), "cache": {}}, indent="")[:-3])  # as process_cache
    cache: dict[str, Any] = {}
    for key, entry in _tune_kt.cache_entries(table).items():
        if "__error__" in entry:
            entry = {**entry, "__error__": util.RuntimeFailedConfig()}
        util.store_cache(key, entry, str(theirs), cache)
    util.close_cache(str(theirs))
    a, b = util.read_cache(str(ours), open_cache=False), util.read_cache(str(theirs), open_cache=False)
    assert json.dumps(a, sort_keys=True, default=str) == json.dumps(b, sort_keys=True, default=str)
    assert sum(1 for e in a["cache"].values() if "__error__" in e) == 1


def test_a_replay_through_kernel_tuner_returns_the_tables_latencies(tmp_path: Path) -> None:
    _kernel_tuner()
    import _tune_kt

    table = rp.load_table(_table(tmp_path, "--no-replay"))
    ms = list(table.ms)
    ms[0] = None
    table = rp.Table(**{**table.__dict__, "ms": ms})
    cache = _tune_kt.write_cache(table, tmp_path / "cache.json")
    for strategy in ("random_sample", "genetic_algorithm"):
        seen = _tune_kt.run(table, cache, strategy, max_fevals=45, seed=0)
        assert 0 < len(seen) <= 45 and len({i for i, _ in seen}) == len(seen)
        assert all(v == table.ms[i] for i, v in seen)
    everything = _tune_kt.run(table, cache, "brute_force", max_fevals=227, seed=0)
    assert sorted(i for i, _ in everything) == list(range(227))  # the same space: our valid points
    assert min(v for _, v in everything if v is not None) == table.best


def test_the_pool_compiles_into_the_cache_that_a_second_compile_only_reads(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    pytest.importorskip("torch")
    script = (
        "import sys; sys.path.insert(0, 'bench'); import _tune_grid as g\n"
        "pts = [dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=32, num_warps=4, num_stages=2, SPLIT_K=2, GROUP_M=4),\n"
        "       dict(BLOCK_M=32, BLOCK_N=64, BLOCK_K=32, num_warps=2, num_stages=3)]\n"
        "a = g.precompile(pts, 256, 2, 90); n1 = g.cubins()\n"
        "b = g.precompile(pts, 256, 2, 90); n2 = g.cubins()\n"
        "print('RESULT', n1, n2, [e for _, e in a + b])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the suite's own setting
    env["TRITON_CACHE_DIR"] = str(tmp_path / "cache")
    out = subprocess.run([sys.executable, "-c", script], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=600, check=True).stdout  # fmt: skip
    assert "RESULT 2 2 [None, None, None, None]" in out, out
    assert "2 new cubins" in out and "0 new cubins" in out


def test_the_pool_refuses_to_run_under_the_triton_interpreter() -> None:
    """Interpreted, ``warmup`` compiles nothing: a pool would report success and leave the GPU
    processes to compile everything themselves."""
    script = "import sys; sys.path.insert(0, 'bench'); import _tune_grid as g; g.compile_pool(1, 90)"
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0 and "TRITON_INTERPRET" in done.stderr
