"""On a CUDA GPU (the lent device machine): CUDA solutions bound with TVM-FFI, built by
apache-tvm-ffi (nvcc through ninja), launched on the stream tvm-ffi takes from torch, timed
under CUDA graphs; a solution shaped as FlashInfer-Bench's TVM-FFI example (no binding, a
header beside the kernel, entry ``kernel.cu::gemm_n_4096_k_4096``) on the real gemm
definition. Run: ``pytest -m gpu tests/engine/test_gpu_tvm_ffi.py``."""

from __future__ import annotations

import json

import pytest

from sweep.engine.builds._build import solution_folder
from sweep.schema import Definition, Solution, Workload

pytestmark = pytest.mark.gpu
pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi (kernel-sweep[tvm-ffi]) is not installed")

VADD = r"""
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
#include <cuda_runtime.h>

__global__ void vadd_kernel(const float* x, const float* y, float* z, int64_t n) {
  int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) z[i] = x[i] + y[i];
}

void vadd(tvm::ffi::TensorView x, tvm::ffi::TensorView y, tvm::ffi::TensorView z) {
  TVM_FFI_ICHECK_EQ(x.device().device_type, kDLCUDA) << "x must be on a CUDA device";
  const int64_t n = x.size(0);
  // The stream tvm-ffi was given by the caller (torch's current stream).
  cudaStream_t stream = static_cast<cudaStream_t>(
      TVMFFIEnvGetStream(x.device().device_type, x.device().device_id));
  const int threads = 256;
  vadd_kernel<<<static_cast<unsigned>((n + threads - 1) / threads), threads, 0, stream>>>(
      static_cast<const float*>(x.data_ptr()), static_cast<const float*>(y.data_ptr()),
      static_cast<float*>(z.data_ptr()), n);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(vadd, vadd);
"""


def test_cuda_kernel_without_binding_runs_on_the_torch_stream_under_graphs(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", {"vadd.cu": VADD}, language="cuda", entry="vadd.cu::vadd", dps=True)
    assert sol.spec.binding is None
    for timer in ("cudagraph", "events"):
        trace = kit.run(vadd, sol, vadd_wl, kit.timed(timer, trials=2), device="cuda")
        ev = trace.evaluation
        assert ev.status.value == "PASSED", ev.log
        # a launch on another stream than the capture's would fail the capture (and fall back)
        assert ev.timing.timer == timer, ev.log
        assert "CUDA graphs cannot time" not in ev.log
        assert "tvm_ffi" in ev.environment.libs
    built = list(solution_folder(sol.content_hash).glob("tvm-ffi-sm*/*.so"))
    assert len(built) == 1, built  # keyed by the device's architecture, built once


def test_cuda_compile_error_carries_nvcc_output(kit, vadd, vadd_wl) -> None:
    broken = VADD.replace("z[i] = x[i] + y[i];", "z[i] = x[i] + undefined_name;")
    sol = kit.solution(
        "vadd_f32", {"vadd.cu": broken}, language="cuda", binding="tvm-ffi", entry="vadd.cu::vadd", dps=True
    )
    trace = kit.run(vadd, sol, vadd_wl, device="cuda")
    assert kit.status(trace) == "COMPILE_ERROR"
    first = kit.log(trace).splitlines()[0]
    assert "compiling with tvm-ffi failed: vadd.cu(" in first and "undefined_name" in first, kit.log(trace)


# A small tiled GEMM for gemm_n4096_k4096 (C = A @ B.T, float16 in and out, float32 sums),
# written as FlashInfer-Bench's TVM-FFI example is laid out: constants in kernel.h, the kernel
# and its TVM-FFI entry point in kernel.cu, no binding in the spec.
GEMM_H = r"""#pragma once
#include <cuda_fp16.h>
constexpr int GEMM_N = 4096;
constexpr int GEMM_K = 4096;
constexpr int TILE = 16;
"""
GEMM_CU = r"""#include "kernel.h"
#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>

__global__ void gemm_tiled(const __half* A, const __half* B, __half* C, int M) {
  __shared__ float a[TILE][TILE];
  __shared__ float b[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;  // of C and A
  const int col = blockIdx.x * TILE + threadIdx.x;  // of C, a row of B
  float acc = 0.0f;
  for (int k0 = 0; k0 < GEMM_K; k0 += TILE) {
    a[threadIdx.y][threadIdx.x] = row < M ? __half2float(A[row * GEMM_K + k0 + threadIdx.x]) : 0.0f;
    b[threadIdx.y][threadIdx.x] = __half2float(B[(blockIdx.x * TILE + threadIdx.y) * GEMM_K + k0 + threadIdx.x]);
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += a[threadIdx.y][k] * b[threadIdx.x][k];
    __syncthreads();
  }
  if (row < M) C[row * GEMM_N + col] = __float2half_rn(acc);
}

void gemm_n_4096_k_4096(tvm::ffi::TensorView A, tvm::ffi::TensorView B, tvm::ffi::TensorView C) {
  TVM_FFI_ICHECK(A.ndim() == 2 && A.size(1) == GEMM_K) << "A must be [M, 4096]";
  TVM_FFI_ICHECK(B.ndim() == 2 && B.size(0) == GEMM_N && B.size(1) == GEMM_K) << "B must be [4096, 4096]";
  const int M = static_cast<int>(A.size(0));
  TVM_FFI_ICHECK(C.size(0) == M && C.size(1) == GEMM_N) << "C must be [M, 4096]";
  DLDevice dev = A.device();
  cudaStream_t stream = static_cast<cudaStream_t>(TVMFFIEnvGetStream(dev.device_type, dev.device_id));
  dim3 block(TILE, TILE);
  dim3 grid(GEMM_N / TILE, (M + TILE - 1) / TILE);
  gemm_tiled<<<grid, block, 0, stream>>>(static_cast<const __half*>(A.data_ptr()),
                                         static_cast<const __half*>(B.data_ptr()),
                                         static_cast<__half*>(C.data_ptr()), M);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(gemm_n_4096_k_4096, gemm_n_4096_k_4096);
"""


def test_solution_shaped_as_upstreams_tvm_ffi_example_passes_on_the_real_gemm(kit, shared_data) -> None:
    root = shared_data / "flashinfer-trace"
    defn = Definition.model_validate_json((root / "definitions/gemm/gemm_n4096_k4096.json").read_text())
    lines = (root / "workloads/gemm/gemm_n4096_k4096.jsonl").read_text().splitlines()
    wl = Workload.model_validate(json.loads(lines[1])["workload"])  # M = 248: a partial last tile
    record = {
        "name": "tiled_gemm",
        "definition": "gemm_n4096_k4096",
        "description": "a tiled fp16 GEMM, shaped as FlashInfer-Bench's TVM-FFI example",
        "author": "tests",
        "spec": {
            "language": "cuda",
            "target_hardware": ["H100"],
            "entry_point": "kernel.cu::gemm_n_4096_k_4096",
            "dependencies": [],
        },
        "sources": [{"path": "kernel.h", "content": GEMM_H}, {"path": "kernel.cu", "content": GEMM_CU}],
    }
    sol = Solution.model_validate(record)
    assert sol.to_json_obj() == record  # read as written, written back unchanged
    trace = kit.run(defn, sol, wl, kit.timed("auto", trials=2), device="cuda")
    assert kit.status(trace) == "PASSED", kit.log(trace)
