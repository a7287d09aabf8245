"""Solution rules: entry file among sources, stable content hash (paths: ``test_hostile_records.py``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from sweep.schema import Solution

from .conftest import validation_error


def _error(data: dict[str, Any]) -> str:
    return validation_error(Solution, data)


def test_valid_solution_loads(solution_data: dict[str, Any]) -> None:
    s = Solution.model_validate(solution_data)
    assert s.spec.entry_file == "main.py"
    assert s.spec.entry_symbol == "run"
    assert s.spec.destination_passing_style is True  # FlashInfer-Bench's default


def test_entry_file_must_be_among_sources(solution_data: dict[str, Any]) -> None:
    solution_data["spec"]["entry_point"] = "kernel.py::run"
    assert "spec.entry_point: file 'kernel.py' is not among the sources (main.py)" in _error(solution_data)


def test_entry_point_needs_file_and_symbol(solution_data: dict[str, Any]) -> None:
    solution_data["spec"]["entry_point"] = "main.py"
    assert "must be '<file>::<symbol>', got 'main.py'" in _error(solution_data)


def test_duplicate_source_paths_are_refused(solution_data: dict[str, Any]) -> None:
    solution_data["sources"].append({"path": "./main.py", "content": "x = 2\n"})
    assert "sources[1].path: duplicate path './main.py'" in _error(solution_data)


def test_target_hardware_may_not_be_empty(solution_data: dict[str, Any]) -> None:
    solution_data["spec"]["target_hardware"] = []
    assert "spec.target_hardware" in _error(solution_data)


def test_content_hash_is_stable(solution_data: dict[str, Any]) -> None:
    a = Solution.model_validate(solution_data)
    b = Solution.model_validate(copy.deepcopy(solution_data))
    assert a.content_hash == b.content_hash
    assert len(a.content_hash) == 16
    int(a.content_hash, 16)


def test_content_hash_ignores_name_author_description_and_source_order(
    solution_data: dict[str, Any],
) -> None:
    base = Solution.model_validate(solution_data).content_hash
    solution_data["sources"].append({"path": "util.py", "content": "X = 1\n"})
    with_util = Solution.model_validate(solution_data).content_hash
    renamed = copy.deepcopy(solution_data)
    renamed.update(name="other", author="someone", description="words")
    renamed["sources"].reverse()
    assert Solution.model_validate(renamed).content_hash == with_util
    assert with_util != base


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d["sources"][0].update(content="def run(x, alpha):\n    return x\n"),
        lambda d: d["spec"].update(target_hardware=["cpu", "gpu"]),
        lambda d: d["spec"].update(language="triton"),
        lambda d: d.update(definition="other_def"),
    ],
    ids=["source", "target_hardware", "language", "definition"],
)
def test_content_hash_changes_with_behaviour(solution_data: dict[str, Any], change: Any) -> None:
    before = Solution.model_validate(solution_data).content_hash
    change(solution_data)
    assert Solution.model_validate(solution_data).content_hash != before


def test_known_hash_value(solution_data: dict[str, Any]) -> None:
    """The hash is part of task ids: it must not drift between versions or machines."""
    import hashlib
    import json

    s = Solution.model_validate(solution_data)
    payload = {
        "definition": "vec_add",
        "spec": s.spec.model_dump(mode="json"),
        "sources": [["main.py", solution_data["sources"][0]["content"]]],
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    assert s.content_hash == hashlib.sha256(text.encode()).hexdigest()[:16]


# Laid out as FlashInfer-Bench's TVM-FFI example (examples/ffi/.../example_agent_solution.json):
# no binding (tvm-ffi, upstream's default for C++/CUDA), description before author, an empty
# dependency list, a header beside the kernel.
UPSTREAM_TVM_FFI = {
    "name": "example_agent_solution",
    "definition": "gemm_n4096_k4096",
    "description": "a CUDA kernel exported with TVM_FFI_DLL_EXPORT_TYPED_FUNC",
    "author": "agent",
    "spec": {
        "language": "cuda",
        "target_hardware": ["B200"],
        "entry_point": "kernel.cu::gemm_n_4096_k_4096",
        "dependencies": [],
    },
    "sources": [
        {"path": "kernel.h", "content": "#pragma once\n"},
        {"path": "kernel.cu", "content": '#include "kernel.h"\n'},
    ],
}


@pytest.mark.parametrize("binding", [None, "tvm-ffi", "torch"])
def test_upstream_tvm_ffi_solution_loads_and_round_trips(binding: str | None) -> None:
    data = copy.deepcopy(UPSTREAM_TVM_FFI)
    if binding is not None:
        data["spec"]["binding"] = binding  # type: ignore[index]
    s = Solution.model_validate(data)
    assert (s.spec.binding.value if s.spec.binding else None) == binding
    assert s.spec.entry_file == "kernel.cu" and s.spec.entry_symbol == "gemm_n_4096_k_4096"
    assert s.to_json_obj() == data  # no field lost or added: an absent binding stays absent
    assert Solution.model_validate_json(s.to_json()).content_hash == s.content_hash
