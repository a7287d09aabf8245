"""The report: per-hardware summary, flagged results, leaderboard, achieved rates, backend
scores and cross-hardware summary, energy (when measured), and the data of its pictures."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from sweep.errors import StoreError
from sweep.store.db import CURRENT, RANK_TIME, RANKED, SOLUTION_KEY, leaderboard_sql
from sweep.store.read import Session, Store, run_sql
from sweep.store.render._chart_data import (
    BandwidthPoint,
    CrossPoint,
    RooflinePoint,
    SpeedupBar,
    SpeedupSample,
    cross_points,
    failure_counts,
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
        bandwidth: Calls made by several ranks: median bus bandwidth per solution, hardware,
            world size and message size (the bandwidth pictures, beside their table).
        cross_points: Latency pairs PASSED on two hardware (the scatter pictures);
            ``cross_left_out`` more were not drawn.
        extra: Tables other commands computed (:meth:`add_table`), shown last.
        failures: Per solution and hardware, its failed traces grouped by status and the first
            line of their log, with counts and one task id each; ``None`` when none failed.
        failing: Per (definition, solution, hardware): (failed, total) ranked traces, so every
            picture can mark a solution that fails some of its workloads.
        all_versions: Every version of an edited solution is shown, each labelled by its
            content hash (``sweep report --all-versions``); else only the current version.
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
    bandwidth: list[BandwidthPoint] = field(default_factory=list)
    extra: list[ReportTable] = field(default_factory=list)
    #: "What this does to my model": the projection per solution set and the definitions that
    #: take the most time (``_model_section.py``); shown first.
    model: list[ReportTable] = field(default_factory=list)
    failures: ReportTable | None = None
    failing: dict[tuple[str, str, str], tuple[int, int]] = field(default_factory=dict)
    all_versions: bool = False

    @property
    def first_tables(self) -> list[ReportTable]:
        """What a reader needs first, before any picture: the headline (what the solutions do
        to the model, when the store describes one), the leaderboard, why tasks failed, and
        the flagged results."""
        failures = [self.failures] if self.failures is not None else []
        flagged = [self.flagged] if self.flagged is not None else []
        return [*self.model, self.leaderboard, *failures, *flagged]

    @property
    def later_tables(self) -> list[ReportTable]:
        """The tables after the pictures."""
        rates = [self.rates] if self.rates is not None else []
        return [self.summary, *rates, self.backends, self.cross, *self.extra]

    @property
    def tables(self) -> list[ReportTable]:
        """The tables, in display order."""
        return [*self.first_tables, *self.later_tables]

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


def traces_source(all_versions: bool) -> str:
    """The relation the report's sections read: each solution at its current version (the
    store's one definition, ``current_traces``), or with ``all_versions`` every version of
    ``latest``, the solution name of an edited one labelled ``name @hash`` (its first 8
    characters; ``(older)`` for versions before the current one)."""
    if not all_versions:
        return CURRENT
    key = SOLUTION_KEY.replace("solution", "l.solution")
    return f"""(SELECT l.* REPLACE (
    CASE WHEN v.versions > 1
         THEN l.solution || ' @' || coalesce(left(l.solution_hash, 8), 'no-hash')
              || CASE WHEN {key} = v.solution_key THEN '' ELSE ' (older)' END
         ELSE l.solution END AS solution)
FROM latest l JOIN current_versions v ON l.definition = v.definition AND l.solution = v.solution)"""


# The first line of a failed trace's log without its status prefix, clipped as the launch
# summary clips it (sweep/launch/progress.py first_reason), so both group alike.
_LINE = (
    "trim(coalesce(list_filter(string_split(coalesce(log, ''), chr(10)), lambda x: trim(x) <> '')[1], ''))"
)
_REASON = f"""CASE WHEN starts_with({_LINE}, status || ':') THEN trim({_LINE}[length(status) + 2:])
          ELSE {_LINE} END"""
_CLIPPED = f"""CASE WHEN ({_REASON}) = '' THEN '(no log)'
          WHEN length({_REASON}) > 160 THEN left({_REASON}, 157) || '...' ELSE {_REASON} END"""
#: Groups of failures shown per solution and hardware.
FAILURE_GROUPS = 5


def _failures_sql(src: str) -> str:
    return f"""
WITH failed AS (
    SELECT definition, solution, hardware, task_id,
           CASE WHEN list_contains(coalesce(flags, []), 'reference_failed') THEN 'REFERENCE_FAILED'
                WHEN list_contains(coalesce(flags, []), 'tampered') THEN 'TAMPERED' ELSE status END
               AS shown_status,
           {_CLIPPED} AS reason
    FROM {src} t
    WHERE status <> 'PASSED'
), groups AS (
    SELECT definition, solution, hardware, shown_status AS status, reason, count(*) AS traces,
           min(task_id) AS task_id
    FROM failed GROUP BY definition, solution, hardware, shown_status, reason
)
SELECT * FROM groups
QUALIFY row_number() OVER (PARTITION BY definition, solution, hardware
                           ORDER BY traces DESC, status, reason) <= {FAILURE_GROUPS}
ORDER BY definition, solution, hardware, traces DESC, status, reason"""


def build_report(
    store_path: Path,
    *,
    results_dir: Path | None = None,
    top: int = 10,
    uncovered: float | None = None,
    all_versions: bool = False,
) -> Report:
    """Gather the report from a store.

    Args:
        store_path: The DuckDB file.
        results_dir: The sweep's results folder (default: the store file's folder).
        top: Solutions shown per definition and hardware in the leaderboard.
        uncovered: The fraction of end-to-end time outside the stored kernels, for the first
            section's end-to-end speedup and its bound (``None``: not shown).
        all_versions: Show every version of an edited solution, labelled by its content
            hash; by default each solution's current version only (its newest trace's hash).
            Backend scores and the model projection always read current versions.
    """
    check_uncovered(uncovered)
    src = traces_source(all_versions)
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
FROM {src} GROUP BY hardware ORDER BY hardware""",
        )
        leaderboard = _table(
            s,
            "Leaderboard (correct first)",
            f"""
SELECT rank, definition, solution, author, language, hardware, passed_rows, failed_rows, pass_rate,
       op_correct AS all_passed, geomean_speedup AS speedup_passed, bb_speedup_failures_as_1
FROM ({leaderboard_sql(src)})
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
            f"""
SELECT hardware_a, hardware_b, count(*) AS pairs,
       count(*) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED') AS both_passed,
       exp(avg(ln(latency_ratio)) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED'
                                          AND latency_ratio > 0)) AS latency_ratio_b_over_a,
       count(*) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED' AND latency_ratio > 1)
           AS a_faster,
       count(*) FILTER (WHERE status_a = 'PASSED' AND status_b = 'PASSED' AND latency_ratio < 1)
           AS b_faster
FROM {cross_source(all_versions)} GROUP BY hardware_a, hardware_b ORDER BY hardware_a, hardware_b""",
            note="latency_ratio_b_over_a: geometric mean of latency on B / latency on A over "
            "pairs that passed on both; above 1 means A is faster.",
        )
        flagged = _table(
            s,
            "Flagged results",
            f"""
SELECT definition, solution, hardware, left(workload_uuid, 8) AS workload, status,
       array_to_string(flags, ', ') AS flags, latency_ms, floor_ms, speedup_factor
FROM {src} WHERE len(coalesce(flags, [])) > 0
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
FROM {src}
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
        failures = _table(
            s,
            "Failures per solution (status and first line of the log)",
            _failures_sql(src),
            note=f"Per solution and hardware, its failed traces grouped by status and the first line of "
            f"their log (the top {FAILURE_GROUPS} groups), with one task id each: sweep show TASK_ID prints "
            "that trace and its whole log. REFERENCE_FAILED: the reference failed, not the solution.",
        )
        profiled = _profile_tables(s)
        optional = [t for t in (_table(s, *section) for section in ENERGY_SECTIONS) if t.rows]
        collective = _table(s, *COLLECTIVE_SECTION)
        if collective.rows:
            optional.append(collective)
        bandwidth = bandwidth_points(collective)
        cols = leaderboard.columns
        bars = [
            SpeedupBar(
                definition=str(r[cols.index("definition")]),
                solution=str(r[cols.index("solution")]),
                hardware=str(r[cols.index("hardware")]),
                speedup=_float(r[cols.index("speedup_passed")]),
                pass_rate=_float(r[cols.index("pass_rate")]) or 0.0,
                passed=_int(r[cols.index("passed_rows")]),
                failed=_int(r[cols.index("failed_rows")]),
            )
            for r in leaderboard.rows
        ]
        order = {(b.definition, b.solution): i for i, b in enumerate(reversed(bars))}
        samples = speedup_samples(s, {(b.definition, b.solution, b.hardware) for b in bars}, src)
        samples.sort(key=lambda x: -order.get((x.definition, x.solution), -1))
        roof, roof_left = roofline_points(s, src)
        pairs, pairs_left = cross_points(s, cross_source(all_versions))
        failing = failure_counts(s, src)
        return Report(
            store.where,
            s.source,
            [*s.notes, *_version_notes(s, all_versions)],
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
            bandwidth=bandwidth,
            extra=([tuning] if tuning.rows else []) + optional + profiled,
            model=model if model[0].rows else [],
            failures=failures if failures.rows else None,
            failing=failing,
            all_versions=all_versions,
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


def _version_notes(s: Session, all_versions: bool) -> list[str]:
    """What the report says of edited solutions: the older versions it leaves out, or that it
    shows them."""
    res = run_sql(s, "SELECT count(*), sum(versions - 1) FROM current_versions WHERE versions > 1")
    names, older = res.rows[0] if res.rows else (0, 0)
    if not names:
        return []
    if all_versions:
        return [
            (
                f"every version shown: {names} solutions were edited; each version is labelled 'name @hash' "
                "(the first 8 characters of its content hash), '(older)' for versions before the current one; "
                "backend scores and the model projection read current versions only."
            )
        ]
    return [
        (
            f"each solution at its current version (its newest trace's content hash): {older} older versions "
            f"of {names} edited solutions left out; sweep report --all-versions shows them."
        )
    ]


def cross_source(all_versions: bool) -> str:
    """The ``cross_hardware`` pairs the report reads: of current versions only, unless
    ``all_versions`` (then each labelled as :func:`traces_source` labels them)."""
    if not all_versions:
        return """(SELECT c.* FROM cross_hardware c SEMI JOIN current_versions v
  ON c.definition = v.definition AND c.solution = v.solution
 AND coalesce(c.solution_hash, 'name:' || c.solution) = v.solution_key)"""
    return """(SELECT c.* REPLACE (
    CASE WHEN v.versions > 1
         THEN c.solution || ' @' || coalesce(left(c.solution_hash, 8), 'no-hash')
              || CASE WHEN coalesce(c.solution_hash, 'name:' || c.solution) = v.solution_key
                      THEN '' ELSE ' (older)' END
         ELSE c.solution END AS solution)
FROM cross_hardware c JOIN current_versions v ON c.definition = v.definition AND c.solution = v.solution)"""


def bandwidth_points(table: ReportTable) -> list[BandwidthPoint]:
    """The bandwidth pictures' points: the rows of the bandwidth table (``COLLECTIVE_SECTION``)
    with a message size and a bus bandwidth (no PASSED trace: no figure, not drawn)."""
    c = {name: i for i, name in enumerate(table.columns)}
    out = []
    for r in table.rows:
        size, busbw = _float(r[c["message_bytes"]]), _float(r[c["busbw_gbps"]])
        if size is None or busbw is None:
            continue
        out.append(
            BandwidthPoint(
                definition=str(r[c["definition"]]),
                solution=str(r[c["solution"]]),
                hardware=str(r[c["hardware"]]),
                world_size=_int(r[c["world_size"]]),
                message_bytes=size,
                busbw_gbps=busbw,
            )
        )
    return out


def _int(value: object) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0


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
