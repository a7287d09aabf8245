"""Comparing structured ATen outputs: tensors, tuples and lists of them, and plain values.

ATen operators return a tensor, a tuple of tensors (``var_mean``), a list of tensors, or a
plain value, and in-place / ``out=`` operators also write into their arguments. The engine
compares reference and solution with :func:`compare_call`, which walks both trees in step:

- tensors: same layout, shape and dtype, then values with FlashInfer-Bench's rule (an element
  fails only when ``|a-e| > atol`` AND ``|a-e| > rtol*|e|``); NaN must meet NaN, an infinity
  the same infinity; integer and bool tensors must be equal;
- tuples and lists: same length, element by element (a list may stand for a tuple);
- anything else (ints, floats, bools, ``None``, dtypes): exactly equal (NaN equals NaN).

The first failure decides the verdict; its ``kind`` maps to a Trace status: ``shape`` ->
INCORRECT_SHAPE, ``dtype`` -> INCORRECT_DTYPE, ``value`` and ``structure`` ->
INCORRECT_NUMERICAL.

Operators whose results cannot be compared element by element (random, uninitialised) or
whose result is the strides themselves (in-place view changes) pass their own tensor check
(``check``, from ``_call_random.tensor_check``); the walk through the trees is the same.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sweep.engine.aten._call_inputs import CallSpec, mutated_values

__all__ = ["Acc", "Comparison", "TensorCheck", "compare_call", "compare_tensor", "compare_values"]

Kind = Literal["ok", "shape", "dtype", "value", "structure"]


@dataclass(frozen=True)
class Comparison:
    """The verdict of comparing a solution's results with the reference's.

    Attributes:
        ok: Everything matched.
        kind: ``ok``, or what failed first: ``shape``, ``dtype``, ``value``, ``structure``.
        path: Where it failed (``output[1]``, ``args[0]``); empty when ok.
        detail: A sentence for the log.
        max_abs_error: Largest ``|actual - expected|`` over the values compared.
        max_rel_error: Largest ``|actual - expected| / |expected|`` over them.
    """

    ok: bool
    kind: Kind
    path: str
    detail: str
    max_abs_error: float
    max_rel_error: float


class Acc:
    """The tolerance of a comparison and the largest errors seen so far."""

    def __init__(self, atol: float, rtol: float) -> None:
        self.atol = atol
        self.rtol = rtol
        self.max_abs = 0.0
        self.max_rel = 0.0

    def fail(self, kind: Kind, path: str, detail: str) -> Comparison:
        return Comparison(False, kind, path, detail, self.max_abs, self.max_rel)


#: Compares one tensor of the reference's result (``e``) with the solution's (``a``) at
#: ``path``: ``None`` when they agree, else ``acc.fail(...)``.
TensorCheck = Callable[[Any, Any, str, Acc], "Comparison | None"]


def compare_values(
    expected: Any, actual: Any, *, atol: float, rtol: float, path: str = "output"
) -> Comparison:
    """Compare one result tree with the reference's (see the module docstring)."""
    acc = Acc(atol, rtol)
    bad = _walk(expected, actual, path, acc, compare_tensor)
    return bad or Comparison(True, "ok", "", "", acc.max_abs, acc.max_rel)


def compare_call(
    spec: CallSpec,
    expected: tuple[Any, Sequence[Any], dict[str, Any]],
    actual: tuple[Any, Sequence[Any], dict[str, Any]],
    *,
    atol: float,
    rtol: float,
    check: TensorCheck | None = None,
) -> Comparison:
    """Compare a whole call: the output, then every argument the operator mutates.

    Args:
        spec: The call (its ``mutates`` say which arguments to compare).
        expected: ``(output, args, kwargs)`` of the reference, after the call.
        actual: ``(output, args, kwargs)`` of the solution, after the call, on its own
            clones of the inputs.
        atol: Absolute tolerance.
        rtol: Relative tolerance.
        check: How tensors are compared (default :func:`compare_tensor`).
    """
    acc = Acc(atol, rtol)
    bad = _walk(expected[0], actual[0], "output", acc, check or compare_tensor)
    if bad:
        return bad
    exp_mut = mutated_values(spec, expected[1], expected[2])
    act_mut = dict(mutated_values(spec, actual[1], actual[2]))
    for path, value in exp_mut:
        bad = _walk(value, act_mut.get(path), path, acc, check or compare_tensor)
        if bad:
            return bad
    return Comparison(True, "ok", "", "", acc.max_abs, acc.max_rel)


def _walk(e: Any, a: Any, path: str, acc: Acc, check: TensorCheck) -> Comparison | None:
    import torch

    if isinstance(e, torch.Tensor):
        if not isinstance(a, torch.Tensor):
            return acc.fail("structure", path, f"expected a tensor, got {type(a).__name__}")
        return check(e, a, path, acc)
    if isinstance(e, (tuple, list, torch.Size)):
        if not isinstance(a, (tuple, list, torch.Size)):
            return acc.fail("structure", path, f"expected a {type(e).__name__}, got {type(a).__name__}")
        if len(e) != len(a):
            return acc.fail("structure", path, f"expected {len(e)} elements, got {len(a)}")
        for i, (x, y) in enumerate(zip(e, a)):
            bad = _walk(x, y, f"{path}[{i}]", acc, check)
            if bad:
                return bad
        return None
    if isinstance(a, torch.Tensor):
        return acc.fail("structure", path, f"expected {type(e).__name__} {e!r}, got a tensor")
    if _same_plain(e, a):
        return None
    return acc.fail("value", path, f"expected {e!r}, got {a!r}")


def _kind(v: Any) -> str:
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, (int, float, complex)):
        return "number"
    return type(v).__name__


def _same_plain(e: Any, a: Any) -> bool:
    if _kind(e) != _kind(a):
        return False
    if isinstance(e, float) and isinstance(a, float) and math.isnan(e) and math.isnan(a):
        return True
    try:
        return bool(e == a)
    except Exception:  # noqa: BLE001  (an exotic __eq__ means "different", not a crash)
        return False


def compare_tensor(e: Any, a: Any, path: str, acc: Acc) -> Comparison | None:
    """The default tensor check: layout, shape, dtype, then values within the tolerance."""
    import torch

    if e.layout != a.layout:
        return acc.fail("structure", path, f"layout {a.layout}, expected {e.layout}")
    if e.layout != torch.strided:
        e, a = e.to_dense(), a.to_dense()
    if tuple(e.shape) != tuple(a.shape):
        return acc.fail("shape", path, f"shape {list(a.shape)}, expected {list(e.shape)}")
    if e.dtype != a.dtype:
        return acc.fail("dtype", path, f"dtype {a.dtype}, expected {e.dtype}")
    if e.numel() == 0:
        return None
    if a.device != e.device:
        a = a.to(e.device)
    if not (e.is_floating_point() or e.is_complex()):
        diff = (a.to(torch.float64) - e.to(torch.float64)).abs()
        worst = float(diff.max())
        acc.max_abs = max(acc.max_abs, worst)
        if worst != 0.0:
            n = int((diff != 0).sum())
            return acc.fail("value", path, f"{n} of {e.numel()} elements differ (exact match required)")
        return None
    wide = torch.complex128 if e.is_complex() else torch.float64
    ee, aa = e.to(wide), a.to(wide)
    nan_e, nan_a = torch.isnan(ee), torch.isnan(aa)
    same = (ee == aa) | (nan_e & nan_a)  # equal values, equal infinities, NaN meeting NaN
    diff = torch.where(same, torch.zeros((), dtype=torch.float64, device=e.device), (aa - ee).abs())
    diff = torch.where(nan_e ^ nan_a, torch.full((), math.inf, dtype=torch.float64, device=e.device), diff)
    mag = ee.abs()
    rel = torch.where(diff == 0, torch.zeros_like(diff), diff / mag)
    acc.max_abs = max(acc.max_abs, float(diff.max()))
    acc.max_rel = max(acc.max_rel, float(torch.nan_to_num(rel, nan=math.inf).max()))
    bad = (diff > acc.atol) & (diff > acc.rtol * mag)
    # Also a failure: an infinity or NaN where the reference has a different value.
    bad |= ~same & ~torch.isfinite(diff)
    n = int(bad.sum())
    if n:
        return acc.fail(
            "value",
            path,
            f"{n} of {e.numel()} elements outside atol={acc.atol}, rtol={acc.rtol} "
            f"(max abs error {float(diff.max()):.3g})",
        )
    return None
