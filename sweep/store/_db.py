"""DuckDB plumbing: opening with lock retries, creating or migrating the schema, and the one
batched insert every write goes through.

DuckDB lets one process hold a file read-write, and then refuses every other open, even
read-only ones. Writers therefore hold a file only for the few milliseconds of one batch, and
everyone who meets the lock retries for a while (:func:`open_db`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sweep.errors import StoreError
from sweep.store._schema import SCHEMA_VERSION, TABLES, column_names, create_tables_sql, views_hash, views_sql

if TYPE_CHECKING:
    import duckdb

    from sweep.store._row_batch import RowBatch

_T = TypeVar("_T")

__all__ = [
    "AddCounts",
    "LogMark",
    "StoreLockedError",
    "count",
    "ensure_schema",
    "fetch_one",
    "init_connection",
    "insert_batch",
    "insert_relations",
    "is_lock_error",
    "new_traces_sql",
    "open_db",
    "retry_on_lock",
    "schema_version",
    "set_meta",
]


class StoreLockedError(StoreError):
    """Another process holds the store file, and it stayed held for the whole wait."""


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


def is_lock_error(err: BaseException) -> bool:
    """Whether a DuckDB error means another process (or connection of this one) holds the file."""
    text = str(err)
    return any(m in text for m in ("Could not set lock", "Conflicting lock", "Unique file handle conflict"))


def init_connection(con: duckdb.DuckDBPyConnection) -> None:
    """Session settings every connection gets: UTC, so naive timestamps mean UTC everywhere."""
    con.execute("SET TimeZone = 'UTC'")


def retry_on_lock(fn: Callable[[], _T], *, timeout_s: float, what: str) -> _T:
    """Call ``fn`` until it stops failing with a DuckDB lock error, for up to ``timeout_s``.

    Raises:
        StoreLockedError: Still locked when the time was up.
        StoreError: Any other DuckDB error.
    """
    import duckdb

    deadline = time.monotonic() + timeout_s
    delay = 0.01
    while True:
        try:
            return fn()
        except duckdb.Error as e:
            if not is_lock_error(e):
                raise StoreError(f"cannot open store {what}: {e}") from None
            if time.monotonic() >= deadline:
                raise StoreLockedError(
                    f"store {what} is locked by another process (a running sweep or ingest); "
                    f"waited {timeout_s:.1f} s"
                ) from None
            time.sleep(delay)
            delay = min(delay * 1.5, 0.05)


def open_db(path: Path, *, read_only: bool, timeout_s: float) -> duckdb.DuckDBPyConnection:
    """Open a store file, retrying while another process holds it.

    Args:
        path: The DuckDB file.
        read_only: Open for reading only (the file must exist).
        timeout_s: How long to keep retrying; 0 tries once.

    Raises:
        StoreLockedError: Still held by another process when the time was up.
        StoreError: The file is not a DuckDB database.
    """
    import duckdb

    con = retry_on_lock(
        lambda: duckdb.connect(str(path), read_only=read_only), timeout_s=timeout_s, what=str(path)
    )
    init_connection(con)
    return con


def _base_tables(con: duckdb.DuckDBPyConnection, catalog: str | None = None) -> set[str]:
    where = "database_name = current_database()" if catalog is None else f"database_name = '{catalog}'"
    rows = con.execute(f"SELECT table_name FROM duckdb_tables() WHERE {where} AND schema_name = 'main'")
    return {r[0] for r in rows.fetchall()}


def schema_version(con: duckdb.DuckDBPyConnection, *, catalog: str | None = None) -> int | None:
    """The store's schema version; ``None`` for an empty database.

    Raises:
        StoreError: The database holds tables but is not a kernel-sweep store.
    """
    import duckdb

    prefix = f"{catalog}." if catalog else ""
    try:  # the common case, without listing the catalog
        row = fetch_one(con, f"SELECT value FROM {prefix}store_meta WHERE key = 'schema_version'")
        return int(str(row[0])) if row else 1
    except duckdb.CatalogException:
        pass
    tables = _base_tables(con, catalog)
    if tables:
        raise StoreError(
            "not a kernel-sweep store: it has tables "
            + ", ".join(sorted(tables))
            + " but no store_meta; point --store at a store made by sweep, or at a new file"
        )
    return None


def set_meta(con: duckdb.DuckDBPyConnection, key: str, value: str) -> None:
    con.execute("DELETE FROM store_meta WHERE key = ?", [key])
    con.execute("INSERT INTO store_meta VALUES (?, ?)", [key, value])


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
        from sweep.store._migrate import migrate

        migrate(con, version)
    row = fetch_one(con, "SELECT value FROM store_meta WHERE key = 'views_hash'")
    if row is None or row[0] != views_hash():
        con.execute("BEGIN")
        for stmt in views_sql():
            con.execute(stmt)
        set_meta(con, "views_hash", views_hash())
        con.execute("COMMIT")


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
    leaves empty filled from the definitions and solutions tables.

    Args:
        batch: Relation holding the new rows (the ``traces`` columns).
        traces: The stored traces (for the key anti-join).
        definitions: The definitions table.
        solutions: The solutions table.
    """
    cols = []
    for c in column_names("traces"):
        if c in _FILLED:
            alias, src = _FILLED[c]
            cols.append(f'coalesce(b."{c}", {alias}.{src}) AS "{c}"')
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


def fetch_one(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[object, ...] | None:
    """The first row of a statement's result, consuming all of it (DuckDB 2 refuses further
    work on a connection with an unfinished result)."""
    rows = con.execute(sql).fetchall()
    return tuple(rows[0]) if rows else None


def count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """The single integer a statement returns (a count, or rows changed)."""
    row = fetch_one(con, sql)
    return int(str(row[0])) if row else 0


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
            select = new_traces_sql(b, traces="traces", definitions="definitions", solutions="solutions")
            counts.traces = count(con, f"INSERT INTO traces ({cols}) {select}")
            counts.present = count(con, f"SELECT count(*) FROM {b}") - counts.traces
        for m in marks:
            con.execute("DELETE FROM log_progress WHERE path = ?", [m.path])
            con.execute("INSERT INTO log_progress VALUES (?, ?, ?)", [m.path, m.offset, m.head_hash])
        if transaction:
            con.execute("COMMIT")
    except BaseException:
        if transaction:
            con.execute("ROLLBACK")
        raise
    return counts


def _backfill(con: duckdb.DuckDBPyConnection) -> None:
    """Fill op_type, tags, author, language and hash of stored traces that lacked them."""
    con.execute("""UPDATE traces SET op_type = d.op_type, tags = d.tags
FROM definitions d WHERE traces.op_type IS NULL AND traces.definition = d.name""")
    con.execute("""UPDATE traces SET author = s.author, language = s.language,
    solution_hash = coalesce(traces.solution_hash, s.solution_hash)
FROM (SELECT definition, name, max(solution_hash) AS solution_hash,
             arg_max(author, solution_hash) AS author, arg_max(language, solution_hash) AS language
      FROM solutions GROUP BY definition, name) s
WHERE traces.author IS NULL AND traces.definition = s.definition AND traces.solution = s.name""")


def table_columns() -> dict[str, list[str]]:
    """Column names of every table (for messages)."""
    return {t: column_names(t) for t in TABLES}
