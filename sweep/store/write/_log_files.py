"""The writer's JSONL logs: appends on the caller's thread, syncs on a thread of their own.

An append is one ``write`` per log of a group (the lines joined), straight to the file: the
lines are in the OS when it returns, so a killed driver loses none of them. Syncing (``fsync``,
a millisecond or more each on a VM's disk) happens on the syncer thread, which takes every log
written since its last pass and syncs each once: a group commit that grows with the load (at
10,000 traces a second, one sync covers whatever arrived while the last one ran), and the
caller's thread never waits on the disk unless it asks to (:meth:`LogFiles.wait`).
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from sweep.errors import StoreError
from sweep.schema import Trace
from sweep.store.db import StoreContext

__all__ = ["MAX_OPEN_LOGS", "Log", "LogFiles", "log_path", "safe_part"]

#: Logs kept open at once; the least recently opened is synced and closed to make room.
MAX_OPEN_LOGS = 64
#: Seconds the syncer waits for work before it lets ``on_synced`` pass on what it held back.
_IDLE_S = 0.1


_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]+")


def safe_part(name: str) -> str:
    """``name`` as one part of a log's path: other characters as ``_``, no leading or trailing dot."""
    return _UNSAFE.sub("_", name).strip(".") or "_"


def log_path(results_dir: Path, trace: Trace, context: StoreContext | None = None) -> Path:
    """Where a trace is logged: ``<results>/traces/<op_type or definition>/<definition>.jsonl``."""
    defn = (context or StoreContext()).definitions.get(trace.definition)
    folder = defn.op_type if defn is not None else trace.definition
    return results_dir / "traces" / safe_part(folder) / f"{safe_part(trace.definition)}.jsonl"


@dataclass(eq=False)
class Log:
    """One JSONL log.

    Attributes:
        path: The file.
        key: Its absolute path (the store's ``log_progress`` and the traces' ``source``).
        fd: The open descriptor (append-only), or -1 while closed.
        end: Bytes written (the offset of the next line).
    """

    path: Path
    key: str
    fd: int = -1
    end: int = 0
    dirty: bool = field(default=False, repr=False)


class LogFiles:
    """Open logs, appended to by one thread and synced by a thread of their own.

    Args:
        on_synced: Called on the syncer thread after each pass with how far each log it
            synced is durable (absolute path -> offset), before the pass counts as done.
    """

    def __init__(self, on_synced: Callable[[dict[str, int]], None]) -> None:
        self.on_synced = on_synced
        self.error: BaseException | None = None
        self._logs: dict[Path, Log] = {}
        self._open: dict[Path, Log] = {}  # in opening order, for eviction
        self._cond = threading.Condition()
        self._fd_lock = threading.Lock()  # an fd is never closed while it is being synced
        self._dirty: list[Log] = []
        self._written = 0  # groups appended
        self._synced = 0  # groups durable
        self._stop = False
        self._thread = threading.Thread(target=self._run, name="sweep-log-sync", daemon=True)
        self._thread.start()

    def log(self, path: Path) -> Log:
        """The log at ``path`` (opened at its first append)."""
        log = self._logs.get(path)
        if log is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            log = self._logs[path] = Log(path, str(path.resolve()))
        return log

    def _reopen(self, log: Log) -> None:
        if len(self._open) >= MAX_OPEN_LOGS:
            old = self._open.pop(next(iter(self._open)))
            with self._fd_lock:
                # It may hold lines of a group not synced yet (the syncer may have taken it for
                # its pass already, and skips a closed log): synced here, before it closes.
                os.fsync(old.fd)
                os.close(old.fd)
                old.fd = -1
        # Never through a link put where a log goes (an append would write where it leads).
        fd = os.open(log.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        size = os.fstat(fd).st_size
        if size:
            # A run killed mid-line left a torn line: end it, so our first line stays whole.
            with log.path.open("rb") as r:
                r.seek(size - 1)
                if r.read(1) != b"\n":
                    os.write(fd, b"\n")
                    size += 1
        log.fd, log.end = fd, size
        self._open[log.path] = log

    def append(self, lines: dict[Log, list[bytes]]) -> int:
        """Append each log's lines (one write per log); the group's number, for :meth:`wait`.
        A group of no lines is durable once the groups before it are: it gets the last one's
        number (a number of its own would wait for a sync that nothing asks for).

        Raises:
            StoreError: An earlier sync failed (what it held may not be on disk).
        """
        self._raise()
        if not lines:
            with self._cond:
                return self._written
        for log, group in lines.items():
            if log.fd < 0:
                self._reopen(log)
            data = b"\n".join(group) + b"\n"
            view = memoryview(data)
            while view:
                view = view[os.write(log.fd, view) :]
            log.end += len(data)
        with self._cond:
            for log in lines:
                if not log.dirty:
                    log.dirty = True
                    self._dirty.append(log)
            self._written += 1
            self._cond.notify_all()
            return self._written

    @property
    def synced(self) -> int:
        """The number of the last group that is durable."""
        return self._synced

    def wait(self, group: int) -> None:
        """Block until group ``group`` (and every one before it) is durable.

        Raises:
            StoreError: The sync failed.
        """
        with self._cond:
            self._cond.wait_for(lambda: self._synced >= group or self.error is not None)
        self._raise()

    def _raise(self) -> None:
        if self.error is not None:
            raise StoreError(f"a JSONL log could not be synced: {self.error}") from self.error

    def _run(self) -> None:
        while True:
            with self._cond:
                # Woken at least every _IDLE_S: ``on_synced`` may hold ends back for a moment
                # (the follower's client does), and gets its chance to pass them on.
                if not self._cond.wait_for(lambda: bool(self._dirty) or self._stop, timeout=_IDLE_S):
                    idle = True
                elif not self._dirty:
                    return
                else:
                    idle = False
            if idle:
                try:
                    self.on_synced({})
                except BaseException as e:  # noqa: BLE001 - handed to the appending thread
                    with self._cond:
                        self.error = e
                    return
                continue
            with self._cond:
                todo, self._dirty = self._dirty, []
                group = self._written
                ends = {}
                for log in todo:
                    log.dirty = False
                    ends[log.key] = log.end
            try:
                for log in todo:
                    with self._fd_lock:
                        if log.fd >= 0:  # a closed one was synced when it was closed
                            os.fsync(log.fd)
                self.on_synced(ends)
            except BaseException as e:  # noqa: BLE001 - handed to the appending thread
                with self._cond:
                    self.error = e
                    self._cond.notify_all()
                return
            with self._cond:
                self._synced = group
                self._cond.notify_all()

    def close(self) -> None:
        """Sync what is written, stop the syncer, close every log.

        Raises:
            StoreError: The last sync failed.
        """
        with self._cond:
            self._stop = True
            self._cond.notify_all()
        self._thread.join()
        with self._fd_lock:
            for log in self._open.values():
                os.close(log.fd)
                log.fd = -1
            self._open.clear()
        self._raise()
