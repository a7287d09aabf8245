"""Which timer runs, what a trace records of it, and the fallback from CUDA graphs (on CPU:
the capture itself is exercised by the GPU tests of ``test_gpu_timers.py``)."""

from __future__ import annotations

import pytest
import torch

import sweep.engine.run._timing_phase as timing_phase
from sweep.config import EvalSettings
from sweep.engine.timing._graph_timer import GRAPH_MAX_CALLS, CaptureFailed, calls_per_replay
from sweep.engine.timing._nvml import ClockReading
from sweep.engine.timing._stopping import ClockWatch, StopRule
from sweep.engine.timing._timing import AUTO_GRAPH_BELOW_MS, _sample, choose_timer
from sweep.schema import Trace

GOOD = "def run(x, y):\n    return x + y\n"


def test_choose_timer() -> None:
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    for requested in ("auto", "events", "cudagraph"):
        assert choose_timer(requested, cpu, 0.001) == "host"
    assert choose_timer("auto", gpu, AUTO_GRAPH_BELOW_MS / 2) == "cudagraph"
    assert choose_timer("auto", gpu, AUTO_GRAPH_BELOW_MS * 2) == "events"
    assert choose_timer("events", gpu, 0.001) == "events"
    assert choose_timer("cudagraph", gpu, 50.0) == "cudagraph"


def test_calls_per_replay_is_a_multiple_of_the_sets() -> None:
    assert calls_per_replay(4, 0.09) == 8  # 1 ms of 90 us iterations, rounded down to sets
    assert calls_per_replay(4, 10.0) == 4  # a long call: one round
    assert calls_per_replay(3, 1e-9) == 3 * (GRAPH_MAX_CALLS // 3)
    assert calls_per_replay(200, 0.001) == 200  # more sets than the cap: one round anyway


@pytest.mark.parametrize("timer", ["auto", "events", "cudagraph"])
def test_every_timer_setting_runs_the_host_clock_on_cpu(kit, vadd, vadd_wl, timer: str) -> None:
    settings = kit.fast.model_copy(update={"timer": timer})
    trace = kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, settings)
    ev = trace.evaluation
    assert ev.status.value == "PASSED", ev.log
    for t in (ev.timing, ev.reference_timing):
        assert t.timer == "host" and t.clock == "host"
        values = t.sample_values()
        assert len(values) == t.iterations >= settings.input_sets
        assert min(values) <= t.p50_ms <= max(values)
        assert t.target_rel_error == settings.target_rel_error and t.discarded == 0
        assert isinstance(t.target_met, bool)
    assert "host" in ev.log.splitlines()[0]
    assert Trace.model_validate_json(trace.to_json()) == trace


def test_samples_round_trip_at_float32(kit, vadd, vadd_wl) -> None:
    settings = kit.fast.model_copy(update={"min_iterations": 5, "max_iterations": 5})
    ev = kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, settings).evaluation
    values = ev.timing.sample_values()
    assert len(values) == 5
    assert sorted(values)[2] == pytest.approx(ev.timing.p50_ms, rel=1e-6)
    assert ev.timing.rel_error is not None and ev.timing.rel_error >= 0


def test_sampling_discards_the_batches_around_a_throttled_reading() -> None:
    readings = iter([ClockReading(1980), ClockReading(1980), ClockReading(1000), *[ClockReading(1980)] * 20])
    watch = ClockWatch(lambda: next(readings), 1980)
    batches = iter(range(100))

    def batch(n: int) -> list[float]:
        b = next(batches)
        return [1.0 + b] * n  # every batch its own value, to see which were kept

    rule = StopRule(min_samples=1, max_samples=6, min_ms=0.0, max_ms=1e9, target=1e-9)
    sampled = _sample(batch, 1, rule, watch)
    # reading 2 (between batches 1 and 2) was throttled: both batches are left out
    assert sampled.samples == [1.0, 4.0, 5.0, 6.0] and sampled.discarded == 2
    assert watch.throttled and watch.min_mhz == 1000


def _fake_capture_failure(monkeypatch: pytest.MonkeyPatch, who: str) -> list[tuple[str, str]]:
    """Make the phase pick graphs, and the capture of ``who`` fail (as a call that synchronizes
    does on a GPU); record (callee, timer) of every timed run."""
    runs: list[tuple[str, str]] = []
    real = timing_phase.time_calls

    def fake(call, *args, timer: str = "events", **kwargs):  # type: ignore[no-untyped-def]
        callee = call.__name__.removeprefix("call_")
        runs.append((callee, timer))
        if timer == "cudagraph" and callee == who:
            raise CaptureFailed("capturing: RuntimeError: operation not permitted when stream is capturing")
        return real(call, *args, timer=timer, **kwargs)

    monkeypatch.setattr(timing_phase, "choose_timer", lambda requested, device, call_ms: "cudagraph")
    monkeypatch.setattr(timing_phase, "time_calls", fake)
    return runs


@pytest.mark.parametrize("who", ["solution", "reference"])
def test_a_failed_capture_times_both_with_events_and_says_so(kit, vadd, vadd_wl, monkeypatch, who) -> None:
    runs = _fake_capture_failure(monkeypatch, who)
    ev = kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl).evaluation
    assert ev.status.value == "PASSED", ev.log
    assert f"CUDA graphs cannot time the {who} (capturing: RuntimeError" in ev.log
    assert "timed with CUDA events instead" in ev.log
    # graphs first; after the failure the reference is timed again, with the solution's timer
    tail = [("reference", "events"), ("solution", "events")]
    head = [("reference", "cudagraph")] + ([("solution", "cudagraph")] if who == "solution" else [])
    assert runs == head + tail


def test_a_call_graphs_read_as_zero_is_timed_with_events(kit, vadd, vadd_wl, monkeypatch) -> None:
    """A call that launches nothing (an empty tensor) reads 0 under graphs: both are timed with
    events instead, so a latency of 0 and a speedup of 0 never reach the trace."""
    runs: list[tuple[str, str]] = []
    real = timing_phase.time_calls

    def fake(call, *args, timer: str = "events", **kwargs):  # type: ignore[no-untyped-def]
        runs.append((call.__name__.removeprefix("call_"), timer))
        stats, last = real(call, *args, timer=timer, **kwargs)
        if timer == "cudagraph" and call.__name__ == "call_solution":
            stats = stats.model_copy(update={"p50_ms": 0.0})
        return stats, last

    monkeypatch.setattr(timing_phase, "choose_timer", lambda requested, device, call_ms: "cudagraph")
    monkeypatch.setattr(timing_phase, "time_calls", fake)
    ev = kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl).evaluation
    assert ev.status.value == "PASSED", ev.log
    assert "the solution is too short for CUDA graphs to resolve (median 0)" in ev.log
    assert runs[-2:] == [("reference", "events"), ("solution", "events")]
    assert ev.performance is not None and ev.performance.latency_ms > 0 and ev.performance.speedup_factor > 0


def test_a_failed_capture_of_a_mutating_solution_restores_its_inputs(kit, monkeypatch) -> None:
    # The fallback restores every slot before timing the reference again (so it is not
    # timed on inputs the solution zeroed); the evaluation goes on as without the failure.
    defn = kit.definition("vadd/vadd_f32.json")
    wl = kit.workloads("vadd/vadd_f32.jsonl")[0]
    src = "def run(x, y):\n    out = x + y\n    x.zero_()\n    return out\n"
    _fake_capture_failure(monkeypatch, "solution")
    trace = kit.run(defn, kit.solution("vadd_f32", src), wl)
    assert kit.status(trace) == "PASSED", kit.log(trace)
    assert "writes into its input(s) x" in kit.log(trace)


def test_default_settings_ask_for_auto() -> None:
    s = EvalSettings()
    assert (s.timer, s.target_rel_error, s.max_ms, s.rep_ms) == ("auto", 0.005, 1000.0, 100.0)
