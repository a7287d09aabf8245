"""TVM-FFI builds on the CPU: C++ solutions compiled by apache-tvm-ffi (g++ through ninja),
exporting their entry point with TVM_FFI_DLL_EXPORT_TYPED_FUNC, called with torch tensors by
DLPack in destination-passing and value-returning style, built once per content hash; a
compiler error and a missing apache-tvm-ffi are COMPILE_ERRORs that say why."""

from __future__ import annotations

import builtins

import pytest

from sweep.engine import EngineCache
from sweep.engine.builds._build import build_solution, solution_folder
from sweep.schema import Solution

tvm_ffi = pytest.importorskip("tvm_ffi", reason="apache-tvm-ffi (kernel-sweep[tvm-ffi]) is not installed")

HEADERS = """#include <tvm/ffi/container/tensor.h>
#include <tvm/ffi/container/tuple.h>
#include <tvm/ffi/error.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvm/ffi/function.h>
"""

# Destination-passing: z = x + y over float32 vectors; checks as a real kernel would.
VADD = (
    HEADERS
    + r"""
namespace ffi = tvm::ffi;

void vadd(ffi::TensorView x, ffi::TensorView y, ffi::TensorView z) {
  TVM_FFI_ICHECK_EQ(x.ndim(), 1) << "x must be 1-D";
  DLDataType f32{kDLFloat, 32, 1};
  TVM_FFI_ICHECK(x.dtype() == f32 && y.dtype() == f32 && z.dtype() == f32) << "float32 only";
  TVM_FFI_ICHECK(x.IsContiguous() && y.IsContiguous() && z.IsContiguous()) << "contiguous only";
  const float* a = static_cast<const float*>(x.data_ptr());
  const float* b = static_cast<const float*>(y.data_ptr());
  float* c = static_cast<float*>(z.data_ptr());
  for (int64_t i = 0; i < x.size(0); ++i) c[i] = OP(a[i], b[i]);
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(vadd, vadd);
"""
)
GOOD = VADD.replace("OP(a[i], b[i])", "a[i] + b[i]")


def cpp_solution(
    kit, sources: dict[str, str], *, definition: str = "vadd_f32", entry: str = "vadd.cpp::vadd", **kw
) -> Solution:
    """A cpp solution, destination-passing unless told, with no binding unless told (no binding:
    tvm-ffi, FlashInfer-Bench's default)."""
    kw.setdefault("dps", True)
    return kit.solution(definition, sources, language="cpp", entry=entry, **kw)


def test_cpp_solution_without_binding_is_built_with_tvm_ffi_and_passes(kit, vadd, vadd_wl) -> None:
    sol = cpp_solution(kit, {"vadd.cpp": GOOD}, name="ffi_vadd")
    assert sol.spec.binding is None
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    assert "tvm_ffi" in trace.evaluation.environment.libs
    built = list(solution_folder(sol.content_hash).glob("tvm-ffi/*.so"))
    assert [p.name for p in built] == [f"sweep_ffi_{sol.content_hash}.so"]


def test_explicit_tvm_ffi_binding_and_headers_beside_the_entry_file(kit, vadd, vadd_wl) -> None:
    header = "#pragma once\ninline float add_two(float a, float b) { return a + b; }\n"
    src = VADD.replace("OP(a[i], b[i])", "add_two(a[i], b[i])").replace(
        HEADERS, HEADERS + '#include "ops/add.h"\n'
    )
    sol = cpp_solution(kit, {"vadd.cpp": src, "ops/add.h": header}, binding="tvm-ffi", name="ffi_hdr")
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)


def test_wrong_kernel_is_incorrect_numerical(kit, vadd, vadd_wl) -> None:
    sol = cpp_solution(kit, {"vadd.cpp": VADD.replace("OP(a[i], b[i])", "a[i] - b[i]")}, name="ffi_wrong")
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "INCORRECT_NUMERICAL", kit.log(trace)


def test_syntax_error_is_compile_error_with_the_compiler_message(kit, vadd, vadd_wl) -> None:
    broken = GOOD.replace("c[i] = a[i] + b[i];", "c[i] = a[i] + undefined_name;")
    trace = kit.run(vadd, cpp_solution(kit, {"vadd.cpp": broken}, name="ffi_broken"), vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    log = kit.log(trace)
    first = log.splitlines()[0]
    assert first.startswith("COMPILE_ERROR: compiling with tvm-ffi failed: vadd.cpp:17:"), log
    assert "undefined_name" in first and "error" in first
    assert "failed earlier" not in first  # the first failure in this process is not a repeat
    assert "was not declared in this scope" in log  # g++'s own words, from the build output


def test_entry_point_the_library_does_not_export(kit, vadd, vadd_wl) -> None:
    trace = kit.run(
        vadd, cpp_solution(kit, {"vadd.cpp": GOOD}, entry="vadd.cpp::run", name="ffi_noexp"), vadd_wl
    )
    assert kit.status(trace) == "COMPILE_ERROR"
    assert "exports no function 'run'" in kit.log(trace)
    assert "TVM_FFI_DLL_EXPORT_TYPED_FUNC(run, <function>)" in kit.log(trace)


def test_torch_extension_without_binding_is_told_to_set_it(kit, vadd, vadd_wl) -> None:
    src = "#include <torch/extension.h>\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {}\n"
    trace = kit.run(vadd, cpp_solution(kit, {"vadd.cpp": src}, name="ffi_pybind"), vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    first = kit.log(trace).splitlines()[0]
    assert "compiling with tvm-ffi failed" in first  # torch's headers are not on tvm-ffi's path
    assert "the sources are a torch extension: set spec.binding to 'torch'" in first


def test_missing_apache_tvm_ffi_names_the_extra(kit, vadd, vadd_wl, monkeypatch) -> None:
    real_import = builtins.__import__

    def no_tvm_ffi(name, *args, **kwargs):
        if name == "tvm_ffi" or name.startswith("tvm_ffi."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tvm_ffi)
    trace = kit.run(vadd, cpp_solution(kit, {"vadd.cpp": GOOD}, name="ffi_absent"), vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    first = kit.log(trace).splitlines()[0]
    assert "needs the apache-tvm-ffi package" in first
    assert "pip install 'kernel-sweep[tvm-ffi]'" in first


# Value-returning with two outputs: (values, indices) = max over the last axis, allocated by
# tvm-ffi's environment allocator (torch's, when called with torch tensors), returned as a tuple.
ROWMAX = (
    HEADERS
    + r"""
namespace ffi = tvm::ffi;

ffi::Tuple<ffi::Tensor, ffi::Tensor> rowmax(ffi::TensorView x) {
  const int64_t rows = x.size(0), cols = x.size(1);
  ffi::Shape shape({rows});
  ffi::Tensor values = ffi::Tensor::FromEnvAlloc(TVMFFIEnvTensorAlloc, shape, x.dtype(), x.device());
  ffi::Tensor indices = ffi::Tensor::FromEnvAlloc(
      TVMFFIEnvTensorAlloc, shape, DLDataType{kDLInt, 64, 1}, x.device());
  const float* in = static_cast<const float*>(x.data_ptr());
  float* v = static_cast<float*>(values.data_ptr());
  int64_t* k = static_cast<int64_t*>(indices.data_ptr());
  for (int64_t r = 0; r < rows; ++r) {
    int64_t best = 0;
    for (int64_t c = 1; c < cols; ++c) if (in[r * cols + c] > in[r * cols + best]) best = c;
    v[r] = in[r * cols + best];
    k[r] = best;
  }
  return ffi::Tuple<ffi::Tensor, ffi::Tensor>(values, indices);
}

ffi::Tensor values_only(ffi::TensorView x) { return rowmax(x).get<0>(); }

TVM_FFI_DLL_EXPORT_TYPED_FUNC(rowmax, rowmax);
TVM_FFI_DLL_EXPORT_TYPED_FUNC(values_only, values_only);
"""
)


def test_value_returning_style_with_a_tuple_of_outputs(kit) -> None:
    defn = kit.definition("rowmax/rowmax_f32.json")
    wl = kit.workloads("rowmax/rowmax_f32.jsonl")[0]
    sources = {"rowmax.cpp": ROWMAX}
    both = cpp_solution(kit, sources, definition="rowmax_f32", entry="rowmax.cpp::rowmax", dps=False)
    trace = kit.run(defn, both, wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    one = cpp_solution(kit, sources, definition="rowmax_f32", entry="rowmax.cpp::values_only", dps=False)
    trace = kit.run(defn, one, wl)
    assert kit.status(trace) == "INCORRECT_SHAPE", kit.log(trace)
    assert "returned 1 value(s); expected 2 output(s)" in kit.log(trace)


# A scalar input (a Python float) arrives as a C++ double.
CSR = (
    HEADERS
    + r"""
namespace ffi = tvm::ffi;

void rowsum(ffi::TensorView indptr, ffi::TensorView values, double scale, ffi::TensorView sums) {
  const int32_t* p = static_cast<const int32_t*>(indptr.data_ptr());
  const float* v = static_cast<const float*>(values.data_ptr());
  float* out = static_cast<float*>(sums.data_ptr());
  for (int64_t r = 0; r + 1 < indptr.size(0); ++r) {
    float acc = 0.0f;
    for (int32_t i = p[r]; i < p[r + 1]; ++i) acc += v[i];
    out[r] = acc * static_cast<float>(scale);
  }
}

TVM_FFI_DLL_EXPORT_TYPED_FUNC(rowsum, rowsum);
"""
)


def test_destination_passing_with_a_scalar_input(kit) -> None:
    defn = kit.definition("csr/csr_rowsum.json")
    wl = kit.workloads("csr/csr_rowsum.jsonl")[0]
    sol = cpp_solution(kit, {"csr.cpp": CSR}, definition="csr_rowsum", entry="csr.cpp::rowsum")
    trace = kit.run(defn, sol, wl, root=str(kit.data))
    assert kit.status(trace) == "PASSED", kit.log(trace)


def test_wrong_number_of_parameters_is_reported_at_the_first_call(kit, vadd, vadd_wl) -> None:
    # tvm-ffi functions carry no Python signature: the count is checked by tvm-ffi when called
    sol = cpp_solution(kit, {"vadd.cpp": GOOD}, dps=False, name="ffi_arity")
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "RUNTIME_ERROR"
    assert "Expected 3 but got 2 arguments" in kit.log(trace)


def test_built_once_per_content_hash(kit, vadd, vadd_wl, monkeypatch) -> None:
    sol = cpp_solution(kit, {"vadd.cpp": GOOD.replace("x must be 1-D", "x: 1-D")}, name="ffi_once")
    calls = []
    real_build = tvm_ffi.cpp.build

    def counting_build(*args, **kwargs):
        calls.append(kwargs["name"])
        return real_build(*args, **kwargs)

    monkeypatch.setattr(tvm_ffi.cpp, "build", counting_build)
    cache = EngineCache()
    assert kit.status(kit.run(vadd, sol, vadd_wl, cache=cache)) == "PASSED"
    assert kit.status(kit.run(vadd, sol, vadd_wl, cache=cache)) == "PASSED"
    assert cache.hits["solution"] >= 1  # the second evaluation used this process's build
    # a fresh process cache (as a new worker has) loads the library without compiling again
    assert kit.status(kit.run(vadd, sol, vadd_wl, cache=EngineCache())) == "PASSED"
    built = build_solution(sol, cuda_ok=False)
    assert built.kind == "tvm_ffi"
    assert calls == [f"sweep_ffi_{sol.content_hash}"]
    # renaming a solution changes nothing it computes: same content hash, same build
    renamed = Solution.model_validate({**sol.to_json_obj(), "name": "ffi_once_renamed"})
    assert renamed.content_hash == sol.content_hash
    build_solution(renamed, cuda_ok=False)
    assert len(calls) == 1


def test_cuda_sources_need_a_cuda_device(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", {"k.cu": GOOD}, language="cpp", entry="k.cu::vadd", dps=True)
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    assert "CUDA sources (.cu)" in kit.log(trace)


@pytest.mark.slow
def test_two_processes_build_one_library(kit, vadd, vadd_wl, tmp_path) -> None:
    sol = cpp_solution(kit, {"vadd.cpp": GOOD.replace("float32 only", "f32 only")}, name="ffi_two")
    traces = kit.evaluate_in_two_processes(vadd, sol, vadd_wl, tmp_path)
    assert [t.evaluation.status.value for t in traces] == ["PASSED", "PASSED"], [
        t.evaluation.log for t in traces
    ]
    assert any("for another process building the same solution" in t.evaluation.log for t in traces)
    assert len(list((tmp_path / "cache" / "solutions" / sol.content_hash).glob("tvm-ffi/*.so"))) == 1
