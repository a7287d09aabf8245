"""The harness's snapshot (``_integrity.Guard``): what a solution could replace is seen, what
torch or an idle pool does on its own is not, and everything can be put back."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch

from sweep.engine.guard import _integrity
from sweep.engine.guard._integrity import Guard

from ..conftest import wait_until


@pytest.fixture
def guard() -> Iterator[Guard]:
    _integrity.import_first()
    g = Guard()
    yield g
    g.restore()


def test_nothing_changed_is_nothing(guard: Guard) -> None:
    assert guard.changes() == []
    assert guard.busy_threads() == []


def test_a_replaced_function_of_a_watched_module_is_named_and_put_back(guard: Guard) -> None:
    original = torch.exp
    torch.exp = lambda *a, **k: original(*a, **k)  # type: ignore[assignment]
    assert guard.changes() == ["torch.exp replaced"]
    guard.restore()
    assert torch.exp is original and guard.changes() == []


def test_a_removed_function_is_named(guard: Guard) -> None:
    original = torch.nn.functional.softmax
    del torch.nn.functional.softmax
    try:
        assert "torch.nn.functional.softmax removed" in guard.changes()
    finally:
        torch.nn.functional.softmax = original


def test_a_method_set_on_a_watched_class_is_an_addition(guard: Guard) -> None:
    torch.Tensor.amax = lambda self, *a, **k: self  # type: ignore[method-assign]
    assert "torch.Tensor.amax added" in guard.changes()
    guard.restore()
    assert "amax" not in vars(torch.Tensor) and guard.changes() == []


def test_a_swapped_code_object_is_seen_though_the_function_is_the_same(guard: Guard) -> None:
    from sweep.engine.io import _compare

    fn = _compare.compare_outputs
    code = fn.__code__

    def nothing(*args: object, **kwargs: object) -> None:
        return None

    fn.__code__ = nothing.__code__
    try:
        assert any("compare_outputs: its code or defaults replaced" in c for c in guard.changes())
        guard.restore()
        assert fn.__code__ is code
    finally:
        fn.__code__ = code


def test_the_engines_own_modules_are_watched(guard: Guard) -> None:
    from sweep.engine.run import _named_inputs

    original = _named_inputs.compare_outputs
    _named_inputs.compare_outputs = lambda *a, **k: None  # type: ignore[assignment]
    try:
        assert "sweep.engine.run._named_inputs.compare_outputs replaced" in guard.changes()
    finally:
        _named_inputs.compare_outputs = original


def test_a_module_replaced_in_sys_modules_is_named(guard: Guard) -> None:
    real = sys.modules["torch.nn.functional"]
    sys.modules["torch.nn.functional"] = type(sys)("fake")
    try:
        assert "sys.modules['torch.nn.functional'] replaced" in guard.changes()
    finally:
        sys.modules["torch.nn.functional"] = real


def test_a_mode_left_pushed_and_a_tracer_are_named(guard: Guard) -> None:
    mode = torch.overrides.TorchFunctionMode()
    mode.__enter__()
    sys.setprofile(lambda *a: None)
    try:
        changes = guard.changes()
        assert "1 torch function mode(s) left pushed" in changes
        assert any("sys.setprofile" in c for c in changes)
        guard.restore()
        assert guard.changes() == []
    finally:
        sys.setprofile(None)


def test_a_python_kernel_overriding_an_existing_operator_is_named(guard: Guard) -> None:
    lib = torch.library.Library("aten", "IMPL")
    try:
        lib.impl("sinh", lambda x: x, "CPU")
        assert any("existing operator aten::sinh (CPU" in c for c in guard.changes())
    finally:
        lib._destroy()


def test_new_operators_and_meta_kernels_are_not_tampering(guard: Guard) -> None:
    lib = torch.library.Library("sweep_test_ns", "DEF")  # a namespace of the solution's own
    try:
        lib.define("twice(Tensor x) -> Tensor")
        lib.impl("twice", lambda x: x * 2, "CPU")
        assert guard.changes() == []
    finally:
        lib._destroy()


def test_torch_rebinding_its_own_storage_class_is_not_tampering(guard: Guard) -> None:
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert guard.changes() == []
    finally:
        torch.set_default_dtype(before)


def test_a_busy_thread_is_named_an_idle_pool_is_not(guard: Guard) -> None:
    stop = threading.Event()
    with ThreadPoolExecutor(2) as pool:
        pool.submit(lambda: 1).result()
        assert guard.busy_threads() == []  # waiting for work in the standard library's queue
        worker = threading.Thread(target=lambda: stop.wait(30) or time.sleep(0), name="writer")
        busy = threading.Thread(
            target=lambda: [sum(range(100)) for _ in iter(lambda: stop.is_set(), True)], name="spinner"
        )
        worker.start()
        busy.start()
        try:
            found = guard.busy_threads()
            assert any(t.startswith("spinner (") for t in found), found
        finally:
            stop.set()
            worker.join()
            busy.join()
    assert guard.busy_threads() == []


def test_a_thread_started_with_the_low_level_module_is_seen() -> None:
    import _thread

    g = Guard()
    stop = threading.Event()
    _thread.start_new_thread(lambda: [None for _ in iter(stop.is_set, True)], ())
    try:
        assert wait_until(lambda: bool(g.busy_threads()))
    finally:
        stop.set()
