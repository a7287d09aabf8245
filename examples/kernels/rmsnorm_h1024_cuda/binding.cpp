// Python binding of the RMSNorm kernel (PyTorch extension, binding "torch"): the entry point
// binding.cpp::run, destination-passing like the definition (hidden_states, weight, output).
#include <torch/extension.h>

void rmsnorm_bf16(torch::Tensor x, torch::Tensor w, torch::Tensor out, double eps);

namespace {

constexpr double kEps = 1e-5;  // the definition's epsilon

void run(torch::Tensor hidden_states, torch::Tensor weight, torch::Tensor output) {
    rmsnorm_bf16(hidden_states.contiguous(), weight.contiguous(), output, kEps);
}

}  // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("run", &run, "RMSNorm of bfloat16 rows into output");
}
