"""Compile ahead on a CUDA GPU (bench/gpu_autotune.sh runs these): a variant of the shipped
Triton GEMM is compiled into Triton's cache for this GPU without a launch, and one that asks for
more shared memory than the GPU has is COMPILE_ERROR, ahead and in a plain evaluation alike."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.engine import EngineCache, evaluate
from sweep.engine.compile_ahead import evaluate as compile_ahead
from sweep.plan.dataset import load_dataset
from sweep.schema import EvalSettings, Workload
from sweep.schema.task import Task

pytestmark = pytest.mark.gpu

REPO = Path(__file__).resolve().parents[2]
_SMALL = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "num_warps": 4, "num_stages": 3}
# (256 + 256) x 128 float16 x 4 stages: 512 KiB of shared memory, over twice an H100's 228 KiB.
_TOO_BIG = {"BLOCK_M": 256, "BLOCK_N": 256, "BLOCK_K": 128, "num_warps": 8, "num_stages": 4}


def _task(params: dict[str, int]) -> Task:
    """The shipped Triton GEMM on M = 1024 at ``params`` (not checked against its constraints:
    a variant the plan would leave out is what the device must refuse)."""
    ds = load_dataset([str(REPO)])
    wl = Workload.model_validate(
        {"uuid": "m1024", "axes": {"M": 1024}, "inputs": {"A": {"type": "random"}, "B": {"type": "random"}}}
    )
    settings = EvalSettings(trials=1, warmup_ms=1, rep_ms=5, max_ms=20)
    return Task.make(
        ds.definitions["gemm_n512_k512"],
        ds.solutions["gemm_n512_k512_triton"],
        wl,
        settings,
        "H100",
        sweep="tests",
        params=dict(params),
    )


def _cubins(folder: Path) -> int:
    return len(list(folder.rglob("*.cubin")))


def test_compile_ahead_fills_tritons_cache_without_a_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache_dir = tmp_path / "cache"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(cache_dir))
    trace = compile_ahead(_task(_SMALL), device="cuda", cache=EngineCache())
    assert trace.evaluation is None  # compiled: the GPU's evaluation decides
    compiled = _cubins(cache_dir)
    assert compiled >= 1, "nothing compiled into Triton's cache"
    done = evaluate(_task(_SMALL), device="cuda", cache=EngineCache())
    assert done.evaluation is not None and done.evaluation.status.value == "PASSED", done.evaluation
    assert _cubins(cache_dir) == compiled  # the evaluation found its kernel compiled


def test_more_shared_memory_than_the_gpu_has_is_a_compile_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))
    ahead = compile_ahead(_task(_TOO_BIG), device="cuda", cache=EngineCache())
    assert ahead.evaluation is not None
    assert ahead.evaluation.status.value == "COMPILE_ERROR", ahead.evaluation.log
    assert "compiling ahead" in ahead.evaluation.log and "shared memory" in ahead.evaluation.log
    plain = evaluate(_task(_TOO_BIG), device="cuda", cache=EngineCache())
    assert plain.evaluation is not None
    assert plain.evaluation.status.value == "COMPILE_ERROR", plain.evaluation.log
    assert "shared memory" in plain.evaluation.log
