"""The reference's side runs before the solution's module is imported; what fails there is the
task's, never the solution's (flag ``reference_failed``); a tampering solution is never PASSED."""

from __future__ import annotations

import os
from pathlib import Path

from sweep.schema import Definition

from .conftest import Kit


def _recording_definition(vadd: Definition, log: Path) -> Definition:
    """``vadd`` whose reference writes, at every call, whether the solution was imported yet."""
    reference = (
        "import os\n\n"
        "def run(x, y):\n"
        f"    with open({str(log)!r}, 'a') as f:\n"
        "        f.write(('after' if os.environ.get('SWEEP_TEST_SOLUTION_IMPORTED') else 'before') + '\\n')\n"
        "    return x + y\n"
    )
    return Kit.with_reference(vadd, reference)


def test_the_references_results_and_timing_come_before_the_solutions_import(
    kit, vadd, vadd_wl, tmp_path
) -> None:
    log = tmp_path / "calls.txt"
    defn = _recording_definition(vadd, log)
    src = "import os\nos.environ['SWEEP_TEST_SOLUTION_IMPORTED'] = '1'\n\ndef run(x, y):\n    return x + y\n"
    try:
        trace = kit.run(defn, kit.solution(defn.name, src), vadd_wl)
    finally:
        os.environ.pop("SWEEP_TEST_SOLUTION_IMPORTED", None)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    calls = log.read_text().split()
    before, after = calls.count("before"), calls.count("after")
    ev = trace.evaluation
    assert ev is not None and ev.reference_timing is not None
    # Every trial's result, the warm-up and every timed call of the reference: before.
    assert before >= kit.fast.trials + ev.reference_timing.iterations
    assert calls[:before] == ["before"] * before  # none of them after the import
    # After the import only the checks of the solution's timed calls ask the reference, each
    # after a check that nothing it uses was replaced.
    checked = int(ev.log.split(" timed call(s)")[0].rsplit(" ", 1)[1])
    assert after == checked


def test_a_reference_that_raises_is_not_the_solutions_failure(kit, vadd, vadd_wl) -> None:
    reference = "def run(x, y):\n    raise ValueError('the reference is broken')\n"
    trace = kit.run_with_reference(vadd, reference, vadd_wl)
    ev = trace.evaluation
    assert ev is not None and ev.status.value == "RUNTIME_ERROR"
    assert ev.flags == ["reference_failed"]
    assert "the reference of 'vadd_f32' raised ValueError" in ev.log


def test_a_reference_that_cannot_be_loaded_is_not_the_solutions_failure(kit, vadd, vadd_wl) -> None:
    reference = "import no_such_module_anywhere\n\ndef run(x, y):\n    return x + y\n"
    trace = kit.run_with_reference(vadd, reference, vadd_wl)
    ev = trace.evaluation
    assert ev is not None and ev.status.value == "RUNTIME_ERROR" and ev.flags == ["reference_failed"]


def test_a_solution_that_never_imports_cleanly_is_its_own_failure(kit, vadd, vadd_wl) -> None:
    trace = kit.run(vadd, kit.solution(vadd.name, "raise ImportError('mine')\n"), vadd_wl)
    ev = trace.evaluation
    assert ev is not None and ev.status.value == "COMPILE_ERROR" and not ev.flags


def test_a_solution_replacing_what_the_reference_calls_is_tampering_not_a_speedup(kit, vadd, vadd_wl) -> None:
    src = (
        "import torch\n"
        "_add = torch.Tensor.__add__\n"
        "def _slow(self, other):\n"
        "    for _ in range(5):\n"
        "        _add(self, other)\n"
        "    return _add(self, other)\n"
        "torch.Tensor.__add__ = _slow\n\n"
        "def run(x, y):\n"
        "    return torch.add(x, y)\n"
    )
    trace = kit.run(vadd, kit.solution(vadd.name, src), vadd_wl)
    ev = trace.evaluation
    assert ev is not None and ev.status.value == "RUNTIME_ERROR" and ev.flags == ["tampered"]
    assert "torch.Tensor.__add__" in ev.log
    import torch

    assert "__add__" not in vars(torch.Tensor) or torch.Tensor.__add__ is not None  # put back
    assert torch.ones(2) + torch.ones(2) is not None


def test_threads_are_fixed_and_recorded(kit, vadd, vadd_wl) -> None:
    settings = kit.fast.model_copy(update={"cpu_threads": 2})
    trace = kit.run(vadd, kit.solution(vadd.name, "def run(x, y):\n    return x + y\n"), vadd_wl, settings)
    ev = trace.evaluation
    assert ev is not None and ev.timing is not None and ev.reference_timing is not None
    assert ev.timing.threads == 2 and ev.reference_timing.threads == 2
    assert settings.settings_hash() != kit.fast.settings_hash()
    # The default leaves the hash as it was before the setting existed.
    data = kit.fast.model_dump(mode="json")
    assert "cpu_threads" in data and data["cpu_threads"] == 1
