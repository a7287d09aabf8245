"""DuckDB connections: opening a store file with lock retries, the store's schema version and
metadata, and the small query helpers every module uses.

DuckDB lets one process hold a file read-write, and then refuses every other open, even
read-only ones. Writers therefore hold a file only for the few milliseconds of one batch, and
everyone who meets the lock retries for a while (:func:`open_db`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sweep.errors import StoreError

if TYPE_CHECKING:
    import duckdb

_T = TypeVar("_T")

__all__ = [
    "StoreLockedError",
    "count",
    "fetch_one",
    "init_connection",
    "is_lock_error",
    "lock_down",
    "open_db",
    "open_read_only",
    "retry_on_lock",
    "schema_version",
    "set_meta",
    "sql_literal",
]


class StoreLockedError(StoreError):
    """Another process holds the store file, and it stayed held for the whole wait."""


_LOCK_MESSAGES = (
    "Could not set lock",
    "Conflicting lock",
    "Unique file handle conflict",
    # This process holds the file through a connection opened otherwise (read-write, or a
    # session of another kind); it is free again once that connection closes.
    "different configuration than existing connections",
)


def is_lock_error(err: BaseException) -> bool:
    """Whether a DuckDB error means another process (or connection of this one) holds the file."""
    text = str(err)
    return any(m in text for m in _LOCK_MESSAGES)


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


def open_read_only(path: Path, *, file_access: bool, timeout_s: float) -> duckdb.DuckDBPyConnection:
    """Open a store file read-only for a read session, retrying while a writer holds it.

    Extensions are never installed or loaded on the fly (a query must not reach the network
    or write ``~/.duckdb``); without ``file_access`` the session's SQL can read and write no
    file either (``read_text``, ``COPY ... TO``, ``ATTACH``, ``EXPORT DATABASE``).

    Raises:
        StoreLockedError: Still held by a writer when the time was up.
        StoreError: The file is not a DuckDB database.
    """
    import duckdb

    config: dict[str, str | bool | int | float | list[str]] = {
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "enable_external_access": file_access,
    }
    con = retry_on_lock(
        lambda: duckdb.connect(str(path), read_only=True, config=config), timeout_s=timeout_s, what=str(path)
    )
    # Connections of this process to one file share one database: set UTC for all of them
    # (a later one cannot, once a session has locked the configuration).
    row = fetch_one(con, "SELECT current_setting('TimeZone')")
    if row is None or row[0] != "UTC":
        con.execute("SET GLOBAL TimeZone = 'UTC'")
    return con


_LOCKED = (
    ("autoinstall_known_extensions", "false"),
    ("autoload_known_extensions", "false"),
    ("enable_external_access", "false"),
    ("lock_configuration", "true"),
)


def lock_down(con: duckdb.DuckDBPyConnection) -> None:
    """Turn off file access and extension loading and lock the configuration, so no SQL run
    on ``con`` later can turn them on again. For read sessions, once their views are set up."""
    for name, value in _LOCKED:
        row = fetch_one(con, f"SELECT current_setting('{name}')::VARCHAR")
        if row is None or str(row[0]).lower() != value:
            con.execute(f"SET {name} = {value}")


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


def fetch_one(con: duckdb.DuckDBPyConnection, sql: str) -> tuple[object, ...] | None:
    """The first row of a statement's result, consuming all of it (DuckDB 2 refuses further
    work on a connection with an unfinished result)."""
    rows = con.execute(sql).fetchall()
    return tuple(rows[0]) if rows else None


def count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    """The single integer a statement returns (a count, or rows changed)."""
    row = fetch_one(con, sql)
    return int(str(row[0])) if row else 0


def sql_literal(text: str) -> str:
    """``text`` as an SQL string literal (single quotes doubled): a value spliced into a query
    stays a value."""
    return "'" + text.replace("'", "''") + "'"
