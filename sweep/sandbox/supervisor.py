"""The supervisor: runs each task in a fresh sandbox process, with deadlines.

One :class:`Sandbox` per GPU (or CPU slot). Every task runs in a process of its own, forked
from a zygote (see ``_zygote``) that imported torch and the engine and never touched CUDA:
no process that ran one task's solution code runs another task's solution or reference. The
next task's process is forked while a task runs (``SandboxSpec.prefork``); on a GPU it makes
its CUDA context only once the running task says its timed calls are over (two processes
using one GPU share it by time slices: a context made during another's timing would show in
it), so most of its start is off the GPU's critical path. The process of a finished task is
killed and reaped before the next task is sent, so its memory is back first.

When a sandbox hangs past a deadline it is killed (SIGKILL) and the task gets a TIMEOUT
trace; when it dies (segfault, ``os._exit``, ...) the task gets a RUNTIME_ERROR trace with
the exit signal or code and the tail of its output.

Deadlines follow the phases the sandbox reports (a backend that says them, as the engine
does): ``settings.timeouts.run_s`` for the reference's side, which runs first, then
``compile_s`` for the solution's build, then ``run_s`` for its trials and timing. A timeout
or a crash before the solution's build began is the reference's (flag ``reference_failed``).
A backend that says no phases gets ``compile_s + run_s`` for the whole evaluation.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shutil
import signal
import socket
import stat
import tempfile
import time
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from sweep.sandbox._child import (
    ChildParams,
    Evaluate,
    Failed,
    Finished,
    Phase,
    Ready,
    SandboxInfo,
    Start,
)
from sweep.sandbox._process_guard import kill_group
from sweep.sandbox._spec import SandboxSpec, SandboxStartError, SandboxStats
from sweep.sandbox._zygote import ExitState, ZygoteClient, ZygoteError
from sweep.sandbox.failure_traces import crash_log, failure_trace, now_iso, orphan_log, timeout_log
from sweep.sandbox.handover import Adopted, Lent, ZygoteOffer, handed_zygote
from sweep.sandbox.packing import Done, Envelope
from sweep.schema import Provenance, Status, Trace
from sweep.schema.task import Task

__all__ = ["Sandbox", "SandboxSpec", "SandboxStartError", "SandboxStats"]

_POLL_SLICE_S = 0.5
_TMP_PREFIX = "sweep-sandbox-"


def _fresh_workdir() -> tempfile.TemporaryDirectory[str]:
    """A temporary folder for a supervisor's sandbox logs, named for this process.

    A worker killed with SIGKILL (Ray's shutdown kills its workers so) never removes its own
    folder, and a long-lived node would collect one per worker per launch. So the folders of
    processes that no longer exist (this user's only) are removed first.
    """
    _remove_stale_workdirs(Path(tempfile.gettempdir()))
    return tempfile.TemporaryDirectory(prefix=f"{_TMP_PREFIX}{os.getpid()}-")


def _remove_stale_workdirs(tmp: Path) -> int:
    """Remove ``tmp``'s sandbox folders whose owning process is gone; how many."""
    removed = 0
    uid = os.getuid()
    with contextlib.suppress(OSError):
        for path in tmp.glob(f"{_TMP_PREFIX}*-*"):
            pid = path.name[len(_TMP_PREFIX) :].split("-", 1)[0]
            try:
                st = path.lstat()
            except OSError:
                continue
            if not pid.isdigit() or st.st_uid != uid or not stat.S_ISDIR(st.st_mode):
                continue
            try:
                os.kill(int(pid), 0)
                continue  # alive (or reused by a live process: left alone)
            except ProcessLookupError:
                pass
            except (PermissionError, OverflowError):
                continue
            shutil.rmtree(path, ignore_errors=True)
            removed += not path.exists()
    return removed


@dataclass
class _Child:
    pid: int
    conn: Connection
    log: Path
    folder: Path
    started: bool = False  # told to make its device ready
    info: SandboxInfo | None = None  # once it said it is ready


class Sandbox(contextlib.AbstractContextManager["Sandbox"]):
    """Runs tasks one at a time, each in a fresh sandbox process it supervises.

    Args:
        spec: How to start sandboxes.
        stamp: Where this supervisor runs (node, GPU, run id); copied into each trace.
        offer: A zygote started for it by the launch's driver, adopted if it is the one it
            would start (``handover``).
        lent: A zygote the driver started for a worker and lends this process first
            (``OfferedZygote.lend``): used as it is, and given back by :meth:`close`.
        own_zygote: Whether it starts a zygote of its own when it has no (more) handed one;
            else a start fails (a driver's lane: a zygote of its own would be the driver's
            child, which a solution could reach as its zygote's parent).
    """

    def __init__(
        self,
        spec: SandboxSpec,
        stamp: Provenance | None = None,
        offer: ZygoteOffer | None = None,
        lent: Lent | None = None,
        *,
        own_zygote: bool = True,
    ) -> None:
        self.spec = spec
        self.stamp = stamp or Provenance()
        self.stats = SandboxStats()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if spec.workdir is None:
            self._tmp = _fresh_workdir()
            self._workdir = Path(self._tmp.name)
        else:
            self._workdir = Path(spec.workdir)
            self._workdir.mkdir(parents=True, exist_ok=True)
        self._zygote: ZygoteClient | None = None
        self._offer = offer
        self._lent = lent
        self._own_zygote = own_zygote
        self._child_env: tuple[tuple[tuple[str, str], ...], tuple[str, ...]] = ((), ())
        self._spare: _Child | None = None
        self._info: SandboxInfo | None = None
        self._marks: list[tuple[str, float]] = []  # the phase clock of the task running

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> SandboxInfo:
        """Start the first task's sandbox now (else the first task starts it). Returns what
        it reported."""
        child = self._ready(self._spare or self._fork())
        self._spare = child
        assert child.info is not None
        return child.info

    @property
    def info(self) -> SandboxInfo | None:
        """What the last sandbox to start reported when it became ready."""
        return self._info

    def close(self) -> None:
        """Stop the spare sandbox and the zygote."""
        spare, self._spare = self._spare, None
        if spare is not None:
            self._retire(spare)
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_zygote(self) -> ZygoteClient:
        if self._zygote is None or not self._zygote.alive():
            if self._zygote is not None:
                self._zygote.close()
            self._zygote, self._child_env = None, ((), ())
            offer, self._offer = self._offer, None
            lent, self._lent = self._lent, None
            got = handed_zygote(self.spec, offer, lent)
            if isinstance(got, Adopted):
                self._zygote, self._child_env = got.client, (got.child_env, got.child_unset)
                self.stats.zygote_adopted, self.stats.zygote_preloaded_at = True, got.client.ready.ready_at
            elif got is not None:
                self.stats.handover_refused = got
            if self._zygote is None and not self._own_zygote:
                raise SandboxStartError("its handed zygote is gone, and it starts none of its own")
            try:
                self._zygote = self._zygote or ZygoteClient(
                    self.spec.backend,
                    self.spec.device_kind,
                    self.spec.preload,
                    start_timeout_s=self.spec.start_timeout_s,
                    env_over=self.spec.env,
                )
            except ZygoteError as e:
                raise SandboxStartError(str(e)) from None
            self.stats.zygote_ready_at.append(time.time())
        return self._zygote

    def _fork(self, *, replace_dead: bool = True) -> _Child:
        """A new sandbox process, starting (not yet ready); a dead zygote replaced if ``replace_dead``."""
        zygote = self._ensure_zygote() if replace_dead or self._zygote is None else self._zygote
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.stats.started += 1
        n = self.stats.started
        log = self._workdir / f"sandbox-{n}.log"
        folder = self._workdir / f"task-{n}"
        params = ChildParams(
            self.spec.backend, self.spec.device_kind, str(folder), *self._child_env, confine=self.spec.confine
        )
        try:
            pid = zygote.fork(theirs.fileno(), str(log), params)
        except ZygoteError as e:
            ours.close()
            raise SandboxStartError(str(e)) from None
        finally:
            theirs.close()
        return _Child(pid=pid, conn=Connection(ours.detach()), log=log, folder=folder)

    def _start(self, child: _Child) -> None:
        """Tell ``child`` to make its device ready (it does nothing on the GPU before)."""
        if child.started:
            return
        child.started = True
        with contextlib.suppress(OSError):  # it died: _ready reports it
            child.conn.send(Start())

    def _ready(self, child: _Child) -> _Child:
        """``child`` once it said it is ready (started, and waited for here);
        ``SandboxStartError`` if it does not in time."""
        if child.info is not None:
            return child
        t0 = time.monotonic()
        self._start(child)
        msg: Any = None
        if child.conn.poll(self.spec.start_timeout_s):
            try:
                msg = child.conn.recv()
            except (EOFError, OSError):
                msg = None
        if not isinstance(msg, Ready):
            zygote = self._ensure_zygote()
            state = zygote.wait(child.pid, 2.0 if msg is None else 0.0)  # it may be exiting still
            if state.running:
                state = zygote.kill(child.pid)
            child.conn.close()
            tail = output_tail(child.log, 0, 8192)
            self._clean(child)
            why = "did not report ready in time" if state.running else state.describe()
            raise SandboxStartError(
                f"the sandbox process (backend {self.spec.backend!r}, device {self.spec.device_kind}) "
                f"failed to start: {why}\n{tail}"
            )
        child.info = msg.info
        self._info = child.info
        self.stats.start_seconds.append(time.monotonic() - t0)
        return child

    def _take(self) -> _Child:
        """The process for the next task: the spare, else a new one; ready."""
        child, self._spare = self._spare, None
        return self._ready(child or self._fork())

    def _prefork(self) -> None:
        """Fork the next task's process now, while this one runs (when the spec says so). It
        starts (makes its device and cache ready, ``start_process``: work that would share the
        CPU or the GPU with this task's timed calls) once they are over (``timed``), or at once
        under a backend that says no phases."""
        if not self.spec.prefork or self._spare is not None:
            return
        if self._zygote is None or not self._zygote.alive():
            return  # the task's parent died: its end is asked of that zygote; the next task gets a new one
        try:
            self._spare = self._fork(replace_dead=False)
        except SandboxStartError:
            self._spare = None  # the next task tries again and reports it
            return
        if self._info is None or not self._info.phases:
            self._start(self._spare)

    def _retire(self, child: _Child, marks: list[tuple[str, float]] | None = None) -> ExitState | None:
        """Kill and reap a task's process (its task is done), and remove its folder and log
        (``marks``: the phase clock's, told when the process is reaped)."""
        child.conn.close()
        state: ExitState | None = None
        if self._zygote is not None and self._zygote.alive():
            try:
                state = self._zygote.kill(child.pid)
            except ZygoteError:
                kill_group(child.pid)
        else:
            kill_group(child.pid)  # its parent is gone: nobody else will
        if marks is not None:
            marks.append(("sandbox killed and reaped", time.monotonic()))
        self._clean(child)
        return state

    def _clean(self, child: _Child) -> None:
        shutil.rmtree(child.folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            child.log.unlink()

    def _parent_gone(self, child: _Child | None = None) -> str | None:
        """Why the current sandbox has no parent any more (the zygote died), or ``None``.

        With ``child`` (its trace just arrived), the zygote is also asked to wait for it: a
        zygote a solution sent a kill to cannot answer (a killed process runs none of its own
        code again), though on a loaded host it may not be reaped yet."""
        zygote = self._zygote
        if zygote is None:
            return None
        if child is not None and zygote.alive():
            try:
                zygote.wait(child.pid, 0.0)  # a question it answers at once
                return None  # it answered: nothing happened to it
            except ZygoteError:
                zygote.wait_dead(10.0)  # dying: reaped, for how it ended
        if zygote.alive():
            return None
        zygote.close()
        return (
            f"the sandbox's parent process {zygote.pid} (the zygote that forks sandboxes) "
            f"{zygote.exit_state().describe()} while this task ran"
        )

    # -- running tasks --------------------------------------------------------------------

    def run(self, task: Task, *, attempt: int = 0) -> Trace:
        """Evaluate ``task`` in a fresh sandbox; always returns exactly one trace.

        Raises:
            SandboxStartError: when no sandbox can be started (not a kernel's fault).
        """
        return self.run_batch([Envelope.of(task, attempt)])[0].trace(task)

    def run_batch(self, envs: list[Envelope]) -> list[Done]:
        """Run several tasks, one after the other, each in a fresh process; one result each,
        in order.

        The supervisor passes tasks and traces through without unpickling or parsing them
        (the receiver stamps them, see :meth:`Done.trace`), so a healthy evaluation costs it
        no model work at all. While a task runs, the next task's process starts.
        """
        out: list[Done] = []
        for env in envs:
            marks = [("turn", time.monotonic())]
            child = self._take()
            marks.append(("sandbox ready (fork, start)", time.monotonic()))
            # Before the send: the sandbox may receive it and mark its clock before this process runs again.
            marks.append(("task sending", time.monotonic()))
            try:
                child.conn.send(Evaluate(env.blob, env.records))
            except OSError:
                pass  # it died before its task: the receive below sees the end and reports it
            self._marks = marks
            t_fork = time.monotonic()
            self._prefork()  # beside the task's evaluation, not on the timeline
            self.stats.prefork_seconds.append(time.monotonic() - t_fork)
            try:
                out.append(self._await(child, env))
            finally:
                marks.append(("trace received", time.monotonic()))
                self._retire(child, marks)
                marks.append(("task folder and log removed", time.monotonic()))
                self.stats.timelines.append(marks)
        return out

    def _await(self, child: _Child, env: Envelope) -> Done:
        """Wait for ``env``'s trace from ``child`` under its deadlines; always one result."""
        self.stats.tasks += 1
        stamp = self.stamp.model_copy(
            update={"worker_pid": child.pid, "started_at": now_iso(), "attempt": env.attempt}
        )
        assert child.info is not None
        if child.info.phases:
            phase, budget = "reference", env.run_s
        else:
            phase, budget = "evaluation", env.compile_s + env.run_s
        deadline = time.monotonic() + budget
        while True:
            try:
                msg, state = self._receive(child, deadline)
            except ZygoteError:
                state = ExitState(running=False)
            # Whatever the sandbox did or said, a dead parent means the task broke out of it.
            if state is not None:
                gone = self._parent_gone()
            elif isinstance(msg, Finished):
                gone = self._parent_gone(child)
            else:
                gone = None
            if gone is not None:
                return self._orphaned(env.task(), stamp, child, gone)
            if state is not None:
                return self._died(env.task(), stamp, child, state, phase)
            if msg is None:
                return self._timed_out(env.task(), stamp, child, phase, budget)
            if isinstance(msg, Phase) and msg.name == "timed":
                if self._spare is not None:  # nothing of this task is timed any more
                    self._start(self._spare)
                continue
            if isinstance(msg, Phase) and msg.name in ("build", "run"):
                phase = msg.name
                budget = env.compile_s if phase == "build" else env.run_s
                deadline = time.monotonic() + budget
                continue
            if isinstance(msg, Finished):
                if msg.broken:
                    self.stats.replaced_broken += 1
                self._marks.extend(_clean_marks(msg.marks))
                done = stamp.model_copy(
                    update={"started_at": now_iso(msg.started), "finished_at": now_iso(msg.finished)}
                )
                return Done(bytes(msg.trace_json), done)
            if isinstance(msg, Failed):
                log = f"the engine raised instead of returning a trace:\n{msg.text}"
                return self._failure(env.task(), Status.RUNTIME_ERROR, log, stamp, phase)

    def _receive(self, child: _Child, deadline: float) -> tuple[Any, ExitState | None]:
        """Next message, or ``(None, state)`` if the sandbox died, ``(None, None)`` at the deadline."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None, None
            try:
                if child.conn.poll(min(left, _POLL_SLICE_S)):
                    return child.conn.recv(), None
            except (EOFError, OSError):
                return None, self._reap(child, socket_closed=True)
            # No message yet: a process that died while a grandchild holds its socket open
            # never shows EOF, so ask the zygote.
            if self._zygote is not None and not self._zygote.wait(child.pid, 0).running:
                # A sandbox sends its result and then exits. Between the poll above and the
                # zygote's answer (late when a gang's ranks share the zygote) it may have done
                # both, so what it sent before dying is read before it is called dead.
                try:
                    if child.conn.poll(0):
                        return child.conn.recv(), None
                except (EOFError, OSError):
                    pass
                return None, self._reap(child)

    def _reap(self, child: _Child, *, socket_closed: bool = False) -> ExitState:
        assert self._zygote is not None
        state = self._zygote.wait(child.pid, 2.0)
        if state.running:  # closed its socket but lives on: not ours to trust any more
            state = self._zygote.kill(child.pid)
            # A process that dies (a crash) closes its socket by dying; one still alive 2 s
            # after its socket closed closed it itself (its own exit, code LOST_CONNECTION,
            # can be that late on a loaded host): say so rather than only "killed".
            if socket_closed:
                state = dataclasses.replace(state, socket_closed=True)
        return state

    def _failure(self, task: Task, status: Status, log: str, stamp: Provenance, phase: str) -> Done:
        """The result for a task the sandbox could not finish: a trace written here (before the
        solution's build began, ``phase`` ``reference``, the reference's failure)."""
        info = self._info
        done = stamp.model_copy(update={"finished_at": now_iso()})
        device_name, libs = (info.device_name, info.libs) if info else (None, None)
        trace = failure_trace(task, status, log, done, device_name=device_name, libs=libs, phase=phase)
        return Done(trace.to_json().encode(), done)

    def _died(self, task: Task, stamp: Provenance, child: _Child, state: ExitState, phase: str) -> Done:
        self.stats.crashes += 1
        tail = output_tail(child.log, 0, task.settings.log_limit_bytes)
        return self._failure(
            task, Status.RUNTIME_ERROR, crash_log(child.pid, state, phase, tail), stamp, phase
        )

    def _orphaned(self, task: Task, stamp: Provenance, child: _Child, why: str) -> Done:
        """The task's sandbox lost its parent: the task is blamed (nothing else ran there), the
        sandbox killed (by ``run_batch``), and the next task gets a new zygote and sandbox."""
        self.stats.crashes += 1
        spare, self._spare = self._spare, None
        if spare is not None:  # forked by the zygote that died: no parent to report to
            self._retire(spare)
        tail = output_tail(child.log, 0, task.settings.log_limit_bytes)
        return self._failure(task, Status.RUNTIME_ERROR, orphan_log(child.pid, why, tail), stamp, "run")

    def _timed_out(self, task: Task, stamp: Provenance, child: _Child, phase: str, budget: float) -> Done:
        self.stats.timeouts += 1
        dump_stacks(child.pid, child.log)
        if self._zygote is not None and self._zygote.alive():
            with contextlib.suppress(ZygoteError):
                self._zygote.kill(child.pid)
        tail = output_tail(child.log, 0, task.settings.log_limit_bytes)
        return self._failure(task, Status.TIMEOUT, timeout_log(child.pid, phase, budget, tail), stamp, phase)


def _clean_marks(marks: object) -> list[tuple[str, float]]:
    """The phase marks a sandbox sent, as far as they are marks (its process ran a solution:
    what it sent is not trusted to be anything), at most 256, names clipped."""
    out: list[tuple[str, float]] = []
    if not isinstance(marks, tuple):
        return out
    for m in marks[:256]:
        if isinstance(m, tuple) and len(m) == 2 and isinstance(m[0], str) and isinstance(m[1], float):
            out.append((m[0][:80], m[1]))
    return out


# ---- The sandbox's output file, read when a sandbox dies or hangs, and the words for what
# happened. A sandbox writes its stdout, stderr and crash reports (faulthandler) to one log
# file; the supervisor remembers the offset at which each task started, so a failure trace
# carries the tail of that task's output only.


def dump_stacks(pid: int, log: Path) -> None:
    """Ask a hung sandbox where it is (faulthandler on SIGUSR1) before it is killed; wait until
    its report is in ``log``."""
    start = file_size(log)
    try:
        os.kill(pid, signal.SIGUSR1)
    except OSError:
        return
    wait_quiet(log, start, 2.0)


def file_size(path: Path) -> int:
    """Bytes in ``path`` (0 when it cannot be read)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def wait_quiet(path: Path, start: int, timeout: float) -> None:
    """Wait until ``path`` has grown past ``start`` and stopped growing (a stack dump being
    written), at most ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = start
    while time.monotonic() < deadline:
        time.sleep(0.05)
        size = file_size(path)
        if size == last and size > start:
            return
        last = size


def output_tail(path: Path, offset: int, limit: int) -> str:
    """The last ``limit`` bytes written to ``path`` after ``offset``."""
    try:
        size = path.stat().st_size
        start = max(offset, size - limit) if size >= offset else max(0, size - limit)
        with open(path, "rb") as f:
            f.seek(start)
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""
