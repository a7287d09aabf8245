"""WritableStore: the write side of a store, which ingest writes through.

A DuckDB file, opened only for the moment of one write (the schema is created or migrated on
the first), or an in-memory database. :class:`~sweep.store.Store` adds read sessions.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from typing_extensions import Self

from sweep.store.db import init_connection, open_db
from sweep.store.rows._insert import AddCounts, LogMark, insert_batch
from sweep.store.rows._migrate import ensure_schema

if TYPE_CHECKING:
    import duckdb

    from sweep.store.rows._row_batch import RowBatch

__all__ = ["DEFAULT_LOCK_TIMEOUT_S", "WritableStore"]

#: How long readers and ingest wait for a writer's batch to finish before giving up.
DEFAULT_LOCK_TIMEOUT_S = 3.0


class WritableStore:
    """A store to write to: a DuckDB file (``path``), or an in-memory database (``path=None``).

    A file store opens the file only for the duration of one write, so other processes can
    get in between.
    """

    def __init__(self, path: Path | None = None, *, lock_timeout_s: float = DEFAULT_LOCK_TIMEOUT_S):
        self.path = path
        self.lock_timeout_s = lock_timeout_s
        self._mem: duckdb.DuckDBPyConnection | None = None
        self._schema_ok = False
        if path is None:
            import duckdb

            self._mem = duckdb.connect(":memory:")
            init_connection(self._mem)
            ensure_schema(self._mem, where="in-memory store")

    @classmethod
    def memory(cls) -> Self:
        """A new, empty in-memory store."""
        return cls(None)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.path or ':memory:'})"

    @property
    def where(self) -> str:
        """The store's name for messages."""
        return str(self.path) if self.path is not None else "in-memory store"

    @contextmanager
    def writing(self, *, timeout_s: float | None = None) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-write connection, with the schema created or migrated; closed afterwards.

        Raises:
            StoreLockedError: Another process held the file for the whole wait.
        """
        if self._mem is not None:
            yield self._mem
            return
        assert self.path is not None
        self.path.parent.mkdir(parents=True, exist_ok=True)
        wait = self.lock_timeout_s if timeout_s is None else timeout_s
        con = open_db(self.path, read_only=False, timeout_s=wait)
        try:
            if not self._schema_ok:
                ensure_schema(con, where=str(self.path))
                self._schema_ok = True
            yield con
        finally:
            con.close()

    def add(
        self, batch: RowBatch, marks: list[LogMark] | None = None, *, timeout_s: float | None = None
    ) -> AddCounts:
        """Insert a batch (see :func:`sweep.store.rows._insert.insert_batch`)."""
        if not len(batch) and not marks:
            return AddCounts(present=batch.duplicates)
        with self.writing(timeout_s=timeout_s) as con:
            return insert_batch(con, batch, marks or [])

    def present_keys(self, keys: Sequence[str]) -> set[str]:
        """The keys among ``keys`` of traces the store holds (one scan of the stored keys)."""
        import pyarrow as pa

        with self.writing() as con:
            # A cursor of its own: an insert may be running on ``con`` in another thread.
            cur = con.cursor()
            try:
                cur.register("_present_keys", pa.table({"k": pa.array(keys, pa.string())}))
                rows = cur.execute(
                    "SELECT t.trace_key FROM traces t SEMI JOIN _present_keys p ON t.trace_key = p.k"
                ).fetchall()
            finally:
                cur.close()
        return {r[0] for r in rows}

    def log_marks(self, con: duckdb.DuckDBPyConnection, catalog: str = "") -> dict[str, LogMark]:
        """Stored log progress, by absolute log path."""
        prefix = f"{catalog}." if catalog else ""
        rows = con.execute(f'SELECT path, "offset", head_hash FROM {prefix}log_progress').fetchall()
        return {r[0]: LogMark(r[0], int(r[1]), r[2]) for r in rows}

    def close(self) -> None:
        """Close an in-memory store (a file store holds nothing open between calls)."""
        if self._mem is not None:
            self._mem.close()
            self._mem = None
