"""Operator names in trace files: selection by exact name, and the ``mutates:`` tags an
imported definition gets (from the operator's torch schema, which the engine reads)."""

from __future__ import annotations

from collections.abc import Sequence

from sweep.engine import schema_mutations
from sweep.errors import EngineError, ValidationError, did_you_mean, shown
from sweep.schema.call_args import OpName, parse_op_name
from sweep.schema.op_tags import MutatedArg

__all__ = ["mutation_tags", "select_ops"]


def select_ops(available: Sequence[str], wanted: Sequence[str]) -> list[str]:
    """The operators of ``available`` that ``wanted`` names, by exact name.

    Each wanted name is a packet (``relu``: every overload of ``aten.relu``), an overload
    (``relu.default``) or a qualified overload (``aten.relu.default``). ``relu`` never selects
    ``leaky_relu`` nor ``relu_``.

    Args:
        available: Qualified operator names, e.g. from a trace file.
        wanted: Names the user gave.

    Returns:
        The selected qualified names, in the order of ``available``.

    Raises:
        ValidationError: A wanted name matches nothing; the message suggests close names.
    """
    ops = [parse_op_name(a) for a in available]
    chosen: set[str] = set()
    for raw in wanted:
        name = raw.strip()
        parts = name.split(".")
        hits = [
            o.qualified
            for o in ops
            if (len(parts) == 3 and o.qualified == name)
            or (len(parts) == 2 and (o.short == name or f"{o.namespace}.{o.packet}" == name))
            or (len(parts) == 1 and o.namespace == "aten" and o.packet == name)
        ]
        if not hits:
            names = {o.qualified for o in ops} | {o.short for o in ops} | {o.packet for o in ops}
            raise ValidationError(
                f"--ops: no operator {shown(name)} in the trace{did_you_mean(name, names, n=3)} "
                f"(give 'relu', 'relu.default' or 'aten.relu.default')"
            )
        chosen.update(hits)
    return [a for a in available if a in chosen]


def _mutations_by_name(op: OpName) -> tuple[MutatedArg, ...]:
    """A guess from the name alone, for operators this torch does not have."""
    if op.overload == "out" or op.overload.endswith("_out"):
        return (MutatedArg("out", None),)
    if op.packet.endswith("_") and not op.packet.endswith("__"):
        return (MutatedArg("self", 0),)
    return ()


def mutation_tags(name: str) -> tuple[list[str], str | None]:
    """``mutates:...`` tags for an operator, and a warning when torch could not tell.

    Uses the operator's torch schema (imports torch); falls back to the naming convention
    (``add_`` writes ``self``, ``*.out`` writes ``out``) when this torch lacks the operator.
    """
    op = parse_op_name(name)
    try:
        found = schema_mutations(name)  # the engine owns torch: it reads the operator's schema
        warning = None
    except EngineError as e:
        found = _mutations_by_name(op)
        warning = f"{e}; guessed from the name which arguments it writes to"
    return [m.tag for m in found], warning
