"""The energy of one side's calls from a cumulative energy counter (pure Python: tested with a
simulated GPU and counter).

NVML's energy counter does not move continuously: it steps when the driver updates it, every
20 to 100 ms on recent GPUs (PETSc's manual page ``PetscLogGpuEnergyMeter``, which reads the
same counter), and a window of a few milliseconds may see no step at all. Kernel Tuner, which
tunes for energy through the same counter, runs a kernel repeatedly for a continuous window
of at least a second (its ``NVMLObserver``'s ``continuous_duration``). So a side is measured
as follows (:func:`measure_side`):

1. idle: wait for a step of the counter, sleep :attr:`Window.idle_s`, wait for the next step:
   the idle power is the energy between the two steps over the time between them (both ends
   on a step, so the counter's granularity does not bias it);
2. active: wait for a step, then launch batches of calls (graph replays for short calls, see
   ``_energy_phase``) for at least :attr:`Window.min_s`, reading the SM clock between
   batches, and keep launching until the counter steps again: the window then starts and
   ends on a step, and the calls counted are those that ran in it, give or take one batch
   (a few milliseconds against a window of a second);
3. the energy per call is the window's energy minus the idle power times the window, over
   the calls; the mean power is the window's energy over its length (idle included).

A counter that does not step within :attr:`Window.tick_wait_s` (a driver that never
updates it, a broken reading) gives no figure: the side's ``problem`` says so. A difference
across the counter's wrap-around is taken modulo 2**64 (``_energy_meter.counter_delta``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from sweep.engine.timing._energy_meter import EnergyMeter, MeterError, counter_delta
from sweep.schema import EnergySide

__all__ = ["Window", "measure_side"]


@dataclass(frozen=True)
class Window:
    """How long each part of a side's measurement lasts (seconds)."""

    #: The active window: at least this long (Kernel Tuner's continuous window: 1 s).
    min_s: float = 1.0
    #: The idle reading between two steps of the counter.
    idle_s: float = 0.3
    #: The longest wait for the counter to step: five times the slowest documented update
    #: period (100 ms).
    tick_wait_s: float = 0.5
    #: How often the counter is read while waiting for a step.
    poll_s: float = 0.0005


class _NoStep(Exception):
    """The counter did not step within the wait."""


@dataclass
class _Clock:
    now: Callable[[], float]
    sleep: Callable[[float], None]


def _step(
    meter: EnergyMeter, window: Window, clock: _Clock, busy: Callable[[], None] | None = None
) -> tuple[int, float]:
    """Wait for the counter to step (``busy``: run it between readings, keeping the GPU busy,
    else sleep); the new value and when it was seen."""
    first = meter.energy_mj()
    since = clock.now()
    while True:
        if busy is not None:
            busy()
        else:
            clock.sleep(window.poll_s)
        value, at = meter.energy_mj(), clock.now()
        if value != first:
            return value, at
        if at - since > window.tick_wait_s:
            raise _NoStep(
                f"the GPU's energy counter did not advance in {at - since:.2f} s "
                f"(it read {first} mJ throughout)"
            )


def measure_side(
    meter: EnergyMeter,
    launch: Callable[[], int],
    sync: Callable[[], None],
    sm_clock: Callable[[], int | None],
    *,
    batching: str,
    window: Window | None = None,
    now: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
) -> EnergySide:
    """One side's energy per call (see the module's docstring).

    Args:
        meter: The cumulative counter (millijoules).
        launch: Queue one batch of calls; how many calls it queued.
        sync: Wait until the queued calls are done.
        sm_clock: The SM clock now (MHz), ``None`` when unknown.
        batching: How ``launch`` batches its calls (``"cudagraph"``, ``"eager"``): recorded.
        window: The lengths of the parts; the defaults of :class:`Window` when ``None``.
        now, sleep: The clock (seconds) and how to wait (tests pass a simulated one).

    Returns:
        The side's figures; where none could be had, only ``problem`` and what was measured
        (never raises for the counter: a broken reading is a ``problem``).
    """
    w = window or Window()
    clock = _Clock(now, sleep)
    sync()
    try:
        idle_start, t0 = _step(meter, w, clock)
        clock.sleep(w.idle_s)
        idle_end, t1 = _step(meter, w, clock)
        idle_w = counter_delta(idle_start, idle_end) / 1000 / (t1 - t0)
        calls = 0
        mhz: list[int] = []

        def batch() -> None:
            nonlocal calls
            calls += launch()
            sync()
            reading = sm_clock()
            if reading is not None:
                mhz.append(reading)

        start, ts = _step(meter, w, clock)
        while clock.now() - ts < w.min_s:
            batch()
        end, te = _step(meter, w, clock, busy=batch)
    except _NoStep as e:
        return EnergySide(batching=batching, problem=str(e))
    except MeterError as e:
        return EnergySide(batching=batching, problem=f"the GPU's energy counter could not be read: {e}")
    seconds = te - ts
    joules = counter_delta(start, end) / 1000
    net = joules - idle_w * seconds
    problem = None
    if calls <= 0 or net <= 0:
        problem = (
            f"the calls drew no more than the idle power ({joules / seconds:.1f} W against "
            f"{idle_w:.1f} W idle over {seconds:.2f} s): too little to tell apart with this counter"
        )
    return EnergySide(
        joules_per_call=net / calls if problem is None else None,
        mean_power_w=joules / seconds,
        idle_power_w=idle_w,
        mean_sm_clock_mhz=sum(mhz) / len(mhz) if mhz else None,
        calls=calls,
        window_s=seconds,
        batching=batching,
        problem=problem,
    )
