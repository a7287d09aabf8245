"""The timed window honours ``rep_ms``: its set-up counts, and the graph timer's plan makes a
replay and a batch last what they are meant to (a fake clock and planned counts: no test
asserts on a measured time)."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

import sweep.engine.timing._timing as timing
from sweep.engine.timing._graph_timer import GRAPH_MAX_CALLS, GRAPH_REPLAY_MS, calls_per_replay
from sweep.engine.timing._stopping import StopRule
from sweep.engine.timing._timing import BATCH_MS, WarmUp, _sample, graph_batch, time_calls
from sweep.schema import EvalSettings


class FakeClock:
    """``perf_counter`` and ``perf_counter_ns`` that move only when told."""

    def __init__(self) -> None:
        self.s = 0.0

    def now(self) -> float:
        return self.s

    def now_ns(self) -> int:
        return int(self.s * 1e9)

    def spend(self, ms: float) -> None:
        self.s += ms / 1e3


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr(timing, "_now", fake.now)
    monkeypatch.setattr(timing, "_now_ns", fake.now_ns)
    return fake


def test_the_set_up_of_the_timed_window_counts_against_rep_ms(clock: FakeClock) -> None:
    rule = StopRule(min_samples=1, max_samples=10_000, min_ms=100.0, max_ms=1000.0, target=0.5)
    start = clock.now()
    clock.spend(60.0)  # capturing the graphs, their first launch

    def batch(n: int) -> list[float]:
        clock.spend(5.0)
        return [1.0] * n

    sampled = _sample(batch, 5, rule, None, None, start)
    assert len(sampled.samples) == 5 * 8  # 60 ms of set-up + 8 batches of 5 ms = 100 ms
    assert clock.now() * 1e3 <= 100.0 + 5.0


def test_a_tiny_call_on_the_host_clock_stays_within_rep_ms_and_one_call(clock: FakeClock) -> None:
    settings = EvalSettings(rep_ms=100.0, min_iterations=10, max_iterations=100_000, input_sets=4)
    calls = 0

    def call(k: int) -> object:
        nonlocal calls
        calls += 1
        clock.spend(0.01)  # a 10 us kernel
        return k

    warm = WarmUp(calls=1, call_ms=0.01, flush_ms=0.0, iteration_ms=0.01)
    begin = clock.now()
    stats, _ = time_calls(call, 4, settings, torch.device("cpu"), None, warm=warm)
    window_ms = (clock.now() - begin) * 1e3
    assert settings.rep_ms <= window_ms <= settings.rep_ms + 0.01 + 1e-9
    assert calls == stats.iterations
    assert 10_000 <= calls <= 10_001  # rep_ms of 10 us calls (rounding may add one)


def test_the_graph_plan_counts_the_flush_the_graph_zeroes_and_the_fresh_values() -> None:
    # H100-like: the warm-up zeroes 256 MiB (85 us); the graph 2 x L2 = 100 MB of it.
    warm = WarmUp(calls=100, call_ms=0.002, flush_ms=0.085, iteration_ms=0.2, prep_ms=0.005)
    iteration = warm.graph_iteration_ms(100 / 256)
    assert iteration == pytest.approx(0.002 + 0.085 * 100 / 256 + 0.005)
    calls = calls_per_replay(4, iteration)
    # The replay lasts about GRAPH_REPLAY_MS (it lasted a third of it when planned with the
    # warm-up's whole flush and no fresh values: 8 calls of 40 us).
    assert GRAPH_REPLAY_MS / 2 <= calls * iteration <= GRAPH_REPLAY_MS
    assert calls == 24


@given(
    sets=st.integers(1, 16),
    call=st.floats(1e-4, 50.0),
    flush=st.floats(0.0, 0.2),
    prep=st.floats(0.0, 0.05),
    fraction=st.floats(0.05, 1.0),
)
def test_a_graph_batch_lasts_about_batch_ms(
    sets: int, call: float, flush: float, prep: float, fraction: float
) -> None:
    warm = WarmUp(calls=1, call_ms=call, flush_ms=flush, iteration_ms=call + flush, prep_ms=prep)
    iteration = warm.graph_iteration_ms(fraction)
    calls = calls_per_replay(sets, iteration)
    replay = calls * iteration
    if calls > sets and calls < sets * (GRAPH_MAX_CALLS // sets):  # neither one round nor capped
        assert GRAPH_REPLAY_MS / 2 <= replay <= GRAPH_REPLAY_MS
    batch = graph_batch(calls, iteration)
    pair = 2 * replay
    assert batch >= 1
    # A batch overshoots BATCH_MS by less than one sample (one pair of replays), or is one sample.
    assert batch == 1 or batch * pair < BATCH_MS + pair
