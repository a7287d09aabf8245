"""The report: per-hardware summary, flagged results, leaderboard, achieved rates, backend
scores and cross-hardware summary."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sweep.store._query import run_sql
from sweep.store._store import Session, Store
from sweep.store.render._formats import format_table

__all__ = ["Report", "ReportTable", "SpeedupBar", "build_report", "render_text"]


@dataclass(frozen=True)
class ReportTable:
    """A titled table of the report."""

    title: str
    columns: list[str]
    rows: list[tuple[object, ...]]
    note: str = ""


@dataclass(frozen=True)
class SpeedupBar:
    """One bar of the chart: a solution's geometric-mean speedup on one hardware."""

    definition: str
    solution: str
    hardware: str
    speedup: float | None
    pass_rate: float


@dataclass
class Report:
    """Everything ``sweep report`` shows.

    Attributes:
        store: The store's name.
        source: Where the data came from (see :class:`sweep.store.Session`).
        notes: Notes about the source.
        summary: Per hardware: traces, passed, definitions, solutions, workloads, newest trace.
        leaderboard: Per solution and hardware (the best ``top`` per definition and hardware).
        backends: BackendBench-style scores per author and hardware.
        cross: Per pair of hardware: shared (solution, workload) pairs and latency ratio.
        backendbench: BackendBench's own scores over imported operators (op_type
            ``backendbench``), per author and hardware; ``None`` when there are none.
        bars: The chart's data (solutions of the leaderboard table).
        generated_at: When the report was built.
        flagged: Traces flagged ``impossible`` (latency under the physical floor: never
            ranked) or ``suspicious`` (speedup above the bound); ``None`` when there are none.
        rates: Achieved TFLOP/s, GB/s and fraction of peak per solution and hardware, over
            ranked PASSED traces whose work is known; ``None`` when there are none.
    """

    store: str
    source: str
    notes: list[str]
    summary: ReportTable
    leaderboard: ReportTable
    backends: ReportTable
    cross: ReportTable
    backendbench: ReportTable | None = None
    bars: list[SpeedupBar] = field(default_factory=list)
    generated_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    flagged: ReportTable | None = None
    rates: ReportTable | None = None

    @property
    def tables(self) -> list[ReportTable]:
        """The tables, in display order."""
        flagged = [self.flagged] if self.flagged is not None else []
        rates = [self.rates] if self.rates is not None else []
        bb = [self.backendbench] if self.backendbench is not None else []
        return [self.summary, *flagged, self.leaderboard, *rates, self.backends, *bb, self.cross]


def _table(session: Session, title: str, sql: str, note: str = "") -> ReportTable:
    res = run_sql(session, sql)
    return ReportTable(title, res.columns, res.rows, note)


def build_report(store_path: Path, *, results_dir: Path | None = None, top: int = 10) -> Report:
    """Gather the report from a store.

    Args:
        store_path: The DuckDB file.
        results_dir: The sweep's results folder (default: the store file's folder).
        top: Solutions shown per definition and hardware in the leaderboard.
    """
    store = Store(Path(store_path))
    with store.session(results_dir) as s:
        summary = _table(
            s,
            "Traces per hardware (newest per solution, workload and settings)",
            """
SELECT hardware, count(*) AS traces, count(*) FILTER (WHERE status = 'PASSED') AS passed,
       count(DISTINCT definition) AS definitions,
       count(DISTINCT coalesce(solution_hash, solution)) AS solutions,
       count(DISTINCT workload_uuid) AS workloads, max(timestamp) AS newest
FROM latest GROUP BY hardware ORDER BY hardware""",
        )
        leaderboard = _table(
            s,
            "Leaderboard",
            f"""
SELECT definition, solution, author, language, hardware, traces, passed, pass_rate,
       geomean_speedup, op_correct, op_speedup
FROM leaderboard
QUALIFY row_number() OVER (PARTITION BY definition, hardware
                           ORDER BY op_correct DESC, op_speedup DESC, solution) <= {int(top)}
ORDER BY definition, hardware, op_correct DESC, op_speedup DESC, solution""",
            note="geomean_speedup: over PASSED traces. op_correct: every workload passed. "
            "op_speedup: geometric mean with failed workloads counted as 1.0 (BackendBench).",
        )
        backends = _table(
            s,
            "Backend scores (BackendBench style, per author)",
            """
SELECT author, hardware, ops, correct_ops, correctness_rate, geomean_speedup, perf_at_1
FROM backend_scores ORDER BY hardware, perf_at_1 DESC, geomean_speedup DESC, author""",
            note="An op counts as correct when all its workloads pass; perf_at_1: share of ops "
            "correct and faster than the reference. Other thresholds: SELECT * FROM perf_at(1.5).",
        )
        cross = _table(
            s,
            "Cross-hardware (same solution and workload)",
            """
SELECT hardware_a, hardware_b, count(*) AS pairs,
       count(*) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED') AS both_passed,
       exp(avg(ln(latency_ratio)) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED'
                                          AND latency_ratio > 0)) AS latency_ratio_b_over_a,
       count(*) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED' AND latency_ratio > 1)
           AS a_faster,
       count(*) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED' AND latency_ratio < 1)
           AS b_faster
FROM cross_hardware GROUP BY hardware_a, hardware_b ORDER BY hardware_a, hardware_b""",
            note="latency_ratio_b_over_a: geometric mean of latency on B / latency on A over "
            "pairs that passed on both; above 1 means A is faster.",
        )
        backendbench = _table(
            s,
            "BackendBench scores (imported operators, per author)",
            """
SELECT author, hardware, count(*) AS ops, avg(pass_rate) AS correctness_score,
       count(*) FILTER (WHERE correct) AS all_correct_ops,
       exp(avg(ln(speedup))) AS performance_score,
       avg(CASE WHEN correct AND speedup > 1.0 THEN 1.0 ELSE 0.0 END) AS perf_at_1
FROM op_scores WHERE op_type = 'backendbench'
GROUP BY author, hardware ORDER BY hardware, perf_at_1 DESC, performance_score DESC, author""",
            note="As BackendBench scores a backend: correctness_score: mean over operators of the share "
            "of their workloads passed; performance_score: geometric mean over operators of each "
            "one's geometric-mean speedup, failed workloads counted as 1.0; perf_at_1: share of "
            "operators with every workload passed and speedup above 1.",
        )
        flagged = _table(
            s,
            "Flagged results",
            """
SELECT definition, solution, hardware, left(workload_uuid, 8) AS workload, status,
       array_to_string(flags, ', ') AS flags, latency_ms, floor_ms, speedup_factor
FROM latest WHERE len(coalesce(flags, [])) > 0
ORDER BY list_contains(flags, 'impossible') DESC, definition, solution, hardware, workload_uuid""",
            note="impossible: latency under the least time the work can take on the device (floor_ms, "
            "see the trace's log); kept with its status, left out of best, the leaderboard and the scores. "
            "suspicious: speedup above evaluation.suspicious_speedup; shown, not excluded.",
        )
        rates = _table(
            s,
            "Achieved rates (work over latency)",
            f"""
SELECT definition, solution, hardware, count(*) AS workloads,
       median(tflops) AS median_tflops, median(gbps) AS median_gbps,
       median(peak_fraction) AS median_peak_fraction, max(peak_fraction) AS max_peak_fraction
FROM latest
WHERE status = 'PASSED' AND coalesce(tflops, gbps) IS NOT NULL
  AND NOT coalesce(list_contains(flags, 'impossible'), false)
GROUP BY definition, solution, hardware
QUALIFY row_number() OVER (PARTITION BY definition, hardware
                           ORDER BY median_peak_fraction DESC NULLS LAST, solution) <= {int(top)}
ORDER BY definition, hardware, median_peak_fraction DESC NULLS LAST, solution""",
            note="Work: the definition's flops/bytes expressions, else counted (FLOPs of the reference "
            "on meta tensors, bytes of inputs and outputs). Fraction of peak: the larger of the two "
            "rates over the device's peaks (calibrated ceilings when measured, else the datasheet).",
        )
        cols = leaderboard.columns
        bars = [
            SpeedupBar(
                definition=str(r[cols.index("definition")]),
                solution=str(r[cols.index("solution")]),
                hardware=str(r[cols.index("hardware")]),
                speedup=_float(r[cols.index("geomean_speedup")]),
                pass_rate=_float(r[cols.index("pass_rate")]) or 0.0,
            )
            for r in leaderboard.rows
        ]
        return Report(
            store.where,
            s.source,
            list(s.notes),
            summary,
            leaderboard,
            backends,
            cross,
            backendbench if backendbench.rows else None,
            bars,
            flagged=flagged if flagged.rows else None,
            rates=rates if rates.rows else None,
        )


def _float(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def render_text(report: Report) -> str:
    """The report as text for a terminal."""
    out = [f"store: {report.store}"]
    out.extend(f"note: {n}" for n in report.notes)
    for t in report.tables:
        out.append("")
        out.append(f"== {t.title} ==")
        if t.rows:
            out.append(format_table(t.columns, t.rows, width=48))
        else:
            out.append("(none)")
        if t.note:
            out.append(t.note)
    return "\n".join(out)
