"""The store's tables, views and macros (schema version 9), as SQL and Arrow types.

Every column of ``traces`` is derived from the trace record (``record`` keeps it whole) plus
what the record alone does not say (op_type, tags, author, language, solution hash), which a
:class:`~sweep.store.StoreContext` or the ``definitions``/``solutions`` tables supply.
The views are created in the store file and, identically, in every reader session.
"""

from __future__ import annotations

import functools
import hashlib
from typing import TYPE_CHECKING

from sweep.store.db._views import MACROS, VIEW_DEPENDS, VIEW_NAMES, VIEWS

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = [
    "CROSS_HARDWARE_LATEST",
    "CROSS_HARDWARE_PAIRS",
    "DERIVED_COLUMNS",
    "DERIVED_TABLES",
    "MACROS",
    "NODE_TABLES",
    "SCHEMA_VERSION",
    "TABLES",
    "V3_TRACE_COLUMNS",
    "V5_TRACE_COLUMNS",
    "V6_TRACE_COLUMNS",
    "V9_TRACE_COLUMNS",
    "VIEWS",
    "VIEW_DEPENDS",
    "VIEW_NAMES",
    "arrow_schema",
    "built_columns",
    "column_names",
    "create_tables_sql",
    "pair_key_sql",
    "table_columns",
    "view_statements",
    "views_hash",
    "views_sql",
]

#: Bump when a table changes, and add a migration in ``_migrate.py``.
SCHEMA_VERSION = 9

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

#: Added in schema version 5, at the end: the solution's parameter point of the trace
#: (``Trace.solution_params``) as canonical JSON text (sorted keys), NULL for none.
V5_TRACE_COLUMNS: list[tuple[str, str]] = [("solution_params", "VARCHAR")]
_TRACES += V5_TRACE_COLUMNS

#: Added in schema version 6, at the end: what pairs a trace with the same task on other
#: hardware (``cross_hardware``), as one 128-bit number (:func:`pair_key_sql`), so the view
#: partitions and joins on one fixed-width column instead of four strings and an expression.
V6_TRACE_COLUMNS: list[tuple[str, str]] = [("pair_key", "UHUGEINT")]
_TRACES += V6_TRACE_COLUMNS

#: Added in schema version 9, at the end: calls that span GPUs (``evaluation.distributed``,
#: docs/multi-gpu.md). ``world_size`` is 1 for an ordinary trace; the others are NULL there.
#: Per-rank figures are lists in rank order (``rank_status``, ``rank_latency_ms``).
V9_TRACE_COLUMNS: list[tuple[str, str]] = [
    ("world_size", "BIGINT"),
    ("collective", "VARCHAR"),
    ("message_bytes", "DOUBLE"),
    ("algbw_gbps", "DOUBLE"),
    ("busbw_gbps", "DOUBLE"),
    ("link_fraction", "DOUBLE"),
    ("straggler_rank", "BIGINT"),
    ("failed_rank", "BIGINT"),
    ("rank_status", "VARCHAR[]"),
    ("rank_latency_ms", "DOUBLE[]"),
]
_TRACES += V9_TRACE_COLUMNS


def pair_key_sql(
    definition: str,
    solution_hash: str,
    solution: str,
    solution_params: str,
    workload_uuid: str,
    world_size: str | None = None,
) -> str:
    """SQL for ``traces.pair_key`` from the SQL of the columns it is made of.

    The MD5 (as a 128-bit number) of the JSON array of the definition, the solution's identity
    (its content hash, else ``'name:'`` and its name), the parameter point (``''`` for none)
    and the workload: JSON makes the text one-to-one with the four values (NULL included), and
    128 bits make two keys alike only by chance, as ``trace_key``'s 128 bits of SHA-256 do.
    With ``world_size`` (schema 9), a call made by several ranks pairs only with the same
    number of ranks (a fifth element, left out for one rank, so single-GPU keys are unchanged).
    """
    head = f"{definition}, coalesce({solution_hash}, 'name:' || {solution}), coalesce({solution_params}, ''), {workload_uuid}"
    one = f"md5_number(json_array({head})::VARCHAR)"
    if world_size is None:
        return one
    # Four elements for one rank (the keys earlier stores hold), five for several.
    many = f"md5_number(json_array({head}, {world_size})::VARCHAR)"
    return f"CASE WHEN coalesce({world_size}, 1) = 1 THEN {one} ELSE {many} END"


#: Columns computed by the store from other columns when a row is inserted (SQL over the
#: row's columns): never built in Python, so not in :func:`arrow_schema`, and not exported.
DERIVED_COLUMNS: dict[str, dict[str, str]] = {
    "traces": {
        "pair_key": pair_key_sql(
            "definition", "solution_hash", "solution", "solution_params", "workload_uuid", "world_size"
        )
    }
}

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
# ``sweep profile`` (schema version 4): one row per kernel launch ncu profiled, and one per
# kind of error and kernel a compute-sanitizer tool reported; joined to traces by task_id.
PROFILES: list[tuple[str, str]] = [
    ("task_id", "VARCHAR"),
    ("profiled_at", "TIMESTAMPTZ"),
    ("launch", "BIGINT"),
    ("kernel", "VARCHAR"),
    ("duration_ms", "DOUBLE"),
    ("sm_throughput_pct", "DOUBLE"),
    ("dram_throughput_pct", "DOUBLE"),
    ("memory_throughput_pct", "DOUBLE"),
    ("achieved_occupancy_pct", "DOUBLE"),
    ("registers_per_thread", "BIGINT"),
    ("shared_mem_per_block", "BIGINT"),
    ("grid_size", "BIGINT"),
    ("block_size", "BIGINT"),
    ("limiter", "VARCHAR"),
    ("report", "VARCHAR"),
]
SANITIZER_FINDINGS: list[tuple[str, str]] = [
    ("task_id", "VARCHAR"),
    ("profiled_at", "TIMESTAMPTZ"),
    ("tool", "VARCHAR"),
    ("kind", "VARCHAR"),
    ("kernel", "VARCHAR"),
    ("count", "BIGINT"),
    ("first_message", "VARCHAR"),
    ("report", "VARCHAR"),
]
NODE_TABLES: dict[str, list[tuple[str, str]]] = {
    "calibrations": _CALIBRATIONS,
    "profiles": PROFILES,
    "sanitizer_findings": SANITIZER_FINDINGS,
}

_TRACE_TYPES = dict(_TRACES)

#: Added in schema version 7: what ``cross_hardware`` reads, kept up to date in the transaction
#: of every insert of traces (``_cross_hardware.py``) instead of computed at every query. The
#: newest trace of each (definition, pair_key, hardware) as every view ranks (``_newest.py``),
#: with the columns the view shows and (schema 8) ``ingested_at``, which the ranking reads.
CROSS_HARDWARE_LATEST: list[tuple[str, str]] = [
    (c, _TRACE_TYPES[c])
    for c in (
        "definition", "pair_key", "hardware", "timestamp", "trace_key", "op_type", "solution",
        "solution_hash", "workload_uuid", "axes", "status", "latency_ms", "speedup_factor",
        "settings_hash", "ingested_at",
    )
]  # fmt: skip
#: Every pair of those rows of one (definition, pair_key) on two hardware (``hardware_a <
#: hardware_b``): the rows of ``cross_hardware`` before its ratios.
CROSS_HARDWARE_PAIRS: list[tuple[str, str]] = [
    ("definition", "VARCHAR"),
    ("pair_key", "UHUGEINT"),
    ("op_type", "VARCHAR"),
    ("solution", "VARCHAR"),
    ("solution_hash", "VARCHAR"),
    ("workload_uuid", "VARCHAR"),
    ("axes", "MAP(VARCHAR, BIGINT)"),
    ("hardware_a", "VARCHAR"),
    ("hardware_b", "VARCHAR"),
    ("status_a", "VARCHAR"),
    ("status_b", "VARCHAR"),
    ("latency_ms_a", "DOUBLE"),
    ("latency_ms_b", "DOUBLE"),
    ("speedup_a", "DOUBLE"),
    ("speedup_b", "DOUBLE"),
    ("settings_hash_a", "VARCHAR"),
    ("settings_hash_b", "VARCHAR"),
    ("trace_key_a", "VARCHAR"),
    ("trace_key_b", "VARCHAR"),
]
#: Tables computed from ``traces`` by the store: neither exported nor ingested.
DERIVED_TABLES: dict[str, list[tuple[str, str]]] = {
    "cross_hardware_latest": CROSS_HARDWARE_LATEST,
    "cross_hardware_pairs": CROSS_HARDWARE_PAIRS,
}
_ALL_TABLES = {**TABLES, **NODE_TABLES, **DERIVED_TABLES}


def column_names(table: str) -> list[str]:
    """The columns of one of :data:`TABLES`, :data:`NODE_TABLES` or :data:`DERIVED_TABLES`, in order."""
    return [c for c, _ in _ALL_TABLES[table]]


def built_columns(table: str) -> list[str]:
    """The columns of ``table`` that rows are built with in Python (all but :data:`DERIVED_COLUMNS`),
    in order: the one order :class:`~sweep.store.rows.RowBatch` and :func:`arrow_schema` follow."""
    derived = DERIVED_COLUMNS.get(table, {})
    return [c for c, _ in _ALL_TABLES[table] if c not in derived]


def table_columns() -> dict[str, list[str]]:
    """Column names of every table (for messages)."""
    return {t: column_names(t) for t in TABLES}


# How a column is compressed when DuckDB's choice costs too much. A trace's record is most of
# its row's bytes, and weighing dictionary and FSST compression for it made a bulk insert
# about a third slower than zstd, which also stores it in about a third of the space.
# (Only tables created since; a store made earlier keeps its columns as they are.)
_COMPRESSION: dict[tuple[str, str], str] = {("traces", "record"): "zstd"}


def create_tables_sql(*, prefix: str = "") -> list[str]:
    """``CREATE TABLE IF NOT EXISTS`` statements for every table."""
    out = []
    for table, cols in _ALL_TABLES.items():
        body = ", ".join(
            f'"{c}" {t}'
            + (f" USING COMPRESSION {_COMPRESSION[table, c]}" if (table, c) in _COMPRESSION else "")
            for c, t in cols
        )
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
        "DOUBLE[]": pa.list_(pa.float64()),
        "MAP(VARCHAR, BIGINT)": pa.map_(pa.string(), pa.int64()),
        "MAP(VARCHAR, VARCHAR)": pa.map_(pa.string(), pa.string()),
    }
    return simple[duck]


@functools.cache
def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema that batches for ``table`` are built with (no derived column).

    Built once per table (schemas are immutable): an ingest checks every parsed chunk against it."""
    import pyarrow as pa

    types = dict(_ALL_TABLES[table])
    return pa.schema([(c, _arrow_type(types[c])) for c in built_columns(table)])
