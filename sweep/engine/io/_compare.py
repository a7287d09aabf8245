"""Checking outputs against the reference: shape, then dtype, then values.

Rules (documented in docs/engine-and-timing.md):

- An element fails only when ``|x - y| > atol`` AND ``|x - y| > rtol * |y|``.
- Default tolerances by output dtype (:data:`DEFAULT_TOLERANCES`), tightest for float64,
  then float32, then float16, bfloat16 and the float8 types; integers and bool compare
  exactly. ``EvalSettings.tolerance_for`` overrides them per definition and op_type.
- Relative error is ``|x - y| / (|y| + 1e-8)``; both maxima are taken over all outputs and
  trials and reported in ``Correctness``.
- Non-finite values: where the reference is +/-inf the solution must be the same inf;
  NaN or inf in a solution where the reference is finite fails (INCORRECT_NUMERICAL, with
  the errors recorded as inf). NaN in the reference output is a broken evaluation, not a
  pass: see :func:`check_reference`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

import torch

from sweep.schema import Definition, Status, Tolerance

__all__ = [
    "DEFAULT_TOLERANCES",
    "ErrorStats",
    "Mismatch",
    "check_reference",
    "compare_outputs",
    "is_sequence",
    "normalize_outputs",
    "tolerance",
]

#: (atol, rtol) by dtype name.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-4, 1e-4),
    "complex128": (1e-7, 1e-7),
    "complex64": (1e-4, 1e-4),
    "float16": (1e-3, 5e-3),
    "complex32": (1e-3, 5e-3),
    "bfloat16": (1e-2, 2e-2),
    "float8_e4m3fn": (0.125, 0.125),
    "float8_e5m2": (0.25, 0.25),
    "float4_e2m1": (0.5, 0.5),
}
_REL_EPS = 1e-8


def tolerance(dtype_name: str, override: Tolerance) -> tuple[float, float]:
    """(atol, rtol) for an output dtype: the override's fields where set, else the default."""
    atol, rtol = DEFAULT_TOLERANCES.get(dtype_name, (0.0, 0.0))
    return (
        override.atol if override.atol is not None else atol,
        override.rtol if override.rtol is not None else rtol,
    )


@dataclass
class ErrorStats:
    """Running maxima over every comparison of one evaluation."""

    max_abs: float = 0.0
    max_rel: float = 0.0

    def update(self, abs_err: float, rel_err: float) -> None:
        self.max_abs = max(self.max_abs, abs_err)
        self.max_rel = max(self.max_rel, rel_err)


@dataclass(frozen=True)
class Mismatch:
    """Why a comparison failed."""

    status: Status
    message: str


def _shape_str(shape: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(d) for d in shape) + "]"


def _dtype_str(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def is_sequence(value: object) -> TypeGuard[Sequence[object]]:
    """Whether a returned value holds several outputs: a tuple, a list, or another sequence
    (a tvm-ffi ``Array``: how a TVM-FFI entry point returns a tuple), never a tensor or text."""
    return isinstance(value, Sequence) and not isinstance(value, (torch.Tensor, str, bytes, bytearray))


def normalize_outputs(value: object, names: list[str]) -> list[object] | Mismatch:
    """A value-returning call's result as one object per output name."""
    if value is None:
        return Mismatch(
            Status.INCORRECT_SHAPE,
            f"returned None; expected {len(names)} output(s) ({', '.join(names)}) "
            "(is destination_passing_style set right?)",
        )
    if is_sequence(value):
        items = list(value)
    else:
        items = [value]
    if len(items) != len(names):
        return Mismatch(
            Status.INCORRECT_SHAPE,
            f"returned {len(items)} value(s); expected {len(names)} output(s) ({', '.join(names)})",
        )
    return items


def check_reference(outputs: list[object], definition: Definition, axes: dict[str, int]) -> str | None:
    """Why the reference's outputs cannot be used to judge a solution, or ``None``."""
    for name, out in zip(definition.outputs, outputs):
        spec = definition.outputs[name]
        shape = definition.resolve_shape(spec, axes) or ()
        if not isinstance(out, torch.Tensor):
            return f"reference returned {type(out).__name__} for output {name!r}, expected a tensor"
        if tuple(out.shape) != shape:
            return (
                f"reference output {name!r} has shape {_shape_str(tuple(out.shape))}, the definition "
                f"says {_shape_str(shape)}: the definition's reference is wrong"
            )
        if _dtype_str(out.dtype) != spec.dtype.value:
            return (
                f"reference output {name!r} has dtype {_dtype_str(out.dtype)}, the definition says "
                f"{spec.dtype.value}: the definition's reference is wrong"
            )
        if (out.is_floating_point() or out.is_complex()) and bool(torch.isnan(out).any()):
            n = int(torch.isnan(out).sum())
            return (
                f"reference produced NaN in output {name!r} ({n} of {out.numel()} elements): "
                "the evaluation cannot be judged (RUNTIME_ERROR, not a pass or a fail of the solution)"
            )
    return None


def _as_real(t: torch.Tensor) -> torch.Tensor:
    if t.is_complex():
        return torch.view_as_real(t.to(torch.complex128 if t.dtype == torch.complex128 else torch.complex64))
    if t.dtype == torch.float64:
        return t
    return t.to(torch.float32) if t.is_floating_point() else t.to(torch.int64)


def compare_outputs(
    got: list[object],
    expected: list[torch.Tensor],
    definition: Definition,
    axes: dict[str, int],
    override: Tolerance,
    stats: ErrorStats,
    where: str,
) -> Mismatch | None:
    """Compare a solution's outputs with the reference's: all shapes, then all dtypes, then values.

    Args:
        got: The solution's outputs, in definition order.
        expected: The reference's outputs (already checked by :func:`check_reference`).
        where: Context for messages (``"trial 2"``).
    """
    names = list(definition.outputs)
    for name, g in zip(names, got):
        shape = definition.resolve_shape(definition.outputs[name], axes) or ()
        if not isinstance(g, torch.Tensor):
            return Mismatch(
                Status.INCORRECT_SHAPE,
                f"output {name!r} ({where}): got {type(g).__name__}, expected a tensor",
            )
        if tuple(g.shape) != shape:
            return Mismatch(
                Status.INCORRECT_SHAPE,
                f"output {name!r} ({where}): shape {_shape_str(tuple(g.shape))}, expected {_shape_str(shape)}",
            )
    for name, g in zip(names, got):
        assert isinstance(g, torch.Tensor)
        want = definition.outputs[name].dtype.value
        if _dtype_str(g.dtype) != want:
            return Mismatch(
                Status.INCORRECT_DTYPE,
                f"output {name!r} ({where}): dtype {_dtype_str(g.dtype)}, expected {want}",
            )
    for name, g, e in zip(names, got, expected):
        assert isinstance(g, torch.Tensor)
        atol, rtol = tolerance(definition.outputs[name].dtype.value, override)
        problem = _compare_values(g.to(e.device), e, atol, rtol, stats)
        if problem is not None:
            return Mismatch(Status.INCORRECT_NUMERICAL, f"output {name!r} ({where}): {problem}")
    return None


def _compare_values(
    got: torch.Tensor, exp: torch.Tensor, atol: float, rtol: float, stats: ErrorStats
) -> str | None:
    g, e = _as_real(got), _as_real(exp)
    if g.numel() == 0:
        return None
    if g.is_floating_point():
        e_fin, g_fin = torch.isfinite(e), torch.isfinite(g)
        bad_nonfinite = (~e_fin & (g != e)) | (e_fin & ~g_fin)
        n_nonfinite = int(bad_nonfinite.sum())
        if n_nonfinite:
            stats.update(float("inf"), float("inf"))
            idx = _index(bad_nonfinite, got)
            return (
                f"{n_nonfinite} of {g.numel()} elements are NaN/inf where the reference differs; "
                f"first at {idx}: got {_item(got, idx)}, expected {_item(exp, idx)}"
            )
        both = e_fin & g_fin
        diff = torch.where(both, (g - e).abs(), torch.zeros((), dtype=g.dtype, device=g.device))
        mag = torch.where(both, e.abs(), torch.ones((), dtype=e.dtype, device=e.device))
    else:
        diff = (g - e).abs().to(torch.float64)
        mag = e.abs().to(torch.float64)
    rel = diff / (mag + _REL_EPS)
    stats.update(float(diff.max()), float(rel.max()))
    fail = (diff > atol) & (diff > rtol * mag)
    n_fail = int(fail.sum())
    if not n_fail:
        return None
    worst = torch.where(fail, diff, torch.zeros((), dtype=diff.dtype, device=diff.device))
    flat = int(worst.reshape(-1).argmax())
    idx = _unravel(flat, tuple(diff.shape))[: got.dim()]
    return (
        f"{n_fail} of {g.numel()} elements differ beyond atol={atol:g}, rtol={rtol:g}; "
        f"worst at {list(idx)}: got {_item(got, idx)}, expected {_item(exp, idx)} "
        f"(abs err {float(diff.reshape(-1)[flat]):.4g})"
    )


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    out = []
    for dim in reversed(shape):
        out.append(flat % dim)
        flat //= dim
    return tuple(reversed(out))


def _index(mask: torch.Tensor, like: torch.Tensor) -> tuple[int, ...]:
    flat = int(mask.reshape(-1).to(torch.uint8).argmax())
    return _unravel(flat, tuple(mask.shape))[: like.dim()]


def _item(t: torch.Tensor, idx: tuple[int, ...]) -> str:
    sub = t[idx] if idx else t
    v: object = sub.item() if sub.numel() == 1 else sub.tolist()
    return f"{v:.6g}" if isinstance(v, float) else str(v)
