"""What a solution may have done to the sandbox process, undone after each evaluation.

A solution is arbitrary code running in the sandbox process, which is reused task after
task. The engine restores what an evaluation commonly changes (environment, cwd,
``sys.path``, torch switches); this module covers the process itself, so that nothing a
task did reaches the next one:

- processes it started and left running (its children, and theirs, whether or not they
  left the sandbox's process group) are killed, and the process is replaced;
- resource limits, signal handlers and the umask are put back;
- what cannot be put back makes the process unfit for reuse, and the supervisor replaces
  it after this task's trace: Python threads still running, a lowered hard resource limit,
  a raised nice value, a new process group or session, a closed or replaced descriptor the
  sandbox needs (its socket, its log).

Orphans that escape by double-forking are re-parented to the zygote (a child subreaper),
which kills them (``_zygote``).
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import threading
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProcessState", "children_of", "descendants", "kill_descendants", "kill_group"]

_LIMITS = [getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_")]
_SIGNALS = [
    s
    for s in signal.valid_signals()
    if s not in (signal.SIGKILL, signal.SIGSTOP) and isinstance(s, signal.Signals)
]


def children_of(pid: int) -> list[int]:
    """Direct children of ``pid``: from ``/proc/PID/task/*/children`` (cheap: this runs
    between two evaluations, on the GPU's idle time), else by scanning ``/proc``."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    out: list[int] = []
    try:
        for tid in tids:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(x) for x in f.read().split())
        return out
    except FileNotFoundError:
        if out:  # the thread ended between listing and reading
            return out
    except OSError:
        return out
    return _scan_children(pid)


def _scan_children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # Field 4 is the parent pid; the command name (field 2) may hold spaces and ')'.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == pid:
            out.append(int(name))
    return out


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (children, their children, ...), parents first."""
    out: list[int] = []
    todo = [pid]
    while todo:
        kids = children_of(todo.pop())
        out.extend(kids)
        todo.extend(kids)
    return out


def kill_descendants(pid: int) -> int:
    """SIGKILL every process below ``pid`` (stopped first, so none forks a replacement
    meanwhile); reap those that are its own children. Returns how many were found."""
    found = descendants(pid)
    for p in found:
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGSTOP)
    for p in descendants(pid):  # anything forked before the stop
        if p not in found:
            found.append(p)
    for p in found:
        with contextlib.suppress(OSError):
            os.kill(p, signal.SIGKILL)
    if pid == os.getpid():
        for p in found:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(p, 0)
    return len(found)


def kill_group(pid: int) -> None:
    """SIGKILL a sandbox and its process group (it leads one: ``_sandbox_main.isolate``)."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(OSError):
            kill(pid, signal.SIGKILL)


def _fd_identity(fd: int) -> tuple[int, int] | None:
    try:
        st = os.fstat(fd)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


@dataclass
class ProcessState:
    """The parts of this process's state a solution could change (see the module's docstring)."""

    limits: dict[int, tuple[int, int]] = field(default_factory=dict)
    handlers: dict[int, Any] = field(default_factory=dict)
    umask: int = 0o022
    nice: int = 0
    group: tuple[int, int] = (0, 0)
    threads: set[int] = field(default_factory=set)
    fds: dict[int, tuple[int, int] | None] = field(default_factory=dict)

    @classmethod
    def capture(cls, fds: tuple[int, ...]) -> ProcessState:
        """The state now; ``fds`` are the descriptors the sandbox itself needs."""
        limits = {}
        for lim in _LIMITS:
            with contextlib.suppress(ValueError, OSError):
                limits[lim] = resource.getrlimit(lim)
        handlers: dict[int, Any] = {}
        for sig in _SIGNALS:
            with contextlib.suppress(ValueError, OSError):
                handlers[int(sig)] = signal.getsignal(sig)
        umask = os.umask(0o022)
        os.umask(umask)
        return cls(
            limits=limits,
            handlers=handlers,
            umask=umask,
            nice=os.getpriority(os.PRIO_PROCESS, 0),
            group=(os.getpgrp(), os.getsid(0)),
            threads={t.ident for t in threading.enumerate() if t.ident is not None},
            fds={fd: _fd_identity(fd) for fd in fds},
        )

    def restore(self) -> list[str]:
        """Undo what the last evaluation changed; return what could not be undone (the
        process must then be replaced). Kills the processes it left running."""
        problems: list[str] = []
        left = kill_descendants(os.getpid())
        if left:
            # Killed, and the process replaced too: what started them (a compile-worker pool,
            # say) may still think they run.
            problems.append(f"it left {left} process(es) running (killed)")
        for lim, value in self.limits.items():
            with contextlib.suppress(ValueError, OSError):
                if resource.getrlimit(lim) == value:
                    continue
            try:
                resource.setrlimit(lim, value)
            except (ValueError, OSError):
                problems.append(f"resource limit {lim} lowered for good")
        for sig, handler in self.handlers.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                if signal.getsignal(sig) is not handler:
                    signal.signal(sig, handler)
        os.umask(self.umask)
        if os.getpriority(os.PRIO_PROCESS, 0) != self.nice:
            try:
                os.setpriority(os.PRIO_PROCESS, 0, self.nice)
            except OSError:
                problems.append("its nice value raised for good")
        if (os.getpgrp(), os.getsid(0)) != self.group:
            problems.append("it moved the process to another process group or session")
        alive = [t.name for t in threading.enumerate() if t.ident not in self.threads and t.is_alive()]
        if alive:
            problems.append(f"it left {len(alive)} thread(s) running ({', '.join(alive[:3])})")
        for fd, ident in self.fds.items():
            if _fd_identity(fd) != ident:
                problems.append(f"it closed or replaced file descriptor {fd}, which the sandbox uses")
        return problems
