"""A task whose solution the plan found broken (``Task.broken``) is a COMPILE_ERROR with its
message, nothing of the solution imported; a record whose Python does not parse but that the
plan let through fails its import with the file and line."""

from __future__ import annotations

from pathlib import Path

from sweep.config import EvalSettings
from sweep.engine import EngineCache, build, evaluate, evaluate_pair
from sweep.engine._precompile import precompile
from sweep.schema import Definition, Workload
from sweep.schema.task import Task

REASON = "/data/solutions/x.json: sources: main.py: not valid Python: invalid syntax (line 2)\nnot run"


def _marking(tmp_path: Path) -> str:
    """A module that leaves a file behind when it is imported (valid, fitting, passing)."""
    return f"open({str(tmp_path / 'imported')!r}, 'w').close()\n\ndef run(x, y):\n    return x + y\n"


def _task(kit, vadd: Definition, wl: Workload, source: str, broken: str | None) -> Task:
    sol = kit.solution("vadd_f32", source)
    return Task.make(vadd, sol, wl, kit.fast, "CPU", sweep="tests", broken=broken)


def test_a_broken_task_is_a_compile_error_and_imports_nothing(kit, vadd, vadd_wl, tmp_path: Path) -> None:
    task = _task(kit, vadd, vadd_wl, _marking(tmp_path), REASON)
    cache = EngineCache()
    build(task, device="cpu", cache=cache)  # a worker's build step first
    trace = evaluate(task, device="cpu", cache=cache)
    assert kit.status(trace) == "COMPILE_ERROR"
    assert kit.log(trace).startswith(f"COMPILE_ERROR: {REASON}")
    assert trace.evaluation is not None and trace.evaluation.performance is None
    assert trace.solution == "sol" and trace.provenance is not None
    assert trace.provenance.task_id == task.task_id
    assert not (tmp_path / "imported").exists()
    assert cache.solutions == {}
    # The same solution, not marked broken, is built (and imported) and passes.
    ok = evaluate(_task(kit, vadd, vadd_wl, _marking(tmp_path), None), device="cpu", cache=cache)
    assert kit.status(ok) == "PASSED" and (tmp_path / "imported").exists()


def test_a_broken_task_is_a_compile_error_before_setup_can_say_anything_else(kit, vadd, vadd_wl) -> None:
    """Over the memory budget a valid task is a RUNTIME_ERROR; a broken one stays a COMPILE_ERROR."""
    tiny = EvalSettings(**{**kit.fast.model_dump(), "memory_budget_gb": 1e-9})
    sol = kit.solution("vadd_f32", "def run(x, y):\n    return x + y\n")
    valid = Task.make(vadd, sol, vadd_wl, tiny, "CPU")
    assert kit.status(evaluate(valid, device="cpu", cache=EngineCache())) == "RUNTIME_ERROR"
    broken = Task.make(vadd, sol, vadd_wl, tiny, "CPU", broken=REASON)
    assert kit.status(evaluate(broken, device="cpu", cache=EngineCache())) == "COMPILE_ERROR"


def test_compiling_ahead_a_broken_task_gives_its_compile_error(kit, vadd, vadd_wl, tmp_path: Path) -> None:
    trace = precompile(
        _task(kit, vadd, vadd_wl, _marking(tmp_path), REASON), device="cpu", cache=EngineCache()
    )
    assert trace.evaluation is not None and trace.evaluation.status.value == "COMPILE_ERROR"
    assert trace.evaluation.log.startswith(f"COMPILE_ERROR: {REASON}")
    assert not (tmp_path / "imported").exists()


def test_evaluate_pair_of_a_broken_solution(kit, vadd) -> None:
    wls = kit.workloads("vadd/vadd_f32.jsonl")[:2]
    sol = kit.solution("vadd_f32", "def run(x, y):\n    return x +\n")
    traces = evaluate_pair(vadd, sol, wls, kit.fast, device="cpu", broken=REASON)
    assert [kit.status(t) for t in traces] == ["COMPILE_ERROR", "COMPILE_ERROR"]
    valid_id = Task.make(vadd, sol, wls[0], kit.fast, "CPU").task_id
    assert traces[0].provenance is not None and traces[0].provenance.task_id != valid_id


def test_a_syntax_error_the_plan_let_through_names_the_file_and_line(kit, vadd, vadd_wl) -> None:
    """A record whose entry file parses but imports a sibling that does not (the checks read
    only the entry file): the import fails, naming the sibling by its path and its line."""
    sources = {
        "main.py": "from .util.helpers import add\n\ndef run(x, y):\n    return add(x, y)\n",
        "util/helpers.py": "def add(x, y):\n    return x +\n",
    }
    trace = kit.run(vadd, kit.solution("vadd_f32", sources), vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    first = kit.log(trace).splitlines()[0]
    assert (
        first
        == "COMPILE_ERROR: importing main.py failed: SyntaxError in util/helpers.py line 2: invalid syntax"
    )
    own = kit.run(vadd, kit.solution("vadd_f32", "x = 1\ndef run(x, y)\n    return x\n"), vadd_wl)
    assert kit.log(own).splitlines()[0] == (
        "COMPILE_ERROR: importing main.py failed: SyntaxError in main.py line 2: expected ':'"
    )
