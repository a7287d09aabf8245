"""Plain SQL over the store, with errors that say what exists.

A query is one statement that only reads: DuckDB's own parser counts the statements and
names their kind, and anything but a query (``SELECT``, ``WITH``, ``FROM``, ``DESCRIBE``,
``SHOW``, ``SUMMARIZE``, ``VALUES``, or ``EXPLAIN`` of one) is refused before it runs. The
session it runs in cannot touch a file either (see :mod:`sweep.store.read._store`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.errors import StoreError, did_you_mean
from sweep.store.db import NODE_TABLES, TABLES, VIEW_NAMES
from sweep.store.read._store import Session, Store

if TYPE_CHECKING:
    import duckdb
    import pyarrow as pa

__all__ = ["QueryResult", "check_read_only", "query", "relation_names", "run_sql"]

_MACROS = ["perf_at(p)"]
_EXPLAIN = re.compile(r"^\s*EXPLAIN\s+(?:ANALY[SZ]E\s+)?", re.IGNORECASE)
_READ_ONLY_FIX = (
    "the query session is read-only: only a query (SELECT, WITH, FROM, DESCRIBE, SHOW, EXPLAIN) "
    "can run; to change the store, use 'sweep ingest' or 'sweep launch'"
)


@dataclass(frozen=True)
class QueryResult:
    """The answer to one SQL statement.

    Attributes:
        columns: Column names, in order.
        types: DuckDB type of each column.
        rows: Rows as tuples of Python values (maps come as lists of key-value pairs).
        source: Where the answer came from (see :class:`sweep.store.Session`).
        notes: Things worth telling the user about the source.
    """

    columns: list[str]
    types: list[str]
    rows: list[tuple[object, ...]]
    source: str = "store"
    notes: list[str] = field(default_factory=list)


def relation_names() -> str:
    """``tables: ...; views: ...; macros: ...`` for messages."""
    return (
        f"tables: {', '.join(sorted(TABLES))}; views: {', '.join(sorted(VIEW_NAMES))}; "
        f"table macros: {', '.join(_MACROS)}"
    )


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0]


def _columns_of(con: duckdb.DuckDBPyConnection, relation: str) -> list[str]:
    return [r[0] for r in con.execute(f"DESCRIBE SELECT * FROM {relation}").fetchall()]


def _unknown_column(session: Session, sql: str, err: Exception) -> StoreError:
    m = re.search(r'Referenced column "?([^"\s]+)"? not found', str(err))
    if m is None:
        return StoreError(f"query failed: {_first_line(err)}")
    name = m.group(1)
    words = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql)}
    used = [r for r in [*TABLES, *NODE_TABLES, *VIEW_NAMES] if r in words] or ["traces"]
    session.require(" ".join(used))
    parts, choices = [], []
    for rel in used:
        cols = _columns_of(session.con, rel)
        choices.extend(cols)
        parts.append(f"columns of {rel}: {', '.join(cols)}")
    return StoreError(f"unknown column {name!r}{did_you_mean(name, choices)}; " + "; ".join(parts))


def _syntax_error(err: Exception) -> StoreError:
    return StoreError(f"SQL syntax error: {_first_line(err).removeprefix('Parser Error: ')}")


def check_read_only(sql: str) -> None:
    """Refuse anything but exactly one query.

    Raises:
        StoreError: No statement, more than one, a syntax error, or a statement that is not a
            query (the message names its kind and says the session is read-only).
    """
    import duckdb

    try:
        statements = duckdb.extract_statements(sql)
    except duckdb.ParserException as e:
        raise _syntax_error(e) from None
    if not statements:
        raise StoreError("no SQL statement given; write one query, e.g. 'SELECT * FROM leaderboard'")
    if len(statements) > 1:
        raise StoreError(
            f"{len(statements)} SQL statements given; a query session runs exactly one "
            "(remove the others, or run them one at a time)"
        )
    stmt = statements[0]
    kind = stmt.type
    if kind == duckdb.StatementType.EXPLAIN:
        # EXPLAIN ANALYZE runs what it explains: allowed only over a query.
        m = _EXPLAIN.match(stmt.query)
        inner = duckdb.extract_statements(stmt.query[m.end() :]) if m else []
        if len(inner) == 1 and inner[0].type == duckdb.StatementType.SELECT:
            return
        raise StoreError(f"refused EXPLAIN of a statement that is not a query: {_READ_ONLY_FIX}")
    if kind == duckdb.StatementType.MULTI:
        raise StoreError(
            "refused a statement that DuckDB runs as several (PIVOT without IN): "
            f"{_READ_ONLY_FIX}; name the values, e.g. PIVOT traces ON hardware IN ('NVIDIA_H100', "
            "'NVIDIA_H200') USING count(*)"
        )
    if kind != duckdb.StatementType.SELECT:
        word = re.match(r"\s*([A-Za-z]+)", stmt.query)  # what the user wrote: INSTALL, not LOAD
        raise StoreError(f"refused {word.group(1).upper() if word else kind.name}: {_READ_ONLY_FIX}")


def run_sql(session: Session, sql: str) -> QueryResult:
    """Run one query in a session.

    Raises:
        StoreError: Not exactly one query (:func:`check_read_only`), unknown table or column
            (the message lists what exists), a syntax error, or any other failure of the
            statement.
    """
    import duckdb

    check_read_only(sql)
    con = session.con
    session.require(sql)
    try:
        rel = con.sql(sql)
        if rel is None:
            return QueryResult([], [], [], session.source, list(session.notes))
        table = rel.to_arrow_table()
        types = [str(t) for t in rel.types]
    except duckdb.CatalogException as e:
        m = re.search(r"(?:Table|View) with name (\S+) does not exist", str(e))
        if m:
            name = m.group(1)
            hint = did_you_mean(name, [*TABLES, *NODE_TABLES, *VIEW_NAMES])
            raise StoreError(f"unknown table {name!r}{hint}; {relation_names()}") from None
        raise StoreError(f"query failed: {_first_line(e)}") from None
    except duckdb.BinderException as e:
        raise _unknown_column(session, sql, e) from None
    except duckdb.ParserException as e:
        raise _syntax_error(e) from None
    except duckdb.PermissionException as e:
        raise StoreError(
            f"query failed: {_first_line(e)}; a query session reads the store's tables and views "
            "only, no other file"
        ) from None
    except duckdb.Error as e:
        raise StoreError(f"query failed: {_first_line(e)}") from None
    columns = list(table.column_names)
    as_text: list[str] = []
    data = [_to_python(table.column(i), name, as_text) for i, name in enumerate(columns)]
    if as_text:
        note = (
            f"{', '.join(repr(c) for c in as_text)}: times outside Python's range (years 1-9999), "
            "shown as text; find the traces with: SELECT trace_key, source FROM traces WHERE "
            "year(timestamp) NOT BETWEEN 1970 AND 2199"
        )
        if note not in session.notes:  # kept in the session: a report says it once
            session.notes.append(note)
    rows = list(zip(*data)) if data else []
    return QueryResult(columns, types, rows, session.source, list(session.notes))


def _to_python(col: pa.ChunkedArray, name: str, as_text: list[str]) -> list[object]:
    """A column's values; times outside Python's years 1-9999 (a store written before they
    were refused) come as ISO 8601 text, and the column's name is added to ``as_text``,
    rather than failing the whole answer.

    Raises:
        StoreError: A value still cannot be shown.
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        values: list[object] = col.to_pylist()
        return values
    except (OverflowError, ValueError):
        pass
    try:
        values = pc.cast(col, _times_as_text(col.type)).to_pylist()
    except (OverflowError, ValueError, pa.ArrowException) as e:
        raise StoreError(f"query failed: column {name!r} holds a value that cannot be shown ({e})") from None
    as_text.append(name)
    return values


def _times_as_text(t: pa.DataType) -> pa.DataType:
    """``t`` with every timestamp and date in it (in lists, structs, maps too) as a string."""
    import pyarrow as pa

    if pa.types.is_timestamp(t) or pa.types.is_date(t):
        return pa.string()
    if pa.types.is_map(t):
        return pa.map_(_times_as_text(t.key_type), _times_as_text(t.item_type))
    if pa.types.is_list(t):
        return pa.list_(_times_as_text(t.value_type))
    if pa.types.is_large_list(t):
        return pa.large_list(_times_as_text(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _times_as_text(f.type)) for f in t])
    return t


def query(
    store_path: Path, sql: str, *, results_dir: Path | None = None, lock_timeout_s: float | None = None
) -> QueryResult:
    """Run SQL against a store file, seeing every trace finished so far.

    While a sweep is writing, the answer includes the lines of its JSONL logs that are not in
    the file yet; if the file stays locked, the answer comes from the logs alone (see
    :class:`sweep.store.Store`). The store is opened read-only, in a session that can read
    and write no other file, and only one query runs (:func:`check_read_only`).

    Args:
        store_path: The DuckDB file.
        sql: One query; tables ``traces``, ``definitions``, ``solutions``,
            ``workloads`` and views ``latest``, ``best``, ``cross_hardware``, ``leaderboard``,
            ``op_scores``, ``backend_scores`` are visible.
        results_dir: The sweep's results folder (default: the store file's folder).
        lock_timeout_s: How long to wait for a writer before reading the logs alone.

    Raises:
        StoreError: No store and no logs, or the statement fails (see :func:`run_sql`).
    """
    store = Store(store_path)
    with store.session(results_dir, timeout_s=lock_timeout_s) as session:
        return run_sql(session, sql)
