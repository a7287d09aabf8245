"""Distributed tasks the cluster at hand cannot place, taken out of a launch before it runs.

A task of N ranks needs N GPUs of one node (on a CPU target: ranks small enough for one host's
memory, ``RANK_BYTES_LIMIT``). What cannot be placed is counted in the launch's summary
beside what ran, one line per cause (``--verbose``: every task under it with its own figures),
never one note per task.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from sweep.cluster.gang_sched import node_slots, unplaceable
from sweep.plan import Exclusion
from sweep.sandbox.gang import world_size
from sweep.schema.task import Task

__all__ = ["Placing", "split_unplaceable"]


class Placing(NamedTuple):
    """A launch's tasks split: those to run, and those no node can hold (as tasks, and as
    exclusions for the summary, in the same order)."""

    runnable: list[Task]
    unplaced: list[Task]
    excluded: list[Exclusion]


def split_unplaceable(todo: Sequence[Task], nodes: Sequence[tuple[float, tuple[str, ...]]]) -> Placing:
    """``todo`` without the tasks no node of ``nodes`` (``(gpus, accelerator types)`` each;
    empty: unknown, only sizes checked) can hold, and those tasks as exclusions of kind
    ``"task"`` named ``definition / solution / workload on target``: ``reason`` the task's own,
    ``group`` its cause with the world sizes of every task left out for it
    (``"...; world size 2-4"``)."""
    keep: list[Task] = []
    left: list[tuple[Task, str, str]] = []
    for t in todo:
        found = unplaceable(t, node_slots(nodes, t.hardware) if nodes else None)
        if found is None:
            keep.append(t)
        else:
            left.append((t, found.reason, found.cause))
    sizes: dict[str, list[int]] = {}
    for t, _, cause in left:
        sizes.setdefault(cause, []).append(world_size(t))
    out = [
        Exclusion(
            "task",
            f"{t.definition.name} / {t.solution.name} / {t.workload.uuid} on {t.hardware}",
            reason,
            group=f"{cause}; world size {_span(sizes[cause])}",
        )
        for t, reason, cause in left
    ]
    return Placing(keep, [t for t, _, _ in left], out)


def _span(values: list[int]) -> str:
    lo, hi = min(values), max(values)
    return str(lo) if lo == hi else f"{lo}-{hi}"
