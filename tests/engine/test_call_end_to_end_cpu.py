"""The whole CPU chain on real rows: import -> load -> describe -> materialize -> reference ->
compare, the way the engine will run it (minus timing and process isolation)."""

from __future__ import annotations

from pathlib import Path

import torch

from sweep.backendbench import ImportReport, import_backendbench, import_kernels
from sweep.engine.aten._call_compare import compare_call
from sweep.engine.aten._call_inputs import clone_call, describe_call, materialize
from sweep.plan.dataset import load_dataset

# Operators of edge_cases.trace.txt whose CPU kernels accept BackendBench's random inputs
# (index arguments drawn within what they index). Left out: cuDNN-only ops, half-precision FFT
# (no CPU kernel), convolution_backward (correct but slow on CPU); the rows over 64 MiB
# (_embedding_bag_per_sample_weights_backward's) are skipped below.
CPU_OPS = [
    "_index_put_impl___default",
    "_log_softmax__default",
    "_sparse_coo_tensor_with_dims_and_tensors__default",
    "_to_copy__default",
    "add__Tensor",
    "add___Tensor",
    "constant_pad_nd__default",
    "div__Tensor",
    "std__correction",
    "sum__dim_IntList",
    "var_mean__correction",
]


def _reference(source: str) -> object:
    namespace: dict[str, object] = {}
    exec(compile(source, "reference.py", "exec"), namespace)  # noqa: S102  (our generated reference)
    return namespace["run"]


def test_real_rows_run_through_the_reference(
    edge_file: Path, imported: dict[str, tuple[Path, ImportReport]]
) -> None:
    root, _ = imported[edge_file.name]
    ds = load_dataset([root])
    ran = 0
    for name in CPU_OPS:
        defn = ds.definitions[name]
        run = _reference(defn.reference)
        assert callable(run)
        for w in ds.workloads[name]:
            spec = describe_call(defn, w)
            if spec.nbytes > 64 * 2**20:
                continue
            args, kwargs = materialize(spec, torch.Generator().manual_seed(1), "cpu", max_bytes=2**30)
            ra, rk = clone_call(args, kwargs)
            sa, sk = clone_call(args, kwargs)
            expected = (run(*ra, **rk), ra, rk)
            actual = (run(*sa, **sk), sa, sk)
            verdict = compare_call(spec, expected, actual, atol=0.0, rtol=0.0)
            assert verdict.ok, (name, w.uuid, verdict)
            ran += 1
    assert ran >= 25


def test_the_imported_kernel_matches_the_reference_on_cpu(
    local_data: Path, edge_file: Path, tmp_path: Path
) -> None:
    """The imported solution's entry point, called like the ATen op, agrees with the reference."""
    import importlib.util

    import torch

    import_backendbench(edge_file, tmp_path, ops=["add.Tensor"])
    report = import_kernels(local_data / "kernels", tmp_path)
    ds = load_dataset([tmp_path])
    defn = ds.definitions["add__Tensor"]
    sol = ds.solutions["add__Tensor_implementation"]
    path = tmp_path / "impl.py"
    path.write_text(sol.sources[0].content)
    spec_ = importlib.util.spec_from_file_location("bb_test_impl", path)
    assert spec_ is not None and spec_.loader is not None
    module = importlib.util.module_from_spec(spec_)
    spec_.loader.exec_module(module)
    impl = getattr(module, sol.spec.entry_symbol)
    ref_ns: dict[str, object] = {}
    exec(compile(defn.reference, "reference.py", "exec"), ref_ns)  # noqa: S102  (generated reference)
    run = ref_ns["run"]
    assert callable(run)
    for w in ds.workloads["add__Tensor"]:
        call = describe_call(defn, w)
        args, kwargs = materialize(call, torch.Generator().manual_seed(0), "cpu")
        ra, rk = clone_call(args, kwargs)
        sa, sk = clone_call(args, kwargs)
        verdict = compare_call(
            call, (run(*ra, **rk), ra, rk), (impl(*sa, **sk), sa, sk), atol=1e-3, rtol=1e-3
        )
        assert verdict.ok, verdict
    assert report.solutions
