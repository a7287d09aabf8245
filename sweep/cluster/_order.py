"""The order a pool's queue starts in: longest first, where durations can be estimated.

With few tasks per GPU, a long task started last is the sweep's tail: every other GPU idles
while it runs. Started first, it overlaps the short ones. Tasks without an estimate go
before all others, in the order given: one never measured may be the longest, and with no
estimates at all (a first sweep) the plan's order is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sweep.schema.task import Task

__all__ = ["longest_first"]


def longest_first(tasks: Sequence[Task], estimated_s: Mapping[str, float]) -> list[Task]:
    """``tasks`` with those without an estimate first (in their order), then the others by
    estimated seconds (``estimated_s``, by task id), longest first; ties keep their order."""
    unknown = [t for t in tasks if t.task_id not in estimated_s]
    known = [t for t in tasks if t.task_id in estimated_s]
    known.sort(key=lambda t: -estimated_s[t.task_id])  # stable: ties keep the plan's order
    return unknown + known
