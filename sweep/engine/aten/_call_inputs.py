"""Turning a ``backendbench_args`` workload into real call arguments, for the engine.

The engine calls, for a workload whose definition is a BackendBench import:

1. :func:`describe_call` (pure, no torch): the lazy :class:`CallSpec` (argument tree, operator,
   mutated arguments, bytes needed).
2. :func:`materialize` (torch): seeded random tensors on a device, following BackendBench's
   input policy, after refusing anything above the memory budget without allocating.
3. :func:`clone_call` once per callee, so reference and solution get separate copies
   (in-place and ``out=`` operators write into their arguments).
4. After both calls, :func:`sweep.backendbench.compare_call` on outputs and mutated arguments.

Input policy (BackendBench's, seeded here): floating tensors uniform in [0, 1); signed
integers uniform in [-9, 10); uint8 in [0, 10); bool uniform; complex real and imaginary
parts uniform in [-9, 9) (``make_tensor``'s default, which BackendBench keeps for complex).
Then the index arguments of index-taking operators are drawn again, from the same
generator, within what they index (``_index_rules``: gather's ``index`` below
``self.size(dim)``, bag offsets from 0, class targets below C, ...).
Strided tensors get a storage of exactly their extent, viewed with ``as_strided`` (zero
strides included). Device strings in arguments: ``cpu`` stays the host, any other device
(``'cuda'``) means the evaluation device.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sweep.errors import EngineError
from sweep.schema import BackendBenchArgsInput, Definition, Workload
from sweep.schema import call_args as ca
from sweep.schema.call_json import decode_call
from sweep.schema.op_tags import MutatedArg, op_from_tags, parse_mutation_tags

__all__ = [
    "CallSpec",
    "InputTooLarge",
    "bind_problem",
    "call_input",
    "check_budget",
    "clone_call",
    "describe_call",
    "is_backendbench",
    "materialize",
    "materialize_meta",
    "mutated_values",
    "output_bytes",
]

_FLOATS = frozenset({"float16", "bfloat16", "float32", "float64"})
_FLOAT8 = frozenset({"float8_e4m3fn", "float8_e5m2"})
_COMPLEX_PARTS = {"complex32": "float32", "complex64": "float32", "complex128": "float64"}
_SIGNED = frozenset({"int8", "int16", "int32", "int64"})


class InputTooLarge(EngineError):
    """A workload's tensors need more memory than the budget allows (nothing was allocated)."""


@dataclass(frozen=True)
class CallSpec:
    """One ATen call, described but not allocated.

    Attributes:
        op: Qualified operator name (``aten.add.Tensor``), or ``None`` if the definition
            carries no operator tag.
        args: Positional argument tree.
        kwargs: Keyword argument tree.
        mutates: Arguments the operator writes to (from the definition's ``mutates:`` tags).
    """

    op: str | None
    args: tuple[ca.ArgValue, ...]
    kwargs: dict[str, ca.ArgValue]
    mutates: tuple[MutatedArg, ...] = ()

    def tensors(self) -> list[ca.TensorArg]:
        """Every tensor, in the order :func:`materialize` fills them."""
        return [t for v in (*self.args, *self.kwargs.values()) for t in ca.iter_tensors(v)]

    @property
    def nbytes(self) -> int:
        """Bytes of storage all tensors need together (strided ones: their extent)."""
        return sum(t.nbytes for t in self.tensors())


def call_input(workload: Workload) -> BackendBenchArgsInput | None:
    """The workload's ``backendbench_args`` input, or ``None``."""
    for spec in workload.inputs.values():
        if isinstance(spec, BackendBenchArgsInput):
            return spec
    return None


def is_backendbench(definition: Definition, workload: Workload | None = None) -> bool:
    """Whether the engine must take the BackendBench path for this definition (or workload)."""
    if workload is not None:
        return call_input(workload) is not None
    return "backendbench" in definition.tags


def describe_call(definition: Definition, workload: Workload) -> CallSpec:
    """The lazy call of a BackendBench workload. Pure: no torch, nothing allocated.

    Raises:
        EngineError: The workload has no ``backendbench_args`` input.
    """
    spec = call_input(workload)
    if spec is None:
        raise EngineError(f"workload {workload.uuid} of {definition.name!r} has no 'backendbench_args' input")
    args, kwargs = decode_call(spec.args, spec.kwargs)
    op = op_from_tags(definition.tags)
    return CallSpec(op.qualified if op else None, args, kwargs, parse_mutation_tags(definition.tags))


def check_budget(spec: CallSpec, max_bytes: int | None) -> None:
    """Refuse a call whose tensors need more than ``max_bytes`` (``None``: no limit).

    Raises:
        InputTooLarge: With the bytes needed and the largest tensor.
    """
    if max_bytes is None:
        return
    need = spec.nbytes
    if need > max_bytes:
        big = max(spec.tensors(), key=lambda t: t.nbytes)
        raise InputTooLarge(
            f"inputs need {need / 2**30:.1f} GiB, over the memory budget of {max_bytes / 2**30:.1f} GiB "
            f"(largest: T({list(big.shape)}, {big.dtype}), {big.nbytes / 2**30:.1f} GiB); "
            "not allocated"
        )


def materialize(
    spec: CallSpec, generator: Any, device: Any = None, *, max_bytes: int | None = None
) -> tuple[list[Any], dict[str, Any]]:
    """Allocate the call's arguments: seeded random tensors per the input policy.

    Args:
        spec: From :func:`describe_call`.
        generator: A seeded ``torch.Generator``; values are drawn on its device, so the same
            seed and generator device give the same inputs.
        device: Where tensors go (``torch.device`` or string); default the generator's device.
        max_bytes: Memory budget; checked before anything is allocated.

    Returns:
        ``(args, kwargs)`` ready for ``op(*args, **kwargs)``.

    Raises:
        InputTooLarge: Over ``max_bytes``.
    """
    import torch

    from sweep.engine.aten._index_draw import constrain, index_fills

    check_budget(spec, max_bytes)
    target = torch.device(device) if device is not None else generator.device
    mat = _Materializer(torch, generator, target)
    args, kwargs = [mat.value(a) for a in spec.args], {k: mat.value(v) for k, v in spec.kwargs.items()}
    # Index arguments drawn again within what they index (``_index_rules``), same generator.
    constrain(index_fills(spec.op, spec.args, spec.kwargs), args, kwargs, generator)
    return args, kwargs


def materialize_meta(spec: CallSpec) -> tuple[list[Any], dict[str, Any]]:
    """The call's arguments as ``meta`` tensors: shapes, dtypes and strides, no storage.

    Running the operator on them gives the shapes and dtypes of its outputs without
    allocating anything (for counting memory before an evaluation). Every device, ``cpu``
    included, becomes ``meta``.
    """
    import torch

    mat = _MetaMaterializer(torch, None, torch.device("meta"))
    return [mat.value(a) for a in spec.args], {k: mat.value(v) for k, v in spec.kwargs.items()}


class _Materializer:
    def __init__(self, torch: Any, generator: Any, device: Any) -> None:
        self.torch = torch
        self.gen = generator
        self.device = device
        self.cpu = torch.device("cpu")

    def value(self, v: ca.ArgValue) -> Any:
        if isinstance(v, ca.TensorArg):
            return self.tensor(v)
        if isinstance(v, list):
            return [self.value(x) for x in v]
        if isinstance(v, ca.TupleArg):
            return tuple(self.value(x) for x in v.items)
        if isinstance(v, dict):
            return {k: self.value(x) for k, x in v.items()}
        if isinstance(v, ca.DTypeArg):
            return getattr(self.torch, v.name)
        if isinstance(v, (ca.LayoutArg, ca.MemoryFormatArg)):
            return getattr(self.torch, v.name)
        if isinstance(v, ca.DeviceArg):
            return self.cpu if v.is_cpu else self.device
        return v

    def tensor(self, t: ca.TensorArg) -> Any:
        target = self.cpu if t.device is not None and t.device.is_cpu else self.device
        flat = self.random(t.storage_numel, t.dtype)
        if flat.device != target:
            flat = flat.to(target)
        if t.stride is None:
            return flat.view(t.shape)
        return flat.as_strided(t.shape, t.stride)

    def random(self, n: int, dtype: str) -> Any:
        torch, gen = self.torch, self.gen
        where = gen.device
        if dtype in _FLOATS:
            return torch.rand(n, generator=gen, device=where, dtype=getattr(torch, dtype))
        if dtype in _FLOAT8:
            return torch.rand(n, generator=gen, device=where).to(getattr(torch, dtype))
        if dtype in _SIGNED:
            return torch.randint(-9, 10, (n,), generator=gen, device=where, dtype=getattr(torch, dtype))
        if dtype == "uint8":
            return torch.randint(0, 10, (n,), generator=gen, device=where, dtype=torch.uint8)
        if dtype == "bool":
            return torch.randint(0, 2, (n,), generator=gen, device=where, dtype=torch.uint8).bool()
        part = _COMPLEX_PARTS.get(dtype)
        if part is not None:
            pairs = torch.rand(n, 2, generator=gen, device=where, dtype=getattr(torch, part)) * 18 - 9
            with warnings.catch_warnings():
                # complex32 works for what a trace needs; torch warns it is experimental.
                warnings.filterwarnings("ignore", message="ComplexHalf support is experimental")
                return torch.view_as_complex(pairs).to(getattr(torch, dtype))
        raise EngineError(f"no input policy for dtype {dtype!r}")


def clone_call(
    args: Sequence[Any], kwargs: dict[str, Any], *, offsets: bool = False
) -> tuple[list[Any], dict[str, Any]]:
    """A deep copy of materialized arguments that keeps every tensor's strides and overlaps.

    Tensors are copied storage and all (``x.clone()`` would make an expanded, zero-stride
    tensor contiguous, changing what an in-place operator does). Non-tensor values are
    immutable or rebuilt (lists, tuples, dicts). ``offsets``: keep each tensor's storage
    offset too (what ``as_strided_`` sets), over a storage whose head is left unset.
    """
    return [_clone(a, offsets) for a in args], {k: _clone(v, offsets) for k, v in kwargs.items()}


def _clone(v: Any, offsets: bool = False) -> Any:
    import torch

    if isinstance(v, torch.Tensor):
        if offsets and v.layout == torch.strided and v.storage_offset():
            at = v.storage_offset()
            extent = 1 + sum((s - 1) * st for s, st in zip(v.shape, v.stride())) if v.numel() else 0
            base = torch.empty(at + extent, dtype=v.dtype, device=v.device)
            if extent:
                base[at:].copy_(v.as_strided((extent,), (1,)))
            return base.as_strided(v.shape, v.stride(), at)
        if v.layout != torch.strided or v.is_contiguous():
            return v.clone()
        if v.numel() == 0:
            return torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device=v.device)
        extent = 1 + sum((s - 1) * st for s, st in zip(v.shape, v.stride()))
        base = v.as_strided((extent,), (1,)).clone()
        return base.as_strided(v.shape, v.stride())
    if isinstance(v, list):
        return [_clone(x, offsets) for x in v]
    if isinstance(v, tuple):
        return tuple(_clone(x, offsets) for x in v)
    if isinstance(v, dict):
        return {k: _clone(x, offsets) for k, x in v.items()}
    return v


def mutated_values(spec: CallSpec, args: Sequence[Any], kwargs: dict[str, Any]) -> list[tuple[str, Any]]:
    """The arguments the operator writes to, as ``(path, value)`` for comparison.

    A mutated argument is found by keyword first, then by its schema position; one the call
    did not pass (an optional ``out``) is left out.
    """
    out: list[tuple[str, Any]] = []
    for m in spec.mutates:
        if m.name in kwargs:
            out.append((f"kwargs[{m.name!r}]", kwargs[m.name]))
        elif m.index is not None and m.index < len(args):
            out.append((f"args[{m.index}]", args[m.index]))
    return out


class _MetaMaterializer(_Materializer):
    def __init__(self, torch: Any, generator: Any, device: Any) -> None:
        super().__init__(torch, generator, device)
        self.cpu = device

    def tensor(self, t: ca.TensorArg) -> Any:
        dtype = getattr(self.torch, t.dtype)
        if t.stride is None:
            return self.torch.empty(t.shape, dtype=dtype, device=self.device)
        return self.torch.empty_strided(t.shape, t.stride, dtype=dtype, device=self.device)


def output_bytes(call: CallSpec) -> tuple[int, str]:
    """Bytes of the call's result, from the operator's meta kernel when it has one."""
    import torch

    from sweep.engine.aten._aten_ops import resolve_op
    from sweep.engine.aten._call_tree import tree_tensors

    if call.op is None:
        return call.nbytes, "assumed as large as the inputs: the definition names no operator"
    try:
        op = resolve_op(call.op)
        margs, mkwargs = materialize_meta(call)
        with torch.no_grad():
            out = op(*margs, **mkwargs)
    except Exception as e:  # noqa: BLE001 - no meta kernel (or data-dependent shapes): estimate
        return call.nbytes, f"assumed as large as the inputs: no meta kernel ({type(e).__name__})"
    return sum(t.numel() * t.element_size() for t in tree_tensors(out)), "from the operator's meta kernel"


def bind_problem(fn: Callable[..., object], call: CallSpec) -> str | None:
    """Why ``fn`` cannot take the call's arguments, or ``None`` (also when unreadable)."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return None
    try:
        sig.bind(*range(len(call.args)), **dict.fromkeys(call.kwargs))
    except TypeError as e:
        keys = f" and keyword(s) {', '.join(call.kwargs)}" if call.kwargs else ""
        return (
            f"the entry point takes {sig} but is called like {call.op or 'the operator'} with "
            f"{len(call.args)} positional argument(s){keys}: {e}"
        )
    return None
