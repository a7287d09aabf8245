"""The one batched insert every write goes through (a writer's batch, an ingest, a migration),
and the progress of JSONL logs it records in the same transaction."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

from sweep.store.db import (
    DERIVED_COLUMNS,
    add_new_traces,
    column_names,
    count,
    fetch_one,
    last_rowid,
    pair_key_sql,
    refresh_traces,
)

if TYPE_CHECKING:
    import duckdb

    from sweep.store.rows._row_batch import RowBatch

__all__ = ["AddCounts", "LogMark", "insert_batch", "insert_relations", "new_traces_sql"]


@dataclass(frozen=True)
class LogMark:
    """How far one JSONL log is known to be in the store.

    Attributes:
        path: The log, absolute.
        offset: Bytes from the start of the file that are in the store (whole lines).
        head_hash: Hash of the file's first bytes, to notice a file replaced by another.
    """

    path: str
    offset: int
    head_hash: str


@dataclass
class AddCounts:
    """What one insert added (``present``: traces whose key was stored already)."""

    traces: int = 0
    present: int = 0
    workloads: int = 0
    definitions: int = 0
    solutions: int = 0

    def add(self, other: AddCounts) -> None:
        """Count ``other`` in too (the totals of several inserts): every count, a new one too."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


_FILLED = {
    # column: (lookup alias, lookup column) used when the batch leaves it empty
    "op_type": ("d", "op_type"),
    "tags": ("d", "tags"),
    "author": ("s", "author"),
    "language": ("s", "language"),
    "solution_hash": ("s", "solution_hash"),
}


def new_traces_sql(batch: str, *, traces: str, definitions: str, solutions: str) -> str:
    """A SELECT of the batch's traces that are not stored yet, with the columns the batch
    leaves empty filled from the definitions and solutions tables, and the derived columns
    (``pair_key``) computed from the filled ones.

    Args:
        batch: Relation holding the new rows (the ``traces`` columns).
        traces: The stored traces (for the key anti-join).
        definitions: The definitions table.
        solutions: The solutions table.
    """
    cols = []
    filled = {c: f'coalesce(b."{c}", {alias}.{src})' for c, (alias, src) in _FILLED.items()}
    for c in column_names("traces"):
        if c in filled:
            cols.append(f'{filled[c]} AS "{c}"')
        elif c == "pair_key":
            key = pair_key_sql(
                "b.definition",
                filled["solution_hash"],
                "b.solution",
                "b.solution_params",
                "b.workload_uuid",
                "b.world_size",
            )
            cols.append(f'{key} AS "{c}"')
        else:
            cols.append(f'b."{c}"')
    return f"""SELECT {", ".join(cols)}
FROM {batch} b
LEFT JOIN {definitions} d ON d.name = b.definition
LEFT JOIN (
    SELECT definition, name, max(solution_hash) AS solution_hash,
           arg_max(author, solution_hash) AS author, arg_max(language, solution_hash) AS language
    FROM {solutions} GROUP BY definition, name
) s ON s.definition = b.definition AND s.name = b.solution
WHERE NOT EXISTS (SELECT 1 FROM {traces} t WHERE t.trace_key = b.trace_key)"""


def _plain_append(con: duckdb.DuckDBPyConnection, batch: str) -> bool:
    """Whether :func:`new_traces_sql` of ``batch`` would give its rows unchanged: none of their
    keys is stored, and no definition or solution stored fills a column they leave empty (a
    first ingest of logs). Then they are appended as they are (:func:`_appended_traces_sql`).

    Why: DuckDB inserts the result of a join in one thread, and that insert (building and
    compressing the row groups of ~80 columns) bounds an ingest with many parsing processes;
    rows scanned straight from the batch are inserted by every thread, in their order."""
    fills = " OR ".join(f'b."{c}" IS NULL' for c in _FILLED)
    row = fetch_one(
        con,
        f"""SELECT
    EXISTS (SELECT 1 FROM {batch} b SEMI JOIN traces t ON t.trace_key = b.trace_key),
    EXISTS (SELECT 1 FROM {batch} b WHERE ({fills}) AND (
        EXISTS (SELECT 1 FROM definitions d WHERE d.name = b.definition)
        OR EXISTS (SELECT 1 FROM solutions s WHERE s.definition = b.definition AND s.name = b.solution)))""",
    )
    return row is not None and not any(row)


def _appended_traces_sql(batch: str) -> str:
    """A SELECT of the batch's rows as they are, with the derived columns computed from them:
    what :func:`new_traces_sql` gives when :func:`_plain_append` holds, without a join."""
    derived = DERIVED_COLUMNS["traces"]
    cols = [f'({derived[c]}) AS "{c}"' if c in derived else f'"{c}"' for c in column_names("traces")]
    return f"SELECT {', '.join(cols)} FROM {batch}"


@contextmanager
def _insert_order(con: duckdb.DuckDBPyConnection, *, keep: bool) -> Iterator[None]:
    """Whether the next insert keeps the order of its rows; the setting before is put back afterwards.

    A plain append (rows scanned straight from the batch) is faster in order: DuckDB's batch
    insert compresses whole row groups in every thread, and leaves none half-filled for the
    commit to finish; out of order, each thread keeps its share in a row group of its own,
    which a batch split over many threads never fills (at 400,000 rows, 50% more CPU, most of
    it in the checkpoint). The result of a join (the anti-join on stored keys) is inserted by
    one thread in order, by all out of order. Nothing reads the traces' physical order (every
    view ranks by columns; new rows get higher rowids either way)."""
    row = fetch_one(con, "SELECT current_setting('preserve_insertion_order')")
    before = bool(row is None or row[0])
    con.execute(f"SET preserve_insertion_order = {'true' if keep else 'false'}")
    try:
        yield
    finally:
        con.execute(f"SET preserve_insertion_order = {'true' if before else 'false'}")


def insert_batch(
    con: duckdb.DuckDBPyConnection,
    batch: RowBatch,
    marks: Sequence[LogMark] = (),
    *,
    transaction: bool = True,
) -> AddCounts:
    """Insert a batch of rows built in Python (see :func:`insert_relations`)."""
    names = {t: f"_batch_{t}" for t in ("traces", "definitions", "solutions", "workloads") if batch.count(t)}
    for table, name in names.items():
        con.register(name, batch.arrow(table))
    try:
        counts = insert_relations(con, names, marks, transaction=transaction)
    finally:
        for name in names.values():
            con.unregister(name)
    counts.present += batch.duplicates
    return counts


def insert_relations(
    con: duckdb.DuckDBPyConnection,
    rels: Mapping[str, str],
    marks: Sequence[LogMark] = (),
    *,
    transaction: bool = True,
) -> AddCounts:
    """Insert new rows in one transaction.

    Traces are new by key, workloads by definition and uuid, definitions by name, solutions
    by name and hash (a changed definition or solution record replaces the stored one). Older
    traces then get columns that new definitions and solutions can fill, and ``marks`` record
    how far JSONL logs are stored.

    Args:
        con: A read-write connection.
        rels: Relation (table, view or registered Arrow table) holding each table's new rows,
            with that table's columns, by table name.
        marks: Log progress to record in the same transaction.
        transaction: Run in a transaction of its own (False: the caller's).
    """
    counts = AddCounts()
    if transaction:
        con.execute("BEGIN")
    try:
        if "definitions" in rels:
            b = rels["definitions"]
            con.execute(
                f"DELETE FROM definitions USING {b} b "
                "WHERE definitions.name = b.name AND definitions.record::VARCHAR <> b.record::VARCHAR"
            )
            counts.definitions = count(
                con,
                f"INSERT INTO definitions SELECT * FROM {b} b "
                "WHERE NOT EXISTS (SELECT 1 FROM definitions t WHERE t.name = b.name)",
            )
        if "solutions" in rels:
            b = rels["solutions"]
            con.execute(
                f"DELETE FROM solutions USING {b} b WHERE solutions.name = b.name "
                "AND solutions.solution_hash = b.solution_hash "
                "AND solutions.record::VARCHAR <> b.record::VARCHAR"
            )
            counts.solutions = count(
                con,
                f"INSERT INTO solutions SELECT * FROM {b} b WHERE NOT EXISTS "
                "(SELECT 1 FROM solutions t WHERE t.name = b.name "
                "AND t.solution_hash = b.solution_hash)",
            )
        if "workloads" in rels:
            b = rels["workloads"]
            counts.workloads = count(
                con,
                f"INSERT INTO workloads SELECT * FROM {b} b WHERE NOT EXISTS "
                "(SELECT 1 FROM workloads t WHERE t.definition = b.definition "
                "AND t.uuid = b.uuid)",
            )
        if counts.definitions or counts.solutions:
            _backfill(con)
        if "traces" in rels:
            b = rels["traces"]
            cols = ", ".join(f'"{c}"' for c in column_names("traces"))
            plain = _plain_append(con, b)
            if plain:
                select = _appended_traces_sql(b)
            else:
                select = new_traces_sql(b, traces="traces", definitions="definitions", solutions="solutions")
            after = last_rowid(con)
            with _insert_order(con, keep=plain):
                counts.traces = count(con, f"INSERT INTO traces ({cols}) {select}")
            if counts.traces:
                add_new_traces(con, after)
            counts.present = count(con, f"SELECT count(*) FROM {b}") - counts.traces
        if marks:
            _mark_logs(con, marks)
        if transaction:
            con.execute("COMMIT")
    except BaseException:
        if transaction:
            con.execute("ROLLBACK")
        raise
    return counts


def _mark_logs(con: duckdb.DuckDBPyConnection, marks: Sequence[LogMark]) -> None:
    """Record how far each log is stored: two statements for all of them (an ingest of many
    logs marks one per log per batch; two statements each cost more than the rest of a small
    batch). A log marked twice keeps its last mark."""
    import pyarrow as pa

    last = {m.path: m for m in marks}
    con.register(
        "_log_marks",
        pa.table(
            {
                "path": pa.array([m.path for m in last.values()], pa.string()),
                "offset": pa.array([m.offset for m in last.values()], pa.int64()),
                "head_hash": pa.array([m.head_hash for m in last.values()], pa.string()),
            }
        ),
    )
    try:
        con.execute("DELETE FROM log_progress WHERE path IN (SELECT path FROM _log_marks)")
        con.execute('INSERT INTO log_progress SELECT path, "offset", head_hash FROM _log_marks')
    finally:
        con.unregister("_log_marks")


def _backfill(con: duckdb.DuckDBPyConnection) -> None:
    """Fill op_type, tags, author, language and hash of stored traces that lacked them."""
    changed = con.execute("""UPDATE traces SET op_type = d.op_type, tags = d.tags
FROM definitions d WHERE traces.op_type IS NULL AND traces.definition = d.name
RETURNING trace_key""").fetchall()
    # The pair key is made of the solution hash: it changes with it.
    new_hash = "coalesce(traces.solution_hash, s.solution_hash)"
    key = pair_key_sql(
        "traces.definition",
        new_hash,
        "traces.solution",
        "traces.solution_params",
        "traces.workload_uuid",
        "traces.world_size",
    )
    changed += con.execute(f"""UPDATE traces SET author = s.author, language = s.language,
    solution_hash = {new_hash}, pair_key = {key}
FROM (SELECT definition, name, max(solution_hash) AS solution_hash,
             arg_max(author, solution_hash) AS author, arg_max(language, solution_hash) AS language
      FROM solutions GROUP BY definition, name) s
WHERE traces.author IS NULL AND traces.definition = s.definition AND traces.solution = s.name
RETURNING trace_key""").fetchall()
    if changed:
        # cross_hardware's tables copy these columns, and a new hash moves a trace to another pair.
        import pyarrow as pa

        con.register("_changed_traces", pa.table({"trace_key": [k for (k,) in changed]}))
        try:
            refresh_traces(con, "_changed_traces")
        finally:
            con.unregister("_changed_traces")
