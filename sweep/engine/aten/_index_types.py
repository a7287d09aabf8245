"""The rules of ``_index_rules``: what values an index argument of a call is drawn with
(``_index_draw`` draws them), and a schema argument as the planner reads it."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BagMax",
    "BagOf",
    "BagSize",
    "Bound",
    "Distinct",
    "Fill",
    "Offsets",
    "PoolWindow",
    "Rows",
    "Rule",
    "SchemaArg",
    "Targets",
]


@dataclass(frozen=True)
class SchemaArg:
    """One argument of an operator's schema: its name, whether keyword-only, its default."""

    name: str
    kwarg_only: bool = False
    default: object = None


@dataclass(frozen=True)
class Bound:
    """Integers uniform in [low, high), element by element (``high <= low``: left as drawn)."""

    high: int
    low: int = 0


@dataclass(frozen=True)
class Distinct:
    """Values in [0, high), no value twice along ``dim`` in any fiber (``None``: in the
    whole tensor); as :class:`Bound` where that many distinct values do not exist."""

    high: int
    dim: int | None


@dataclass(frozen=True)
class Offsets:
    """Bag offsets (1-d): non-decreasing from 0, at most ``total``; the last is ``total``
    when ``include_last`` (a single offset then cannot also be 0 unless ``total`` is)."""

    total: int
    include_last: bool = False


@dataclass(frozen=True)
class BagOf:
    """``offset2bag``: the bag of each index position, from the offsets drawn at ``offsets``
    (``None``: non-decreasing bags in [0, bags))."""

    offsets: str | None
    bags: int


@dataclass(frozen=True)
class BagSize:
    """The number of indices of each bag, from the ``offset2bag`` drawn at ``bags_of``."""

    bags_of: str


@dataclass(frozen=True)
class BagMax:
    """``maximum_indices`` of mode max: for each bag (and feature), one of its words (0 for
    an empty bag), from the ``offset2bag`` at ``bags_of`` and the ``indices`` at ``indices``."""

    bags_of: str
    indices: str


@dataclass(frozen=True)
class Targets:
    """Class targets in [0, classes), one in eight (never the first) ``ignore_index``."""

    classes: int
    ignore_index: int


@dataclass(frozen=True)
class Rows:
    """Row d (along dimension 0) in [0, highs[d]): sparse COO indices of a dense shape."""

    highs: tuple[int, ...]


@dataclass(frozen=True)
class PoolWindow:
    """The flat position, in an input plane of ``size``, of an element of each output
    position's pooling window (the last ``len(size)`` dimensions are the output's)."""

    size: tuple[int, ...]
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]


Rule = Bound | Distinct | Offsets | BagOf | BagSize | BagMax | Targets | Rows | PoolWindow


@dataclass(frozen=True)
class Fill:
    """Draw ``rule`` into the integer tensor at ``path`` (``args[1]``, ``args[1][0]``,
    ``kwargs['indices']``); fills come in dependency order."""

    path: str
    rule: Rule
