"""Energy per call from a cumulative counter: a simulated GPU and a fake NVML (counter steps,
wrap-around, a counter missing, one that does not advance), and the CPU path end to end."""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from sweep.engine import EngineCache, evaluate
from sweep.engine.timing._energy import Window, measure_side
from sweep.engine.timing._energy_meter import COUNTER_MODULUS, MeterError, counter_delta, open_meter
from sweep.schema import Energy, EnergySide
from sweep.schema.task import Task


@dataclass
class SimGpu:
    """A GPU drawing ``idle_w`` when idle and ``busy_w`` while calls run, whose energy counter
    (mJ, starting at ``start_mj``, wrapping at 2**64) is updated only every ``period_s``."""

    idle_w: float = 80.0
    busy_w: float = 400.0
    call_s: float = 0.0005
    calls_per_batch: int = 4
    period_s: float = 0.1
    start_mj: int = 10**9
    t: float = 0.0
    energy_j: float = 0.0
    tick_j: float = 0.0  # the energy at the counter's last update
    launched: int = 0
    stuck: bool = False  # the counter never moves
    fail_after: int | None = None  # readings before the counter fails
    readings: int = 0

    def _advance(self, seconds: float, watts: float) -> None:
        # The counter's value at the last update boundary crossed (power is constant here).
        last_tick = math.floor((self.t + seconds) / self.period_s) * self.period_s
        if last_tick > self.t:
            self.tick_j = self.energy_j + (last_tick - self.t) * watts
        self.t += seconds
        self.energy_j += seconds * watts

    # the fake NVML
    def energy_mj(self) -> int:
        self.readings += 1
        if self.fail_after is not None and self.readings > self.fail_after:
            raise MeterError("GPU is lost")
        if self.stuck:
            return self.start_mj
        return (self.start_mj + int(self.tick_j * 1000)) % COUNTER_MODULUS

    # the clock and the device
    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self._advance(seconds, self.idle_w)

    def launch(self) -> int:
        self._advance(self.call_s * self.calls_per_batch, self.busy_w)
        self.launched += self.calls_per_batch
        return self.calls_per_batch

    def sync(self) -> None:
        self._advance(0.00002, self.idle_w)  # the host's turn-around: the GPU idles briefly

    @property
    def true_joules_per_call(self) -> float:
        return (self.busy_w - self.idle_w) * self.call_s


def _measure(gpu: SimGpu, window: Window | None = None) -> EnergySide:
    return measure_side(
        gpu,
        gpu.launch,
        gpu.sync,
        lambda: 1980,
        batching="cudagraph",
        window=window,
        now=gpu.now,
        sleep=gpu.sleep,
    )


def test_energy_per_call_net_of_idle_with_a_stepping_counter() -> None:
    gpu = SimGpu()
    side = _measure(gpu)
    assert side.problem is None and side.joules_per_call is not None
    assert side.joules_per_call == pytest.approx(gpu.true_joules_per_call, rel=0.03)
    assert side.idle_power_w == pytest.approx(80.0, rel=0.01)
    assert 80 < side.mean_power_w < 400 and side.mean_sm_clock_mhz == 1980
    assert side.window_s >= 1.0 and side.calls > 0 and side.batching == "cudagraph"
    # The window starts and ends on a step of the counter.
    assert side.window_s == pytest.approx(round(side.window_s / gpu.period_s) * gpu.period_s, abs=0.002)


@settings(max_examples=20, deadline=None)
@given(
    period=st.sampled_from([0.001, 0.02, 0.05, 0.1]),
    call_ms=st.floats(0.02, 5.0),
    busy=st.floats(120.0, 700.0),
    idle=st.floats(30.0, 110.0),
)
@example(period=0.1, call_ms=4.5, busy=120.0, idle=83.0)  # calls drawing little over idle: 5% off
def test_any_update_period_and_call_length_gives_the_true_energy(
    period: float, call_ms: float, busy: float, idle: float
) -> None:
    gpu = SimGpu(idle_w=idle, busy_w=busy, call_s=call_ms / 1000, period_s=period, calls_per_batch=4)
    side = _measure(gpu)
    assert side.joules_per_call is not None and side.calls is not None
    # The method's stated bound (measure_side's docstring): the window ends on the first step
    # seen after a batch, so the calls counted and the window's length are each off by at most
    # one batch: its calls at busy power, its time at idle power, against the window's net energy.
    batch_s = gpu.call_s * gpu.calls_per_batch + 0.00002
    net = gpu.true_joules_per_call * side.calls
    bound = (batch_s * busy + batch_s * idle) / net
    assert abs(side.joules_per_call / gpu.true_joules_per_call - 1) <= max(0.03, bound)


def test_a_counter_wrapping_around_during_the_window() -> None:
    # 500 J from the wrap: the counter wraps in the middle of the active window.
    gpu = SimGpu(start_mj=COUNTER_MODULUS - 600_000)
    side = _measure(gpu)
    assert side.problem is None
    assert side.joules_per_call == pytest.approx(gpu.true_joules_per_call, rel=0.03)
    assert counter_delta(COUNTER_MODULUS - 5, 3) == 8 and counter_delta(7, 7) == 0


def test_a_short_window_still_waits_for_the_counter_to_step() -> None:
    # A window asked shorter than the counter's update period: it ends on the next step.
    gpu = SimGpu(period_s=0.1)
    side = _measure(gpu, Window(min_s=0.01, idle_s=0.01))
    assert side.problem is None and side.window_s >= 0.09
    assert side.joules_per_call == pytest.approx(gpu.true_joules_per_call, rel=0.05)


def test_a_counter_that_never_advances_gives_no_figure_and_says_why() -> None:
    gpu = SimGpu(stuck=True)
    side = _measure(gpu)
    assert side.joules_per_call is None and side.mean_power_w is None
    assert "did not advance" in (side.problem or "")
    assert gpu.t < 2.0  # it gave up after the wait, not never


def test_a_counter_that_fails_mid_measurement() -> None:
    gpu = SimGpu(fail_after=200)
    side = _measure(gpu)
    assert side.joules_per_call is None and "could not be read" in (side.problem or "")
    assert "GPU is lost" in (side.problem or "")


def test_calls_indistinguishable_from_idle_are_not_a_figure() -> None:
    gpu = SimGpu(idle_w=100.0, busy_w=100.0)
    side = _measure(gpu)
    assert side.joules_per_call is None and "idle power" in (side.problem or "")
    assert side.mean_power_w == pytest.approx(100.0, rel=0.02)


# ---- the fake pynvml ----------------------------------------------------------------------


class NvmlError(Exception):
    pass


class FakePynvml:
    def __init__(
        self, *, counter: bool = True, init: bool = True, devices: tuple[str, ...] = ("GPU-abc",)
    ) -> None:
        self.counter, self.init, self.devices = counter, init, devices
        self.value = 5_000

    def nvmlInit(self) -> None:
        if not self.init:
            raise NvmlError("Driver Not Loaded")

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        if uuid not in self.devices:
            raise NvmlError("Not Found")
        return uuid

    def nvmlDeviceGetHandleByPciBusId(self, bus: str) -> str:
        raise NvmlError("Not Found")

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        if index >= len(self.devices):
            raise NvmlError("Invalid Argument")
        return self.devices[index]

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        if not self.counter:
            raise NvmlError("Not Supported")
        self.value += 7
        return self.value


def test_open_meter_reads_the_counter_of_the_named_device() -> None:
    meter = open_meter(("00000000:01:00.0", "abc", 0), module=FakePynvml())
    assert not isinstance(meter, str)
    assert meter.energy_mj() < meter.energy_mj()


@pytest.mark.parametrize(
    ("fake", "ident", "words"),
    [
        (FakePynvml(counter=False), (None, "abc", 0), "Not Supported"),  # an old GPU: no counter
        (FakePynvml(init=False), (None, "abc", 0), "cannot be initialised"),
        (FakePynvml(devices=()), ("0000:01:00.0", "zzz", 3), "does not find the device"),
        (FakePynvml(), None, "not run on an NVIDIA GPU"),
    ],
)
def test_open_meter_says_why_there_is_no_counter(fake: FakePynvml, ident: object, words: str) -> None:
    why = open_meter(ident, module=fake)  # type: ignore[arg-type]
    assert isinstance(why, str) and words in why


def test_open_meter_without_nvidia_ml_py_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    why = open_meter((None, "abc", 0))
    assert isinstance(why, str) and "kernel-sweep[energy]" in why and "nvidia-ml-py" in why


def test_a_counter_reading_that_is_not_a_count_is_an_error() -> None:
    fake = FakePynvml()
    fake.nvmlDeviceGetTotalEnergyConsumption = lambda handle: -1  # type: ignore[method-assign]
    why = open_meter((None, "abc", 0), module=fake)
    assert isinstance(why, str) and "not a count" in why


def test_energy_speedup() -> None:
    e = Energy(reference=EnergySide(joules_per_call=0.02), solution=EnergySide(joules_per_call=0.01))
    assert e.energy_speedup == pytest.approx(2.0)
    assert Energy(problem="cpu").energy_speedup is None
    assert Energy(reference=EnergySide(joules_per_call=0.02), solution=EnergySide()).energy_speedup is None


# ---- end to end on the CPU ----------------------------------------------------------------


def test_energy_on_the_cpu_is_empty_and_the_log_says_why(kit, vadd, vadd_wl) -> None:
    sol = kit.solution("vadd_f32", "def run(x, y):\n    return x + y\n")
    settings_on = kit.fast.model_copy(update={"energy": True})
    trace = evaluate(Task.make(vadd, sol, vadd_wl, settings_on, "CPU"), device="cpu", cache=EngineCache())
    ev = trace.evaluation
    assert ev.status.value == "PASSED"
    assert ev.energy is not None and ev.energy.reference is None and ev.energy.solution is None
    assert "the device is cpu" in (ev.energy.problem or "")
    assert "energy not measured: the device is cpu" in ev.log
    off = evaluate(Task.make(vadd, sol, vadd_wl, kit.fast, "CPU"), device="cpu", cache=EngineCache())
    assert off.evaluation.energy is None and '"energy"' not in off.to_json()
