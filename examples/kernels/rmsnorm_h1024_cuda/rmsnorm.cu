// RMSNorm over the last dimension for bfloat16 rows: one block per row,
// float32 accumulation, warp-shuffle then shared-memory reduction.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

namespace {

constexpr int kThreads = 256;

__device__ float block_sum(float v) {
    __shared__ float partial[kThreads / 32];
    const int lane = threadIdx.x % 32;
    const int warp = threadIdx.x / 32;
    for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    v = (threadIdx.x < kThreads / 32) ? partial[threadIdx.x] : 0.0f;
    if (warp == 0) {
        for (int off = 16; off > 0; off /= 2) v += __shfl_xor_sync(0xffffffffu, v, off);
        if (lane == 0) partial[0] = v;
    }
    __syncthreads();
    return partial[0];
}

__global__ void rmsnorm_bf16_kernel(const __nv_bfloat16* __restrict__ x,
                                    const __nv_bfloat16* __restrict__ w,
                                    __nv_bfloat16* __restrict__ out,
                                    int cols, float eps) {
    const __nv_bfloat16* xr = x + static_cast<size_t>(blockIdx.x) * cols;
    __nv_bfloat16* outr = out + static_cast<size_t>(blockIdx.x) * cols;
    float sq = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = __bfloat162float(xr[c]);
        sq += v * v;
    }
    const float inv_rms = rsqrtf(block_sum(sq) / cols + eps);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) {
        const float v = __bfloat162float(xr[c]) * inv_rms * __bfloat162float(w[c]);
        outr[c] = __float2bfloat16(v);
    }
}

}  // namespace

void rmsnorm_bf16(torch::Tensor x, torch::Tensor w, torch::Tensor out, double eps) {
    TORCH_CHECK(x.is_cuda() && w.is_cuda() && out.is_cuda(), "rmsnorm: tensors must be on a CUDA device");
    TORCH_CHECK(x.scalar_type() == at::kBFloat16 && w.scalar_type() == at::kBFloat16 &&
                    out.scalar_type() == at::kBFloat16,
                "rmsnorm: tensors must be bfloat16");
    TORCH_CHECK(x.dim() == 2 && x.is_contiguous() && out.is_contiguous() && w.is_contiguous(),
                "rmsnorm: expects contiguous [rows, cols] input and output");
    const int rows = static_cast<int>(x.size(0));
    const int cols = static_cast<int>(x.size(1));
    if (rows == 0) return;
    auto stream = at::cuda::getCurrentCUDAStream();
    rmsnorm_bf16_kernel<<<rows, kThreads, 0, stream>>>(
        reinterpret_cast<const __nv_bfloat16*>(x.data_ptr<at::BFloat16>()),
        reinterpret_cast<const __nv_bfloat16*>(w.data_ptr<at::BFloat16>()),
        reinterpret_cast<__nv_bfloat16*>(out.data_ptr<at::BFloat16>()), cols, static_cast<float>(eps));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
