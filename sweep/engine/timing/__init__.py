"""Measuring: the timers (CUDA events, CUDA graphs, CUPTI, the host clock), when to stop, fresh inputs
per timed call, the L2 between calls, the device's clocks and health (NVML), output capture."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sweep._lazy import face

if TYPE_CHECKING:
    from sweep.engine.timing._clock_record import clocks_record as clocks_record
    from sweep.engine.timing._cupti_timer import (
        CuptiUnavailable as CuptiUnavailable,
    )
    from sweep.engine.timing._cupti_timer import (
        cupti_problem as cupti_problem,
    )
    from sweep.engine.timing._energy import Window as Window
    from sweep.engine.timing._energy import measure_side as measure_side
    from sweep.engine.timing._energy_meter import EnergyMeter as EnergyMeter
    from sweep.engine.timing._energy_meter import open_meter as open_meter
    from sweep.engine.timing._envinfo import memory_budget as memory_budget
    from sweep.engine.timing._fresh import (
        CheckSchedule as CheckSchedule,
    )
    from sweep.engine.timing._fresh import (
        Freshener as Freshener,
    )
    from sweep.engine.timing._fresh import (
        Rechecks as Rechecks,
    )
    from sweep.engine.timing._graph_timer import (
        UNJOINED as UNJOINED,
    )
    from sweep.engine.timing._graph_timer import (
        CaptureFailed as CaptureFailed,
    )
    from sweep.engine.timing._graph_timer import (
        capture_graph as capture_graph,
    )
    from sweep.engine.timing._graph_timer import (
        capture_stream as capture_stream,
    )
    from sweep.engine.timing._graph_timer import (
        drain_pending_error as drain_pending_error,
    )
    from sweep.engine.timing._graph_timer import (
        stray_streams as stray_streams,
    )
    from sweep.engine.timing._l2 import (
        persisting_l2_limit as persisting_l2_limit,
    )
    from sweep.engine.timing._l2 import (
        reset_persisting_l2 as reset_persisting_l2,
    )
    from sweep.engine.timing._nvml import ClockReading as ClockReading
    from sweep.engine.timing._nvml import Conditions as Conditions
    from sweep.engine.timing._nvml import Nvml as Nvml
    from sweep.engine.timing._stopping import ClockWatch as ClockWatch
    from sweep.engine.timing._timing import (
        WarmUp as WarmUp,
    )
    from sweep.engine.timing._timing import (
        choose_timer as choose_timer,
    )
    from sweep.engine.timing._timing import (
        flush_bytes as flush_bytes,
    )
    from sweep.engine.timing._timing import (
        time_calls as time_calls,
    )
    from sweep.engine.timing._timing import (
        warm_up as warm_up,
    )

#: Each public name of this wing and the module that defines it.
_WHERE = {
    "capture_graph": "_graph_timer",
    "capture_stream": "_graph_timer",
    "CaptureFailed": "_graph_timer",
    "CheckSchedule": "_fresh",
    "choose_timer": "_timing",
    "ClockReading": "_nvml",
    "clocks_record": "_clock_record",
    "ClockWatch": "_stopping",
    "Conditions": "_nvml",
    "cupti_problem": "_cupti_timer",
    "CuptiUnavailable": "_cupti_timer",
    "drain_pending_error": "_graph_timer",
    "EnergyMeter": "_energy_meter",
    "flush_bytes": "_timing",
    "Freshener": "_fresh",
    "measure_side": "_energy",
    "memory_budget": "_envinfo",
    "Nvml": "_nvml",
    "open_meter": "_energy_meter",
    "persisting_l2_limit": "_l2",
    "Rechecks": "_fresh",
    "reset_persisting_l2": "_l2",
    "stray_streams": "_graph_timer",
    "time_calls": "_timing",
    "UNJOINED": "_graph_timer",
    "warm_up": "_timing",
    "WarmUp": "_timing",
    "Window": "_energy",
}
__all__ = [
    "UNJOINED",
    "CaptureFailed",
    "CheckSchedule",
    "ClockReading",
    "ClockWatch",
    "Conditions",
    "CuptiUnavailable",
    "EnergyMeter",
    "Freshener",
    "Nvml",
    "Rechecks",
    "WarmUp",
    "Window",
    "capture_graph",
    "capture_stream",
    "choose_timer",
    "clocks_record",
    "cupti_problem",
    "drain_pending_error",
    "flush_bytes",
    "measure_side",
    "memory_budget",
    "open_meter",
    "persisting_l2_limit",
    "reset_persisting_l2",
    "stray_streams",
    "time_calls",
    "warm_up",
]
__getattr__ = face(__name__, _WHERE)
