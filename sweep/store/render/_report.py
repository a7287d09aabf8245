"""The report: per-hardware summary, flagged results, leaderboard, achieved rates, backend
scores and cross-hardware summary, energy (when measured), and the data of its pictures."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sweep.errors import StoreError
from sweep.store.db import RANK_TIME, RANKED
from sweep.store.read import Session, Store, run_sql
from sweep.store.render._chart_data import (
    CrossPoint,
    RooflinePoint,
    SpeedupBar,
    SpeedupSample,
    cross_points,
    roofline_points,
    speedup_samples,
)
from sweep.store.render._collective_section import COLLECTIVE_SECTION
from sweep.store.render._energy_sections import ENERGY_SECTIONS
from sweep.store.render._formats import format_table
from sweep.store.render._model_section import model_rows
from sweep.store.scores import check_uncovered

__all__ = ["Report", "ReportTable", "SpeedupBar", "build_report", "render_text"]


@dataclass(frozen=True)
class ReportTable:
    """A titled table of the report."""

    title: str
    columns: list[str]
    rows: list[tuple[object, ...]]
    note: str = ""


@dataclass
class Report:
    """Everything ``sweep report`` shows.

    Attributes:
        store: The store's name.
        source: Where the data came from (see :class:`sweep.store.Session`).
        notes: Notes about the source.
        summary: Per hardware: traces, passed, definitions, solutions, workloads, newest trace.
        leaderboard: Per solution and hardware (the best ``top`` per definition and hardware).
        backends: Scores per author (backend), hardware and set of operators (BackendBench
            imports or other definitions): BackendBench's formulas beside the failures,
            correctness first.
        cross: Per pair of hardware: shared (solution, workload) pairs and latency ratio.
        bars: The chart's data (solutions of the leaderboard table).
        generated_at: When the report was built.
        flagged: Traces flagged ``impossible`` (latency under the physical floor: never
            ranked) or ``suspicious`` (speedup above the bound); ``None`` when there are none.
        rates: Achieved TFLOP/s, GB/s and fraction of peak per solution and hardware, over
            ranked PASSED traces whose work is known; ``None`` when there are none.
        samples: Per solution of the leaderboard table and hardware, its speedups (the
            distribution picture).
        roofline: Ranked PASSED traces carrying achieved rates (the roofline pictures);
            ``roofline_left_out`` more were not drawn.
        cross_points: Latency pairs PASSED on two hardware (the scatter pictures);
            ``cross_left_out`` more were not drawn.
        extra: Tables other commands computed (:meth:`add_table`), shown last.
    """

    store: str
    source: str
    notes: list[str]
    summary: ReportTable
    leaderboard: ReportTable
    backends: ReportTable
    cross: ReportTable
    bars: list[SpeedupBar] = field(default_factory=list)
    generated_at: datetime = field(default_factory=lambda: datetime.now(timezone.utc))
    flagged: ReportTable | None = None
    rates: ReportTable | None = None
    samples: list[SpeedupSample] = field(default_factory=list)
    #: ``sweep report --compare A B``: per solution, B's speedup over A on each task (A/B latency).
    compare_samples: list[SpeedupSample] = field(default_factory=list)
    compare_title: str = ""
    roofline: list[RooflinePoint] = field(default_factory=list)
    roofline_left_out: int = 0
    cross_points: list[CrossPoint] = field(default_factory=list)
    cross_left_out: int = 0
    extra: list[ReportTable] = field(default_factory=list)
    #: "What this does to my model": the projection per solution set and the definitions that
    #: take the most time (``_model_section.py``); shown first.
    model: list[ReportTable] = field(default_factory=list)

    @property
    def tables(self) -> list[ReportTable]:
        """The tables, in display order."""
        flagged = [self.flagged] if self.flagged is not None else []
        rates = [self.rates] if self.rates is not None else []
        return [
            *self.model,
            self.summary,
            *flagged,
            self.leaderboard,
            *rates,
            self.backends,
            self.cross,
            *self.extra,
        ]

    def add_table(
        self, title: str, columns: list[str], rows: list[tuple[object, ...]], note: str = ""
    ) -> ReportTable:
        """Add a table whose rows were computed elsewhere (e.g. by ``sweep compare``); it is
        shown after the others, in text and HTML, with the same number formats."""
        table = ReportTable(title, list(columns), [tuple(r) for r in rows], note)
        self.extra.append(table)
        return table


def _table(session: Session, title: str, sql: str, note: str = "") -> ReportTable:
    res = run_sql(session, sql)
    return ReportTable(title, res.columns, res.rows, note)


def build_report(
    store_path: Path, *, results_dir: Path | None = None, top: int = 10, uncovered: float | None = None
) -> Report:
    """Gather the report from a store.

    Args:
        store_path: The DuckDB file.
        results_dir: The sweep's results folder (default: the store file's folder).
        top: Solutions shown per definition and hardware in the leaderboard.
        uncovered: The fraction of end-to-end time outside the stored kernels, for the first
            section's end-to-end speedup and its bound (``None``: not shown).
    """
    check_uncovered(uncovered)
    store = Store(Path(store_path))
    with store.session(results_dir) as s:
        model = [ReportTable(*t) for t in model_rows(s, uncovered=uncovered, top=min(top, 5))]
        summary = _table(
            s,
            "Traces per hardware (newest per solution, workload and settings)",
            f"""
SELECT hardware, count(*) AS traces, count(*) FILTER (WHERE status = 'PASSED') AS passed,
       count(*) FILTER (WHERE list_contains(coalesce(flags, []), 'reference_failed')) AS reference_failed,
       count(*) FILTER (WHERE list_contains(coalesce(flags, []), 'tampered')) AS tampered,
       count(DISTINCT definition) AS definitions,
       count(DISTINCT coalesce(solution_hash, solution)) AS solutions,
       count(DISTINCT workload_uuid) AS workloads, max({RANK_TIME}) AS newest
FROM latest GROUP BY hardware ORDER BY hardware""",
        )
        leaderboard = _table(
            s,
            "Leaderboard (correct first)",
            f"""
SELECT rank, definition, solution, author, language, hardware, passed_rows, failed_rows, pass_rate,
       op_correct AS all_passed, geomean_speedup AS speedup_passed, bb_speedup_failures_as_1
FROM leaderboard
WHERE rank <= {int(top)}
ORDER BY definition, hardware, rank""",
            note="rank: per definition and hardware, solutions whose every workload passed first, then "
            "by pass rate, then by speedup_passed (geometric mean over PASSED traces). "
            "bb_speedup_failures_as_1: BackendBench's op speedup, failed workloads counted as 1.0 "
            "(a kernel failing everywhere scores 1x: never rank by it alone).",
        )
        backends = _table(
            s,
            "Backend scores (per author, correct first; BackendBench's formulas)",
            """
SELECT author, hardware,
       CASE WHEN op_type = 'backendbench' THEN 'BackendBench imports' ELSE 'other definitions' END
           AS operators,
       count(*) AS ops, count(*) FILTER (WHERE correct) AS correct_ops,
       count(*) FILTER (WHERE NOT correct) AS failed_ops,
       sum(passed_rows)::BIGINT AS passed_rows, sum(failed_rows)::BIGINT AS failed_rows,
       avg(CASE WHEN correct THEN 1.0 ELSE 0.0 END) AS correctness_rate,
       avg(pass_rate) AS bb_correctness_score,
       exp(avg(ln(speedup)) FILTER (WHERE correct AND speedup > 0)) AS speedup_correct_ops,
       exp(avg(ln(speedup))) AS bb_speedup_failures_as_1,
       avg(CASE WHEN correct AND speedup > 1.0 THEN 1.0 ELSE 0.0 END) AS perf_at_1
FROM op_scores
GROUP BY author, hardware, operators
ORDER BY hardware, operators, correctness_rate DESC, perf_at_1 DESC,
         speedup_correct_ops DESC NULLS LAST, author""",
            note="Per author, its best solution of each operator (as BackendBench scores a backend); "
            "passed_rows and failed_rows count the workloads of all the author's solutions. "
            "correctness_rate: share of operators with every workload passed. bb_correctness_score "
            "(BackendBench's correctness score): mean over operators of the share of workloads passed. "
            "speedup_correct_ops: geometric mean over correct operators. bb_speedup_failures_as_1 "
            "(BackendBench's performance score): over all operators, failed workloads counted as 1.0. "
            "perf_at_1: share of operators correct and faster than the reference; other thresholds: "
            "SELECT * FROM perf_at(1.5).",
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
        flagged = _table(
            s,
            "Flagged results",
            """
SELECT definition, solution, hardware, left(workload_uuid, 8) AS workload, status,
       array_to_string(flags, ', ') AS flags, latency_ms, floor_ms, speedup_factor
FROM latest WHERE len(coalesce(flags, [])) > 0
ORDER BY list_contains(flags, 'tampered') DESC, list_contains(flags, 'impossible') DESC,
         list_contains(flags, 'reference_failed') DESC, definition, solution, hardware, workload_uuid""",
            note="impossible: latency under the least time the work can take on the device (floor_ms, "
            "see the trace's log); kept with its status, left out of best, the leaderboard and the scores. "
            "suspicious: speedup above evaluation.suspicious_speedup; shown, not excluded. "
            "tampered: the solution replaced what the harness times or checks with, or left a thread "
            "running (RUNTIME_ERROR, the log names what). reference_failed: the reference raised, timed "
            "out or crashed, or the task's inputs could not be made: not the solution's failure, left out "
            "of pass rates, the leaderboard and the scores.",
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
  AND {RANKED}
GROUP BY definition, solution, hardware
QUALIFY row_number() OVER (PARTITION BY definition, hardware
                           ORDER BY median_peak_fraction DESC NULLS LAST, solution) <= {int(top)}
ORDER BY definition, hardware, median_peak_fraction DESC NULLS LAST, solution""",
            note="Work: the definition's flops/bytes expressions, else counted (FLOPs of the reference "
            "on meta tensors, bytes of inputs and outputs). Fraction of peak: the larger of the two "
            "rates over the device's peaks (calibrated ceilings when measured, else the datasheet).",
        )
        tuning = _table(
            s,
            "Tuning gain (parameter sweeps)",
            """
SELECT definition, solution, hardware, count(*) AS workloads, max(points_passed) AS points_passed,
       exp(avg(ln(speedup_over_default)) FILTER (WHERE speedup_over_default > 0))
           AS geomean_speedup_over_default,
       max(speedup_over_default) AS max_speedup_over_default,
       count(*) FILTER (WHERE speedup_over_default IS NULL) AS workloads_without_default,
       exp(avg(ln(speedup_over_reference)) FILTER (WHERE speedup_over_reference > 0))
           AS geomean_speedup_over_reference
FROM best_params
GROUP BY definition, solution, hardware
ORDER BY definition, hardware, geomean_speedup_over_default DESC NULLS LAST, solution""",
            note="Per solution with a parameter space: its fastest PASSED point on each workload against "
            "its default point (the first value of each parameter), geometric mean over workloads; "
            "'without default': workloads where the default point did not pass or was not run. "
            'Per workload: sweep query "SELECT * FROM best_params"; for solutions: sweep export-tuning.',
        )
        profiled = _profile_tables(s)
        optional = [t for t in (_table(s, *section) for section in ENERGY_SECTIONS) if t.rows]
        collective = _table(s, *COLLECTIVE_SECTION)
        if collective.rows:
            optional.append(collective)
        cols = leaderboard.columns
        bars = [
            SpeedupBar(
                definition=str(r[cols.index("definition")]),
                solution=str(r[cols.index("solution")]),
                hardware=str(r[cols.index("hardware")]),
                speedup=_float(r[cols.index("speedup_passed")]),
                pass_rate=_float(r[cols.index("pass_rate")]) or 0.0,
            )
            for r in leaderboard.rows
        ]
        order = {(b.definition, b.solution): i for i, b in enumerate(reversed(bars))}
        samples = speedup_samples(s, {(b.definition, b.solution, b.hardware) for b in bars})
        samples.sort(key=lambda x: -order.get((x.definition, x.solution), -1))
        roof, roof_left = roofline_points(s)
        pairs, pairs_left = cross_points(s)
        return Report(
            store.where,
            s.source,
            list(s.notes),
            summary,
            leaderboard,
            backends,
            cross,
            bars,
            flagged=flagged if flagged.rows else None,
            rates=rates if rates.rows else None,
            samples=samples,
            roofline=roof,
            roofline_left_out=roof_left,
            cross_points=pairs,
            cross_left_out=pairs_left,
            extra=([tuning] if tuning.rows else []) + optional + profiled,
            model=model if model[0].rows else [],
        )


_BY_TASK = """LEFT JOIN (SELECT task_id, any_value(definition) AS definition, any_value(solution) AS solution,
                  any_value(hardware) AS hardware, any_value(workload_uuid) AS workload_uuid
           FROM traces GROUP BY task_id) t USING (task_id)"""


def _profile_tables(s: Session) -> list[ReportTable]:
    """The tables of ``sweep profile``'s rows, when there are any (joined to traces by task_id)."""
    try:
        kernels = _table(
            s,
            "Profiled kernels (sweep profile, ncu)",
            f"""
SELECT t.definition, t.solution, t.hardware, left(t.workload_uuid, 8) AS workload, p.kernel,
       count(*) AS launches, avg(p.duration_ms) AS duration_ms, avg(p.sm_throughput_pct) AS sm_pct,
       avg(p.dram_throughput_pct) AS dram_pct, avg(p.achieved_occupancy_pct) AS occupancy_pct,
       any_value(p.registers_per_thread) AS registers, any_value(p.shared_mem_per_block) AS shared_bytes,
       any_value(p.grid_size) AS grid, any_value(p.block_size) AS block, any_value(p.limiter) AS limiter,
       p.task_id
FROM profiles p {_BY_TASK}
GROUP BY ALL ORDER BY t.definition, t.solution, t.hardware, workload, duration_ms DESC""",
            note="One row per kernel of the solution's calls in ncu's range (means over its launches); "
            "limiter: the larger of SM and memory throughput. Reports: results/profiles/<task_id>/.",
        )
        findings = _table(
            s,
            "Sanitizer findings (sweep profile, compute-sanitizer)",
            f"""
SELECT t.definition, t.solution, t.hardware, f.tool, f.kind, f.kernel, f.count, f.first_message, f.task_id
FROM sanitizer_findings f {_BY_TASK}
ORDER BY t.definition, t.solution, f.tool, f.count DESC""",
            note="compute-sanitizer checks the whole profiled process (input generation too); "
            "no row for a task and tool means it reported no error.",
        )
    except StoreError:
        return []  # a store without the tables (read from the logs alone)
    return [t for t in (kernels, findings) if t.rows]


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
            out.append(format_table(t.columns, t.rows, width=None, human=True))
        else:
            out.append("(none)")
        if t.note:
            out.append(t.note)
    return "\n".join(out)
