"""Plain SQL over the store, with errors that say what exists."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.errors import StoreError, did_you_mean
from sweep.store._schema import NODE_TABLES, TABLES, VIEW_NAMES
from sweep.store._store import Session, Store

if TYPE_CHECKING:
    import duckdb

__all__ = ["QueryResult", "query", "relation_names", "run_sql"]

_MACROS = ["perf_at(p)"]


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


def run_sql(session: Session, sql: str) -> QueryResult:
    """Run one statement in a session.

    Raises:
        StoreError: Unknown table or column (the message lists what exists), a syntax error,
            or any other failure of the statement.
    """
    import duckdb

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
        raise StoreError(f"SQL syntax error: {_first_line(e).removeprefix('Parser Error: ')}") from None
    except duckdb.Error as e:
        raise StoreError(f"query failed: {_first_line(e)}") from None
    columns = list(table.column_names)
    data = [table.column(i).to_pylist() for i in range(table.num_columns)]
    rows = list(zip(*data)) if data else []
    return QueryResult(columns, types, rows, session.source, list(session.notes))


def query(
    store_path: Path, sql: str, *, results_dir: Path | None = None, lock_timeout_s: float | None = None
) -> QueryResult:
    """Run SQL against a store file, seeing every trace finished so far.

    While a sweep is writing, the answer includes the lines of its JSONL logs that are not in
    the file yet; if the file stays locked, the answer comes from the logs alone (see
    :class:`sweep.store.Store`). The store is opened read-only.

    Args:
        store_path: The DuckDB file.
        sql: One SQL statement; tables ``traces``, ``definitions``, ``solutions``,
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
