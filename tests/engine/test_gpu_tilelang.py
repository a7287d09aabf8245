"""On a CUDA GPU with the tilelang package (``pip install 'kernel-sweep[tilelang]'``): a tiny
TileLang kernel, compiled by ``tilelang.jit`` when the solution first calls it, evaluated in
destination-passing and value-returning style. Run:
``pytest -m gpu tests/engine/test_gpu_tilelang.py``."""

from __future__ import annotations

import pytest

from sweep.config import EvalSettings

pytestmark = pytest.mark.gpu
pytest.importorskip("tilelang", reason="tilelang (kernel-sweep[tilelang]) is not installed")

VADD = """
import tilelang
import tilelang.language as T


@tilelang.jit(out_idx=OUT_IDX)
def vadd(n: int, block: int = 256):
    @T.prim_func
    def kernel(
        X: T.Tensor((n,), "float32"), Y: T.Tensor((n,), "float32"), Z: T.Tensor((n,), "float32")
    ):
        with T.Kernel((n + block - 1) // block, threads=block) as bx:
            for i in T.Parallel(block):
                if bx * block + i < n:
                    Z[bx * block + i] = X[bx * block + i] + Y[bx * block + i]

    return kernel
"""
DPS = VADD.replace("OUT_IDX", "None") + "\n\ndef run(x, y, z):\n    vadd(x.shape[0])(x, y, z)\n"
RETURNING = VADD.replace("OUT_IDX", "[-1]") + "\n\ndef run(x, y):\n    return vadd(x.shape[0])(x, y)\n"

SETTINGS = EvalSettings(trials=2, warmup_ms=5, rep_ms=10, max_ms=300, min_iterations=10, input_sets=2)


@pytest.mark.parametrize(("src", "dps"), [(DPS, True), (RETURNING, False)], ids=["dps", "returning"])
def test_tilelang_kernel_passes_on_cuda(kit, vadd, vadd_wl, src: str, dps: bool) -> None:
    sol = kit.solution("vadd_f32", src, language="tilelang", dps=dps, name=f"tl_vadd_{dps}")
    trace = kit.run(vadd, sol, vadd_wl, SETTINGS, device="cuda")
    ev = trace.evaluation
    assert ev.status.value == "PASSED", ev.log
    assert "tilelang" in ev.environment.libs


def test_wrong_tilelang_kernel_is_incorrect_numerical(kit, vadd, vadd_wl) -> None:
    src = DPS.replace("X[bx * block + i] + Y", "X[bx * block + i] - Y")
    sol = kit.solution("vadd_f32", src, language="tilelang", dps=True, name="tl_vadd_wrong")
    trace = kit.run(vadd, sol, vadd_wl, SETTINGS, device="cuda")
    assert kit.status(trace) == "INCORRECT_NUMERICAL", kit.log(trace)
