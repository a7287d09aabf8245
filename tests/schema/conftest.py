"""Builders of valid records, so each test changes one thing and checks one rule."""

from __future__ import annotations

import copy
from typing import Any

import pydantic
import pytest

DEFINITION: dict[str, Any] = {
    "name": "vec_add",
    "op_type": "ew",
    "axes": {"n": {"type": "var"}, "d": {"type": "const", "value": 8}},
    "inputs": {
        "x": {"shape": ["n", "d"], "dtype": "float32"},
        "alpha": {"shape": None, "dtype": "float32"},
    },
    "outputs": {"z": {"shape": ["n", "d"], "dtype": "float32"}},
    "reference": "import torch\n\ndef run(x, alpha):\n    return x * alpha\n",
}
SOLUTION: dict[str, Any] = {
    "name": "vec_add_py",
    "definition": "vec_add",
    "author": "tester",
    "spec": {"language": "python", "target_hardware": ["cpu"], "entry_point": "main.py::run"},
    "sources": [{"path": "main.py", "content": "def run(x, alpha):\n    return x * alpha\n"}],
}
WORKLOAD: dict[str, Any] = {
    "uuid": "w1",
    "axes": {"n": 4},
    "inputs": {"x": {"type": "random"}, "alpha": {"type": "scalar", "value": 2.0}},
}
EVALUATION: dict[str, Any] = {
    "status": "PASSED",
    "environment": {"hardware": "NVIDIA_H100", "libs": {"torch": "2.13.0"}},
    "timestamp": "2026-11-22T01:02:03",
    "log": "",
    "correctness": {"max_relative_error": 0.0, "max_absolute_error": 0.0},
    "performance": {"latency_ms": 1.0, "reference_latency_ms": 2.0, "speedup_factor": 2.0},
}


@pytest.fixture
def definition_data() -> dict[str, Any]:
    """A valid definition as JSON data (a fresh copy per test)."""
    return copy.deepcopy(DEFINITION)


@pytest.fixture
def solution_data() -> dict[str, Any]:
    """A valid solution as JSON data."""
    return copy.deepcopy(SOLUTION)


@pytest.fixture
def workload_data() -> dict[str, Any]:
    """A valid workload of ``definition_data``."""
    return copy.deepcopy(WORKLOAD)


@pytest.fixture
def evaluation_data() -> dict[str, Any]:
    """A valid PASSED evaluation."""
    return copy.deepcopy(EVALUATION)


def validation_error(model: type[pydantic.BaseModel], data: object) -> str:
    """The message of the ``ValidationError`` that ``model`` raises for ``data``."""
    with pytest.raises(pydantic.ValidationError) as info:
        model.model_validate(data)
    return str(info.value)
