"""The data of the report's pictures, read from the store's views: speedup bars, speedup
samples per solution, roofline points per hardware and cross-hardware latency pairs."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sweep.store.db import CURRENT, RANK_TIME, RANKED
from sweep.store.read import Session, run_sql

if TYPE_CHECKING:
    from sweep.store.comparison import TaskComparison

__all__ = [
    "BandwidthPoint",
    "CrossPoint",
    "RooflinePoint",
    "SpeedupBar",
    "SpeedupSample",
    "comparison_samples",
    "cross_points",
    "failure_counts",
    "roofline_points",
    "speedup_samples",
]

#: Points of one picture at most (the newest are kept); the note says how many were left out.
MAX_POINTS = 2000


@dataclass(frozen=True)
class SpeedupBar:
    """One bar of the chart: a solution's geometric-mean speedup on one hardware."""

    definition: str
    solution: str
    hardware: str
    speedup: float | None
    pass_rate: float
    #: Ranked traces that passed and failed (the chart marks a solution failing some).
    passed: int = 0
    failed: int = 0


@dataclass(frozen=True)
class SpeedupSample:
    """The speedups of one solution's PASSED traces on one hardware, and how many failed."""

    definition: str
    solution: str
    hardware: str
    speedups: tuple[float, ...]
    failed: int


@dataclass(frozen=True)
class RooflinePoint:
    """One PASSED trace whose work is known: FLOP per byte and the rates achieved."""

    hardware: str
    device_name: str
    definition: str
    solution: str
    intensity: float | None
    tflops: float | None
    gbps: float | None


@dataclass(frozen=True)
class BandwidthPoint:
    """A call made by several ranks at one message size: the median bus bandwidth of its
    traces (the report's bandwidth table, one row)."""

    definition: str
    solution: str
    hardware: str
    world_size: int
    message_bytes: float
    busbw_gbps: float


@dataclass(frozen=True)
class CrossPoint:
    """One solution and workload PASSED on two hardware: its latency on each."""

    hardware_a: str
    hardware_b: str
    definition: str
    solution: str
    workload: str
    latency_a: float
    latency_b: float


def _f(v: object) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def speedup_samples(
    session: Session, keys: set[tuple[str, str, str]], source: str = CURRENT
) -> list[SpeedupSample]:
    """Per (definition, solution, hardware) of ``keys``: the speedups of its ranked PASSED
    traces (newest per workload) in ``source`` (default: current versions) and the count of
    the others."""
    res = run_sql(
        session,
        f"""SELECT definition, solution, hardware,
       list(speedup_factor ORDER BY speedup_factor) FILTER (WHERE status = 'PASSED' AND speedup_factor > 0),
       count(*) FILTER (WHERE status <> 'PASSED')
FROM {source} WHERE {RANKED}
GROUP BY definition, solution, hardware ORDER BY definition, solution, hardware""",
    )
    out = []
    for d, s, h, speeds, failed in res.rows:
        if (str(d), str(s), str(h)) in keys:
            vals = tuple(float(v) for v in (speeds or []) if isinstance(v, (int, float)))  # type: ignore[attr-defined]
            out.append(SpeedupSample(str(d), str(s), str(h), vals, int(failed or 0)))  # type: ignore[call-overload]
    return out


def failure_counts(session: Session, source: str = CURRENT) -> dict[tuple[str, str, str], tuple[int, int]]:
    """Per (definition, solution, hardware) of ``source``: its failed and all ranked traces."""
    res = run_sql(
        session,
        f"""SELECT definition, solution, hardware, count(*) FILTER (WHERE status <> 'PASSED'), count(*)
FROM {source} WHERE {RANKED} GROUP BY ALL""",
    )
    return {
        (str(d), str(s), str(h)): (int(f), int(n))  # type: ignore[call-overload]
        for d, s, h, f, n in res.rows
    }


def roofline_points(session: Session, source: str = CURRENT) -> tuple[list[RooflinePoint], int]:
    """Ranked PASSED traces of ``source`` (default: current versions) that carry achieved
    rates, and how many more there were."""
    res = run_sql(
        session,
        f"""SELECT hardware, coalesce(device_name, hardware_raw, hardware), definition, solution,
       work_flops / nullif(work_bytes, 0), tflops, gbps, count(*) OVER () AS n
FROM {source}
WHERE status = 'PASSED' AND coalesce(tflops, gbps) IS NOT NULL AND {RANKED}
ORDER BY {RANK_TIME} DESC, trace_key LIMIT {MAX_POINTS}""",
    )
    pts = [
        RooflinePoint(str(h), str(dev), str(d), str(s), _f(ai), _f(tf), _f(gb))
        for h, dev, d, s, ai, tf, gb, _ in res.rows
    ]
    total = int(res.rows[0][7]) if res.rows else 0  # type: ignore[call-overload]
    return pts, total - len(pts)


def cross_points(session: Session, source: str = "cross_hardware") -> tuple[list[CrossPoint], int]:
    """Pairs of ``source`` (rows of the ``cross_hardware`` view) PASSED on both hardware, and
    how many more there were."""
    res = run_sql(
        session,
        f"""SELECT hardware_a, hardware_b, definition, solution, workload_uuid, latency_ms_a, latency_ms_b,
       count(*) OVER () AS n
FROM {source}
WHERE status_a = 'PASSED' AND status_b = 'PASSED' AND latency_ms_a > 0 AND latency_ms_b > 0
ORDER BY hardware_a, hardware_b, definition, solution, workload_uuid LIMIT {MAX_POINTS}""",
    )
    pts = [
        CrossPoint(str(a), str(b), str(d), str(s), str(w), float(la), float(lb))  # type: ignore[arg-type]
        for a, b, d, s, w, la, lb, _ in res.rows
    ]
    total = int(res.rows[0][7]) if res.rows else 0  # type: ignore[call-overload]
    return pts, total - len(pts)


def comparison_samples(tasks: Sequence[TaskComparison]) -> list[SpeedupSample]:
    """``sweep compare``'s tasks as the distribution chart's samples: per (definition,
    solution), the latency ratio B/A on each task both passed (as ``sweep compare``'s table
    and summary say it: under 1, B is faster), and the tasks that failed on a side."""
    groups: dict[tuple[str, str], tuple[list[float], list[int]]] = {}
    for t in tasks:
        speedups, failed = groups.setdefault((t.definition, t.solution), ([], [0]))
        if t.ratio is not None and t.ratio > 0:
            speedups.append(t.ratio)
        elif t.verdict == "failed":
            failed[0] += 1
    return [SpeedupSample(d, s, "B vs A", tuple(v), f[0]) for (d, s), (v, f) in groups.items()]
