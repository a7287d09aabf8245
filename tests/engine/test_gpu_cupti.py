"""On a CUDA GPU with cupti-python (the lent device machine): the CUPTI timer counts the
device time of what each call launched, both kernels of a call that launches two, its
copies, and neither the L2 flush nor the fresh input values before it; without cupti the
evaluation is timed with events and says why.

Run (the device's image has no cupti-python; carry a wheel that matches its CUDA 13):
``pytest -m gpu tests/engine/test_gpu_cupti.py`` (the tests that need ``cupti`` skip,
saying why, where it cannot be imported)."""

from __future__ import annotations

import sys

import pytest
import torch

from sweep.engine.timing._cupti_timer import cupti_problem
from sweep.schema import Workload

pytestmark = pytest.mark.gpu

GOOD = "def run(x, y):\n    return x + y\n"
GOOD_DPS = "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n"
# torch.cuda._sleep spins the GPU for a number of cycles: about 0.5 ms at 2 GHz
SLEEP = "import torch\n\ndef run(x, y):\n    torch.cuda._sleep(1_000_000)\n    return x + y\n"
TWO_SLEEPS = (
    "import torch\n\ndef run(x, y):\n    torch.cuda._sleep(1_000_000)\n"
    "    torch.cuda._sleep(1_000_000)\n    return x + y\n"
)
CLONE = "def run(x, y):\n    return (x + y).clone()\n"  # an add, then a device-to-device copy


@pytest.fixture
def needs_cupti() -> None:
    problem = cupti_problem()
    if problem is not None:
        pytest.skip(problem)


def _big_vadd() -> Workload:
    """16 Mi floats a tensor: the add takes tens of microseconds, and so do the fresh values
    drawn into x and y before each call (and the flush): counting them would show."""
    return Workload.model_validate(
        {
            "uuid": "cupti-big-vadd",
            "axes": {"N": 1 << 24},
            "inputs": {"x": {"type": "random"}, "y": {"type": "random"}},
        }
    )


def _passed(kit, vadd, wl, src: str, timer: str, **kw):  # type: ignore[no-untyped-def]
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", src, **kw), wl, kit.timed(timer), device="cuda"))
    assert ev.timing.timer == ev.reference_timing.timer, ev.log  # one timer for both
    if timer == "cupti":
        assert ev.timing.timer == "cupti", ev.log
        assert "instead" not in ev.log, ev.log
    return ev


def test_cupti_times_a_small_kernel_and_the_trace_says_so(kit, vadd, vadd_wl, needs_cupti) -> None:
    ev = _passed(kit, vadd, vadd_wl, GOOD, "cupti")
    for t in (ev.timing, ev.reference_timing):
        assert t.timer == "cupti" and t.clock == "cupti"
        assert len(t.sample_values()) == t.iterations >= 10
        assert t.rel_error is not None and t.target_rel_error == 0.005 and isinstance(t.target_met, bool)
        assert t.discarded is not None
        assert 0 < t.p50_ms < 0.02  # a 1000-float add: microseconds of device time
    assert ev.clocks is not None and ev.clocks.sm_clock_mhz_min and ev.clocks.throttled is not None
    assert "cupti" in ev.log.splitlines()[0]
    # the flush buffer is zeroed before every call: it takes far longer than the add
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    flush.zero_()
    end.record()
    end.synchronize()
    assert ev.timing.p50_ms < start.elapsed_time(end) / 4


def test_cupti_agrees_with_graphs_on_a_long_kernel(kit, vadd, vadd_wl, needs_cupti) -> None:
    cupti = _passed(kit, vadd, vadd_wl, SLEEP, "cupti").timing.p50_ms
    graphs = _passed(kit, vadd, vadd_wl, SLEEP, "cudagraph").timing.p50_ms
    assert cupti == pytest.approx(graphs, rel=0.1)


def test_both_kernels_of_a_call_that_launches_two_are_counted(kit, vadd, vadd_wl, needs_cupti) -> None:
    one = _passed(kit, vadd, vadd_wl, SLEEP, "cupti").timing.p50_ms
    two = _passed(kit, vadd, vadd_wl, TWO_SLEEPS, "cupti").timing.p50_ms
    assert 1.8 < two / one < 2.2
    assert two == pytest.approx(_passed(kit, vadd, vadd_wl, TWO_SLEEPS, "cudagraph").timing.p50_ms, rel=0.1)


def test_the_flush_and_the_fresh_values_before_a_call_are_not_counted(kit, vadd, needs_cupti) -> None:
    # The graph timer subtracts the flush and the fresh draws (a graph of them alone); the
    # events timer starts after them. CUPTI must read the add alone, as they do.
    wl = _big_vadd()
    cupti = _passed(kit, vadd, wl, GOOD, "cupti").timing.p50_ms
    graphs = _passed(kit, vadd, wl, GOOD, "cudagraph").timing.p50_ms
    events = _passed(kit, vadd, wl, GOOD, "events").timing.p50_ms
    assert cupti == pytest.approx(graphs, rel=0.1)
    assert cupti <= events * 1.05  # events add the launch; nothing else may come in


def test_a_copy_the_call_launches_is_counted(kit, vadd, needs_cupti) -> None:
    wl = _big_vadd()
    add = _passed(kit, vadd, wl, GOOD, "cupti").timing.p50_ms
    add_and_copy = _passed(kit, vadd, wl, CLONE, "cupti").timing.p50_ms
    assert add_and_copy > 1.3 * add  # the copy moves 2 x 64 MiB, the add 3 x 64 MiB
    assert add_and_copy == pytest.approx(_passed(kit, vadd, wl, CLONE, "cudagraph").timing.p50_ms, rel=0.1)


def test_cupti_times_a_destination_passing_solution(kit, vadd, vadd_wl, needs_cupti) -> None:
    ev = _passed(kit, vadd, vadd_wl, GOOD_DPS, "cupti", dps=True)
    assert ev.timing.p50_ms > 0


def test_a_pointer_cache_cheat_fails_under_cupti_too(kit, vadd, vadd_wl, needs_cupti) -> None:
    src = kit.pointer_cache
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, kit.timed("cupti"), device="cuda")
    assert kit.status(trace) == "INCORRECT_NUMERICAL", kit.log(trace)


def test_without_cupti_a_gpu_evaluation_is_timed_with_events_and_says_why(
    kit, vadd, vadd_wl, monkeypatch
) -> None:
    monkeypatch.setitem(sys.modules, "cupti", None)  # as where cupti-python is not installed
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, kit.timed("cupti"), device="cuda"))
    assert ev.timing.timer == ev.reference_timing.timer == "events"
    assert "note: timer cupti: the module cupti cannot be imported (" in ev.log
    assert "; the reference and the solution are timed with CUDA events instead" in ev.log
