"""Hostile records: definitions, solutions, workloads and traces that must be refused by
validation (a pydantic ValidationError: the loaders turn it into file:line messages), and
random corruptions of real records that must be refused or read back exactly."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.schema import Definition, Solution, Trace, Workload
from sweep.schema.limits import INT64_MAX, INT64_MIN, MAX_JSON_DEPTH

from .conftest import DEFINITION, EVALUATION, SOLUTION, WORKLOAD

pytestmark = pytest.mark.hostile

_REPO = Path(__file__).resolve().parents[2]
_SHARED = _REPO / "tests" / "data" / "real"


def _messages(model: type[pydantic.BaseModel], data: object) -> str:
    with pytest.raises(pydantic.ValidationError) as info:
        if isinstance(data, str):
            model.model_validate_json(data)
        else:
            model.model_validate(data)
    return "\n".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in info.value.errors())


def _trace(**evaluation: Any) -> dict[str, Any]:
    return {
        "definition": "vec_add",
        "workload": copy.deepcopy(WORKLOAD),
        "solution": "s",
        "evaluation": {**copy.deepcopy(EVALUATION), **evaluation},
    }


# ---- definitions ----


def test_const_axis_beyond_int64(definition_data: dict[str, Any]) -> None:
    definition_data["axes"]["d"]["value"] = 2**70
    assert "less than or equal to 9223372036854775807" in _messages(Definition, definition_data)


def test_const_axis_true(definition_data: dict[str, Any]) -> None:
    definition_data["axes"]["d"]["value"] = True
    assert "Input should be a valid integer" in _messages(Definition, json.dumps(definition_data))


def test_constraint_with_an_undefined_name(definition_data: dict[str, Any]) -> None:
    definition_data["constraints"] = ["n % dd == 0"]
    assert (
        "constraints[0]: unknown name 'dd' in 'n % dd == 0' (did you mean 'd'?); "
        "a constraint may read axes (n, d) and inputs (x, alpha)"
    ) in _messages(Definition, definition_data)


def test_constraint_with_an_unknown_function(definition_data: dict[str, Any]) -> None:
    definition_data["constraints"] = ["lenn(x) == n"]
    assert "constraints[0]: unknown function 'lenn' in 'lenn(x) == n' (did you mean 'len'?)" in _messages(
        Definition, definition_data
    )


def test_constraints_on_tensor_values_still_load(definition_data: dict[str, Any]) -> None:
    definition_data["constraints"] = ["x.shape[0] == n", "(x >= 0).all()", "len(x) == n", "alpha.item() > 0"]
    Definition.model_validate(definition_data)


@pytest.mark.parametrize(
    "expression", ["n + " * 100_000 + "n", "(" * 300 + "n" + ")" * 300, "-" * 100_000 + "n", "n ==\0 1"]
)
def test_a_huge_or_deep_constraint_is_refused(definition_data: dict[str, Any], expression: str) -> None:
    definition_data["constraints"] = [expression]
    message = _messages(Definition, definition_data)
    assert "constraints[0]: " in message
    assert len(message) < 400


@pytest.mark.parametrize("field", ["flops", "bytes"])
def test_a_huge_work_expression_is_refused(definition_data: dict[str, Any], field: str) -> None:
    definition_data[field] = "n * " * 100_000 + "n"
    message = _messages(Definition, definition_data)
    assert f"{field}: longer than 2000 characters" in message
    assert len(message) < 400


@pytest.mark.parametrize("body", ["1 + " * 100_000 + "1", "-" * 100_000 + "1", "[" * 100_000])
def test_a_reference_that_breaks_pythons_parser(definition_data: dict[str, Any], body: str) -> None:
    definition_data["reference"] = f"def run(x, alpha):\n    return {body}\n"
    message = _messages(Definition, definition_data)
    assert "reference: not valid Python" in message


def test_deep_json_is_refused_by_the_parser() -> None:
    text = json.dumps(DEFINITION)[:-1] + ', "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert "recursion limit exceeded" in _messages(Definition, text)


# ---- solutions ----


@pytest.mark.parametrize("value", ["yes", "true", 1, "1", "on"])
def test_destination_passing_style_is_a_strict_bool(solution_data: dict[str, Any], value: object) -> None:
    solution_data["spec"]["destination_passing_style"] = value
    assert "Input should be a valid boolean" in _messages(Solution, json.dumps(solution_data))


@pytest.mark.parametrize(
    ("path", "fragment"),
    [
        ("ma\0in.py", "must not contain control characters"),
        ("../../etc/passwd", "must not contain '..'"),
        ("a/../../b", "must not contain '..'"),
        ("../evil.py", "must not contain '..', got '../evil.py'"),
        ("pkg/../../evil.py", "must not contain '..', got 'pkg/../../evil.py'"),
        ("pkg\\..\\evil.py", "must not contain '..'"),
        ("/etc/passwd", "must be a relative path, got '/etc/passwd'"),
        ("C:/x.py", "must be a relative path, got 'C:/x.py'"),
    ],
)
def test_source_paths(solution_data: dict[str, Any], path: str, fragment: str) -> None:
    solution_data["sources"].append({"path": path, "content": ""})
    assert fragment in _messages(Solution, solution_data)


# ---- workloads ----


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        (True, "Input should be a valid integer"),
        (2**63, "less than or equal to 9223372036854775807"),
        (-(2**63) - 1, "greater than or equal to -9223372036854775808"),
        (1.0, "Input should be a valid integer"),
        ("4", "Input should be a valid integer"),
    ],
)
def test_axis_values(workload_data: dict[str, Any], value: object, fragment: str) -> None:
    workload_data["axes"]["n"] = value
    assert fragment in _messages(Workload, json.dumps(workload_data))


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "x/../../y.safetensors", "a\0b"])
def test_safetensors_paths_stay_inside_the_root(workload_data: dict[str, Any], path: str) -> None:
    workload_data["inputs"]["x"] = {"type": "safetensors", "path": path, "tensor_key": "x"}
    assert "it names a file inside the dataset root" in _messages(Workload, workload_data)


@pytest.mark.parametrize(
    "weight", ["Infinity", "-Infinity", "NaN", "1e999", "true", "-1", "99999999999999999999"]
)
def test_weight_is_a_finite_number(workload_data: dict[str, Any], weight: str) -> None:
    text = json.dumps(workload_data)[:-1] + f', "weight": {weight}}}'
    assert "weight: " in _messages(Workload, text)
    text = json.dumps(workload_data)[:-1] + f', "weight": "{weight}"}}'
    assert "weight: " in _messages(Workload, text)


def test_scalar_input_beyond_int64(workload_data: dict[str, Any]) -> None:
    workload_data["inputs"]["alpha"]["value"] = 2**64
    assert "an integer scalar must fit 64 bits" in _messages(Workload, json.dumps(workload_data))


@pytest.mark.parametrize(
    ("call", "fragment"),
    [
        (
            {"args": [{"type": "tensor", "shape": [2**63], "dtype": "float32"}]},
            "non-negative integers under 2**63",
        ),
        ({"args": [{"type": "tensor", "shape": [2**32, 2**32], "dtype": "float32"}]}, "more elements than"),
        ({"args": [2**64]}, "outside the 64-bit integer range"),
        ({"args": [], "kwargs": {"k" * 10_000: {"type": "bogus"}}}, "unknown value type 'bogus'"),
        ({"args": [], "synthetic": "yes"}, "Input should be a valid boolean"),
        ({"args": [], "source": {"file": "f", "line": 2**64}}, "less than or equal to"),
    ],
)
def test_backendbench_calls(call: dict[str, Any], fragment: str) -> None:
    data = {"uuid": "u", "axes": {}, "inputs": {"call": {"type": "backendbench_args", **call}}}
    message = _messages(Workload, json.dumps(data))
    assert fragment in message
    assert len(message) < 600


# ---- traces ----


@pytest.mark.parametrize(
    ("evaluation", "fragment"),
    [
        ({"seed": 2**70}, "evaluation.seed: Input should be less than or equal to"),
        ({"seed": True}, "evaluation.seed: Input should be a valid integer"),
        (
            {
                "timing": {
                    "clock": "cuda_event",
                    "iterations": 2**64,
                    "p10_ms": 1,
                    "p50_ms": 1,
                    "p90_ms": 1,
                    "mean_ms": 1,
                    "cv": 0,
                }
            },
            "iterations: Input should be less than or equal to",
        ),
        ({"clocks": {"sm_clock_mhz_max": -1}}, "greater than or equal to 0"),
        ({"clocks": {"throttled": "no"}}, "Input should be a valid boolean"),
        ({"timestamp": "x" * 10_000_000}, "must be an ISO 8601 timestamp"),
    ],
)
def test_trace_fields(evaluation: dict[str, Any], fragment: str) -> None:
    message = _messages(Trace, json.dumps(_trace(**evaluation)))
    assert fragment in message
    assert len(message) < 600


@pytest.mark.parametrize(("field", "value"), [("worker_pid", 2**70), ("attempt", -1), ("worker_pid", True)])
def test_provenance_fields(field: str, value: object) -> None:
    data = {**_trace(), "provenance": {field: value}}
    assert f"provenance.{field}" in _messages(Trace, json.dumps(data))


# ---- properties: corrupt one place of a real record ----


def _real_records() -> list[tuple[type[pydantic.BaseModel], dict[str, Any]]]:
    root = _SHARED / "flashinfer-trace"
    out: list[tuple[type[pydantic.BaseModel], dict[str, Any]]] = [
        (Definition, DEFINITION),
        (Solution, SOLUTION),
        (Workload, WORKLOAD),
        (Trace, _trace()),
    ]
    out += [(Definition, json.loads(p.read_text())) for p in sorted(root.glob("definitions/*/*.json"))]
    for p in sorted(root.glob("*/*/*.jsonl")):
        out.append((Trace, json.loads(p.read_text().splitlines()[0])))
    return out


_RECORDS = _real_records()


def _places(obj: object, here: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    out = [here]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _places(v, (*here, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _places(v, (*here, i))
    return out


_HOSTILE = st.one_of(
    st.sampled_from(
        [
            True,
            False,
            None,
            0,
            -1,
            2**63 - 1,
            2**63,
            -(2**63) - 1,
            2**70,
            10**30,
            float("inf"),
            float("nan"),
            "",
            "\0",
            "../../etc/passwd",
            "/etc/passwd",
            "yes",
            "Infinity",
            [],
            {},
            [[[]]],
            "x" * 5000,
        ]
    ),
    st.integers(),
    st.floats(),
    st.text(max_size=30),
)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_corrupted_record_is_refused_or_read_back_exactly(data: st.DataObject) -> None:
    model, base = data.draw(st.sampled_from(_RECORDS))
    record = copy.deepcopy(base)
    place = data.draw(st.sampled_from(_places(record)[1:]))
    value = data.draw(_HOSTILE)
    target: Any = record
    for part in place[:-1]:
        target = target[part]
    target[place[-1]] = value
    text = json.dumps(record)  # NaN and Infinity as JSON's usual extension tokens
    try:
        parsed = model.model_validate_json(text)
    except pydantic.ValidationError as e:
        assert e.errors(), "a refusal must say why"
        return
    # Accepted: it writes back to what it read (NaN aside, which equals nothing) ...
    again = model.model_validate_json(parsed.model_dump_json(exclude_unset=True))
    assert again.model_dump() == parsed.model_dump() or "NaN" in text
    # ... and an integer past 64 bits was kept as one only where the schema stores free JSON
    # (a float field holds it as a float).
    kept: Any = json.loads(parsed.model_dump_json(exclude_unset=True))
    for part in place:
        kept = (
            kept[part]
            if isinstance(kept, (dict, list))
            and part in (kept if isinstance(kept, dict) else range(len(kept)))
            else None
        )
    if isinstance(kept, int) and not isinstance(kept, bool) and not INT64_MIN <= kept <= INT64_MAX:
        assert set(place) & _FREE_JSON, f"{place} accepted {kept}"


#: Fields holding free JSON, kept verbatim (never an integer column of the store).
_FREE_JSON = {"extra", "libs", "description"}


def test_json_depth_limit_matches_pydantic() -> None:
    ok = "[" * (MAX_JSON_DEPTH - 1) + "]" * (MAX_JSON_DEPTH - 1)
    deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    base = json.dumps(WORKLOAD)[:-1]
    Workload.model_validate_json(base + f', "x": {ok}}}')
    assert "recursion limit exceeded" in _messages(Workload, base + f', "x": {deep}}}')


# ---- parameter spaces ------------------------------------------------------------------------

_json_scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=300)
_json_values = st.recursive(
    _json_scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(), c, max_size=3), max_leaves=8
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    params=st.dictionaries(st.text(max_size=12), _json_values, max_size=4) | _json_values,
    constraints=st.lists(st.text(max_size=40), max_size=3) | _json_values,
)
def test_any_params_load_or_are_refused_cleanly(params: Any, constraints: Any) -> None:
    data = {**copy.deepcopy(SOLUTION), "params": params, "params_constraints": constraints}
    try:
        sol = Solution.model_validate(data)
    except pydantic.ValidationError:
        return
    assert sol.content_hash  # loaded: hashable, and written back as read
    assert Solution.model_validate_json(sol.to_json()) == sol


def test_a_huge_grid_is_refused_with_its_size() -> None:
    data = {**copy.deepcopy(SOLUTION), "params": {f"P{i}": list(range(100)) for i in range(3)}}
    with pytest.raises(pydantic.ValidationError, match=r"the grid has 1000000 points \(100 x 100 x 100\)"):
        Solution.model_validate(data)
