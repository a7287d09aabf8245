"""Traces the scheduler writes itself: when the sandbox dies, hangs, or the worker is lost.

The engine writes the trace of every evaluation that returns. When it cannot (the process
running it was killed, crashed, or its node vanished), the supervisor or the driver writes
one here, so every task still ends with exactly one trace.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from sweep.hardware import record_name
from sweep.schema import Environment, Evaluation, Provenance, Status, Trace
from sweep.task import Task

__all__ = ["Stamp", "clip_log", "failure_trace", "now_iso", "stamp_trace"]


def now_iso(epoch: float | None = None) -> str:
    """The current UTC time (or ``epoch``, a ``time.time()`` value), ISO 8601 with microseconds."""
    moment = datetime.now(timezone.utc) if epoch is None else datetime.fromtimestamp(epoch, timezone.utc)
    return moment.isoformat()


@dataclass(frozen=True)
class Stamp:
    """Where and when one evaluation ran: merged into ``Trace.provenance``."""

    run_id: str | None = None
    node_id: str | None = None
    gpu_id: str | None = None
    worker_pid: int | None = None
    started_at: str | None = None
    finished_at: str | None = None
    attempt: int | None = None


def clip_log(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` UTF-8 bytes: its head (what happened, up to a third)
    and its tail (the last output before the end), joined by a marker."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return text
    marker = b"\n[... clipped ...]\n"
    room = max(0, limit - len(marker))
    head = raw[: room // 3]
    tail = raw[len(raw) - (room - len(head)) :] if room > len(head) else b""
    out = (head + marker + tail).decode("utf-8", "ignore")
    while len(out.encode()) > limit:  # a multi-byte character cut in two may re-encode longer
        out = out[:-1]
    return out


_STAMP_FIELDS = ("run_id", "node_id", "gpu_id", "worker_pid", "started_at", "finished_at", "attempt")


def _provenance(task: Task, stamp: Stamp, base: Provenance | None) -> Provenance:
    """Task identity (where the engine left it empty) plus ``stamp`` (always)."""
    identity = {
        "task_id": lambda: task.task_id,
        "sweep": lambda: task.sweep or None,
        "solution_hash": lambda: task.solution.content_hash,
        "config_hash": lambda: task.config_hash or None,
        "settings_hash": task.settings.settings_hash,
    }
    update: dict[str, object] = {}
    for key, value in identity.items():  # computed only where the engine left a gap
        if base is None or getattr(base, key) is None:
            v = value()
            if v is not None:
                update[key] = v
    update.update({k: getattr(stamp, k) for k in _STAMP_FIELDS if getattr(stamp, k) is not None})
    if base is None:
        return Provenance.model_validate(update)
    return base.model_copy(update=update)


def stamp_trace(trace: Trace, task: Task, stamp: Stamp) -> Trace:
    """``trace`` with its provenance carrying the task identity and ``stamp``.

    The scheduler's own fields (run, node, GPU, worker, start/end, attempt) win over what the
    engine wrote: they bracket the whole evaluation, as seen by the process that owns the GPU.
    """
    return trace.model_copy(update={"provenance": _provenance(task, stamp, trace.provenance)})


def failure_trace(
    task: Task,
    status: Status,
    log: str,
    stamp: Stamp,
    *,
    device_name: str | None = None,
    libs: dict[str, str] | None = None,
) -> Trace:
    """A RUNTIME_ERROR or TIMEOUT trace for ``task`` that the engine could not write.

    Args:
        task: The task that failed.
        status: ``Status.RUNTIME_ERROR`` or ``Status.TIMEOUT``.
        log: Why, with the tail of the sandbox's output; clipped to the task's log limit.
        stamp: Where and when it ran.
        device_name: The raw device name, when the sandbox reported one.
        libs: Library versions, when the sandbox reported them.
    """
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
    )
    trace = Trace(
        definition=task.definition.name,
        workload=task.workload,
        solution=task.solution.name,
        evaluation=evaluation,
    )
    return stamp_trace(trace, task, stamp)
