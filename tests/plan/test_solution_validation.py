"""``validate_roots`` checks solutions against their definitions: every shipped solution and
the real FlashInfer-Bench files still validate; a mismatched signature is an error."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from sweep.plan.dataset import validate_roots

REPO = Path(__file__).resolve().parent.parent.parent


def test_shipped_and_real_files_validate(shared_data: Path) -> None:
    roots = [REPO, shared_data / "flashinfer-trace", REPO / "tests" / "data" / "engine"]
    ds, errors = validate_roots(roots)
    assert errors == []
    assert ds.warnings == []
    assert len(ds.solutions) == len(list((REPO / "solutions").rglob("*.json"))) + len(
        list((REPO / "tests" / "data" / "engine" / "solutions").rglob("*.json"))
    )


def test_upstream_example_solution_validates(tmp_path: Path, shared_data: Path) -> None:
    """Upstream's example (a CUDA GEMM with no binding): C++ entry points are not read."""
    shutil.copytree(shared_data / "flashinfer-trace" / "definitions", tmp_path / "definitions")
    sol = {
        "name": "example_agent_solution",
        "definition": "gemm_n4096_k4096",
        "description": "upstream's form",
        "author": "gpt-5-2025-08-07",
        "spec": {
            "language": "cuda",
            "target_hardware": ["B200"],
            "entry_point": "kernel.cu::gemm",
            "dependencies": [],
        },
        "sources": [{"path": "kernel.h", "content": ""}, {"path": "kernel.cu", "content": "void gemm() {}"}],
    }
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "s.json").write_text(json.dumps(sol))
    ds, errors = validate_roots([tmp_path])
    assert errors == [] and "example_agent_solution" in ds.solutions


def test_mismatched_signature_is_an_error_and_the_solution_broken(tmp_path: Path) -> None:
    shutil.copytree(REPO / "definitions", tmp_path / "definitions")
    sol = json.loads(
        (REPO / "solutions/sweep-examples/softmax/softmax_f32/softmax_f32_torch.json").read_text()
    )
    del sol["spec"]["destination_passing_style"]
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "s.json").write_text(json.dumps(sol))
    ds, errors = validate_roots([tmp_path])
    # Kept, as a broken solution: its tasks are COMPILE_ERROR traces with this message.
    assert ds.valid_solutions() == 0
    assert ds.broken["softmax_f32_torch"].record == ds.solutions["softmax_f32_torch"]
    assert ds.broken["softmax_f32_torch"].messages == tuple(errors)
    [err] = errors
    assert err.startswith(f"{tmp_path / 'solutions' / 's.json'}: spec.entry_point: 'main.py::run' (line 6)")
    assert 'use "destination_passing_style": false' in err
