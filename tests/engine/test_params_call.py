"""A task's parameter point reaches the entry point as keyword arguments, and the trace."""

from __future__ import annotations

from sweep.engine import EngineCache, evaluate
from sweep.schema.task import Task

SOURCE = """import torch

def run(x, y, SCALE=1.0, MODE="add"):
    if MODE != "add":
        raise ValueError(MODE)
    return (x + y) * SCALE
"""


def _task(kit, vadd, vadd_wl, params):
    sol = kit.solution("vadd_f32", SOURCE).model_copy(
        update={"params": {"SCALE": [1.0, 2.0], "MODE": ["add"]}}
    )
    return Task.make(vadd, sol, vadd_wl, kit.fast, "CPU", sweep="tests", params=params)


def test_point_passed_as_keywords_and_recorded(kit, vadd, vadd_wl) -> None:
    cache = EngineCache()
    good = evaluate(_task(kit, vadd, vadd_wl, {"SCALE": 1.0, "MODE": "add"}), device="cpu", cache=cache)
    assert kit.status(good) == "PASSED", kit.log(good)
    assert good.solution_params == {"SCALE": 1.0, "MODE": "add"}
    wrong = evaluate(_task(kit, vadd, vadd_wl, {"SCALE": 2.0, "MODE": "add"}), device="cpu", cache=cache)
    assert kit.status(wrong) == "INCORRECT_NUMERICAL"  # the same build, called with SCALE=2.0
    assert cache.hits["solution"] >= 1


def test_unknown_keyword_is_a_compile_error(kit, vadd, vadd_wl) -> None:
    trace = evaluate(_task(kit, vadd, vadd_wl, {"BLOCK": 4}), device="cpu", cache=EngineCache())
    assert kit.status(trace) == "COMPILE_ERROR"
    assert "takes no keyword argument 'BLOCK'" in kit.log(trace)


def test_no_params_no_field(kit, vadd, vadd_wl) -> None:
    trace = kit.run(vadd, kit.solution("vadd_f32", SOURCE), vadd_wl)
    assert kit.status(trace) == "PASSED" and "solution_params" not in trace.to_json_obj()
