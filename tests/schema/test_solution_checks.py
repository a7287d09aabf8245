"""Checks of a solution short of building it: the entry point's signature against the
definition, and unknown keys close to known ones."""

from __future__ import annotations

from typing import Any

import pydantic
import pytest

from sweep.schema import Definition, Solution
from sweep.schema.solution_checks import solution_problems

_SPEC = {"shape": ["n"], "dtype": "float32"}
DEFN = Definition.model_validate(
    {
        "name": "mul",
        "op_type": "mul",
        "axes": {"n": {"type": "var"}},
        "inputs": {"x": _SPEC, "w": _SPEC},
        "outputs": {"y": _SPEC},
        "reference": "def run(x, w):\n    return x * w\n",
    }
)


def _solution(src: str, *, spec: dict[str, Any] | None = None, path: str = "main.py", **top: Any) -> Solution:
    data: dict[str, Any] = {
        "name": "s",
        "definition": "mul",
        "author": "t",
        "spec": {
            "language": "python",
            "target_hardware": ["cpu"],
            "entry_point": f"{path}::run",
            **(spec or {}),
        },
        "sources": [{"path": path, "content": src}],
        **top,
    }
    return Solution.model_validate(data)


def test_value_returning_run_with_the_default_style_is_an_error_naming_the_fix() -> None:
    [p] = solution_problems(_solution("def run(x, w):\n    return x * w\n"), DEFN)
    assert p.error
    assert p.message.startswith("spec.entry_point: 'main.py::run' (line 1): the entry point takes (x, w)")
    assert 'use "destination_passing_style": false' in p.message


def test_fitting_signatures_and_what_is_not_read() -> None:
    assert solution_problems(_solution("def run(x, w, y):\n    y.copy_(x * w)\n"), DEFN) == []
    ok = _solution("def run(x, w):\n    return x * w\n", spec={"destination_passing_style": False})
    assert solution_problems(ok, DEFN) == []
    assert solution_problems(_solution("from .impl import run\n"), DEFN) == []
    cuda = _solution("int run() {}", path="k.cu", spec={"language": "cuda"})
    assert solution_problems(cuda, DEFN) == []  # C++/CUDA entry points are checked when built
    assert solution_problems(_solution("def run(x):\n    pass\n"), None) == []


def test_decorated_entry_is_a_warning_and_syntax_error_an_error() -> None:
    [p] = solution_problems(_solution("@deco\ndef run(x):\n    pass\n"), DEFN)
    assert not p.error and "before its decorators" in p.message
    [p] = solution_problems(_solution("def run(x, w, y)\n    pass\n"), DEFN)
    assert p.error and "main.py: not valid Python" in p.message


def test_near_miss_spec_keys() -> None:
    sol = _solution("def run(x, w):\n    pass\n", spec={"destination_passing_styl": False})
    problems = solution_problems(sol, DEFN)
    typo = [p for p in problems if "destination_passing_styl:" in p.message]
    assert typo[0].error
    assert "(did you mean 'destination_passing_style'?)" in typo[0].message
    both = _solution("def run(x, w, y):\n    pass\n", spec={"dependency": ["torch"], "dependencies": []})
    [p] = solution_problems(both, DEFN)
    assert not p.error and "spec.dependency: unknown key beside 'dependencies'" in p.message


def test_far_unknown_keys_stay_silent_and_round_trip() -> None:
    sol = _solution("def run(x, w, y):\n    pass\n", spec={"compile_flags": ["-O3"]}, extra_info={"k": 1})
    assert solution_problems(sol, DEFN) == []
    assert sol.to_json_obj()["spec"]["compile_flags"] == ["-O3"] and sol.to_json_obj()["extra_info"] == {
        "k": 1
    }
    [p] = solution_problems(_solution("def run(x, w, y):\n    pass\n", descripton="d"), DEFN)
    assert not p.error and "(did you mean 'description'?)" in p.message


def test_missing_required_key_with_a_near_miss_says_did_you_mean(solution_data: dict[str, Any]) -> None:
    spec = solution_data["spec"]
    spec["entrypoint"] = spec.pop("entry_point")  # "main.py::run", under a misspelt key
    with pytest.raises(
        pydantic.ValidationError,
        match=r"missing 'entry_point'; found the unknown key 'entrypoint' \(did you mean 'entry_point'\?\)",
    ):
        Solution.model_validate(solution_data)


# ---- parameter spaces ------------------------------------------------------------------------


def test_params_the_entry_point_takes_are_fine() -> None:
    dps = {"destination_passing_style": False}
    src = "def run(x, w, B=1, *, MODE='a'):\n    return x * w\n"
    sol = _solution(src, spec=dps, params={"B": [1, 2], "MODE": ["a"]})
    assert solution_problems(sol, DEFN) == []
    src = "def run(x, w, **kw):\n    return x * w\n"
    kwargs = _solution(src, spec=dps, params={"B": [1]}, params_constraints=["B <= n"])
    assert solution_problems(kwargs, DEFN) == []


def test_a_param_the_entry_point_lacks_is_an_error() -> None:
    src = "def run(x, w, B=1):\n    return x * w\n"
    sol = _solution(src, spec={"destination_passing_style": False}, params={"B": [1], "C": [2]})
    (problem,) = solution_problems(sol, DEFN)
    assert problem.error and "takes no keyword argument 'C'" in problem.message


def test_a_constraint_naming_an_unknown_axis_is_an_error() -> None:
    sol = _solution(
        "def run(x, w, B=1):\n    return x * w\n", params={"B": [1]}, params_constraints=["B <= nn"]
    )
    (problem,) = solution_problems(sol, DEFN)
    assert problem.error and "did you mean 'n'" in problem.message


def test_an_entry_file_is_read_whatever_the_definition() -> None:
    """Not valid Python, or certainly no entry point: an error even for a solution whose
    definition is not loaded or is an imported BackendBench operator (whose signature alone
    is left to the engine)."""
    imported = DEFN.model_copy(update={"tags": ["backendbench"]})
    for definition in (None, imported, DEFN):
        [bad] = solution_problems(_solution("def run(x, w)\n    pass\n"), definition)
        assert bad.error and bad.message == "sources: main.py: not valid Python: expected ':' (line 1)"
        [gone] = solution_problems(_solution("def fn(x, w, y):\n    pass\n"), definition)
        assert gone.error and gone.message == (
            "spec.entry_point: 'main.py::run': main.py defines no 'run' (top-level functions: fn)"
        )
    # BackendBench: a signature that fits nothing the definition says is the engine's to judge.
    plain = {"destination_passing_style": False}  # how a BackendBench operator is called
    assert solution_problems(_solution("def run(a):\n    pass\n", spec=plain), imported) == []


def test_an_entry_point_bound_at_run_time_is_left_to_the_engine() -> None:
    for src in (
        "globals()['run'] = print\n",
        "from .impl import *\n",
        "def __getattr__(n):\n    return print\n",
    ):
        assert solution_problems(_solution(src), DEFN) == []
