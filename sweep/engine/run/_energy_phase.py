"""The energy phase (``evaluation.energy``): joules per call of the reference and the solution.

It runs after the solution's timed calls and before the GPU is handed on (the ``"timed"``
phase): the reference first (after a check that the solution replaced nothing it uses), then
the solution, each on the timing sets, back to back, with the idle power read just before
each (``_energy.measure_side``). Calls are batched:

- ``cudagraph``: when the timing phase used graphs (short calls), a graph of about
  :data:`BATCH_MS` of calls rotating over the input sets is captured once per side and
  replayed, so launch gaps (idle power) do not dilute the calls' energy;
- ``eager``: longer calls, or calls a graph cannot capture, launched one by one.

Unlike timing, there is no L2 flush and no fresh input values between calls (both would
spend energy that is not the call's): the calls repeat the values of the timing sets, which
the timing phase has already checked the solution computes correctly.

Without a GPU, ``nvidia-ml-py`` or a readable counter, the trace's ``energy`` holds the
reason only, and the log says it (``_energy_meter.open_meter``).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from sweep.engine.guard import pinned_flags
from sweep.engine.run._callpath import CallPath
from sweep.engine.run._run_state import RunState
from sweep.engine.timing import (
    EnergyMeter,
    Nvml,
    Window,
    capture_graph,
    capture_stream,
    drain_pending_error,
    measure_side,
    open_meter,
)
from sweep.schema import Energy, EnergySide
from sweep.schema.energy import ENERGY_SOURCE

__all__ = ["BATCH_MS", "energy_words", "measure_energy"]

#: About how long one batch of calls lasts: the end of the window is known to within one.
BATCH_MS = 2.0
#: The most calls captured in one graph.
_GRAPH_MAX_CALLS = 256


def _calls_per_batch(call_ms: float, sets: int) -> int:
    """A multiple of ``sets`` lasting about :data:`BATCH_MS` (at least ``sets``)."""
    rounds = max(1, math.floor(BATCH_MS / (sets * max(call_ms, 1e-4))))
    return sets * min(rounds, max(1, _GRAPH_MAX_CALLS // sets))


class _Side:
    """One side's batches: a captured graph, or eager calls."""

    def __init__(self, call: Callable[[int], object], sets: int, calls: int, graphs: bool) -> None:
        self.call, self.sets, self.calls = call, sets, calls
        self.graph: torch.cuda.CUDAGraph | None = None
        self.note: str | None = None
        if graphs:
            self._capture()

    def _body(self) -> None:
        for i in range(self.calls):
            self.call(i % self.sets)

    def _capture(self) -> None:
        torch.cuda.synchronize()
        stream = capture_stream()
        stream.wait_stream(torch.cuda.current_stream())
        try:
            self.graph = capture_graph(self._body, stream, None)
        except Exception as e:  # noqa: BLE001 - any refusal: calls launched one by one instead
            drain_pending_error()
            self.note = (
                f"a graph of its calls could not be captured ({type(e).__name__}); calls launched one by one"
            )
        finally:
            torch.cuda.current_stream().wait_stream(stream)

    @property
    def batching(self) -> str:
        return "cudagraph" if self.graph is not None else "eager"

    def launch(self) -> int:
        if self.graph is not None:
            self.graph.replay()
        else:
            self._body()
        return self.calls


def measure_energy(
    run: RunState,
    path: CallPath,
    nvml: Nvml,
    timer: str,
    call_ms: tuple[float, float],
    *,
    window: Window | None = None,
    meter: EnergyMeter | str | None = None,
) -> Energy | None:
    """The energy of the reference's and the solution's calls (``None``: not asked for).

    ``timer`` is the timer both sides ran with (graphs: batches are graph replays);
    ``call_ms`` their median latencies (reference, solution), which size the batches.
    ``meter`` stands in for the NVML counter (tests). Notes go to ``run.notes``.
    A failure of the reference is a ``reference_failed`` stop, the solution's its status.
    """
    if not run.settings.energy:
        return None
    if meter is None:
        meter = (
            open_meter(nvml.ident)
            if run.device.type == "cuda"
            else f"the device is {run.device.type}: NVML's energy counter measures NVIDIA GPUs only"
        )
    if isinstance(meter, str):
        run.notes.append(f"note: energy not measured: {meter}")
        return Energy(problem=meter)
    sets = run.settings.input_sets
    graphs = timer == "cudagraph"
    found = meter

    def side(call: Callable[[int], object], ms: float, who: str) -> EnergySide:
        batches = _Side(call, sets, _calls_per_batch(ms, sets), graphs)
        if batches.note:
            run.notes.append(f"note: energy of the {who}: {batches.note}")
        result = measure_side(
            found,
            batches.launch,
            run.sync,
            lambda: nvml.read().sm_clock_mhz,
            batching=batches.batching,
            window=window,
        )
        if result.problem:
            run.notes.append(f"note: energy of the {who} not measured: {result.problem}")
        return result

    run.check_integrity("before the reference's energy is measured")
    try:
        with pinned_flags(run.flags), torch.no_grad():
            ref = side(path.call_reference, call_ms[0], "reference")
    except Exception as e:  # noqa: BLE001 - any failure of the reference is reported
        raise run.reference_failed(
            e, f"the reference raised {type(e).__name__} while its energy was measured: {e}"
        ) from None
    try:
        with torch.no_grad():
            sol = side(path.call_solution, call_ms[1], "solution")
    except Exception as e:  # noqa: BLE001 - any failure of the kernel is a status
        raise run.solution_failed(e, "while its energy was measured") from None
    run.check_threads("after its energy was measured")
    return Energy(reference=ref, solution=sol)


def energy_words(energy: Energy | None) -> list[str]:
    """The log's line of the energy figures (none when not measured: the notes say why)."""
    if energy is None or energy.reference is None or energy.solution is None:
        return []
    ref, sol = energy.reference, energy.solution

    def mj(side: EnergySide) -> str:
        if side.joules_per_call is None:
            return "n/a"
        return f"{side.joules_per_call * 1000:.4g} mJ/call at {side.mean_power_w or 0:.0f} W"

    ratio = energy.energy_speedup
    tail = f", energy speedup {ratio:.3f}x" if ratio is not None else ""
    return [f"energy: solution {mj(sol)}, reference {mj(ref)}{tail} ({ENERGY_SOURCE}, idle power subtracted)"]
