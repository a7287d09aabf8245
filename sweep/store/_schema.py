"""The store's tables, views and macros (schema version 3), as SQL and Arrow types.

Every column of ``traces`` is derived from the trace record (``record`` keeps it whole) plus
what the record alone does not say (op_type, tags, author, language, solution hash), which a
:class:`~sweep.store.StoreContext` or the ``definitions``/``solutions`` tables supply.
The views are created in the store file and, identically, in every reader session.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "MACROS",
    "NODE_TABLES",
    "SCHEMA_VERSION",
    "TABLES",
    "V3_TRACE_COLUMNS",
    "VIEWS",
    "VIEW_DEPENDS",
    "VIEW_NAMES",
    "arrow_schema",
    "column_names",
    "create_tables_sql",
    "table_columns",
    "view_statements",
    "views_hash",
    "views_sql",
]

#: Bump when a table changes, and add a migration in ``_migrate.py``.
SCHEMA_VERSION = 3

# (column, DuckDB type). Arrow types follow from the DuckDB type (see ``_ARROW``).
_TRACES: list[tuple[str, str]] = [
    ("trace_key", "VARCHAR"),
    ("definition", "VARCHAR"),
    ("solution", "VARCHAR"),
    ("workload_uuid", "VARCHAR"),
    ("axes", "MAP(VARCHAR, BIGINT)"),
    ("status", "VARCHAR"),
    ("max_absolute_error", "DOUBLE"),
    ("max_relative_error", "DOUBLE"),
    ("correctness_extra", "JSON"),
    ("latency_ms", "DOUBLE"),
    ("reference_latency_ms", "DOUBLE"),
    ("speedup_factor", "DOUBLE"),
    ("hardware", "VARCHAR"),
    ("hardware_raw", "VARCHAR"),
    ("device_name", "VARCHAR"),
    ("libs", "MAP(VARCHAR, VARCHAR)"),
    ("timestamp", "TIMESTAMPTZ"),
    ("log", "VARCHAR"),
    ("seed", "BIGINT"),
    ("timing_clock", "VARCHAR"),
    ("timing_iterations", "BIGINT"),
    ("timing_p10_ms", "DOUBLE"),
    ("timing_p50_ms", "DOUBLE"),
    ("timing_p90_ms", "DOUBLE"),
    ("timing_mean_ms", "DOUBLE"),
    ("timing_cv", "DOUBLE"),
    ("ref_timing_clock", "VARCHAR"),
    ("ref_timing_iterations", "BIGINT"),
    ("ref_timing_p10_ms", "DOUBLE"),
    ("ref_timing_p50_ms", "DOUBLE"),
    ("ref_timing_p90_ms", "DOUBLE"),
    ("ref_timing_mean_ms", "DOUBLE"),
    ("ref_timing_cv", "DOUBLE"),
    ("sm_clock_mhz_before", "BIGINT"),
    ("sm_clock_mhz_after", "BIGINT"),
    ("sm_clock_mhz_max", "BIGINT"),
    ("throttle_reasons_before", "VARCHAR[]"),
    ("throttle_reasons_after", "VARCHAR[]"),
    ("op_type", "VARCHAR"),
    ("tags", "VARCHAR[]"),
    ("author", "VARCHAR"),
    ("language", "VARCHAR"),
    ("solution_hash", "VARCHAR"),
    ("sweep", "VARCHAR"),
    ("run_id", "VARCHAR"),
    ("task_id", "VARCHAR"),
    ("config_hash", "VARCHAR"),
    ("settings_hash", "VARCHAR"),
    ("node_id", "VARCHAR"),
    ("gpu_id", "VARCHAR"),
    ("worker_pid", "BIGINT"),
    ("attempt", "BIGINT"),
    ("started_at", "TIMESTAMPTZ"),
    ("finished_at", "TIMESTAMPTZ"),
    ("record", "JSON"),
    ("source", "VARCHAR"),
    ("ingested_at", "TIMESTAMPTZ"),
]

#: Added in schema version 3, at the end (so a migrated table has the order of a new one):
#: the work of one call and what the latency makes of it, the flags (``[]`` when none), and
#: the timer's fields (NULL where the record lacks them).
V3_TRACE_COLUMNS: list[tuple[str, str]] = [
    ("work_flops", "DOUBLE"),
    ("work_bytes", "DOUBLE"),
    ("work_source", "VARCHAR"),
    ("tflops", "DOUBLE"),
    ("gbps", "DOUBLE"),
    ("peak_fraction", "DOUBLE"),
    ("floor_ms", "DOUBLE"),
    ("flags", "VARCHAR[]"),
    ("timing_timer", "VARCHAR"),
    ("timing_rel_error", "DOUBLE"),
    ("timing_target_met", "BOOLEAN"),
    ("ref_timing_timer", "VARCHAR"),
    ("throttled", "BOOLEAN"),
]
_TRACES += V3_TRACE_COLUMNS

_DEFINITIONS: list[tuple[str, str]] = [
    ("name", "VARCHAR"),
    ("op_type", "VARCHAR"),
    ("tags", "VARCHAR[]"),
    ("description", "VARCHAR"),
    ("var_axes", "VARCHAR[]"),
    ("const_axes", "MAP(VARCHAR, BIGINT)"),
    ("record", "JSON"),
]

_SOLUTIONS: list[tuple[str, str]] = [
    ("name", "VARCHAR"),
    ("definition", "VARCHAR"),
    ("author", "VARCHAR"),
    ("language", "VARCHAR"),
    ("target_hardware", "VARCHAR[]"),
    ("entry_point", "VARCHAR"),
    ("solution_hash", "VARCHAR"),
    ("description", "VARCHAR"),
    ("record", "JSON"),
]

_WORKLOADS: list[tuple[str, str]] = [
    ("definition", "VARCHAR"),
    ("uuid", "VARCHAR"),
    ("axes", "MAP(VARCHAR, BIGINT)"),
    ("record", "JSON"),
]

# Bookkeeping: schema version, and how far each JSONL log is known to be in the store.
_META: list[tuple[str, str]] = [("key", "VARCHAR"), ("value", "VARCHAR")]
_LOG_PROGRESS: list[tuple[str, str]] = [
    ("path", "VARCHAR"),
    ("offset", "BIGINT"),
    ("head_hash", "VARCHAR"),
]

# Ceilings measured on nodes by ``sweep calibrate``: one row per metric (``copy_gbps``,
# ``gemm_tflops_<dtype>``) and measurement.
_CALIBRATIONS: list[tuple[str, str]] = [
    ("hardware", "VARCHAR"),
    ("device_name", "VARCHAR"),
    ("node", "VARCHAR"),
    ("measured_at", "TIMESTAMPTZ"),
    ("metric", "VARCHAR"),
    ("value", "DOUBLE"),
]

#: Every table of results and bookkeeping, by name.
TABLES: dict[str, list[tuple[str, str]]] = {
    "traces": _TRACES,
    "definitions": _DEFINITIONS,
    "solutions": _SOLUTIONS,
    "workloads": _WORKLOADS,
    "store_meta": _META,
    "log_progress": _LOG_PROGRESS,
}
#: Tables of what was measured on the nodes themselves, not of results.
NODE_TABLES: dict[str, list[tuple[str, str]]] = {"calibrations": _CALIBRATIONS}
_ALL_TABLES = {**TABLES, **NODE_TABLES}

# A trace that is ranked: not flagged 'impossible' (latency under the physical floor).
_RANKED = "NOT coalesce(list_contains(flags, 'impossible'), false)"

# The identity of a solution across stores: its content hash when known, else its name.
_SOL_KEY = "coalesce(solution_hash, 'name:' || solution)"

_NEWEST = "ORDER BY timestamp DESC, trace_key DESC"

#: (name, body) of every view, in dependency order. Over evaluated traces only (workload-only
#: records live in ``workloads``).
VIEWS: list[tuple[str, str]] = [
    (
        "latest",
        f"""SELECT * FROM traces
QUALIFY row_number() OVER (
    PARTITION BY definition, {_SOL_KEY}, workload_uuid, hardware, coalesce(settings_hash, '')
    {_NEWEST}) = 1""",
    ),
    (
        "best",
        f"""SELECT definition, op_type, workload_uuid, axes, hardware, solution, solution_hash,
       author, language, latency_ms, reference_latency_ms, speedup_factor, settings_hash,
       timestamp, trace_key, tflops, gbps, peak_fraction, flags
FROM latest
WHERE status = 'PASSED' AND {_RANKED}
QUALIFY row_number() OVER (
    PARTITION BY definition, workload_uuid, hardware ORDER BY latency_ms ASC, solution ASC) = 1""",
    ),
    (
        # Newest trace per hardware regardless of settings, so clusters whose settings differ
        # slightly still line up; the settings hashes are shown so a mismatch is visible.
        "cross_hardware",
        f"""WITH per_hw AS (
    SELECT * FROM traces
    QUALIFY row_number() OVER (
        PARTITION BY definition, {_SOL_KEY}, workload_uuid, hardware {_NEWEST}) = 1
)
SELECT a.definition, a.op_type, a.solution, coalesce(a.solution_hash, b.solution_hash) AS solution_hash,
       a.workload_uuid, a.axes,
       a.hardware AS hardware_a, b.hardware AS hardware_b,
       a.status AS status_a, b.status AS status_b,
       a.latency_ms AS latency_ms_a, b.latency_ms AS latency_ms_b,
       b.latency_ms / nullif(a.latency_ms, 0) AS latency_ratio,
       a.speedup_factor AS speedup_a, b.speedup_factor AS speedup_b,
       b.speedup_factor / nullif(a.speedup_factor, 0) AS speedup_ratio,
       a.settings_hash AS settings_hash_a, b.settings_hash AS settings_hash_b,
       a.trace_key AS trace_key_a, b.trace_key AS trace_key_b
FROM per_hw a
JOIN per_hw b
  ON a.definition = b.definition
 AND coalesce(a.solution_hash, 'name:' || a.solution) = coalesce(b.solution_hash, 'name:' || b.solution)
 AND a.workload_uuid = b.workload_uuid
 AND a.hardware < b.hardware""",
    ),
    (
        # BackendBench per solution (one op): correct when every workload passed; op_speedup
        # (= bb_speedup_failures_as_1) counts failed workloads as 1.0. rank: correctness first
        # (all passed, pass rate, then speedup over PASSED). 'impossible' traces left out.
        "leaderboard",
        f"""WITH per_solution AS (
SELECT definition, any_value(op_type) AS op_type, solution, solution_hash,
       any_value(author) AS author, any_value(language) AS language, hardware,
       count(*) AS traces, count(*) FILTER (WHERE status = 'PASSED') AS passed, passed / traces AS pass_rate,
       exp(avg(ln(speedup_factor)) FILTER (WHERE status = 'PASSED' AND speedup_factor > 0))
           AS geomean_speedup,
       bool_and(status = 'PASSED') AS op_correct,
       exp(avg(ln(CASE WHEN status = 'PASSED' AND speedup_factor > 0 THEN speedup_factor
                       ELSE 1.0 END))) AS op_speedup,
       op_correct AND op_speedup > 1.0 AS perf_at_1,
       passed AS passed_rows, traces - passed AS failed_rows, op_speedup AS bb_speedup_failures_as_1
FROM latest
WHERE {_RANKED}
GROUP BY definition, solution, solution_hash, hardware
)
SELECT *, row_number() OVER (
    PARTITION BY definition, hardware
    ORDER BY op_correct DESC, pass_rate DESC, geomean_speedup DESC NULLS LAST, solution ASC) AS rank
FROM per_solution""",
    ),
    (
        # Per (author, op, hardware): the author's best solution, as BackendBench scores a
        # backend; solutions, failed_solutions, passed_rows, failed_rows count all of them.
        "op_scores",
        """SELECT coalesce(author, '(unknown)') AS author, hardware, definition, op_type,
       solution, op_correct AS correct, op_speedup AS speedup, pass_rate,
       op_speedup AS bb_speedup_failures_as_1, geomean_speedup AS geomean_speedup_passed,
       count(*) OVER w AS solutions,
       count(*) FILTER (WHERE NOT op_correct) OVER w AS failed_solutions,
       sum(passed_rows) OVER w AS passed_rows, sum(failed_rows) OVER w AS failed_rows
FROM leaderboard
WINDOW w AS (PARTITION BY coalesce(author, '(unknown)'), hardware, definition)
QUALIFY row_number() OVER (
    PARTITION BY coalesce(author, '(unknown)'), hardware, definition
    ORDER BY op_correct DESC, op_speedup DESC, solution ASC) = 1""",
    ),
    (
        # BackendBench per backend (author), beside the failures; geomean_speedup (=
        # bb_speedup_failures_as_1) counts failures as 1.0, speedup_correct_ops does not.
        "backend_scores",
        """SELECT author, hardware, count(*) AS ops, count(*) FILTER (WHERE correct) AS correct_ops,
       avg(CASE WHEN correct THEN 1.0 ELSE 0.0 END) AS correctness_rate,
       exp(avg(ln(speedup))) AS geomean_speedup,
       avg(CASE WHEN correct AND speedup > 1.0 THEN 1.0 ELSE 0.0 END) AS perf_at_1,
       ops - correct_ops AS failed_ops, avg(pass_rate) AS bb_correctness_score, geomean_speedup AS bb_speedup_failures_as_1,
       exp(avg(ln(speedup)) FILTER (WHERE correct AND speedup > 0)) AS speedup_correct_ops,
       sum(passed_rows)::BIGINT AS passed_rows, sum(failed_rows)::BIGINT AS failed_rows,
       sum(failed_solutions)::BIGINT AS failed_solutions
FROM op_scores
GROUP BY author, hardware""",
    ),
]

VIEW_NAMES: list[str] = [name for name, _ in VIEWS]

#: The views (or macros) each view reads, to create only what a query needs.
VIEW_DEPENDS: dict[str, list[str]] = {
    "latest": [],
    "best": ["latest"],
    "cross_hardware": [],
    "leaderboard": ["latest"],
    "op_scores": ["leaderboard"],
    "backend_scores": ["op_scores"],
    "perf_at": ["op_scores"],
}

#: Table macros. ``perf_at(p)``: BackendBench's perf@p per backend (author) and hardware.
MACROS: list[str] = [
    """CREATE OR REPLACE MACRO perf_at(p) AS TABLE
SELECT author, hardware, count(*) AS ops,
       avg(CASE WHEN correct AND speedup > p THEN 1.0 ELSE 0.0 END) AS perf_at_p
FROM op_scores
GROUP BY author, hardware"""
]


def column_names(table: str) -> list[str]:
    """The columns of one of :data:`TABLES` or :data:`NODE_TABLES`, in order."""
    return [c for c, _ in _ALL_TABLES[table]]


def table_columns() -> dict[str, list[str]]:
    """Column names of every table (for messages)."""
    return {t: column_names(t) for t in TABLES}


def create_tables_sql(*, prefix: str = "") -> list[str]:
    """``CREATE TABLE IF NOT EXISTS`` statements for every table."""
    out = []
    for table, cols in _ALL_TABLES.items():
        body = ", ".join(f'"{c}" {t}' for c, t in cols)
        out.append(f"CREATE TABLE IF NOT EXISTS {prefix}{table} ({body})")
    return out


def view_statements(needed: set[str] | None = None, *, temp: bool = False) -> list[tuple[str, str]]:
    """``(name, statement)`` that create (or replace) the views and macros, in dependency order.

    Args:
        needed: Only these and what they read (default: all).
        temp: Create them in the connection's temporary catalog (a read session over a store
            file opened read-only, whose own catalog cannot be written).
    """
    if needed is not None:
        todo, closure = list(needed), set()
        while todo:
            name = todo.pop()
            if name in VIEW_DEPENDS and name not in closure:
                closure.add(name)
                todo.extend(VIEW_DEPENDS[name])
        needed = closure
    kind = "TEMP " if temp else ""
    views = [
        (name, f"CREATE OR REPLACE {kind}VIEW {name} AS\n{body}")
        for name, body in VIEWS
        if needed is None or name in needed
    ]
    macros = [
        ("perf_at", m.replace("CREATE OR REPLACE MACRO", f"CREATE OR REPLACE {kind}MACRO"))
        for m in MACROS
        if needed is None or "perf_at" in needed
    ]
    return views + macros


def views_sql(needed: set[str] | None = None) -> list[str]:
    """Statements that create (or replace) the views and macros, in dependency order.

    Args:
        needed: Only these and what they read (default: all).
    """
    return [stmt for _, stmt in view_statements(needed)]


def views_hash() -> str:
    """Changes whenever a view or macro body changes, so stores pick up new definitions."""
    return hashlib.sha256("\n;\n".join(views_sql()).encode()).hexdigest()[:16]


def _arrow_type(duck: str) -> pa.DataType:
    import pyarrow as pa

    simple = {
        "VARCHAR": pa.string(),
        "JSON": pa.string(),
        "BOOLEAN": pa.bool_(),
        "DOUBLE": pa.float64(),
        "BIGINT": pa.int64(),
        "TIMESTAMPTZ": pa.timestamp("us", tz="UTC"),
        "VARCHAR[]": pa.list_(pa.string()),
        "MAP(VARCHAR, BIGINT)": pa.map_(pa.string(), pa.int64()),
        "MAP(VARCHAR, VARCHAR)": pa.map_(pa.string(), pa.string()),
    }
    return simple[duck]


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema that batches for ``table`` are built with."""
    import pyarrow as pa

    return pa.schema([(c, _arrow_type(t)) for c, t in _ALL_TABLES[table]])
