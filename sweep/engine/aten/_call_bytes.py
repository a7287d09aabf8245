"""The bytes an imported ATen call moves: each storage it reads or writes, counted once.

Counted on the call's ``meta`` arguments and the reference's ``meta`` result, which carry
shapes, dtypes, strides and which storage each tensor lives in, but no values:

- an *output in the storage of an argument* moves nothing of its own: a view (``split``,
  ``unbind``, ``view``, ``transpose``, ``expand``, ``select``, ``slice``, ``as_strided``,
  ``alias``, ``detach``; ``reshape`` or ``contiguous`` when they view), or the written
  argument an in-place or ``out=`` operator returns (its write is counted once, with the
  argument). Whether two tensors share a storage is read from the tensors, not from names;
- outputs in a *new storage* count it once, at most the bytes of their elements (several
  views of one new buffer are one write); a sparse output is its index and value tensors;
- an *uninitialised* result (:data:`sweep.engine.aten._op_kinds.UNINITIALIZED`: ``empty``,
  ``new_empty``, ``empty_strided``, ...; torch has no tag for it) is allocated, not written;
- an argument the call *writes* (``Tensor(a!)`` in its schema, the definition's
  ``mutates:`` tags, or its version counter moved) counts once, read or not; an operator
  tagged ``inplace_view`` (``t_``, ``as_strided_``, ``resize_``) writes metadata only;
- every other tensor argument counts once as *read*, if the call produces data at all (a new
  initialised output or a written argument; which data comes from which argument is not
  known, so all of them), except the template of a ``*_like`` / ``new_*`` constructor
  (torch's own list of them: only its dtype, device and shape are used). A result partly
  of views and partly new counts its new part only.

So a call that only views, allocates or changes metadata moves 0 bytes and, with no FLOPs,
has no floor (:func:`sweep.schema.peaks.floor_ms`). When the operator has no ``meta`` kernel
the result is unknown: the operator's schema and kind decide (a view or allocation moves
nothing), else every argument counts once, as before the call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from sweep.engine.aten._aten_ops import resolve_op, schema_mutations
from sweep.engine.aten._call_inputs import CallSpec, mutated_values
from sweep.engine.aten._call_tree import tensor_leaves, tree_tensors, under
from sweep.engine.aten._op_kinds import op_kind
from sweep.errors import EngineError
from sweep.schema.op_tags import MutatedArg

__all__ = ["CallInputs", "MovedBytes", "call_inputs", "moved_bytes"]

_SPARSE_PARTS: dict[Any, tuple[str, ...]] = {
    torch.sparse_coo: ("_indices", "_values"),
    torch.sparse_csr: ("crow_indices", "col_indices", "values"),
    torch.sparse_bsr: ("crow_indices", "col_indices", "values"),
    torch.sparse_csc: ("ccol_indices", "row_indices", "values"),
    torch.sparse_bsc: ("ccol_indices", "row_indices", "values"),
}


@dataclass(frozen=True)
class _Input:
    path: str
    key: int | None  # the storage's identity; None for a tensor without one
    nbytes: int
    version: int


@dataclass(frozen=True)
class CallInputs:
    """The tensor arguments of a call as they were before it: path, storage, bytes, version."""

    tensors: tuple[_Input, ...]


@dataclass(frozen=True)
class MovedBytes:
    """What :func:`moved_bytes` found: the bytes, and a note for the log (or ``None``)."""

    bytes: float
    note: str | None = None


def _key(t: torch.Tensor) -> int | None:
    """The identity of a strided tensor's storage (equal for tensors sharing one), or None."""
    if t.layout != torch.strided:
        return None
    try:
        return int(t.untyped_storage()._cdata)
    except (RuntimeError, NotImplementedError):  # a tensor without a storage (nested, mkldnn)
        return None


def _elements_bytes(t: torch.Tensor) -> int:
    return t.numel() * t.element_size()


def call_inputs(args: Sequence[Any], kwargs: dict[str, Any]) -> CallInputs:
    """The call's tensor arguments before the call (storage, bytes and version counter)."""
    found = []
    for path, t in tensor_leaves(args, kwargs):
        key = _key(t)
        nbytes = t.untyped_storage().nbytes() if key is not None else _elements_bytes(t)
        found.append(_Input(path, key, int(nbytes), int(t._version)))
    return CallInputs(tuple(found))


def _parts(t: torch.Tensor) -> list[torch.Tensor]:
    """The strided tensors an output is made of: itself, or a sparse tensor's components."""
    names = _SPARSE_PARTS.get(t.layout)
    if names is None:
        return [t]
    try:
        return [getattr(t, n)() for n in names]
    except (RuntimeError, NotImplementedError):  # an uncoalesced or hybrid oddity: count it whole
        return [t]


def _written(spec: CallSpec, args: Sequence[Any], kwargs: dict[str, Any]) -> set[str]:
    """Paths of the arguments the schema or the definition says the call writes."""
    marked: tuple[MutatedArg, ...] = spec.mutates
    if spec.op is not None:
        try:
            marked = (*marked, *schema_mutations(spec.op))
        except EngineError:
            pass
    found = mutated_values(CallSpec(spec.op, spec.args, spec.kwargs, marked), args, kwargs)
    return {path for path, _ in found}


def _like_constructor(op: str | None) -> bool:
    """Whether torch lists ``op`` as a constructor that takes a tensor as a template only
    (``zeros_like``, ``new_full``, ...; FakeTensor's list, read where this torch has it)."""
    if op is None:
        return False
    try:
        overload = resolve_op(op)
    except EngineError:
        return False
    from torch._subclasses import fake_tensor

    return overload in getattr(fake_tensor, "_like_tensor_constructors", ())


def _schema_views(op: str | None) -> bool:
    """Whether every result of ``op`` is declared an alias of an argument (``Tensor(a)``,
    ``Tensor(a)[]``) and no argument is written: a view, whatever its kernel does."""
    if op is None:
        return False
    try:
        schema = resolve_op(op)._schema
    except EngineError:
        return False
    returns = list(schema.returns)
    views = bool(returns) and all(r.alias_info is not None and not r.alias_info.is_write for r in returns)
    return views and not any(a.alias_info is not None and a.alias_info.is_write for a in schema.arguments)


_NONE_NOTE = (
    "work: the call moves no data (its results view its arguments, are uninitialised, or only "
    "metadata changes): 0 bytes, no memory floor"
)


def moved_bytes(
    spec: CallSpec, before: CallInputs, args: Sequence[Any], kwargs: dict[str, Any], value: object | None
) -> MovedBytes:
    """The bytes the call moves (see the module docstring).

    Args:
        spec: The call described.
        before: :func:`call_inputs` of ``args`` and ``kwargs``, taken before the call.
        args, kwargs: The ``meta`` arguments the reference was called with (after the call).
        value: The reference's ``meta`` result, or ``None`` when it could not run.
    """
    kind = op_kind(spec)
    written_paths = _written(spec, args, kwargs)
    after = dict(tensor_leaves(args, kwargs))
    written: set[str] = set()
    for x in before.tensors:
        now = after.get(x.path)
        moved = now is not None and int(now._version) != x.version
        if under(x.path, written_paths) or moved:
            written.add(x.path)
    # A write of no bytes (an empty tensor) or of metadata only makes no data.
    data_written = (
        any(x.nbytes for x in before.tensors if x.path in written)
        and not kind.inplace_view
        and not kind.uninitialized
    )
    template_only = _like_constructor(spec.op)
    if value is None:
        # No result to look at: the operator's kind and schema say whether it makes data.
        if kind.uninitialized or kind.inplace_view or (_schema_views(spec.op) and not written):
            return MovedBytes(0.0, _NONE_NOTE + " (from the operator's schema: it has no meta kernel)")
        return MovedBytes(float(_read_and_written(before, written, template_only)))
    input_keys = {x.key for x in before.tensors if x.key is not None}
    new: dict[int, tuple[int, int]] = {}  # storage -> (storage bytes, elements' bytes)
    loose = 0  # outputs without a storage of their own to tell (counted whole)
    for out in tree_tensors(value):
        for part in _parts(out):
            key = _key(part)
            if key is None:
                loose += _elements_bytes(part)
            elif key not in input_keys:
                size, elems = new.get(key, (int(part.untyped_storage().nbytes()), 0))
                new[key] = (size, elems + _elements_bytes(part))
    out_bytes = 0 if kind.uninitialized else loose + sum(min(size, elems) for size, elems in new.values())
    if not out_bytes and not data_written:
        return MovedBytes(0.0, _NONE_NOTE)
    touched = _read_and_written(before, written if data_written else set(), template_only)
    return MovedBytes(float(out_bytes + touched))


def _read_and_written(before: CallInputs, written: set[str], template_only: bool) -> int:
    """Bytes of the arguments a data-producing call touches, each storage once: the written
    ones, and the others unless they are a constructor's templates."""
    seen: set[int | str] = set()
    total = 0
    for x in before.tensors:
        ident: int | str = x.key if x.key is not None else x.path
        if ident in seen:
            continue
        if template_only and x.path not in written:
            continue
        seen.add(ident)
        total += x.nbytes
    return total
