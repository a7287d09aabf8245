"""Store: a DuckDB file or an in-memory database (see :class:`WritableStore`), and read
sessions over it.

A read session is always an in-memory DuckDB. For a store file it attaches the file
read-only, adds the lines of the sweep's JSONL logs that are not in the file yet (a running
writer commits in batches; ``log_progress`` says how far each log is in), and creates the
views over the union. So a reader sees every trace finished so far, and what it sees only
grows. If the file stays locked by a writer past the wait, the session is built from the
JSONL logs alone, with the same views.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pydantic

from sweep.errors import StoreError, ValidationError
from sweep.schema import Trace
from sweep.store._checks import describe_invalid
from sweep.store._connection import StoreLockedError, count, init_connection, retry_on_lock, schema_version
from sweep.store._ingest import ingest_into
from sweep.store._insert import LogMark, new_traces_sql
from sweep.store._row_batch import RowBatch
from sweep.store._schema import NODE_TABLES, SCHEMA_VERSION, TABLES, VIEW_DEPENDS, views_sql
from sweep.store._store_context import StoreContext
from sweep.store._trace_files import LogReader, head_hash, is_json, log_files
from sweep.store._writable_store import WritableStore

if TYPE_CHECKING:
    import duckdb

__all__ = ["Session", "Store", "read_log_tails"]

_TAIL_NOTE_MIN = 1000


@dataclass
class Session:
    """An open read session.

    Attributes:
        con: The DuckDB connection; every table and view of the store is visible unqualified.
        source: ``"store"`` (the file, plus log lines not in it yet), ``"log"`` (the JSONL
            logs only: no file, or it stayed locked), or ``"memory"``.
        notes: Things the user should know about where the answer came from.
        tail: Traces read from the logs on top of the store file.
    """

    con: duckdb.DuckDBPyConnection
    source: Literal["store", "log", "memory"]
    notes: list[str] = field(default_factory=list)
    tail: int = 0
    lazy_views: bool = False
    _created: set[str] = field(default_factory=set, repr=False)

    def require(self, sql: str | None = None) -> None:
        """Create the views ``sql`` mentions (all when ``None``), if this session makes them
        lazily: binding every view costs more than most queries."""
        if not self.lazy_views:
            return
        if sql is None:
            wanted = set(VIEW_DEPENDS)
        else:
            wanted = {w.lower() for w in re.findall(r"[A-Za-z_][A-Za-z0-9_]*", sql)} & set(VIEW_DEPENDS)
        wanted -= self._created
        if not wanted:
            return
        for stmt in views_sql(wanted | self._created):
            name = stmt.split()[4] if stmt.startswith("CREATE OR REPLACE VIEW") else "perf_at"
            if name not in self._created:
                self.con.execute(stmt)
                self._created.add(name)


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


def _whole_lines(reader: LogReader, size: int) -> Iterator[tuple[int, int, bytes]]:
    """(number, end offset, bytes) of each whole line, then of a last line without its newline
    if it parses: such a line is whole (see :mod:`sweep.store._trace_files`)."""
    number = 0
    for line in reader:
        number = line.number
        yield line.number, line.end, line.data
    if reader.torn.strip() and is_json(reader.torn):
        yield (number + 1 if reader.start == 0 else 0), size, reader.torn


def read_log_tails(
    results_dir: Path, marks: dict[str, LogMark], batch: RowBatch, context: StoreContext | None = None
) -> tuple[list[LogMark], list[str]]:
    """Add to ``batch`` the whole lines of the sweep's logs beyond what ``marks`` say is stored.

    Args:
        results_dir: The results folder (logs are under ``traces/``).
        marks: Stored progress by absolute log path.
        batch: Receives the traces and workloads read.
        context: Fills the columns the records alone leave empty.

    Returns:
        New marks (offset after the last whole line of each log read) and warnings for lines
        that are not valid traces.
    """
    new_marks: list[LogMark] = []
    warnings: list[str] = []
    for path in log_files(results_dir):
        key = str(path.resolve())
        size = path.stat().st_size
        mark = marks.get(key)
        start = 0
        if mark is not None and mark.offset <= size and head_hash(path, mark.offset) == mark.head_hash:
            start = mark.offset
        if start == size:
            continue
        reader = LogReader(path, start)
        for number, end, data in _whole_lines(reader, size):
            if not data.strip():
                continue
            where = f"{path}:{number}" if number else f"{path} (byte {end})"
            try:
                batch.add_trace(Trace.model_validate_json(data), source=key, context=context)
            except pydantic.ValidationError as e:
                warnings.append(f"{where}: {describe_invalid(e, data)}, skipped")
            except ValidationError as e:
                warnings.append(f"{where}: not a valid trace: {e}, skipped")
        if reader.end > start:
            new_marks.append(LogMark(key, reader.end, head_hash(path, reader.end)))
    return new_marks, warnings


class Store(WritableStore):
    """A results store: a DuckDB file (``path``), or an in-memory database (``path=None``).

    A file store opens the file only for the duration of one write or one read session, so
    other processes can get in between. Writing is :class:`WritableStore`'s; this class adds
    read sessions.
    """

    @contextmanager
    def session(
        self, results_dir: Path | None = None, *, timeout_s: float | None = None
    ) -> Iterator[Session]:
        """A read session (see the module docstring).

        Args:
            results_dir: The sweep's results folder, whose logs complete the store file
                (default: the folder holding the store file).
            timeout_s: How long to wait for a writer before reading the logs alone.

        Raises:
            StoreError: No store file and no logs, or the store is newer than this code.
        """
        if self._mem is not None:
            yield Session(self._mem, "memory")
            return
        assert self.path is not None
        results = results_dir if results_dir is not None else self.path.parent
        wait = self.lock_timeout_s if timeout_s is None else timeout_s
        if not self.path.exists():
            if not log_files(results):
                raise StoreError(
                    f"no store at {self.path} and no trace logs under {results / 'traces'}; "
                    "run 'sweep launch CONFIG' or 'sweep ingest PATH...' first"
                )
            with self._log_session(
                results, f"no store at {self.path}; answered from the JSONL logs under {results}"
            ) as s:
                yield s
            return
        import duckdb

        con = duckdb.connect(":memory:")
        try:
            init_connection(con)
            try:
                self._attach(con, wait)
            except StoreLockedError:
                con.close()
                with self._log_session(
                    results,
                    f"store {self.path} is held by a writer; answered from the JSONL logs under {results}",
                ) as s:
                    yield s
                return
            session = self._build_session(con, results)
            yield session
        finally:
            con.close()

    def _attach(self, con: duckdb.DuckDBPyConnection, wait: float) -> None:
        """Attach the file read-only as ``store``, migrating it first if it is older."""
        assert self.path is not None
        path = self.path

        def attach() -> None:
            con.execute(f"ATTACH {_quote(path)} AS store (READ_ONLY)")

        retry_on_lock(attach, timeout_s=wait, what=str(path))
        version = schema_version(con, catalog="store")
        if version == SCHEMA_VERSION:
            return
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(
                f"{path} has schema version {version}, newer than this kernel-sweep supports "
                f"({SCHEMA_VERSION}); upgrade kernel-sweep to read it"
            )
        # Older (or empty): migrate with a short write, then attach again.
        con.execute("DETACH store")
        with self.writing(timeout_s=wait):
            pass
        retry_on_lock(attach, timeout_s=wait, what=str(path))

    def _build_session(self, con: duckdb.DuckDBPyConnection, results: Path) -> Session:
        batch = RowBatch()
        _, warnings = read_log_tails(results, self.log_marks(con, "store"), batch)
        session = Session(con, "store")
        for table in [*TABLES, *NODE_TABLES]:
            if table not in ("traces", "workloads") or not batch.count(table):
                con.execute(f"CREATE VIEW {table} AS SELECT * FROM store.{table}")
        if batch.count("traces"):
            con.register("_tail_traces", batch.arrow("traces"))
            con.execute(
                "CREATE TABLE tail_traces AS "
                + new_traces_sql(
                    "_tail_traces",
                    traces="store.traces",
                    definitions="store.definitions",
                    solutions="store.solutions",
                )
            )
            con.unregister("_tail_traces")
            con.execute(
                "CREATE VIEW traces AS SELECT * FROM store.traces UNION ALL BY NAME SELECT * FROM tail_traces"
            )
            session.tail = count(con, "SELECT count(*) FROM tail_traces")
        if batch.count("workloads"):
            con.register("_tail_workloads", batch.arrow("workloads"))
            con.execute(
                "CREATE TABLE tail_workloads AS SELECT * FROM _tail_workloads b WHERE NOT EXISTS "
                "(SELECT 1 FROM store.workloads t WHERE t.definition = b.definition "
                "AND t.uuid = b.uuid)"
            )
            con.unregister("_tail_workloads")
            con.execute(
                "CREATE VIEW workloads AS SELECT * FROM store.workloads "
                "UNION ALL BY NAME SELECT * FROM tail_workloads"
            )
        session.lazy_views = True
        if session.tail >= _TAIL_NOTE_MIN:
            session.notes.append(
                f"{session.tail} traces were read from the JSONL logs under {results} because the "
                f"store does not hold them yet; run 'sweep ingest {results}' to catch it up"
            )
        session.notes.extend(warnings[:5])
        return session

    @contextmanager
    def _log_session(self, results: Path, note: str) -> Iterator[Session]:
        mem = WritableStore.memory()
        try:
            report = ingest_into(mem, [results], allow_empty=True)
            assert mem._mem is not None
            notes = [f"{note} ({report.traces_read} traces)"] + report.warnings[:5]
            yield Session(mem._mem, "log", notes)
        finally:
            mem.close()
