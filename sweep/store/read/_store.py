"""Store: a DuckDB file or an in-memory database (see :class:`WritableStore`), and read
sessions over it.

A read session over a store file opens the file read-only, adds the lines of the sweep's
JSONL logs that are not in the file yet (a running writer commits in batches;
``log_progress`` says how far each log is in) as temporary tables, and creates the views as
temporary views over the union. So a reader sees every trace finished so far, and what it
sees only grows. If the file stays locked by a writer past the wait, the session is built in
memory from the JSONL logs alone, with the same views.

Unless it is opened with ``file_access`` (an export writes Parquet through it), a session is
then locked down: no file can be read or written from its SQL, no extension installed or
loaded, and the configuration is locked so its SQL cannot undo that. With the statement
check of :func:`sweep.store.read._query.run_sql` (one statement, and only a query), a query
session changes nothing anywhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import pydantic

from sweep.errors import StoreError, ValidationError, reason
from sweep.schema import Trace
from sweep.schema.limits import FileRefused
from sweep.store.db import (
    SCHEMA_VERSION,
    VIEW_DEPENDS,
    StoreContext,
    StoreLockedError,
    count,
    describe_invalid,
    fetch_one,
    lock_down,
    open_read_only,
    overlay_tail,
    schema_version,
    view_statements,
)
from sweep.store.ingestion import (
    MAX_LINE_BYTES,
    LogReader,
    file_problem,
    head_hash,
    ingest_into,
    is_json,
    log_files,
)
from sweep.store.rows import LogMark, RowBatch, WritableStore, new_traces_sql

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
        lazy_views: Views are created when a statement names them (:meth:`require`), as
            temporary views (the file is open read-only).
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
        for name, stmt in view_statements(wanted | self._created, temp=True):
            if name not in self._created:
                self.con.execute(stmt)
                self._created.add(name)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _whole_lines(reader: LogReader, size: int) -> Iterator[tuple[int, int, bytes]]:
    """(number, end offset, bytes) of each whole line, then of a last line without its newline
    if it parses: such a line is whole (see :mod:`sweep.store.ingestion._trace_files`)."""
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
        problem = file_problem(path)
        if problem is not None:  # a device or FIFO where a log goes: never read
            warnings.append(f"{path}: {problem}, skipped (logs are regular files)")
            continue
        key = str(path.resolve())
        try:
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
            if reader.overlong:
                warnings.append(
                    f"{path} (byte {reader.end}): a line longer than {MAX_LINE_BYTES:,} bytes; the rest skipped"
                )
            if reader.end > start:
                new_marks.append(LogMark(key, reader.end, head_hash(path, reader.end)))
        except (OSError, FileRefused) as e:  # swapped or removed while read
            warnings.append(f"{path}: {reason(e)}, skipped")
    return new_marks, warnings


class Store(WritableStore):
    """A results store: a DuckDB file (``path``), or an in-memory database (``path=None``).

    A file store opens the file only for the duration of one write or one read session, so
    other processes can get in between. Writing is :class:`WritableStore`'s; this class adds
    read sessions.
    """

    @contextmanager
    def session(
        self, results_dir: Path | None = None, *, timeout_s: float | None = None, file_access: bool = False
    ) -> Iterator[Session]:
        """A read session (see the module docstring).

        Args:
            results_dir: The sweep's results folder, whose logs complete the store file
                (default: the folder holding the store file).
            timeout_s: How long to wait for a writer before reading the logs alone.
            file_access: Let the session's SQL read and write files (``COPY ... TO``: only an
                export needs it). Without it the session is locked down. A session of an
                in-memory store is that store's own connection, and never locked down.

        Raises:
            StoreError: No store file and no logs, or the store is newer than this code.
        """
        if self._mem is not None:
            yield Session(self._mem, "memory")
            return
        assert self.path is not None
        results = results_dir if results_dir is not None else self.path.parent
        wait = self.lock_timeout_s if timeout_s is None else timeout_s
        con: duckdb.DuckDBPyConnection | None = None
        why = ""  # why the logs answer instead of the store file
        if not self.path.exists():
            if not log_files(results):
                raise StoreError(
                    f"no store at {self.path} and no trace logs under {results / 'traces'}; "
                    "run 'sweep launch CONFIG' or 'sweep ingest PATH...' first"
                )
            why = f"no store at {self.path}"
        else:
            try:
                con = self._open(wait, file_access)
            except StoreLockedError:
                why = f"store {self.path} is held by a writer"
        if con is None:
            with self._log_session(
                results, f"{why}; answered from the JSONL logs under {results}", file_access
            ) as s:
                yield s
            return
        try:
            session = self._build_session(con, results)
            if not file_access:
                lock_down(con)
            yield session
        finally:
            con.close()

    def _open(self, wait: float, file_access: bool) -> duckdb.DuckDBPyConnection:
        """Open the file read-only, migrating it first if it is older."""
        assert self.path is not None
        con = open_read_only(self.path, file_access=file_access, timeout_s=wait)
        try:
            version = schema_version(con)
        except BaseException:
            con.close()
            raise
        if version == SCHEMA_VERSION:
            return con
        con.close()
        if version is not None and version > SCHEMA_VERSION:
            raise StoreError(
                f"{self.path} has schema version {version}, newer than this kernel-sweep supports "
                f"({SCHEMA_VERSION}); upgrade kernel-sweep to read it"
            )
        # Older (or empty): migrate with a short write, then open again.
        with self.writing(timeout_s=wait):
            pass
        return open_read_only(self.path, file_access=file_access, timeout_s=wait)

    def _build_session(self, con: duckdb.DuckDBPyConnection, results: Path) -> Session:
        batch = RowBatch()
        _, warnings = read_log_tails(results, self.log_marks(con), batch)
        session = Session(con, "store")
        # The file's own tables, named through its catalog: a temporary view of the same name
        # (traces with the log tail) shadows the unqualified name.
        row = fetch_one(con, "SELECT current_database()")
        assert row is not None
        main = f"{_ident(str(row[0]))}.main"
        if batch.count("traces"):
            con.register("_tail_traces", batch.arrow("traces"))
            con.execute(
                "CREATE TEMP TABLE tail_traces AS "
                + new_traces_sql(
                    "_tail_traces",
                    traces=f"{main}.traces",
                    definitions=f"{main}.definitions",
                    solutions=f"{main}.solutions",
                )
            )
            con.unregister("_tail_traces")
            con.execute(
                f"CREATE TEMP VIEW traces AS SELECT * FROM {main}.traces "
                "UNION ALL BY NAME SELECT * FROM tail_traces"
            )
            session.tail = count(con, "SELECT count(*) FROM tail_traces")
            overlay_tail(con, main, "tail_traces")
        if batch.count("workloads"):
            con.register("_tail_workloads", batch.arrow("workloads"))
            con.execute(
                "CREATE TEMP TABLE tail_workloads AS SELECT * FROM _tail_workloads b WHERE NOT EXISTS "
                f"(SELECT 1 FROM {main}.workloads t WHERE t.definition = b.definition "
                "AND t.uuid = b.uuid)"
            )
            con.unregister("_tail_workloads")
            con.execute(
                f"CREATE TEMP VIEW workloads AS SELECT * FROM {main}.workloads "
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
    def _log_session(self, results: Path, note: str, file_access: bool) -> Iterator[Session]:
        mem = WritableStore.memory()
        try:
            report = ingest_into(mem, [results], allow_empty=True)
            assert mem._mem is not None
            if not file_access:
                lock_down(mem._mem)
            notes = [f"{note} ({report.traces_read} traces)"] + report.warnings[:5]
            yield Session(mem._mem, "log", notes)
        finally:
            mem.close()
