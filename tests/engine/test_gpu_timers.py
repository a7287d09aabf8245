"""On a CUDA GPU (the lent device machine): the events and CUDA-graph timers, ``auto``'s choice,
the fallback when a capture fails, and what the trace records of them."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu

GOOD = "def run(x, y):\n    return x + y\n"
GOOD_DPS = "import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n"


def _passed(kit, vadd, vadd_wl, src: str, timer: str, **kw):  # type: ignore[no-untyped-def]
    trace = kit.run(vadd, kit.solution("vadd_f32", src, **kw), vadd_wl, kit.timed(timer), device="cuda")
    ev = trace.evaluation
    assert ev.status.value == "PASSED", ev.log
    assert ev.timing.timer == ev.reference_timing.timer  # one timer for both: a fair speedup
    return ev


def test_each_timer_times_a_small_kernel_and_the_trace_says_which(kit, vadd, vadd_wl) -> None:
    runs = {timer: _passed(kit, vadd, vadd_wl, GOOD, timer) for timer in ("events", "cudagraph", "auto")}
    assert runs["events"].timing.timer == "events"
    assert runs["cudagraph"].timing.timer == "cudagraph"
    assert runs["auto"].timing.timer == "cudagraph"  # a vadd of 1000 floats takes microseconds
    # graphs remove the launch overhead and the flush that events measure around a tiny call
    assert runs["cudagraph"].timing.p50_ms <= runs["events"].timing.p50_ms
    for timer, ev in runs.items():
        t = ev.timing
        assert t.clock == "cuda_event"
        assert len(t.sample_values()) == t.iterations >= 10
        assert t.rel_error is not None and t.target_rel_error == 0.005 and isinstance(t.target_met, bool)
        assert t.discarded is not None
        assert ev.clocks is not None and ev.clocks.sm_clock_mhz_min and ev.clocks.throttled is not None
        assert ev.timing.timer in ev.log.splitlines()[0], timer
        assert "CUDA graphs cannot time" not in ev.log


def test_graphs_write_the_outputs_a_destination_passing_solution_is_given(kit, vadd, vadd_wl) -> None:
    ev = _passed(kit, vadd, vadd_wl, GOOD_DPS, "cudagraph", dps=True)
    assert ev.timing.timer == "cudagraph"


def test_graph_and_event_timers_agree_on_a_long_kernel(kit, vadd, vadd_wl) -> None:
    # torch.cuda._sleep spins the GPU for a number of cycles: about 0.5 ms at 2 GHz, where
    # launch overhead is negligible and both timers must see the same time.
    src = "import torch\n\ndef run(x, y):\n    torch.cuda._sleep(1_000_000)\n    return x + y\n"
    events = _passed(kit, vadd, vadd_wl, src, "events").timing.p50_ms
    graphs = _passed(kit, vadd, vadd_wl, src, "cudagraph").timing.p50_ms
    assert graphs == pytest.approx(events, rel=0.1)
    # auto: the shorter of the two calls decides (the reference, a tiny vadd), so both are
    # timed with graphs and the short one loses no launch overhead
    assert _passed(kit, vadd, vadd_wl, src, "auto").timing.timer == "cudagraph"


@pytest.mark.parametrize(
    "src",
    [
        "import torch\n\ndef run(x, y):\n    torch.cuda.synchronize()\n    return x + y\n",
        "def run(x, y):\n    s = float(x.sum().item())\n    return x + y + 0 * s\n",
    ],
    ids=["synchronize", "item"],
)
@pytest.mark.parametrize("timer", ["auto", "cudagraph"])
def test_a_call_that_cannot_be_captured_falls_back_to_events_with_a_note(
    kit, vadd, vadd_wl, src: str, timer: str
) -> None:
    ev = _passed(kit, vadd, vadd_wl, src, timer)
    assert ev.timing.timer == "events" and ev.reference_timing.timer == "events"
    assert f"note: timer {timer}: CUDA graphs cannot time the solution" in ev.log
    assert "timed with CUDA events instead" in ev.log


def test_a_kernel_on_the_legacy_default_stream_is_not_timed_as_nothing(kit, vadd, vadd_wl) -> None:
    # `kernel<<<g, b>>>` without a stream runs on the legacy default stream, outside a
    # capture on a torch stream: the graph would time nothing. The capture stream
    # synchronizes with the legacy stream, so the capture fails instead, and events time it.
    sources = kit.cuda_vadd_sources
    ev = _passed(
        kit,
        vadd,
        vadd_wl,
        sources,
        "cudagraph",
        language="cuda",
        binding="torch",
        entry="kernel.cu::run",
        dps=True,
    )
    assert ev.timing.timer == "events", ev.log
    assert "CUDA graphs cannot time the solution" in ev.log


def test_a_pointer_cache_cheat_fails_under_graphs_too(kit, vadd, vadd_wl) -> None:
    src = kit.pointer_cache
    trace = kit.run(vadd, kit.solution("vadd_f32", src), vadd_wl, kit.timed("cudagraph"), device="cuda")
    assert kit.status(trace) == "INCORRECT_NUMERICAL", kit.log(trace)
    assert "may reuse results across calls" in kit.log(trace)
