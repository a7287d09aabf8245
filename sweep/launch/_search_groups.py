"""The decisions of a search: one per target, definition, solution and shape bucket.

A bucket is the workloads one decision covers: each workload alone (``buckets: none``), the
workloads whose every axis has the same power of two (``auto``), or the ranges a config gives
(a workload in none of them is a bucket of its own). A share of a bucket's workloads
(``holdout``) may be held back: the decision is made on the rest and checked on them. A
point is a candidate of a bucket when it is valid on every workload the decision is made on.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field

from sweep.config import SearchSettings, ShapeBucket
from sweep.plan import Plan
from sweep.schema.params import Point, params_json
from sweep.schema.task import Task

__all__ = ["Group", "bucket_of", "groups_of"]


@dataclass
class Group:
    """One decision: its tasks by (point, workload), its training and held-back workloads."""

    name: str
    hardware: str
    definition: str
    solution: str
    train: list[str]
    held: list[str]
    candidates: list[Point] = field(default_factory=list)
    tasks: dict[tuple[str, str], Task] = field(default_factory=dict)

    def task(self, point: Point, workload: str) -> Task:
        """The planned task of ``point`` on ``workload``."""
        return self.tasks[(params_json(point), workload)]

    def has(self, point: Point, workload: str) -> bool:
        """Whether ``point`` is valid (planned) on ``workload``."""
        return (params_json(point), workload) in self.tasks

    def key(self, point: Point, workload: str) -> tuple[str, str, str, str]:
        """The point on a workload, whatever the hardware (for what other clusters stored)."""
        return (self.definition, self.solution, workload, params_json(point))

    def valid_on(self, workload: str) -> list[Point]:
        """Every point planned on ``workload``, in grid order."""
        return [t.params for (_, w), t in self.tasks.items() if w == workload and t.params is not None]


def bucket_of(axes: dict[str, int], buckets: str | Sequence[ShapeBucket], uuid: str) -> str:
    """The bucket of a workload with ``axes`` (see the module docstring)."""
    if isinstance(buckets, str) and buckets != "auto":
        return uuid
    if isinstance(buckets, str):
        parts = [f"{k}~2^{round(math.log2(v)) if v > 0 else 'x'}" for k, v in sorted(axes.items())]
        return ",".join(parts) or uuid
    for b in buckets:
        if all(k in axes and lo <= axes[k] <= hi for k, (lo, hi) in b.axes.items()):
            return b.name
    return uuid


def groups_of(plans: Sequence[Plan], settings: SearchSettings) -> list[Group]:
    """The decisions of the plans' tasks that carry a parameter point (in plan order)."""
    by_key: dict[tuple[str, str, str, str], Group] = {}
    order: dict[tuple[str, str, str, str], list[str]] = {}
    for plan in plans:
        for t in plan.tasks:
            if t.params is None:
                continue
            b = bucket_of(dict(t.workload.axes), settings.buckets, t.workload.uuid)
            key = (t.hardware, t.definition.name, t.solution.name, b)
            g = by_key.get(key)
            if g is None:
                name = f"{t.definition.name}/{t.solution.name}/{t.hardware}/{b}"
                g = by_key[key] = Group(name, t.hardware, t.definition.name, t.solution.name, [], [])
                order[key] = []
            g.tasks[(params_json(t.params), t.workload.uuid)] = t
            if t.workload.uuid not in order[key]:
                order[key].append(t.workload.uuid)
    out = []
    for key, g in by_key.items():
        wls = order[key]
        n_held = int(len(wls) * settings.holdout)
        if settings.holdout > 0 and len(wls) >= 2:
            n_held = max(1, min(len(wls) - 1, n_held))
        held = set(random.Random(f"{settings.seed}:{g.name}").sample(wls, n_held)) if n_held else set()
        g.train = [w for w in wls if w not in held]
        g.held = [w for w in wls if w in held]
        first = g.train[0]
        g.candidates = [p for p in g.valid_on(first) if all(g.has(p, w) for w in g.train[1:])]
        out.append(g)
    return out
