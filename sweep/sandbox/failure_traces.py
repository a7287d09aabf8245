"""Traces the scheduler writes itself: when the sandbox dies, hangs, or the worker is lost.

The engine writes the trace of every evaluation that returns. When it cannot (the process
running it was killed, crashed, or its node vanished), the supervisor or the driver writes
one here, so every task still ends with exactly one trace.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Protocol

from sweep.schema import FLAG_REFERENCE_FAILED, Environment, Evaluation, Provenance, Status, Trace
from sweep.schema.hardware import record_name
from sweep.schema.task import Task
from sweep.schema.trace_log import clip_log

__all__ = [
    "LOST_CONNECTION",
    "crash_log",
    "failure_trace",
    "lost_worker_trace",
    "now_iso",
    "orphan_log",
    "short_error",
    "stamp_trace",
    "timeout_log",
]

#: The exit code of a sandbox that cannot send a result: its socket was closed or replaced
#: (its output may be lost too: the descriptors it printed to may be gone).
LOST_CONNECTION = 75


class _Ended(Protocol):
    """How a sandbox process ended (``_zygote.ExitState``)."""

    @property
    def code(self) -> int | None: ...

    @property
    def socket_closed(self) -> bool: ...

    def describe(self) -> str: ...


def now_iso(epoch: float | None = None) -> str:
    """The current UTC time (or ``epoch``, a ``time.time()`` value), ISO 8601 with microseconds."""
    moment = datetime.now(timezone.utc) if epoch is None else datetime.fromtimestamp(epoch, timezone.utc)
    return moment.isoformat()


def _provenance(task: Task, stamp: Provenance, base: Provenance | None) -> Provenance:
    """Task identity (where the engine left it empty) plus the run fields of ``stamp`` (always)."""
    if base is None:
        base = task.provenance()
    else:
        gaps = [k for k in Provenance.IDENTITY_FIELDS if getattr(base, k) is None]
        if gaps:  # the identity is computed only where the engine left a gap
            identity = task.provenance()
            base = base.model_copy(
                update={k: getattr(identity, k) for k in gaps if getattr(identity, k) is not None}
            )
    run = {k: getattr(stamp, k) for k in Provenance.RUN_FIELDS if getattr(stamp, k) is not None}
    # The decision a confirmation run carries is the driver's word, never the engine's.
    return base.model_copy(update={**run, "tuning": task.tuning})


def stamp_trace(trace: Trace, task: Task, stamp: Provenance) -> Trace:
    """``trace`` with its provenance carrying the task identity and the run fields of ``stamp``
    (``Provenance.RUN_FIELDS``: where and when it ran).

    The scheduler's own fields (run, node, GPU, worker, start/end, attempt) win over what the
    engine wrote: they bracket the whole evaluation, as seen by the process that owns the GPU.
    """
    return trace.model_copy(update={"provenance": _provenance(task, stamp, trace.provenance)})


def failure_trace(
    task: Task,
    status: Status,
    log: str,
    stamp: Provenance,
    *,
    device_name: str | None = None,
    libs: dict[str, str] | None = None,
    phase: str = "",
) -> Trace:
    """A RUNTIME_ERROR or TIMEOUT trace for ``task`` that the engine could not write.

    Args:
        task: The task that failed.
        status: ``Status.RUNTIME_ERROR`` or ``Status.TIMEOUT``.
        log: Why, with the tail of the sandbox's output; clipped to the task's log limit.
        stamp: Where and when it ran.
        device_name: The raw device name, when the sandbox reported one.
        libs: Library versions, when the sandbox reported them.
        phase: Where the evaluation was: before the solution's build began (``reference``)
            the failure is the reference's, a RUNTIME_ERROR flagged ``reference_failed``.
    """
    whose = phase == "reference"
    if whose:
        status = Status.RUNTIME_ERROR
    env = Environment(
        hardware=record_name(task.hardware),
        libs=dict(libs or {}),
        **({"device_name": device_name} if device_name else {}),
    )
    evaluation = Evaluation(
        status=status,
        environment=env,
        timestamp=stamp.finished_at or now_iso(),
        log=clip_log(f"{status.value}: {log}", task.settings.log_limit_bytes),
        seed=task.settings.seed,
        flags=[FLAG_REFERENCE_FAILED] if whose else None,
    )
    trace = Trace(
        definition=task.definition.name,
        workload=task.workload,
        solution=task.solution.name,
        evaluation=evaluation,
        **({"solution_params": task.params} if task.params is not None else {}),
    )
    return stamp_trace(trace, task, stamp)


def lost_worker_trace(
    task: Task,
    why: str,
    run_id: str,
    attempt: int,
    node_id: str | None,
    gpu_id: str | None,
    worker_pid: int | None,
) -> Trace:
    """The RUNTIME_ERROR trace of a task given up after its worker was lost ``attempt + 1``
    times (its node died, or its process was killed): ``why`` is the last error, the rest
    where it last ran (``None`` when the worker never said)."""
    stamp = Provenance(
        run_id=run_id,
        node_id=node_id,
        gpu_id=gpu_id,
        worker_pid=worker_pid,
        finished_at=now_iso(),
        attempt=attempt,
    )
    log = (
        f"the worker running this task was lost {attempt + 1} time(s) (its node died, or its "
        f"process was killed); not retried again. Last error: {why}"
    )
    return failure_trace(task, Status.RUNTIME_ERROR, log, stamp)


def short_error(e: BaseException) -> str:
    """What a failed Ray call says, in a few lines: the exception's type and its last 12 lines."""
    text = str(e).strip()
    lines = [ln for ln in text.splitlines() if ln.strip()]
    # Ray wraps a remote exception in its traceback; the last line says what happened.
    head = f"{type(e).__name__}: " if not text.startswith(type(e).__name__) else ""
    return head + ("\n".join(lines[-12:]) if lines else repr(e))


def crash_log(pid: int, state: _Ended, phase: str, tail: str) -> str:
    """The log of a task whose sandbox process died in ``phase`` (``reference``, ``build``,
    ``run`` or ``evaluation``)."""
    what = {
        "reference": "while running the reference (before the solution was imported)",
        "build": "while building/importing the solution",
        "run": "while running",
    }.get(phase, "during the evaluation")
    why = ""
    if state.code == LOST_CONNECTION or state.socket_closed:
        why = (
            ": it could not send its result, its socket to the supervisor was closed or replaced "
            "(a solution closing file descriptors it does not own)"
        )
    return f"sandbox process {pid} {state.describe()} {what}{why}.\n--- sandbox output (tail) ---\n{tail}"


def orphan_log(pid: int, why: str, tail: str) -> str:
    """The log of a task during which its sandbox's parent (the zygote) died: ``why`` says how."""
    return (
        f"{why}; sandbox process {pid} was killed and the zygote replaced. A solution must not "
        "signal processes other than its own (os.kill(os.getppid(), ...) and the like).\n"
        f"--- sandbox output (tail) ---\n{tail}"
    )


def timeout_log(pid: int, phase: str, budget: float, tail: str) -> str:
    """The log of a task whose sandbox process was killed after ``budget`` seconds in ``phase``."""
    if phase == "reference":
        what = f"the reference's side (before the solution was imported) exceeded timeouts.run_s={budget:g} s"
    elif phase == "build":
        what = f"the build phase (import, compile) exceeded timeouts.compile_s={budget:g} s"
    elif phase == "run":
        what = f"the run phase exceeded timeouts.run_s={budget:g} s"
    else:
        what = f"the evaluation exceeded timeouts.compile_s + run_s = {budget:g} s"
    return f"{what}; sandbox process {pid} was killed (SIGKILL).\n--- sandbox output (tail) ---\n{tail}"
