"""ResultsWriter: the sweep driver's one way to record traces.

Each trace is appended to its JSONL log and fsynced before :meth:`ResultsWriter.write`
(or :meth:`ResultsWriter.write_many`, one fsync per log file for a group) returns, so a trace
the driver has written survives any crash. Rows reach the DuckDB file in
batches from a background thread, which opens the file only for the moment of one insert
(so ``sweep query`` and ``sweep report`` get in between) and records in the same transaction
how far each log is stored. A writer that starts on a results folder catches the store up
with whatever an earlier, killed run logged but never stored.
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import BinaryIO

from typing_extensions import Self

from sweep.errors import StoreError, ValidationError
from sweep.schema import Provenance, Trace
from sweep.store._insert import LogMark, insert_batch
from sweep.store._row_batch import RowBatch
from sweep.store._store import Store, read_log_tails
from sweep.store._store_context import StoreContext
from sweep.store._trace_files import head_hash

__all__ = ["ResultsWriter", "completed_task_ids", "log_path"]

_log = logging.getLogger("sweep.store")
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]+")
_MAX_OPEN_LOGS = 64


def _safe(name: str) -> str:
    return _UNSAFE.sub("_", name).strip(".") or "_"


def log_path(results_dir: Path, trace: Trace, context: StoreContext | None = None) -> Path:
    """Where a trace is logged: ``<results>/traces/<op_type or definition>/<definition>.jsonl``."""
    defn = (context or StoreContext()).definitions.get(trace.definition)
    folder = defn.op_type if defn is not None else trace.definition
    return results_dir / "traces" / _safe(folder) / f"{_safe(trace.definition)}.jsonl"


def _write_atomic(path: Path, text: str) -> None:
    if path.exists() and path.read_text() == text:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


class ResultsWriter:
    """Appends traces to JSONL logs and, in batches, to the DuckDB store.

    Use as a context manager, from one process (the sweep driver). A second writer on the
    same results folder is refused.

    Args:
        results_dir: The results folder; logs go to ``traces/`` in it, and the definitions and
            solutions of logged traces to ``definitions/`` and ``solutions/`` (FlashInfer-Bench
            layout), so the folder alone can rebuild the store.
        store_path: The DuckDB file (created if missing, migrated if older).
        sweep: Sweep name, stamped into traces whose provenance lacks one.
        run_id: Run id, likewise.
        context: Definitions, solutions and workloads of the sweep (stored in their tables,
            and used to fill op_type, tags, author, language and solution hash).
        flush_interval_s: How often the background thread stores pending traces.
        lock_timeout_s: How long :meth:`flush` and :meth:`close` wait for readers.

    Raises:
        StoreError: Another writer holds the results folder, or the store cannot be opened.
    """

    def __init__(
        self,
        results_dir: Path,
        store_path: Path,
        *,
        sweep: str,
        run_id: str,
        context: StoreContext | None = None,
        flush_interval_s: float = 0.25,
        lock_timeout_s: float = 10.0,
    ) -> None:
        self.results_dir = Path(results_dir)
        self.sweep = sweep
        self.run_id = run_id
        self.context = context or StoreContext()
        self.store = Store(Path(store_path), lock_timeout_s=lock_timeout_s)
        self.lock_timeout_s = lock_timeout_s
        self.last_error: str | None = None
        self.written = 0
        self._lock = threading.Lock()
        self._db_lock = threading.Lock()
        self._pending: list[tuple[Trace, str, str]] = []
        self._ends: dict[Path, int] = {}
        self._files: dict[Path, BinaryIO] = {}
        self._records_written: set[str] = set()
        self._closed = False
        (self.results_dir / "traces").mkdir(parents=True, exist_ok=True)
        self._lock_fd = self._take_folder_lock()
        try:
            self._catch_up()
        except BaseException:
            os.close(self._lock_fd)
            raise
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, args=(flush_interval_s,), name="sweep-store-writer", daemon=True
        )
        self._thread.start()

    # -- setup -----------------------------------------------------------------------------

    def _take_folder_lock(self) -> int:
        path = self.results_dir / ".sweep-writer.lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 64, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise StoreError(
                f"another sweep is writing to {self.results_dir} (pid {holder}, lock file {path}); "
                "wait for it to finish, or set output.results_dir to another folder"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        return fd

    def _catch_up(self) -> None:
        """Store the context, and log lines an earlier run wrote but never stored."""
        with self.store.writing() as con:
            batch = RowBatch()
            batch.add_context(self.context)
            marks, warnings = read_log_tails(self.results_dir, self.store.log_marks(con), batch, self.context)
            for w in warnings:
                _log.warning("%s", w)
            insert_batch(con, batch, marks)

    # -- writing ---------------------------------------------------------------------------

    def _stamp(self, trace: Trace) -> Trace:
        prov = trace.provenance
        if prov is not None and prov.sweep and prov.run_id:
            return trace
        update = {}
        if prov is None or not prov.sweep:
            update["sweep"] = self.sweep
        if prov is None or not prov.run_id:
            update["run_id"] = self.run_id
        new = prov.model_copy(update=update) if prov is not None else Provenance(**update)
        return trace.model_copy(update={"provenance": new})

    def _write_records(self, trace: Trace) -> None:
        """Write the trace's definition and solution next to the logs, once per writer."""
        defn = self.context.definitions.get(trace.definition)
        if defn is not None and f"d:{defn.name}" not in self._records_written:
            _write_atomic(
                self.results_dir / "definitions" / _safe(defn.op_type) / f"{_safe(defn.name)}.json",
                defn.to_json() + "\n",
            )
            self._records_written.add(f"d:{defn.name}")
        sol = self.context.solution_for(trace.definition, trace.solution)
        if sol is not None and f"s:{sol.name}" not in self._records_written:
            op = _safe(defn.op_type) if defn is not None else "_"
            _write_atomic(
                self.results_dir
                / "solutions"
                / _safe(sol.author)
                / op
                / _safe(sol.definition)
                / f"{_safe(sol.name)}.json",
                sol.to_json() + "\n",
            )
            self._records_written.add(f"s:{sol.name}")

    def _file(self, path: Path) -> BinaryIO:
        f = self._files.get(path)
        if f is not None:
            return f
        if len(self._files) >= _MAX_OPEN_LOGS:
            old = self._files.pop(next(iter(self._files)))
            os.fsync(old.fileno())  # it may hold lines of a group not yet synced
            old.close()
        path.parent.mkdir(parents=True, exist_ok=True)
        f = path.open("ab")
        size = f.tell()
        if size:
            # A run killed mid-line left a torn line: end it, so our first line stays whole.
            with path.open("rb") as r:
                r.seek(size - 1)
                if r.read(1) != b"\n":
                    f.write(b"\n")
        self._files[path] = f
        return f

    def write(self, trace: Trace) -> None:
        """Log one trace durably (append, flush, fsync) and queue it for the store.

        Raises:
            StoreError: The writer is closed.
        """
        self.write_many([trace])

    def write_many(self, traces: Sequence[Trace]) -> None:
        """Log several traces durably and queue them for the store: each line is appended and
        flushed in order, then each log file touched is fsynced once (a group commit: the
        traces of one finished call cost one disk sync, not one each).

        Raises:
            StoreError: The writer is closed.
        """
        if self._closed:
            raise StoreError("ResultsWriter.write after close()")
        lines = []
        for trace in traces:
            trace = self._stamp(trace)
            lines.append((trace, trace.to_json(), log_path(self.results_dir, trace, self.context)))
        with self._lock:
            touched: dict[Path, BinaryIO] = {}
            for trace, line, path in lines:
                self._write_records(trace)
                f = self._file(path)
                f.write(line.encode() + b"\n")
                f.flush()  # in the OS before the next line: a killed driver loses nothing
                touched[path] = f
                self._ends[path] = f.tell()
            for f in touched.values():
                if not f.closed:  # a closed one was synced when it was evicted
                    os.fsync(f.fileno())
            for trace, line, path in lines:
                self._pending.append((trace, line, str(path.resolve())))
            self.written += len(lines)

    @property
    def pending(self) -> int:
        """Traces logged but not yet in the store file."""
        with self._lock:
            return len(self._pending)

    def _flush_db(self, timeout_s: float) -> None:
        with self._db_lock:
            with self._lock:
                items = list(self._pending)
                ends = dict(self._ends)
            if not items:
                return
            batch = RowBatch()
            for trace, line, source in items:
                try:
                    batch.add_trace(trace, record=line, context=self.context, source=source)
                except ValidationError as e:
                    # Retrying cannot help; the line stays in its log, where 'sweep ingest'
                    # reports it with the same words.
                    _log.warning("%s: not a valid trace: %s; logged, not stored", source, e)
            marks = [LogMark(str(p.resolve()), end, head_hash(p, end)) for p, end in ends.items()]
            self.store.add(batch, marks, timeout_s=timeout_s)
            with self._lock:
                del self._pending[: len(items)]
                for p, end in ends.items():
                    if self._ends.get(p) == end:
                        del self._ends[p]

    def _run(self, interval: float) -> None:
        while not self._stop.wait(interval):
            try:
                self._flush_db(timeout_s=min(interval, 0.5))
                self.last_error = None
            except StoreError as e:  # locked by a reader, or worse: the logs keep everything
                self.last_error = str(e)
            except Exception as e:  # noqa: BLE001 - the thread must outlive any failure; the logs keep all
                self.last_error = f"{type(e).__name__}: {e}"
                _log.warning("store writer: %s", self.last_error)

    def flush(self) -> None:
        """Store every pending trace now.

        Raises:
            StoreError: The store stayed locked for ``lock_timeout_s`` (the traces are safe in
                the logs; the next writer or ``sweep ingest <results>`` stores them).
        """
        self._flush_db(timeout_s=self.lock_timeout_s)

    def close(self) -> None:
        """Stop the background thread, store what is pending, close the logs, free the folder.

        Never raises for a busy store: pending traces stay in the logs and a warning is logged.
        """
        if self._closed:
            return
        self._closed = True
        self._stop.set()
        self._thread.join()
        try:
            self._flush_db(timeout_s=self.lock_timeout_s)
        except StoreError as e:
            self.last_error = str(e)
            _log.warning(
                "%s; %d traces are in the logs only: run 'sweep ingest %s' to store them",
                e,
                self.pending,
                self.results_dir,
            )
        finally:
            for f in self._files.values():
                f.close()
            self._files.clear()
            os.close(self._lock_fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def completed_task_ids(results_dir: Path, store_path: Path) -> set[str]:
    """Task ids that already have a trace, in the store or only in the JSONL logs.

    Args:
        results_dir: The results folder whose logs to read.
        store_path: The DuckDB file (may not exist yet).
    """
    store = Store(Path(store_path))
    results_dir = Path(results_dir)
    if not Path(store_path).exists() and not (results_dir / "traces").is_dir():
        return set()
    try:
        with store.session(results_dir) as s:
            rows = s.con.execute("SELECT DISTINCT task_id FROM traces WHERE task_id IS NOT NULL").fetchall()
    except StoreError as e:
        if "no trace logs" in str(e):
            return set()
        raise
    return {r[0] for r in rows}
