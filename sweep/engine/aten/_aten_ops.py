"""ATen operators by name: the ``torch.ops`` overload a qualified name stands for, the
arguments its schema says it writes, and whether this torch can run it on a device.

Names are checked by pattern first (:func:`sweep.schema.call_args.parse_op_name`) and then
resolved by attribute lookup on ``torch.ops``, never by evaluating text.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from sweep.errors import EngineError
from sweep.schema.call_args import parse_op_name
from sweep.schema.op_tags import MutatedArg, op_from_tags

if TYPE_CHECKING:
    from sweep.schema import Definition

__all__ = ["operator_problem", "resolve_op", "schema_mutations"]

#: The dispatch keys of a device family's kernels (dense, sparse, quantized, mkldnn); an
#: operator with a computed kernel (its own or a composite one) for none of them cannot run
#: there. ``BackendSelect`` and ``Meta`` alone do not count.
_DEVICE_KEYS = {
    "cpu": ("CPU", "SparseCPU", "SparseCsrCPU", "QuantizedCPU", "MkldnnCPU"),
    "cuda": ("CUDA", "SparseCUDA", "SparseCsrCUDA", "QuantizedCUDA"),
}


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
    return _written_args(resolve_op(name)._schema)


def _written_args(schema: Any) -> tuple[MutatedArg, ...]:
    """The arguments a ``torch.FunctionSchema`` marks as written (``Tensor(a!)``)."""
    return tuple(
        MutatedArg(arg.name, None if arg.kwarg_only else i)
        for i, arg in enumerate(schema.arguments)
        if arg.alias_info is not None and arg.alias_info.is_write
    )


def _family(target: str) -> str:
    """``cpu`` or ``cuda``: the device family a plan target (``CPU``, ``H100``) or an evaluation
    device (``cpu``, ``cuda:1``, ``auto``) runs kernels of (ROCm builds use the CUDA keys)."""
    import torch

    word = target.strip().lower()
    if word == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cpu" if word.startswith("cpu") else "cuda"


@functools.lru_cache(maxsize=4096)
def _op_problem(name: str, family: str) -> str | None:
    import torch

    try:
        overload = resolve_op(name)
    except EngineError as e:
        return str(e)
    if family == "cuda" and not (torch.backends.cuda.is_built() or torch.version.hip):  # type: ignore[no-untyped-call]
        return None  # this torch has no GPU kernels to ask about: the evaluating worker's may
    has = torch._C._dispatch_has_computed_kernel_for_dispatch_key
    if any(has(overload.name(), key) for key in _DEVICE_KEYS[family]):
        return None
    return f"torch {torch.__version__} has no {family.upper()} kernel for operator {name}"


def operator_problem(definition: Definition, target: str) -> str | None:
    """Why the ATen operator a definition was imported for cannot run on ``target`` with the
    installed torch (it lacks the operator, or every kernel of it for the target's device
    family), or ``None`` (also for a definition that names no operator).

    ``target`` is a plan target (``CPU``, ``H100``: every GPU means CUDA kernels) or a device
    (``cpu``, ``cuda``, ``auto``). Whether CUDA kernels exist is asked only of a torch built
    with CUDA (or ROCm); a CPU-only torch plans every GPU operator it has. Usable as the
    ``unavailable`` of :func:`sweep.plan.build_plan` (the launch stage passes it).
    """
    op = op_from_tags(definition.tags)
    if op is None:
        return None
    return _op_problem(op.qualified, _family(target))


def write_table() -> tuple[str, dict[str, tuple[MutatedArg, ...]], list[str]]:
    """From the installed torch's operator registry: its version, the arguments each
    ``aten`` overload writes (those that write any), and every ``aten`` overload name.

    The importer of BackendBench traces reads a table generated from this
    (``sweep/backendbench/aten_writes.json``) instead of importing torch; run this module to
    regenerate it: ``python -m sweep.engine.aten._aten_ops > sweep/backendbench/aten_writes.json``.
    """
    import torch

    writes: dict[str, tuple[MutatedArg, ...]] = {}
    names: set[str] = set()
    for schema in torch._C._jit_get_all_schemas():
        namespace, _, packet = schema.name.partition("::")
        if namespace != "aten":
            continue
        name = f"aten.{packet}.{schema.overload_name or 'default'}"
        names.add(name)
        found = _written_args(schema)
        if found:
            writes[name] = found
    version = str(torch.__version__).split("+", 1)[0]
    return version, dict(sorted(writes.items())), sorted(names)


def table_json() -> str:
    """The text of ``sweep/backendbench/aten_writes.json`` for the installed torch."""
    import json

    version, writes, names = write_table()
    table = {
        "about": (
            "Which arguments each ATen overload writes (name, position or null when keyword-only), "
            "and every aten overload, generated from torch's operator schemas by "
            "'python -m sweep.engine.aten._aten_ops'; do not edit"
        ),
        "torch": version,
        "writes": {n: [[a.name, a.index] for a in args] for n, args in writes.items()},
        "names": names,
    }
    return json.dumps(table, indent=0, sort_keys=False) + "\n"


if __name__ == "__main__":
    import sys

    sys.stdout.write(table_json())
