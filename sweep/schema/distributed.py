"""Kernels that need several GPUs: the extension of records for distributed calls.

A definition with a ``distributed`` block is one call made by ``world_size`` ranks at once
(a collective, or communication fused with a GEMM). Everything here is an extension
FlashInfer-Bench records carry as an unknown field (they keep them: ``Record`` allows extra
fields), so an upstream reader sees an ordinary definition and an ordinary trace.

- :class:`Distributed` (``Definition.distributed``): a fixed ``world_size``, or the var axis
  whose workload value is the world size (``world_size_axis``: one definition, workloads of
  2, 4 and 8 ranks); axes derived from others and the world size (``derived_axes``, e.g. a
  shard ``M // W``); the collective whose bus bandwidth is reported (``collective``) and the
  bytes one call moves per rank (``message_bytes``, nccl-tests' "size").
- :class:`RankSlot` (``Task.rank``): which rank a sandbox process is, and where its group meets.
- :class:`RankFigures`, :class:`DistributedResult` (``Evaluation.distributed``): every rank's
  status and device time, the slowest rank (the straggler, whose time is the task's latency),
  the failing rank, algorithm and bus bandwidth and the fraction of the link's peak.

Bus bandwidth follows nccl-tests (doc/PERFORMANCE.md): ``algbw = size / time``;
``busbw = algbw * factor``, the factor ``2(n-1)/n`` for all-reduce, ``(n-1)/n`` for all-gather,
reduce-scatter and all-to-all, ``1`` for broadcast and reduce.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Literal

from pydantic import Field, StrictBool, model_validator

from sweep.errors import DistributedTaskError, listing, shown
from sweep.schema._base import Record
from sweep.schema.expr import ConstraintError, eval_number, expression_problem
from sweep.schema.limits import NonNegInt64, PosInt64

__all__ = [
    "COLLECTIVES",
    "MAX_WORLD_SIZE",
    "WORLD_SIZE_NAME",
    "Collective",
    "Distributed",
    "DistributedResult",
    "RankFigures",
    "RankSlot",
    "bus_factor",
    "full_axes",
    "outside_gang",
    "world_size_of",
]

#: The name every axis expression may read for the task's world size.
WORLD_SIZE_NAME = "world_size"
#: The most ranks of one task: one node's GPUs (a larger gang could never be packed).
MAX_WORLD_SIZE = 64

Collective = Literal["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "reduce"]
COLLECTIVES: tuple[str, ...] = (
    "all_reduce",
    "all_gather",
    "reduce_scatter",
    "all_to_all",
    "broadcast",
    "reduce",
)


def bus_factor(collective: str, n: int) -> float:
    """nccl-tests' bus-bandwidth factor of ``collective`` over ``n`` ranks (doc/PERFORMANCE.md):
    what each rank's link must carry per byte of the operation's size."""
    if collective == "all_reduce":
        return 2.0 * (n - 1) / n
    if collective in ("all_gather", "reduce_scatter", "all_to_all"):
        return (n - 1) / n
    if collective in ("broadcast", "reduce"):
        return 1.0
    raise ValueError(f"unknown collective {collective!r} (known: {', '.join(COLLECTIVES)})")


class Distributed(Record):
    """How many ranks one call of a definition needs, and what it moves (extension)."""

    world_size: PosInt64 | None = Field(default=None, le=MAX_WORLD_SIZE)
    world_size_axis: str | None = None
    derived_axes: dict[str, str] = Field(default_factory=dict)
    collective: Collective | None = None
    message_bytes: str | None = None
    description: str | None = None

    @model_validator(mode="after")
    def _one_world_size(self) -> Distributed:
        if (self.world_size is None) == (self.world_size_axis is None):
            raise ValueError("give exactly one of 'world_size' (fixed) and 'world_size_axis' (a var axis)")
        return self

    def check_against(self, axes: Mapping[str, object], var_axes: list[str]) -> str | None:
        """Why this block does not fit a definition with ``axes`` (``var_axes`` of them var), or ``None``."""
        names = [*axes, WORLD_SIZE_NAME]
        if self.world_size_axis is not None and self.world_size_axis not in var_axes:
            return (
                f"world_size_axis: {shown(self.world_size_axis)} is not a var axis "
                f"(var axes: {listing(var_axes) or 'none'})"
            )
        for name, text in self.derived_axes.items():
            if name not in var_axes:
                return f"derived_axes.{name}: not a var axis (var axes: {listing(var_axes) or 'none'})"
            if name == self.world_size_axis:
                return f"derived_axes.{name}: the world-size axis cannot be derived"
            problem = expression_problem(text, [n for n in names if n != name])
            if problem:
                return f"derived_axes.{name}: {problem}"
        if self.message_bytes is not None:
            problem = expression_problem(self.message_bytes, names)
            if problem:
                return f"message_bytes: {problem}"
        return None


def world_size_of(spec: Distributed, axes: Mapping[str, int]) -> int | None:
    """The world size a workload with ``axes`` runs at, or ``None`` when its axes lack it."""
    if spec.world_size is not None:
        return int(spec.world_size)
    assert spec.world_size_axis is not None
    value = axes.get(spec.world_size_axis)
    return int(value) if value is not None else None


def full_axes(spec: Distributed, axes: Mapping[str, int]) -> dict[str, int]:
    """``axes`` with the derived ones computed (in declaration order, each may read the ones
    before it) and ``world_size`` bound, for shapes and expressions.

    Raises:
        ConstraintError: A derived axis is not a whole number >= 1, or an expression fails.
    """
    values = dict(axes)
    n = world_size_of(spec, values)
    if n is None:
        raise ConstraintError(f"the world-size axis {spec.world_size_axis!r} is not given")
    values[WORLD_SIZE_NAME] = n
    for name, text in spec.derived_axes.items():
        try:
            value = eval_number(text, values)
        except (SyntaxError, ZeroDivisionError, OverflowError) as e:
            raise ConstraintError(f"derived axis {name}: {e}") from None
        if value != int(value) or value < 1:
            raise ConstraintError(f"derived axis {name} = {text} gives {value:g}, not a whole number >= 1")
        given = values.get(name)
        if given is not None and name in axes and given != int(value):
            raise ConstraintError(f"axis {name}: the workload gives {given}, {text} gives {int(value)}")
        values[name] = int(value)
    return values


class RankSlot(Record):
    """One rank of a distributed task: which it is and where its process group meets."""

    rank: NonNegInt64
    world_size: PosInt64
    #: The file the ranks' process group meets on (torch's ``FileStore``): new for each gang, in
    #: a folder of its own. A file, not a TCP port: a port chosen free by the parent could be
    #: taken by any other process before rank 0 bound it.
    store_file: str
    backend: Literal["nccl", "gloo"] = "gloo"


class RankFigures(Record):
    """One rank's outcome: its status, its device time (median per call) and its log's name."""

    rank: NonNegInt64
    status: str
    latency_ms: float | None = Field(default=None, ge=0.0)
    reference_latency_ms: float | None = Field(default=None, ge=0.0)
    iterations: NonNegInt64 | None = None
    pid: NonNegInt64 | None = None
    log: str | None = None


class DistributedResult(Record):
    """What a distributed task's trace adds (``Evaluation.distributed``)."""

    world_size: PosInt64
    backend: str | None = None
    ranks: list[RankFigures] = Field(default_factory=list)
    straggler_rank: NonNegInt64 | None = None
    failed_rank: NonNegInt64 | None = None
    collective: str | None = None
    message_bytes: float | None = Field(default=None, ge=0.0)
    algbw_gbps: float | None = Field(default=None, ge=0.0)
    busbw_gbps: float | None = Field(default=None, ge=0.0)
    link_gbps: float | None = Field(default=None, ge=0.0)
    link_fraction: float | None = Field(default=None, ge=0.0)
    aligned: StrictBool | None = None


def outside_gang(
    name: str, spec: Distributed, workload_axes: Iterable[Mapping[str, int]], entry: str
) -> DistributedTaskError:
    """The error for a distributed definition given to ``entry``, a path that evaluates in one
    process (``sweep eval``, the engine's ``evaluate``, profile mode): it names the definition,
    its world size(s) (of ``workload_axes`` when an axis sets it) and where it runs instead."""
    if spec.world_size is not None:
        sizes = str(spec.world_size)
    else:
        known = sorted({n for axes in workload_axes if (n := world_size_of(spec, axes)) is not None})
        sizes = " and ".join(map(str, known)) if known else "unset"
        sizes += f" (axis {spec.world_size_axis})"
    return DistributedTaskError(
        f"definition {shown(name)} is one call made by several ranks at once (world size {sizes}, "
        f"one process per GPU), but {entry} evaluates in one process: run it with sweep launch, "
        "which places its ranks together on one node (from Python: sweep.sandbox.gang.run_gang "
        "runs one such task)"
    )
