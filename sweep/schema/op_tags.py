"""Definition tags of an imported operator: which ATen operator it is, which arguments it writes.

An imported BackendBench definition is tagged ``aten:add.Tensor`` (the operator) and
``mutates:self@0`` / ``mutates:out`` (the arguments its schema marks ``Tensor(a!)``). The
importer writes these tags; the engine reads them. Also the two names every imported
record uses. No torch here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from sweep.schema.call_args import OpName

__all__ = [
    "BACKENDBENCH_OP_TYPE",
    "CALL_INPUT",
    "MutatedArg",
    "op_from_tags",
    "op_tag",
    "parse_mutation_tags",
]

#: The ``op_type`` of every definition imported from a BackendBench trace file.
BACKENDBENCH_OP_TYPE = "backendbench"
#: The name of the one input of an imported workload: the whole argument list of the call.
CALL_INPUT = "call"

_OP_TAG = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*):([A-Za-z_][A-Za-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_]*)$")
_MUTATES = re.compile(r"^mutates:([A-Za-z_][A-Za-z0-9_]*)(?:@(\d+))?$")


@dataclass(frozen=True, slots=True)
class MutatedArg:
    """An argument an operator writes to (``Tensor(a!)`` in its schema).

    Attributes:
        name: The schema name (``self``, ``out``, ``running_mean``).
        index: Its position for a positional argument; ``None`` when keyword-only.
    """

    name: str
    index: int | None

    @property
    def tag(self) -> str:
        """The definition tag: ``mutates:self@0``, ``mutates:out``."""
        return f"mutates:{self.name}" + (f"@{self.index}" if self.index is not None else "")


def op_tag(op: OpName) -> str:
    """The definition tag naming the operator: ``aten:add.Tensor``."""
    return f"{op.namespace}:{op.short}"


def op_from_tags(tags: Iterable[str]) -> OpName | None:
    """The operator named by a ``<namespace>:<op>.<overload>`` tag, if any."""
    for tag in tags:
        m = _OP_TAG.match(tag)
        if m is not None and m.group(1) != "mutates":
            return OpName(m.group(1), m.group(2), m.group(3))
    return None


def parse_mutation_tags(tags: Iterable[str]) -> tuple[MutatedArg, ...]:
    """The ``mutates:<name>[@<index>]`` tags of a definition."""
    out = []
    for tag in tags:
        m = _MUTATES.match(tag)
        if m is not None:
            out.append(MutatedArg(m.group(1), int(m.group(2)) if m.group(2) is not None else None))
    return tuple(out)
