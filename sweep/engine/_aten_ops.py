"""ATen operators by name: the ``torch.ops`` overload a qualified name stands for, and the
arguments its schema says it writes.

Names are checked by pattern first (:func:`sweep.schema.call_args.parse_op_name`) and then
resolved by attribute lookup on ``torch.ops``, never by evaluating text.
"""

from __future__ import annotations

from typing import Any

from sweep.errors import EngineError
from sweep.schema.call_args import parse_op_name
from sweep.schema.op_tags import MutatedArg

__all__ = ["resolve_op", "schema_mutations"]


def resolve_op(name: str) -> Any:
    """The ``torch.ops`` overload object for a qualified name, by attribute lookup only.

    Raises:
        EngineError: The name is malformed or torch has no such overload.
    """
    import torch

    try:
        op = parse_op_name(name)
    except ValueError as e:
        raise EngineError(str(e)) from None
    try:
        namespace = getattr(torch.ops, op.namespace)
        packet = getattr(namespace, op.packet)
        overload = getattr(packet, op.overload)
    except (AttributeError, RuntimeError):
        overload = None
    # Identifier-shaped names can still reach Python attributes (``__class__``): accept
    # only what really is an operator overload.
    if not isinstance(overload, torch._ops.OpOverload):
        raise EngineError(f"operator {name!r} does not exist in torch {torch.__version__}")
    return overload


def schema_mutations(name: str) -> tuple[MutatedArg, ...]:
    """The arguments ``name`` writes to, from its torch schema.

    Raises:
        EngineError: torch has no such overload.
    """
    overload = resolve_op(name)
    out = []
    for i, arg in enumerate(overload._schema.arguments):
        info = arg.alias_info
        if info is not None and info.is_write:
            out.append(MutatedArg(arg.name, None if arg.kwarg_only else i))
    return tuple(out)
