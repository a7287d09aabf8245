"""TileLang solutions on the CPU: without the tilelang package they are a COMPILE_ERROR that
names the extra; with it (here a stand-in package, since tilelang itself needs a GPU and is
not a dev dependency) they are imported like any Python solution and evaluated."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sweep.engine.builds._build import BuildError, build_solution

# Stands for the real package: what the solution below uses of it, computed with torch.
STAND_IN = """
import torch

def jit(fn):
    def compiled(*args):
        return fn(*args)
    return compiled
"""
SOLUTION = """
import tilelang


@tilelang.jit
def vadd(x, y):
    return x + y


def run(x, y):
    return vadd(x, y)
"""


@pytest.fixture
def no_tilelang(monkeypatch: pytest.MonkeyPatch) -> None:
    """tilelang absent, even where it is installed (``None`` in sys.modules: not importable)."""
    monkeypatch.setitem(sys.modules, "tilelang", None)


@pytest.fixture
def stand_in_tilelang(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    if "tilelang" in sys.modules:
        pytest.skip("the real tilelang is imported in this process")
    (tmp_path / "tilelang").mkdir()
    (tmp_path / "tilelang" / "__init__.py").write_text(STAND_IN)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield
    sys.modules.pop("tilelang", None)


def test_missing_tilelang_is_a_compile_error_naming_the_extra(kit, vadd, vadd_wl, no_tilelang) -> None:
    sol = kit.solution("vadd_f32", SOLUTION, language="tilelang", name="tl_absent")
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    first = kit.log(trace).splitlines()[0]
    assert "language 'tilelang' needs the tilelang package" in first
    assert "pip install 'kernel-sweep[tilelang]'" in first
    with pytest.raises(BuildError, match=r"kernel-sweep\[tilelang\]"):
        build_solution(sol, cuda_ok=False)


def test_tilelang_solution_is_imported_as_a_package_and_evaluated(
    kit, vadd, vadd_wl, stand_in_tilelang
) -> None:
    sol = kit.solution("vadd_f32", SOLUTION, language="tilelang", name="tl_cpu")
    built = build_solution(sol, cuda_ok=False)
    assert built.kind == "python"
    assert built.fn.__module__.startswith("_sweep_sol_")  # its own package, as any Python solution
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    wrong = kit.solution("vadd_f32", SOLUTION.replace("x + y", "x - y"), language="tilelang", name="tl_bad")
    assert kit.status(kit.run(vadd, wrong, vadd_wl)) == "INCORRECT_NUMERICAL"


def test_tilelang_entry_point_must_be_python(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", {"k.cu": "int x;"}, language="tilelang", entry="k.cu::run")
    trace = kit.run(vadd, sol, vadd_wl)
    assert kit.status(trace) == "COMPILE_ERROR"
    assert "the entry point of a tilelang solution must be a .py file" in kit.log(trace)
