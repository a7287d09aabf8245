"""Bringing a database to the current schema: creating the tables in an empty one, migrating
an older store (each step in one transaction), refreshing the views.

Columns are derived from each trace's ``record``. Version 1 to 2 rebuilds the tables with
the current row builder from the old records, keeping what the old rows knew beyond the
record (op_type, tags, author, language, solution hash, sweep, run id, config and settings
hashes). Version 2 to 3 adds columns at the end of ``traces`` and fills them from the records
in SQL (no row leaves DuckDB), and adds the ``calibrations`` table. Version 3 to 4 adds the
``profiles`` and ``sanitizer_findings`` tables. Version 4 to 5 adds ``solution_params``,
filled from the records that have one (canonical JSON, as the row builder). Version 5 to 6
adds ``pair_key``, computed from the columns (as every insert computes it). Version 6 to 7 adds
the tables ``cross_hardware`` reads (``_cross_hardware.py``), computed from the traces. Version
7 to 8 ranks traces by the time they claim, never later than when they were stored
(``_newest.py``): ``ingested_at`` later than the migration (a Parquet export's, from another
clock) becomes the migration's time, and the ``cross_hardware`` tables, which now keep
``ingested_at``, are computed again.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

from sweep.errors import StoreError
from sweep.schema import Definition, Solution, Trace
from sweep.schema.params import params_json
from sweep.store.db import (
    SCHEMA_VERSION,
    V3_TRACE_COLUMNS,
    V5_TRACE_COLUMNS,
    V6_TRACE_COLUMNS,
    V9_TRACE_COLUMNS,
    create_tables_sql,
    fetch_one,
    pair_key_sql,
    rebuild,
    schema_version,
    set_meta,
    views_hash,
    views_sql,
)
from sweep.store.rows._insert import insert_batch
from sweep.store.rows._row_batch import Known, RowBatch

if TYPE_CHECKING:
    import duckdb

__all__ = ["V1_SCHEMA", "ensure_schema", "migrate"]

#: Schema version 1, as the first kernel-sweep stores were laid out: JSON text for axes,
#: libs and tags, the raw timestamp string, hardware as recorded, keys ``sha1(record)``, no
#: extension columns, no workloads or log progress tables.
V1_SCHEMA: list[str] = [
    "CREATE TABLE store_meta (key VARCHAR, value VARCHAR)",
    """CREATE TABLE traces (
    trace_key VARCHAR, definition VARCHAR, solution VARCHAR, workload_uuid VARCHAR, axes JSON,
    status VARCHAR, max_absolute_error DOUBLE, max_relative_error DOUBLE, latency_ms DOUBLE,
    reference_latency_ms DOUBLE, speedup_factor DOUBLE, hardware VARCHAR, libs JSON,
    timestamp VARCHAR, log VARCHAR, op_type VARCHAR, tags JSON, author VARCHAR, language VARCHAR,
    solution_hash VARCHAR, sweep VARCHAR, run_id VARCHAR, config_hash VARCHAR,
    settings_hash VARCHAR, record JSON)""",
    "CREATE TABLE definitions (name VARCHAR, op_type VARCHAR, tags JSON, record JSON)",
    """CREATE TABLE solutions (name VARCHAR, definition VARCHAR, author VARCHAR, language VARCHAR,
    solution_hash VARCHAR, record JSON)""",
    """CREATE VIEW latest AS SELECT * FROM traces QUALIFY row_number() OVER (
    PARTITION BY definition, solution, workload_uuid, hardware ORDER BY timestamp DESC) = 1""",
]


def _v1_to_v2(con: duckdb.DuckDBPyConnection) -> None:
    traces = con.execute(
        "SELECT record::VARCHAR, op_type, tags::VARCHAR, author, language, solution_hash, sweep, run_id, "
        "config_hash, settings_hash FROM traces ORDER BY timestamp, trace_key"
    ).fetchall()
    definitions = con.execute("SELECT record::VARCHAR FROM definitions").fetchall()
    solutions = con.execute("SELECT record::VARCHAR FROM solutions").fetchall()
    batch = RowBatch()
    for (text,) in definitions:
        batch.add_definition(Definition.model_validate_json(text))
    for (text,) in solutions:
        batch.add_solution(Solution.model_validate_json(text))
    for rec, op_type, tags, author, language, sol_hash, sweep, run_id, cfg, settings in traces:
        trace = Trace.model_validate_json(rec)
        known = Known(
            op_type=op_type,
            tags=json.loads(tags) if tags else None,
            author=author,
            language=language,
            solution_hash=sol_hash,
            sweep=sweep,
            run_id=run_id,
            config_hash=cfg,
            settings_hash=settings,
            source="migrated from schema v1",
        )
        batch.add_trace(trace, known=known)
    for view in ("latest",):
        con.execute(f"DROP VIEW IF EXISTS {view}")
    for table in ("traces", "definitions", "solutions"):
        con.execute(f"DROP TABLE {table}")
    for stmt in create_tables_sql():
        con.execute(stmt)
    insert_batch(con, batch, transaction=False)


# How each column of version 3 reads the record (as ``_row_batch.RowBatch`` does).
_V3_FROM_RECORD: dict[str, str] = {
    "work_flops": "TRY_CAST(json_extract(record, '$.evaluation.performance.work_flops') AS DOUBLE)",
    "work_bytes": "TRY_CAST(json_extract(record, '$.evaluation.performance.work_bytes') AS DOUBLE)",
    "work_source": "json_extract_string(record, '$.evaluation.performance.work_source')",
    "tflops": "TRY_CAST(json_extract(record, '$.evaluation.performance.tflops') AS DOUBLE)",
    "gbps": "TRY_CAST(json_extract(record, '$.evaluation.performance.gbps') AS DOUBLE)",
    "peak_fraction": "TRY_CAST(json_extract(record, '$.evaluation.performance.peak_fraction') AS DOUBLE)",
    "floor_ms": "TRY_CAST(json_extract(record, '$.evaluation.performance.floor_ms') AS DOUBLE)",
    "flags": "coalesce(TRY_CAST(json_extract(record, '$.evaluation.flags') AS VARCHAR[]), [])",
    "timing_timer": "json_extract_string(record, '$.evaluation.timing.timer')",
    "timing_rel_error": "TRY_CAST(json_extract(record, '$.evaluation.timing.rel_error') AS DOUBLE)",
    "timing_target_met": "TRY_CAST(json_extract(record, '$.evaluation.timing.target_met') AS BOOLEAN)",
    "ref_timing_timer": "json_extract_string(record, '$.evaluation.reference_timing.timer')",
    "throttled": "TRY_CAST(json_extract(record, '$.evaluation.clocks.throttled') AS BOOLEAN)",
}


def _v2_to_v3(con: duckdb.DuckDBPyConnection) -> None:
    for column, duck_type in V3_TRACE_COLUMNS:
        con.execute(f'ALTER TABLE traces ADD COLUMN IF NOT EXISTS "{column}" {duck_type}')
    sets = ", ".join(f'"{c}" = {_V3_FROM_RECORD[c]}' for c, _ in V3_TRACE_COLUMNS)
    con.execute(f"UPDATE traces SET {sets}")
    for stmt in create_tables_sql():
        con.execute(stmt)


def _v3_to_v4(con: duckdb.DuckDBPyConnection) -> None:
    """Adds the ``profiles`` and ``sanitizer_findings`` tables (``sweep profile``)."""
    for stmt in create_tables_sql():
        con.execute(stmt)


def _v4_to_v5(con: duckdb.DuckDBPyConnection) -> None:
    """Adds ``traces.solution_params`` (parameter sweeps), filled from the records."""
    for column, duck_type in V5_TRACE_COLUMNS:
        con.execute(f'ALTER TABLE traces ADD COLUMN IF NOT EXISTS "{column}" {duck_type}')
    rows = con.execute(
        "SELECT trace_key, json_extract(record, '$.solution_params')::VARCHAR FROM traces "
        "WHERE json_type(json_extract(record, '$.solution_params')) = 'OBJECT'"
    ).fetchall()
    for key, text in rows:
        con.execute(
            "UPDATE traces SET solution_params = ? WHERE trace_key = ?", [params_json(json.loads(text)), key]
        )


def _v5_to_v6(con: duckdb.DuckDBPyConnection) -> None:
    """Adds ``traces.pair_key`` (what ``cross_hardware`` joins on), computed from the columns."""
    for column, duck_type in V6_TRACE_COLUMNS:
        con.execute(f'ALTER TABLE traces ADD COLUMN IF NOT EXISTS "{column}" {duck_type}')
    key = pair_key_sql("definition", "solution_hash", "solution", "solution_params", "workload_uuid")
    con.execute(f"UPDATE traces SET pair_key = {key}")


def _v6_to_v7(con: duckdb.DuckDBPyConnection) -> None:
    """Adds ``cross_hardware_latest`` and ``cross_hardware_pairs``, computed from the traces
    (every insert keeps them from then on)."""
    for stmt in create_tables_sql():
        con.execute(stmt)
    rebuild(con)


def _v7_to_v8(con: duckdb.DuckDBPyConnection) -> None:
    """Traces rank by the time they claim, never later than when they were stored: no stored
    time later than now, and the ``cross_hardware`` tables (keeping ``ingested_at``) again."""
    con.execute("UPDATE traces SET ingested_at = now() WHERE ingested_at > now()")
    con.execute("DROP TABLE IF EXISTS cross_hardware_latest")
    for stmt in create_tables_sql():
        con.execute(stmt)
    rebuild(con)


def _v8_to_v9(con: duckdb.DuckDBPyConnection) -> None:
    """Adds the columns of calls made by several ranks (``V9_TRACE_COLUMNS``), filled from the
    records, and pairs them in ``cross_hardware`` only with the same world size."""
    for column, duck_type in V9_TRACE_COLUMNS:
        con.execute(f'ALTER TABLE traces ADD COLUMN IF NOT EXISTS "{column}" {duck_type}')
    con.execute("UPDATE traces SET world_size = 1")
    d = "json_extract(record, '$.evaluation.distributed')"
    con.execute(f"""UPDATE traces SET
    world_size = coalesce(({d} ->> 'world_size')::BIGINT, 1),
    collective = {d} ->> 'collective',
    message_bytes = ({d} ->> 'message_bytes')::DOUBLE,
    algbw_gbps = ({d} ->> 'algbw_gbps')::DOUBLE,
    busbw_gbps = ({d} ->> 'busbw_gbps')::DOUBLE,
    link_fraction = ({d} ->> 'link_fraction')::DOUBLE,
    straggler_rank = ({d} ->> 'straggler_rank')::BIGINT,
    failed_rank = ({d} ->> 'failed_rank')::BIGINT,
    rank_status = (SELECT list(r ->> 'status' ORDER BY (r ->> 'rank')::BIGINT)
                   FROM (SELECT unnest(({d} -> 'ranks')::JSON[]) AS r)),
    rank_latency_ms = (SELECT list((r ->> 'latency_ms')::DOUBLE ORDER BY (r ->> 'rank')::BIGINT)
                       FROM (SELECT unnest(({d} -> 'ranks')::JSON[]) AS r))
WHERE json_type({d}) = 'OBJECT'""")
    key = pair_key_sql(
        "definition", "solution_hash", "solution", "solution_params", "workload_uuid", "world_size"
    )
    con.execute(f"UPDATE traces SET pair_key = {key} WHERE world_size <> 1")
    rebuild(con)


#: ``from version -> step`` to the next version.
_STEPS: dict[int, Callable[[duckdb.DuckDBPyConnection], None]] = {
    1: _v1_to_v2,
    2: _v2_to_v3,
    3: _v3_to_v4,
    4: _v4_to_v5,
    5: _v5_to_v6,
    6: _v6_to_v7,
    7: _v7_to_v8,
    8: _v8_to_v9,
}


def migrate(con: duckdb.DuckDBPyConnection, version: int) -> None:
    """Bring a store from ``version`` to the current schema, one transaction per step.

    Raises:
        StoreError: No migration exists from that version.
    """
    while version < SCHEMA_VERSION:
        step = _STEPS.get(version)
        if step is None:
            raise StoreError(
                f"no migration from store schema version {version}; rebuild the store "
                "with 'sweep ingest <results folder>' into a new file"
            )
        con.execute("BEGIN")
        try:
            step(con)
            version += 1
            set_meta(con, "schema_version", str(version))
            set_meta(con, "views_hash", "")
            con.execute("COMMIT")
        except BaseException:
            con.execute("ROLLBACK")
            raise


def ensure_schema(con: duckdb.DuckDBPyConnection, *, where: str = "store") -> None:
    """Create the tables in an empty database, migrate an older store, refresh the views.

    Args:
        con: A read-write connection.
        where: The store's name for messages.

    Raises:
        StoreError: The store is newer than this kernel-sweep, or not a store at all.
    """
    version = schema_version(con)
    if version is not None and version > SCHEMA_VERSION:
        raise StoreError(
            f"{where} has schema version {version}, newer than this kernel-sweep supports "
            f"({SCHEMA_VERSION}); upgrade kernel-sweep to read it"
        )
    if version is None:
        con.execute("BEGIN")
        for stmt in create_tables_sql():
            con.execute(stmt)
        set_meta(con, "schema_version", str(SCHEMA_VERSION))
        con.execute("COMMIT")
    elif version < SCHEMA_VERSION:
        migrate(con, version)
    row = fetch_one(con, "SELECT value FROM store_meta WHERE key = 'views_hash'")
    if row is None or row[0] != views_hash():
        con.execute("BEGIN")
        for stmt in views_sql():
            con.execute(stmt)
        set_meta(con, "views_hash", views_hash())
        con.execute("COMMIT")
