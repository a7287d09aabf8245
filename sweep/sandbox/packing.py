"""How tasks travel to a sandbox and traces come back (both sides of the pipe use this).

A task's definition, solution, settings and ceilings go apart, pickled once per distinct set,
and a sandbox unpickles each set once and keeps it. Per task it then unpickles only the
workload and a few strings (the task's other fields, without the records); its trace comes
back as JSON. Both are on the GPU's critical path (the sandbox's time between two
evaluations is the GPU's idle time), and packing is on the driver's (at 10,000 tasks a
second, every microsecond per task is 1% of a core), so both are the cheapest there is.
"""

from __future__ import annotations

import hashlib
import pickle
from dataclasses import dataclass
from typing import Any

from sweep.sandbox.failure_traces import stamp_trace
from sweep.schema import Provenance, Trace
from sweep.schema.task import Task

__all__ = [
    "COMPILED_LANGUAGES",
    "Done",
    "Envelope",
    "TaskPacker",
    "build_key",
    "load_task",
    "worth_compiling",
]

#: Solution languages whose kernels are compiled (what a compile pool can do ahead).
COMPILED_LANGUAGES = frozenset({"triton", "cuda", "cpp", "tilelang"})


def build_key(task: Task) -> str:
    """Identity of what the engine's build step makes for ``task``: the definition's
    reference and the solution, by content."""
    ref = hashlib.sha256(task.definition.reference.encode()).hexdigest()[:16]
    return f"{task.definition.name}:{ref}:{task.solution.content_hash}"


#: The fields of a task that travel apart, once per distinct set (``Envelope.records``).
_RECORDS = ("definition", "solution", "settings", "ceilings")


def load_task(blob: bytes, records: tuple[Any, ...]) -> Task:
    """Unpickle a task packed by :class:`TaskPacker`, given its unpickled records."""
    fields, fields_set = pickle.loads(blob)
    fields.update(zip(_RECORDS, records, strict=True))
    # Every value was validated when the driver's task was made; they are put back as they were.
    return Task.model_construct(fields_set, **fields)


@dataclass(frozen=True)
class Envelope:
    """A task on its way to a sandbox: pickled once by the driver, unpickled only there.

    The task's definition, solution, settings and ceilings travel apart, in ``records``: one
    blob shared by every task that has the same four, which a sandbox unpickles once and keeps.
    Per task it then unpickles only the workload and a few strings (a few times cheaper
    than the whole task, and on the GPU's critical path).

    Attributes:
        blob: The pickled fields of the :class:`~sweep.schema.Task` other than its records.
        records: The pickled ``(definition, solution, settings, ceilings)``.
        records_key: Identity of ``records`` (the same key, the same bytes).
        task_id: Its id.
        compile_s: Deadline of the build phase.
        run_s: Deadline of the rest.
        attempt: How many times its worker was lost before (0 at first).
        build_key: What the build step produces (see :func:`build_key`): a sandbox builds
            each key once, then skips the step (and its deadline) for later tasks.
        compiled: The solution is compiled (Triton, CUDA, C++, TileLang): worth compiling
            ahead in a compile pool.
    """

    blob: bytes
    records: bytes
    records_key: str
    task_id: str
    compile_s: float
    run_s: float
    attempt: int = 0
    build_key: str = ""
    compiled: bool = False

    @classmethod
    def of(cls, task: Task, attempt: int = 0) -> Envelope:
        """Wrap ``task`` on its own (a :class:`TaskPacker` shares records between tasks)."""
        return TaskPacker().pack(task, attempt)

    def task(self) -> Task:
        """The task (unpickled)."""
        return load_task(self.blob, pickle.loads(self.records))


class TaskPacker:
    """Makes envelopes, pickling each distinct (definition, solution, settings, ceilings) once.

    Records are recognised by identity (a plan's tasks share their record objects), and
    kept alive here so an identity is never reused for another object.
    """

    def __init__(self) -> None:
        self._sets: dict[tuple[int, ...], tuple[tuple[object, ...], str, bytes, str]] = {}

    def pack(self, task: Task, attempt: int = 0) -> Envelope:
        """The envelope of ``task``."""
        # The ceilings are one object per launch (or None), shared by every task like the rest.
        refs = (task.definition, task.solution, task.settings, task.ceilings)
        ident = tuple(id(r) for r in refs)
        known = self._sets.get(ident)
        if known is None:
            key = build_key(task)
            records = pickle.dumps(refs, protocol=pickle.HIGHEST_PROTOCOL)
            records_key = f"{key}:{hashlib.sha256(records).hexdigest()[:16]}"
            known = self._sets[ident] = (refs, key, records, records_key)
        _, key, records, records_key = known
        # The fields as they are, less the records: a plain dict pickles without a Python call
        # per object (a persistent-id pickler of the whole task cost ~30 us a task, this ~6).
        fields = {k: v for k, v in task.__dict__.items() if k not in _RECORDS}
        blob = pickle.dumps((fields, task.model_fields_set), protocol=pickle.HIGHEST_PROTOCOL)
        t = task.settings.timeouts
        return Envelope(
            blob,
            records,
            records_key,
            task.task_id,
            t.compile_s,
            t.run_s,
            attempt,
            key,
            worth_compiling(task),
        )


def worth_compiling(task: Task) -> bool:
    """Whether a compile pool can do anything for ``task`` ahead of its GPU: its solution is
    compiled (:data:`COMPILED_LANGUAGES`). A broken solution's task is a COMPILE_ERROR the
    engine gives at once: nothing to compile."""
    return task.broken is None and task.solution.spec.language.value in COMPILED_LANGUAGES


@dataclass(frozen=True)
class Done:
    """What a sandbox gives back for one task: the trace as JSON (its own serialization is
    the cheapest there is, and the sandbox's time between evaluations is the GPU's idle
    time), and where and when it ran, stamped on by the receiver (:meth:`trace`)."""

    trace_json: bytes
    stamp: Provenance

    def trace(self, task: Task) -> Trace:
        """The trace of ``task``, its provenance stamped."""
        return stamp_trace(Trace.model_validate_json(self.trace_json), task, self.stamp)
