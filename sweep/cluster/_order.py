"""The order a pool's queue starts in: longest first, where durations can be estimated.

With few tasks per GPU, a long task started last is the sweep's tail: every other GPU idles
while it runs. Started first, it overlaps the short ones. Tasks without an estimate go
before all others (one never measured may be the longest), the largest inputs first
(:func:`sweep.schema.sizes.input_bytes`): with no durations at all (a first sweep) the size
of a task's inputs is the one sign of its length the records give, as larger inputs take
longer to draw, copy and compute. Ties keep the order given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sweep.schema.sizes import input_bytes
from sweep.schema.task import Task

__all__ = ["longest_first"]


def longest_first(tasks: Sequence[Task], estimated_s: Mapping[str, float]) -> list[Task]:
    """``tasks`` with those without an estimate first, largest inputs first, then the others
    by estimated seconds (``estimated_s``, by task id), longest first; ties keep their order."""
    unknown = [t for t in tasks if t.task_id not in estimated_s]
    known = [t for t in tasks if t.task_id in estimated_s]
    # Stable sorts: ties keep the plan's order. A workload's size is read once per workload.
    sizes: dict[tuple[str, str], int] = {}

    def size(t: Task) -> int:
        key = (t.definition.name, t.workload.uuid)
        if key not in sizes:
            sizes[key] = input_bytes(t.definition, t.workload)
        return sizes[key]

    unknown.sort(key=lambda t: -size(t))
    known.sort(key=lambda t: -estimated_s[t.task_id])
    return unknown + known
