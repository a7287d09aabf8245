"""The work of one call: FLOPs and bytes, declared by the definition or counted.

Declared first: a definition's ``flops`` and ``bytes`` extension fields are arithmetic over
its axes (:func:`sweep.schema.expr.eval_number`). What is not declared is counted:

- FLOPs: the reference runs on ``meta`` tensors (shapes, dtypes and strides, no storage)
  under ``torch.utils.flop_counter.FlopCounterMode``, which counts the operators it knows
  (matrix products, convolutions, attention); every other operator counts 0, so an
  elementwise or reduction op counts 0 FLOPs and is judged by its bytes;
- bytes: every input tensor plus every output, each once: the shapes the definition gives
  (named inputs), or, for an imported ATen call, each storage the reference on meta tensors
  reads or writes, once (:mod:`sweep.engine.aten._call_bytes`): an output that views an argument
  or is uninitialised, and the argument an in-place call writes and returns, move no bytes
  of their own; a call that only views, allocates or changes metadata moves none.

Nothing here raises: what cannot be counted stays ``None`` with a note saying why.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from sweep.engine.aten import call_inputs, describe_call, is_backendbench, materialize_meta, moved_bytes
from sweep.engine.io import torch_dtype
from sweep.schema import Definition, ScalarInput, Workload
from sweep.schema.expr import eval_number
from sweep.schema.sizes import specs_bytes

__all__ = ["Work", "count_work"]

_FLOATING = frozenset(
    {"float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float4_e2m1"}
    | {"complex32", "complex64", "complex128"}
)


@dataclass(frozen=True)
class Work:
    """The work of one call of a definition on one workload.

    Attributes:
        flops: Floating-point operations, or ``None`` when unknown.
        bytes: Bytes moved to and from memory, or ``None`` when unknown.
        source: ``"declared"`` (both from the definition), ``"counted"`` (both counted), or
            ``"mixed"``; ``None`` when both are unknown.
        dtypes: The floating dtypes of the call's inputs (which peak rate applies).
        notes: Why something could not be declared or counted, for the log.
    """

    flops: float | None
    bytes: float | None
    source: str | None
    dtypes: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


def count_work(definition: Definition, workload: Workload, reference: Callable[..., object]) -> Work:
    """The work of ``reference`` (the definition's built ``run``) on ``workload``.

    Never raises: a failure leaves the quantity ``None`` and says why in :attr:`Work.notes`.
    """
    notes: list[str] = []
    axes = {**workload.axes, **definition.const_axes()}
    declared: dict[str, float] = {}
    for field in ("flops", "bytes"):
        text = getattr(definition, field)
        if text is None:
            continue
        try:
            declared[field] = eval_number(text, axes)
        except (ValueError, SyntaxError, ZeroDivisionError, OverflowError) as e:
            notes.append(f"work: the definition's {field} {text!r} cannot be evaluated here: {e}")
    flops, nbytes = declared.get("flops"), declared.get("bytes")
    if flops is None or nbytes is None:
        try:
            counter = _CallCounter if is_backendbench(definition, workload) else _NamedCounter
            counted = counter(definition, workload, reference).count(need_flops=flops is None)
        except Exception as e:  # noqa: BLE001 - counting must never fail an evaluation
            counted = _Counted(None, None, f"work not counted: {type(e).__name__}: {e}")
        if counted.note:
            notes.append(counted.note)
        flops = flops if flops is not None else counted.flops
        nbytes = nbytes if nbytes is not None else counted.bytes
    have = [field in declared for field, v in (("flops", flops), ("bytes", nbytes)) if v is not None]
    source = None if not have else "declared" if all(have) else "counted" if not any(have) else "mixed"
    dtypes = _dtypes(definition, workload)
    return Work(flops, nbytes, source, dtypes, tuple(notes))


@dataclass(frozen=True)
class _Counted:
    flops: float | None
    bytes: float | None
    note: str | None = None


def _dtypes(definition: Definition, workload: Workload) -> tuple[str, ...]:
    """The floating dtypes of the call's inputs (``()`` when they cannot be told)."""
    if not is_backendbench(definition, workload):
        found = {s.dtype.value for s in definition.inputs.values()}
    else:
        try:
            found = {t.dtype for t in describe_call(definition, workload).tensors()}
        except Exception:  # noqa: BLE001 - an unreadable call has no dtypes to tell
            found = set()
    return tuple(sorted(found & _FLOATING))


def _flops_of(call: Callable[[], object]) -> tuple[float | None, object, str | None]:
    """(FLOPs, value, why not) of ``call()`` on meta tensors under the flop counter."""
    from torch.utils.flop_counter import FlopCounterMode

    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            counter = FlopCounterMode(display=False)
            with counter:
                value = call()
    except Exception as e:  # noqa: BLE001 - a reference that needs real values: no count
        first = str(e).strip().splitlines()[0][:200] if str(e).strip() else ""
        return (
            None,
            None,
            f"work: FLOPs not counted (the reference does not run on meta tensors: {type(e).__name__}: {first})",
        )
    return float(counter.get_total_flops()), value, None


class _NamedCounter:
    """A definition that names its inputs and outputs."""

    def __init__(self, definition: Definition, workload: Workload, reference: Callable[..., object]) -> None:
        self.defn = definition
        self.wl = workload
        self.ref = reference
        self.axes = {**workload.axes, **definition.const_axes()}

    def _bytes(self) -> float:
        return specs_bytes(self.defn, self.defn.inputs, self.axes) + specs_bytes(
            self.defn, self.defn.outputs, self.axes
        )

    def _meta_args(self) -> list[Any]:
        args: list[Any] = []
        for name, spec in self.defn.inputs.items():
            shape = self.defn.resolve_shape(spec, self.axes)
            if shape is None:
                given = self.wl.inputs.get(name)
                if not isinstance(given, ScalarInput):
                    raise ValueError(f"scalar input {name!r} has no value in the workload")
                args.append(given.value)
            else:
                args.append(torch.empty(shape, dtype=torch_dtype(spec.dtype.value), device="meta"))
        return args

    def count(self, *, need_flops: bool) -> _Counted:
        nbytes = self._bytes()
        if not need_flops:
            return _Counted(None, nbytes)
        try:
            args = self._meta_args()
        except Exception as e:  # noqa: BLE001 - an input the counter cannot describe: no count
            return _Counted(None, nbytes, f"work: FLOPs not counted ({type(e).__name__}: {e})")
        flops, _, why = _flops_of(lambda: self.ref(*args))
        return _Counted(flops, nbytes, why)


class _CallCounter:
    """An imported ATen call: its arguments are the inputs, the reference's result the output."""

    def __init__(self, definition: Definition, workload: Workload, reference: Callable[..., object]) -> None:
        self.spec = describe_call(definition, workload)
        self.ref = reference

    def count(self, *, need_flops: bool) -> _Counted:
        spec = self.spec
        args, kwargs = materialize_meta(spec)
        before = call_inputs(args, kwargs)
        flops, value, why = _flops_of(lambda: self.ref(*args, **kwargs))
        moved = moved_bytes(spec, before, args, kwargs, None if why is not None else value)
        notes = [n for n in (moved.note,) if n]
        if why is not None:
            # The result is unknown: the arguments alone still bound the bytes from below.
            return _Counted(None, moved.bytes, "; ".join([why + "; bytes: the arguments only", *notes]))
        return _Counted(flops if need_flops else None, moved.bytes, "; ".join(notes) or None)
