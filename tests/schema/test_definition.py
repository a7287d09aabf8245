"""Definition rules: reference, declared axes, disjoint names, dtypes, constraints syntax."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from sweep.schema import Definition

from .conftest import validation_error


def _error(data: dict[str, Any]) -> str:
    return validation_error(Definition, data)


def test_valid_definition_loads(definition_data: dict[str, Any]) -> None:
    d = Definition.model_validate(definition_data)
    assert d.const_axes() == {"d": 8}
    assert d.var_axes() == ["n"]
    assert d.inputs["alpha"].is_scalar
    assert d.resolve_shape(d.inputs["x"], {"n": 3}) == (3, 8)
    assert d.resolve_shape(d.inputs["alpha"], {"n": 3}) is None


def test_reference_must_parse(definition_data: dict[str, Any]) -> None:
    definition_data["reference"] = "def run(x, alpha)\n    return x\n"
    assert "reference: not valid Python: expected ':' (line 1)" in _error(definition_data)


def test_reference_must_define_top_level_run(definition_data: dict[str, Any]) -> None:
    definition_data["reference"] = "def main(x):\n    return x\n"
    assert "reference: must define a top-level function 'run'" in _error(definition_data)


def test_run_nested_in_a_class_does_not_count(definition_data: dict[str, Any]) -> None:
    definition_data["reference"] = "class K:\n    def run(self, x):\n        return x\n"
    assert "must define a top-level function 'run'" in _error(definition_data)


def test_every_shape_axis_is_declared(definition_data: dict[str, Any]) -> None:
    definition_data["outputs"]["z"]["shape"] = ["n", "q"]
    assert "outputs.z.shape[1]: axis 'q' is not declared in 'axes' (declared: d, n)" in _error(
        definition_data
    )


def test_input_and_output_names_are_disjoint(definition_data: dict[str, Any]) -> None:
    definition_data["outputs"]["x"] = {"shape": ["n", "d"], "dtype": "float32"}
    assert "names used as both input and output: x" in _error(definition_data)


def test_unknown_dtype_is_refused(definition_data: dict[str, Any]) -> None:
    definition_data["inputs"]["x"]["dtype"] = "float33"
    text = _error(definition_data)
    assert "inputs.x.dtype" in text
    assert "Input should be 'float32', 'float16'" in text


def test_extension_dtypes_are_accepted(definition_data: dict[str, Any]) -> None:
    for dtype in ("float64", "uint8", "complex64"):
        definition_data["inputs"]["x"]["dtype"] = dtype
        assert Definition.model_validate(definition_data).inputs["x"].dtype.value == dtype


def test_const_axis_must_be_positive(definition_data: dict[str, Any]) -> None:
    definition_data["axes"]["d"]["value"] = 0
    assert "greater than or equal to 1" in _error(definition_data)


def test_constraint_must_be_an_expression(definition_data: dict[str, Any]) -> None:
    definition_data["constraints"] = ["n >"]
    assert "constraints[0]: not a Python expression: 'n >'" in _error(definition_data)


def test_unknown_fields_survive_a_round_trip(definition_data: dict[str, Any]) -> None:
    definition_data["future_field"] = {"a": [1, 2]}
    d = Definition.model_validate(definition_data)
    assert d.to_json_obj() == definition_data


def test_definition_is_frozen(definition_data: dict[str, Any]) -> None:
    d = Definition.model_validate(definition_data)
    with pytest.raises(pydantic.ValidationError):
        d.name = "other"  # type: ignore[misc]
