"""The CUPTI timer on CPU: the setting, the note when CUPTI cannot time an evaluation, and the
matching of activity records to timed calls, against a fake ``cupti`` module (the real one
runs in ``test_gpu_cupti.py``)."""

from __future__ import annotations

import sys
import types
from collections.abc import Callable
from typing import Any

import pytest
import torch

import sweep.engine.run._timing_phase as timing_phase
from sweep.config import EvalSettings
from sweep.engine.timing._cupti_timer import (
    CuptiSession,
    CuptiUnavailable,
    busy_ns,
    cupti_problem,
    durations_ms,
)
from sweep.engine.timing._fresh import CheckSchedule, Rechecks
from sweep.engine.timing._timing import _Calls, _cupti_batch, choose_timer
from sweep.errors import SweepError

GOOD = "def run(x, y):\n    return x + y\n"


# ---- the setting -------------------------------------------------------------------------


def test_settings_accept_cupti_and_the_other_hashes_do_not_move() -> None:
    assert EvalSettings.model_validate({"timer": "cupti"}).timer == "cupti"
    # the hashes of the other timers, as before cupti existed: stored results stay comparable
    before = {"auto": "a1da28066e644312", "events": "00a5fac21727cf39", "cudagraph": "3ed05a1a7cfdb197"}
    for timer, digest in before.items():
        assert EvalSettings.model_validate({"timer": timer}).settings_hash() == digest
    assert EvalSettings(timer="cupti").settings_hash() not in before.values()
    with pytest.raises(ValueError):
        EvalSettings.model_validate({"timer": "cupty"})


def test_a_config_with_timer_cupti_loads(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from sweep.config import load_config

    path = tmp_path / "sweep.yaml"
    path.write_text("name: t\ndataset: data\nevaluation:\n  timer: cupti\n")
    assert load_config(path).evaluation.timer == "cupti"
    path.write_text("name: t\ndataset: data\nevaluation:\n  timer: cupty\n")
    with pytest.raises(SweepError, match="timer"):
        load_config(path)


def test_choose_timer_keeps_cupti_on_a_gpu_only() -> None:
    assert choose_timer("cupti", torch.device("cpu"), 0.001) == "host"
    assert choose_timer("cupti", torch.device("cuda"), 0.001) == "cupti"
    assert choose_timer("cupti", torch.device("cuda"), 50.0) == "cupti"


# ---- the phase: notes and fallbacks ------------------------------------------------------


def test_on_cpu_cupti_runs_the_host_clock_and_says_so(kit, vadd, vadd_wl) -> None:
    settings = kit.fast.model_copy(update={"timer": "cupti"})
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, settings))
    assert ev.timing.timer == ev.reference_timing.timer == "host"
    assert ev.timing.clock == "host"
    assert (
        "note: timer cupti: CUPTI times GPU work and the device is cpu; the reference and the "
        "solution are timed with the host clock instead"
    ) in ev.log


def _record_runs(
    monkeypatch: pytest.MonkeyPatch, fake: Callable[..., Any] | None = None
) -> list[tuple[str, str]]:
    """Make the phase pick ``cupti`` as on a GPU; record (callee, timer) of every timed run.
    ``fake(callee, timer)`` may raise or return a change to the stats."""
    runs: list[tuple[str, str]] = []
    real = timing_phase.time_calls

    def timed(call, *args, timer: str = "events", **kwargs):  # type: ignore[no-untyped-def]
        callee = call.__name__.removeprefix("call_")
        runs.append((callee, timer))
        change = fake(callee, timer) if fake is not None else None
        stats, last = real(call, *args, timer=timer, **kwargs)
        return (stats.model_copy(update=change) if change else stats), last

    monkeypatch.setattr(timing_phase, "choose_timer", lambda requested, device, call_ms: requested)
    monkeypatch.setattr(timing_phase, "time_calls", timed)
    return runs


def _cupti_settings(kit):  # type: ignore[no-untyped-def]
    return kit.fast.model_copy(update={"timer": "cupti"})


def test_without_the_cupti_module_both_are_timed_with_events_and_the_log_says_why(
    kit, vadd, vadd_wl, monkeypatch
) -> None:
    monkeypatch.setitem(sys.modules, "cupti", None)  # `import cupti` now raises ImportError
    problem = cupti_problem()
    assert problem is not None and problem.startswith("the module cupti cannot be imported (")
    assert "kernel-sweep[cupti]" in problem
    runs = _record_runs(monkeypatch)
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, _cupti_settings(kit)))
    note = f"note: timer cupti: {problem}; the reference and the solution are timed with CUDA events instead"
    assert note in ev.log
    assert runs == [("reference", "events"), ("solution", "events")]  # never with cupti
    assert ev.timing.timer == ev.reference_timing.timer  # one timer for both (host on CPU)
    assert ev.performance is not None and ev.performance.speedup_factor > 0


@pytest.mark.parametrize("who", ["reference", "solution"])
def test_cupti_failing_while_timing_times_both_again_with_events(
    kit, vadd, vadd_wl, monkeypatch, who
) -> None:
    _install(monkeypatch, FakeCupti())  # importable: the failure comes while timing

    def fake(callee: str, timer: str) -> None:
        if timer == "cupti" and callee == who:
            raise CuptiUnavailable("CUPTI cannot be initialised (cuptiError: CUPTI_ERROR_NOT_INITIALIZED)")

    runs = _record_runs(monkeypatch, fake)
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, _cupti_settings(kit)))
    assert (
        f"note: timer cupti: CUPTI cannot be initialised (cuptiError: CUPTI_ERROR_NOT_INITIALIZED), timing "
        f"the {who}; the reference and the solution are timed with CUDA events instead"
    ) in ev.log
    head = [("reference", "cupti")] + ([("solution", "cupti")] if who == "solution" else [])
    assert runs == head + [("reference", "events"), ("solution", "events")]


def test_a_call_cupti_reads_as_zero_is_timed_with_events(kit, vadd, vadd_wl, monkeypatch) -> None:
    _install(monkeypatch, FakeCupti())

    def fake(callee: str, timer: str) -> dict[str, float] | None:
        return {"p50_ms": 0.0} if timer == "cupti" and callee == "solution" else None

    runs = _record_runs(monkeypatch, fake)
    ev = kit.passed(kit.run(vadd, kit.solution("vadd_f32", GOOD), vadd_wl, _cupti_settings(kit)))
    assert (
        "timer cupti: the solution launched no kernel, copy or set on the GPU while timed (median 0)"
        in ev.log
    )
    assert runs[-2:] == [("reference", "events"), ("solution", "events")]


# ---- matching records to calls -----------------------------------------------------------


def test_busy_time_is_the_union_of_the_intervals() -> None:
    assert busy_ns([]) == 0
    assert busy_ns([(10, 20), (30, 45)]) == 25  # one after the other: the sum
    assert busy_ns([(10, 20), (15, 30)]) == 20  # overlapping (two streams): counted once
    assert busy_ns([(30, 40), (10, 50), (60, 61)]) == 41
    assert busy_ns([(5, 5)]) == 0


def test_durations_count_what_the_api_calls_of_each_window_launched() -> None:
    windows = [(100, 200), (300, 400)]
    api = [(50, 1), (120, 2), (150, 3), (250, 4), (310, 5), (399, 6), (450, 7), (160, 8)]
    device = [
        (1, 90, 99),  # the flush, launched before the first window: not counted
        (2, 210, 260),  # a kernel of call 1 (runs after the window closed: still its own)
        (3, 260, 280),  # a second kernel of call 1
        (8, 270, 275),  # a copy on another stream, overlapping the second kernel
        (4, 290, 299),  # the fresh values of call 2: launched between the windows
        (5, 400, 450),  # call 2's kernel
        (6, 450, 451),  # call 2's set
        (7, 460, 470),  # a recheck's copy after call 2
        (0, 100, 900),  # no API call launched it
        (6, 0, 0),  # timestamps not collected
    ]
    assert durations_ms(windows, api, device) == [70 / 1e6, 51 / 1e6]
    assert durations_ms([(500, 600)], api, device) == [0.0]  # a call that launched nothing


class _Record:
    def __init__(self, kind: int, correlation_id: int, start: int, end: int) -> None:
        self.kind, self.correlation_id, self.start, self.end = kind, correlation_id, start, end


class FakeCupti:
    """Enough of ``cupti.cupti`` for a session: a clock, launches that leave an API record and
    a device record with one correlation id, and buffers delivered on flush."""

    class ActivityKind:
        RUNTIME, DRIVER, CONCURRENT_KERNEL, MEMCPY, MEMSET = 1, 2, 3, 4, 5

    def __init__(self, fail_enable: bool = False, deliver: bool = True) -> None:
        self.clock = 1000
        self.device_free = 0
        self.next_id = 1
        self.pending: list[_Record] = []
        self.callbacks: tuple[Callable[[], Any], Callable[[list[_Record]], None]] | None = None
        self.enabled: set[int] = set()
        self.calls: list[str] = []
        self.fail_enable = fail_enable
        self.deliver = deliver

    def get_timestamp(self) -> int:
        self.clock += 1
        return self.clock

    def launch(self, duration: int, kind: int = 3) -> None:
        """An API call now; its work runs on the device's one stream, 10 us later at the
        earliest (the device lags the host, as it does when launches are queued)."""
        cid, self.next_id = self.next_id, self.next_id + 1
        now = self.get_timestamp()
        self.pending.append(_Record(self.ActivityKind.RUNTIME, cid, now, now + 1))
        start = max(self.device_free, now + 10_000)
        self.device_free = start + duration
        self.pending.append(_Record(kind, cid, start, start + duration))

    def activity_register_callbacks(self, requested: Callable[[], Any], completed: Any) -> None:
        self.calls.append("register")
        assert requested()[0] > 0
        self.callbacks = (requested, completed)

    def activity_enable(self, kind: int) -> None:
        if self.fail_enable:
            raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        self.enabled.add(int(kind))

    def activity_disable(self, kind: int) -> None:
        self.enabled.discard(int(kind))

    def activity_flush_all(self, flag: int) -> None:
        self.calls.append(f"flush{flag}")
        if self.callbacks is not None and self.pending and self.deliver:
            batch = [r for r in self.pending if r.kind in self.enabled]
            self.callbacks[1](batch)
        self.pending = []

    def finalize(self) -> None:
        self.calls.append("finalize")
        self.callbacks = None


def _install(monkeypatch: pytest.MonkeyPatch, fake: FakeCupti) -> None:
    package = types.ModuleType("cupti")
    package.cupti = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupti", package)


class _Flush:
    def __init__(self, fake: FakeCupti) -> None:
        self.fake = fake

    def zero_(self) -> None:
        self.fake.launch(5_000)  # the L2 flush: longer than the call, never counted


def test_a_batch_counts_the_calls_kernels_copies_and_sets_and_nothing_around_them(monkeypatch) -> None:
    fake = FakeCupti()
    _install(monkeypatch, fake)
    checks: list[str] = []

    def call(k: int) -> int:
        fake.launch(300)
        fake.launch(200)  # a second kernel: counted too
        fake.launch(40, kind=FakeCupti.ActivityKind.MEMCPY)
        fake.launch(60, kind=FakeCupti.ActivityKind.MEMSET)
        return k

    def prep(k: int) -> None:
        fake.launch(1_000)  # fresh input values: before the window

    def snapshot(slot: int, result: object) -> object:
        fake.launch(7_000, kind=FakeCupti.ActivityKind.MEMCPY)  # the recheck's copy: after it
        return result

    rechecks = Rechecks(CheckSchedule(0), snapshot, lambda snap, where: checks.append(where), 3)
    last: list[object] = [None, None]
    calls = _Calls(call, 2, prep, _Flush(fake), last, rechecks)  # type: ignore[arg-type]
    with CuptiSession(sync=lambda: None) as session:
        assert fake.enabled == {1, 2, 3, 4, 5}
        first = _cupti_batch(session, calls, 5)
        calls.flush = None
        second = _cupti_batch(session, calls, 3)
    assert first == [600 / 1e6] * 5 and second == [600 / 1e6] * 3
    assert last == [0, 1] and calls.index == 8 and checks  # every call ran; rechecks settled
    assert fake.enabled == set() and fake.calls[-1] == "finalize"  # CUPTI left as found


def test_a_session_that_cannot_initialise_cupti_says_so_and_cleans_up(monkeypatch) -> None:
    fake = FakeCupti(fail_enable=True)
    _install(monkeypatch, fake)
    failed = r"CUPTI cannot be initialised \(RuntimeError: CUPTI_ERROR_MULTIPLE"
    with pytest.raises(CuptiUnavailable, match=failed), CuptiSession(sync=lambda: None):
        pass
    assert fake.calls == ["register", "flush1", "finalize"]


def test_a_cupti_that_records_nothing_is_unavailable(monkeypatch) -> None:
    fake = FakeCupti(deliver=False)
    _install(monkeypatch, fake)
    with CuptiSession(sync=lambda: None) as session:
        windows = [(session.now(), session.now())]
        fake.launch(100)
        with pytest.raises(CuptiUnavailable, match="CUPTI recorded no work on the device"):
            session.collect(windows)


def test_a_cupti_without_the_activity_api_is_unavailable(monkeypatch) -> None:
    package = types.ModuleType("cupti")
    package.cupti = types.SimpleNamespace(get_timestamp=lambda: 0)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupti", package)
    problem = cupti_problem()
    assert problem is not None and problem.startswith("this cupti-python has no ActivityKind")
