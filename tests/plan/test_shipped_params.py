"""The shipped parameter spaces: dozens of points each, and configs that keep the quick start small."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sweep.plan import plan_config
from sweep.plan.dataset import load_dataset
from sweep.schema.params import grid_points, grid_size, point_violation

REPO = Path(__file__).resolve().parents[2]


def test_shipped_triton_solutions_declare_spaces() -> None:
    ds = load_dataset([REPO])
    gemm = ds.solutions["gemm_n512_k512_triton"]
    softmax = ds.solutions["softmax_f32_triton"]
    assert set(gemm.param_space) == {"BLOCK_M", "BLOCK_N", "BLOCK_K", "num_warps", "num_stages"}
    assert set(softmax.param_space) == {"BLOCK", "num_warps"}
    assert grid_size(gemm.param_space) >= 24 and grid_size(softmax.param_space) >= 24
    assert gemm.params_constraints and softmax.params_constraints


def test_quick_start_runs_one_point_per_workload() -> None:
    plan = plan_config(REPO / "configs" / "local.yaml")
    per = Counter((t.solution.name, t.workload.uuid) for t in plan.tasks)
    assert set(per.values()) == {1}
    assert plan.count_by_solution()["gemm_n512_k512_triton"] == 4
    assert plan.count_by_solution()["softmax_f32_triton"] == 5


def test_params_cpu_config_plans_a_few_points() -> None:
    plan = plan_config(REPO / "configs" / "params-cpu.yaml")
    assert plan.count_by_solution() == {"gemm_n512_k512_triton": 2, "softmax_f32_triton": 5}
    why = Counter(x.why for x in plan.excluded)
    assert why == {
        "violates BLOCK_M <= 2 * max(M, 16)": 2,
        "violates BLOCK == 0 or (BLOCK >= dim and BLOCK <= 4 * dim)": 1,
    }
    assert all(t.params is not None for t in plan.tasks)


def test_full_gpu_space_is_planned_on_h100() -> None:
    plan = plan_config(REPO / "configs" / "h100.yaml")
    counts = plan.count_by_solution()
    assert counts["gemm_n512_k512_triton"] > 40 and counts["softmax_f32_triton"] > 20


def test_the_gemm_space_has_200_valid_points_on_the_proofs_shape() -> None:
    """The GPU proof (bench/gpu_autotune.py) sweeps the whole GEMM space on M = 8192."""
    gemm = load_dataset([REPO]).solutions["gemm_n512_k512_triton"]
    axes = {"M": 8192, "N": 512, "K": 512}
    valid = [
        p for p in grid_points(gemm.param_space) if point_violation(p, gemm.params_constraints, axes) is None
    ]
    assert len(valid) >= 200
