"""bench/gpu_collectives.py on the CPU (gloo): sweep's rows beside torch.distributed's own
figures for the same sizes, multicast off in this process and its children."""

from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

from sweep.schema.distributed import bus_factor

BENCH = Path(__file__).resolve().parents[2] / "bench" / "gpu_collectives.py"


def _bench():  # type: ignore[no-untyped-def]
    # Imported by name from bench/ on sys.path: the baseline's rank processes (spawned) import
    # the module again to find their function.
    if str(BENCH.parent) not in sys.path:
        sys.path.insert(0, str(BENCH.parent))
    return importlib.import_module("gpu_collectives")


def test_the_cpu_path_prints_both_figures_side_by_side(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    bench = _bench()
    assert os.environ["NCCL_NVLS_ENABLE"] == "0"  # set on import, so children inherit it
    out = tmp_path / "rows.json"
    args = ["--device", "cpu", "--worlds", "2", "--definitions", "all_reduce_sum_f32,gemm_rs_bf16",
            "--max-bytes", "32768", "--iters", "3", "--run-s", "60", "--no-failures", "--json", str(out)]  # fmt: skip
    assert bench.main(args) == 0
    rows = json.loads(out.read_text())
    assert {(r["definition"], r["bytes"]) for r in rows} == {
        ("all_reduce_sum_f32", 4096.0),
        ("gemm_rs_bf16", 32768.0),  # the 128 x 128 workload; 512 x 256 is over --max-bytes
    }
    # every shipped solution: all-reduce _torch, _rs_ag; GEMM+RS _torch, _overlap
    assert len(rows) == 4 and all(r["status"] == "PASSED" for r in rows), rows
    assert all(r["busbw"] > 0 and r["torch_busbw"] > 0 for r in rows)  # both sides measured
    text = capsys.readouterr().out
    assert "torch.dist busbw" in text and "all_reduce_sum_f32_rs_ag" in text


def test_the_plain_baseline_applies_nccl_tests_factors() -> None:
    bench = _bench()
    secs = bench.plain_times("cpu", 2, [("all_gather", 8192), ("reduce_scatter", 8192)], 2)
    assert set(secs) == {"all_gather:8192", "reduce_scatter:8192"} and all(v > 0 for v in secs.values())
    assert bus_factor("all_gather", 2) == 0.5 and bus_factor("all_reduce", 4) == 1.5
