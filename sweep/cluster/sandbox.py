"""The supervisor: runs tasks in a long-lived sandbox process, with deadlines.

One :class:`Sandbox` per GPU (or CPU slot). The sandbox process is forked from a zygote
(see ``_zygote``) and reused for task after task, keeping the engine's cache and its CUDA
context. When it hangs past a deadline it is killed (SIGKILL) and the task gets a TIMEOUT
trace; when it dies (segfault, ``os._exit``, ...) the task gets a RUNTIME_ERROR trace with
the exit signal or code and the tail of its output; after a sticky CUDA error it is
replaced once the trace is written. A replaced sandbox is never reused.

Two deadlines per task: ``settings.timeouts.compile_s`` until the build phase ends (the
sandbox says ``built``), then ``settings.timeouts.run_s`` for the rest. With a backend that
has no separate build step, the whole evaluation gets ``compile_s + run_s``.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import socket
import tempfile
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from typing_extensions import Self

from sweep.cluster._failure_traces import failure_trace, now_iso
from sweep.cluster._packing import Done, Envelope, TaskPacker, build_key, load_task
from sweep.cluster._process_guard import kill_group
from sweep.cluster._sandbox_log import crash_log, file_size, orphan_log, output_tail, timeout_log, wait_quiet
from sweep.cluster._sandbox_main import SandboxInfo
from sweep.cluster._sandbox_spec import SandboxSpec, SandboxStartError, SandboxStats
from sweep.cluster._zygote import ExitState, ZygoteClient, ZygoteError
from sweep.schema import Provenance, Status, Trace
from sweep.schema.task import Task

__all__ = [
    "Done",
    "Envelope",
    "Sandbox",
    "SandboxSpec",
    "SandboxStartError",
    "SandboxStats",
    "TaskPacker",
    "build_key",
    "load_task",
]

_POLL_SLICE_S = 0.5
_LOG_ROTATE_BYTES = 4 << 20
#: Record sets (definition, solution, settings, ceilings) a sandbox keeps unpickled; the supervisor
#: tells it which to forget beyond that.
_MAX_RECORD_SETS = 64


@dataclass
class _Child:
    pid: int
    conn: Connection
    log: Path
    info: SandboxInfo
    built: set[str] = field(default_factory=set)  # build keys this process has built
    # record sets this process holds, oldest first (it forgets what the supervisor says)
    records: OrderedDict[str, None] = field(default_factory=OrderedDict)


class Sandbox:
    """Supervises one sandbox process and runs tasks in it, one at a time.

    Args:
        spec: How to start sandboxes.
        stamp: Where this supervisor runs (node, GPU, run id); copied into each trace.
    """

    def __init__(self, spec: SandboxSpec, stamp: Provenance | None = None) -> None:
        self.spec = spec
        self.stamp = stamp or Provenance()
        self.stats = SandboxStats()
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if spec.workdir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="sweep-sandbox-")
            self._workdir = Path(self._tmp.name)
        else:
            self._workdir = Path(spec.workdir)
            self._workdir.mkdir(parents=True, exist_ok=True)
        self._zygote: ZygoteClient | None = None
        self._child: _Child | None = None
        self._info: SandboxInfo | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def start(self) -> SandboxInfo:
        """Start the sandbox now (else the first task starts it). Returns what it reported."""
        return self._ensure_child().info

    @property
    def info(self) -> SandboxInfo | None:
        """What the current (or last) sandbox reported when it became ready."""
        return self._info

    def close(self) -> None:
        """Stop the sandbox and the zygote."""
        self._drop_child()
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_zygote(self) -> ZygoteClient:
        if self._zygote is None or not self._zygote.alive():
            if self._zygote is not None:
                self._zygote.close()
            try:
                self._zygote = ZygoteClient(
                    self.spec.backend,
                    self.spec.device_kind,
                    self.spec.preload,
                    start_timeout_s=self.spec.start_timeout_s,
                )
            except ZygoteError as e:
                raise SandboxStartError(str(e)) from None
        return self._zygote

    def _ensure_child(self) -> _Child:
        if self._child is not None:
            return self._child
        t0 = time.monotonic()
        zygote = self._ensure_zygote()
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        self.stats.started += 1
        log = self._workdir / f"sandbox-{self.stats.started}.log"
        params = {"backend": self.spec.backend, "device_kind": self.spec.device_kind}
        try:
            pid = zygote.fork(theirs.fileno(), str(log), params)
        except ZygoteError as e:
            ours.close()
            raise SandboxStartError(str(e)) from None
        finally:
            theirs.close()
        conn = Connection(ours.detach())
        msg: Any = None
        if conn.poll(self.spec.start_timeout_s):
            try:
                msg = conn.recv()
            except (EOFError, OSError):
                msg = None
        if not (isinstance(msg, tuple) and msg and msg[0] == "ready"):
            state = zygote.wait(pid, 2.0 if msg is None else 0.0)  # it may be exiting still
            if state.running:
                state = zygote.kill(pid)
            conn.close()
            why = "did not report ready in time" if state.running else state.describe()
            raise SandboxStartError(
                f"the sandbox process (backend {self.spec.backend!r}, device {self.spec.device_kind}) "
                f"failed to start: {why}\n{output_tail(log, 0, 8192)}"
            )
        info: SandboxInfo = msg[1]
        self._info = info
        self._child = _Child(pid=pid, conn=conn, log=log, info=info)
        self.stats.start_seconds.append(time.monotonic() - t0)
        return self._child

    def _drop_child(self) -> ExitState | None:
        child, self._child = self._child, None
        if child is None:
            return None
        child.conn.close()
        if self._zygote is not None and self._zygote.alive():
            try:
                return self._zygote.kill(child.pid)
            except ZygoteError:
                pass
        kill_group(child.pid)  # its parent is gone: nobody else will
        return None

    def _parent_gone(self) -> str | None:
        """Why the current sandbox has no parent any more (the zygote died), or ``None``."""
        zygote = self._zygote
        if zygote is None or zygote.alive():
            return None
        zygote.close()
        return (
            f"the sandbox's parent process {zygote.pid} (the zygote that forks sandboxes) "
            f"{zygote.exit_state().describe()} while this task ran"
        )

    # -- running tasks --------------------------------------------------------------------

    def run(self, task: Task, *, attempt: int = 0) -> Trace:
        """Evaluate ``task`` in the sandbox; always returns exactly one trace.

        Raises:
            SandboxStartError: when no sandbox can be started (not a kernel's fault).
        """
        return self.run_batch([Envelope.of(task, attempt)])[0].trace(task)

    def run_batch(self, envs: list[Envelope]) -> list[Done]:
        """Run several tasks, one after the other; one result each, in order.

        The supervisor passes tasks and traces through without unpickling or parsing them
        (the receiver stamps them, see :meth:`Done.trace`), so a healthy evaluation costs it
        no model work at all.

        While a task runs, the next one is already written to the sandbox's pipe when both
        are past their build step, so the sandbox starts it the moment it has sent the
        previous trace: the round trip through this supervisor is off the GPU's critical
        path. A task sent to a sandbox that then died or was replaced is sent again to the
        new one; its deadline starts when the previous trace arrives.
        """
        out: list[Done] = []
        # (sandbox, task, log offset when sent): sent ahead to the current sandbox. Its crash
        # report is read from that offset, which may include the end of the previous task's
        # output but never misses its own.
        queued: tuple[_Child, Envelope, int] | None = None
        for i, env in enumerate(envs):
            if queued is not None and queued[0] is self._child and queued[1] is env:
                child, offset = queued[0], queued[2]
            else:
                child, offset = self._send(env)
            queued = None
            nxt = envs[i + 1] if i + 1 < len(envs) else None
            if nxt is not None and env.build_key in child.built and nxt.build_key in child.built:
                try:
                    sent_at = file_size(child.log)
                    self._post(child, nxt)
                    queued = (child, nxt, sent_at)
                except OSError:
                    queued = None  # it died: the receive below reports env, nxt is sent anew
            out.append(self._await(child, env, offset))
        return out

    def _post(self, child: _Child, env: Envelope) -> None:
        """Write ``env`` to ``child``, with its records unless the child holds them."""
        records: bytes | None = None
        forget: str | None = None
        if env.records_key in child.records:
            child.records.move_to_end(env.records_key)
        else:
            records = env.records
            if len(child.records) >= _MAX_RECORD_SETS:
                forget, _ = child.records.popitem(last=False)
            child.records[env.records_key] = None
        child.conn.send(("eval", env.blob, env.build_key, env.records_key, records, forget))

    def _send(self, env: Envelope) -> tuple[_Child, int]:
        child = self._ensure_child()
        offset = file_size(child.log)
        if offset > _LOG_ROTATE_BYTES:
            os.truncate(child.log, 0)
            offset = 0
        try:
            self._post(child, env)
        except OSError:
            pass  # it died between tasks: the receive below sees the end and reports it
        return child, offset

    def _await(self, child: _Child, env: Envelope, offset: int) -> Done:
        """Wait for ``env``'s trace from ``child`` under its deadlines; always one result."""
        self.stats.tasks += 1
        stamp = self.stamp.model_copy(
            update={"worker_pid": child.pid, "started_at": now_iso(), "attempt": env.attempt}
        )
        if env.build_key in child.built:  # the sandbox skips the build and says nothing
            phase, budget = "run", env.run_s
        elif child.info.has_build:
            phase, budget = "build", env.compile_s
        else:
            phase, budget = "evaluation", env.compile_s + env.run_s
        deadline = time.monotonic() + budget
        while True:
            try:
                msg, state = self._receive(child, deadline)
            except ZygoteError:
                state = ExitState(running=False)
            # Whatever the sandbox did or said, a dead parent means the task broke out of it.
            gone = self._parent_gone() if state is not None or (msg and msg[0] == "trace") else None
            if gone is not None:
                return self._orphaned(env.task(), stamp, child, offset, gone)
            if state is not None:
                return self._died(env.task(), stamp, child, offset, state, phase)
            if msg is None:
                return self._timed_out(env.task(), stamp, child, offset, phase, budget)
            kind = msg[0]
            if kind == "built":
                child.built.add(env.build_key)
                phase, budget = "run", env.run_s
                deadline = time.monotonic() + budget
                continue
            if kind == "trace":
                payload, broken, started, finished = msg[1], msg[2], msg[3], msg[4]
                if broken:
                    self.stats.replaced_broken += 1
                    self._drop_child()
                done = stamp.model_copy(
                    update={"started_at": now_iso(started), "finished_at": now_iso(finished)}
                )
                return Done(bytes(payload), done)
            if kind == "error":
                self._drop_child()
                log = f"the engine raised instead of returning a trace:\n{msg[1]}"
                return self._failure(env.task(), Status.RUNTIME_ERROR, log, stamp)

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
        child.conn.close()
        self._child = None
        return state

    def _failure(self, task: Task, status: Status, log: str, stamp: Provenance) -> Done:
        """The result for a task the sandbox could not finish: a trace written here."""
        info = self._info
        done = stamp.model_copy(update={"finished_at": now_iso()})
        trace = failure_trace(
            task,
            status,
            log,
            done,
            device_name=info.device_name if info else None,
            libs=info.libs if info else None,
        )
        return Done(trace.to_json().encode(), done)

    def _died(
        self, task: Task, stamp: Provenance, child: _Child, offset: int, state: ExitState, phase: str
    ) -> Done:
        self.stats.crashes += 1
        tail = output_tail(child.log, offset, task.settings.log_limit_bytes)
        return self._failure(task, Status.RUNTIME_ERROR, crash_log(child.pid, state, phase, tail), stamp)

    def _orphaned(self, task: Task, stamp: Provenance, child: _Child, offset: int, why: str) -> Done:
        """The task's sandbox lost its parent: the task is blamed (nothing else ran there),
        the sandbox killed, and the next task gets a new zygote and sandbox."""
        self.stats.crashes += 1
        if self._child is child:
            self._drop_child()
        else:
            child.conn.close()
            kill_group(child.pid)
        tail = output_tail(child.log, offset, task.settings.log_limit_bytes)
        return self._failure(task, Status.RUNTIME_ERROR, orphan_log(child.pid, why, tail), stamp)

    def _dump_stacks(self, child: _Child) -> None:
        """Ask a hung sandbox where it is (faulthandler on SIGUSR1) before it is killed."""
        start = file_size(child.log)
        try:
            os.kill(child.pid, signal.SIGUSR1)
        except OSError:
            return
        wait_quiet(child.log, start, 2.0)

    def _timed_out(
        self, task: Task, stamp: Provenance, child: _Child, offset: int, phase: str, budget: float
    ) -> Done:
        self.stats.timeouts += 1
        self._dump_stacks(child)
        self._drop_child()
        tail = output_tail(child.log, offset, task.settings.log_limit_bytes)
        return self._failure(task, Status.TIMEOUT, timeout_log(child.pid, phase, budget, tail), stamp)
