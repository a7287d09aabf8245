"""Checking results that cannot be compared element by element: random and uninitialised
ones, and the metadata of in-place view changes (the kinds: ``_op_kinds``).

Every tensor of the result (and every argument the operator writes) is first checked for
layout, shape, dtype and device. Then, by kind:

- uninitialised (``new_empty``, ``empty_like``, ``empty_strided``, ``resize_``, ...): strides
  too, and nothing of the values;
- in-place view (``as_strided_``, ``t_``, ``transpose_``, ``squeeze_``, ``unsqueeze_``...):
  strides and storage offset, then the values as for any operator;
- random: a statistical test with a false-failure probability of about 1e-8 per tensor:

  ===========================================  ==============================================
  operators                                    test of the solution's values
  ===========================================  ==============================================
  bernoulli (all overloads, ``_``, ``out``)    every value 0 or 1; the sum against the sum of
                                               ``p`` (``self`` when no ``p``), within 6
                                               standard deviations, on the whole tensor and
                                               on the halves of lower and higher ``p``
  uniform(_), rand, rand_like                  in [from, to]; mean as above, and the mean of
                                               the squared standardized values near 1
  normal (all overloads, ``_``), randn(_like)  mean and spread as above, per element's
                                               ``mean`` and ``std``
  exponential(_)                               non-negative; mean and spread (1/lambd)
  randint(_like), random_ (from/to)            integers in [low, high); mean and spread
  dropout, native_dropout                      each value 0 or input/(1-p); the share kept
                                               against 1-p; the mask against 1-p
  randperm                                     a permutation of 0..n-1
  multinomial                                  classes in range, distinct per row without
                                               replacement, and the two-sample test below
  any other seeded operator (its tag)          two-sample Kolmogorov-Smirnov test against the
                                               reference's own draw (critical value 3.1 *
                                               sqrt(2/n))
  ===========================================  ==============================================

Tests look at most 2**24 elements (evenly spaced positions); the tolerance adds the output
dtype's rounding (half an epsilon per element). A tensor of a few elements is checked for
little more than its range.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from sweep.engine.aten._call_compare import Acc, Comparison, TensorCheck, compare_tensor
from sweep.engine.aten._index_draw import schema_args
from sweep.engine.aten._op_kinds import OpKind
from sweep.errors import EngineError

__all__ = ["tensor_check"]

#: Standard deviations a sum may stray (two-sided p about 2e-9).
Z = 6.0
#: Kolmogorov-Smirnov critical constant for alpha 1e-8: sqrt(-ln(alpha / 2) / 2).
KS_C = 3.1
#: Most elements a test reads.
SAMPLE = 1 << 24
_DROPOUT = frozenset({"dropout", "native_dropout"})


@dataclass(frozen=True)
class _Law:
    """A per-element distribution: mean and variance (tensors or numbers that broadcast to
    the result), support, and the variance of the squared standardized value (``None``: no
    spread test)."""

    mean: Any
    var: Any
    low: float | None = None
    high: float | None = None
    binary: bool = False
    integer: bool = False
    kappa: float | None = None


def _structure(e: torch.Tensor, a: torch.Tensor, path: str, acc: Acc, strides: bool) -> Comparison | None:
    if e.layout != a.layout:
        return acc.fail("structure", path, f"layout {a.layout}, expected {e.layout}")
    if tuple(e.shape) != tuple(a.shape):
        return acc.fail("shape", path, f"shape {list(a.shape)}, expected {list(e.shape)}")
    if e.dtype != a.dtype:
        return acc.fail("dtype", path, f"dtype {a.dtype}, expected {e.dtype}")
    if e.device.type != a.device.type:
        return acc.fail("structure", path, f"device {a.device}, expected {e.device}")
    if strides and e.layout == torch.strided and a.numel() > 1 and _strides_differ(e, a):
        return acc.fail("shape", path, f"strides {list(a.stride())}, expected {list(e.stride())}")
    return None


def _strides_differ(e: torch.Tensor, a: torch.Tensor) -> bool:
    """Whether the layouts differ: the stride of a dimension of size 1 is never used to
    address memory (and copies, ``clone`` included, may rewrite it), so it is not compared."""
    return any(n > 1 and se != sa for n, se, sa in zip(e.shape, e.stride(), a.stride()))


def _uninitialized(e: Any, a: Any, path: str, acc: Acc) -> Comparison | None:
    return _structure(e, a, path, acc, strides=True)


def _view(e: Any, a: Any, path: str, acc: Acc) -> Comparison | None:
    bad = _structure(e, a, path, acc, strides=True)
    if bad is None and e.layout == torch.strided and e.storage_offset() != a.storage_offset():
        bad = acc.fail("shape", path, f"storage offset {a.storage_offset()}, expected {e.storage_offset()}")
    return bad or compare_tensor(e, a, path, acc)


def _positions(n: int, device: torch.device) -> torch.Tensor | None:
    return None if n <= SAMPLE else torch.arange(SAMPLE, device=device, dtype=torch.int64) * n // SAMPLE


def _flat(t: Any, shape: torch.Size, pos: torch.Tensor | None, device: torch.device) -> torch.Tensor:
    """``t`` (a tensor or number broadcast to ``shape``) at ``pos`` (all when ``None``), float64."""
    if not isinstance(t, torch.Tensor):
        t = torch.tensor(float(t), dtype=torch.float64, device=device)
    t = torch.broadcast_to(t.to(device), shape)
    if pos is not None:
        t = t[torch.unravel_index(pos, shape)]
    flat: torch.Tensor = t.reshape(-1).to(torch.float64)
    return flat


def _sum_test(x: torch.Tensor, mean: torch.Tensor, var: torch.Tensor, slack: torch.Tensor) -> str | None:
    if x.numel() == 0:
        return None
    off = float((x - mean).sum())
    bound = Z * math.sqrt(float(var.sum())) + float(slack.sum()) + 1e-9
    if abs(off) <= bound:
        return None
    n = x.numel()
    return f"mean {float(x.mean()):.6g} over {n} values, expected {float(mean.mean()):.6g} +- {bound / n:.3g}"


def _law_test(a: torch.Tensor, law: _Law) -> str | None:
    pos = _positions(a.numel(), a.device)
    x = _flat(a, a.shape, pos, a.device)
    mean, var = _flat(law.mean, a.shape, pos, a.device), _flat(law.var, a.shape, pos, a.device)
    eps = torch.finfo(a.dtype).eps / 2 if a.is_floating_point() else 0.0
    sd = var.clamp_min(0).sqrt()
    slack = eps * (mean.abs() + Z * sd)
    finite = torch.isfinite(x)
    if not bool(finite.all()):
        return f"{int((~finite).sum())} values are not finite"
    if law.binary and not bool(((x == 0) | (x == 1)).all()):
        return "values other than 0 and 1"
    if law.integer and not bool((x == x.round()).all()):
        return "values that are not integers"
    tol = float(slack.max()) if slack.numel() else 0.0
    if law.low is not None and float(x.min()) < law.low - tol:
        return f"a value {float(x.min()):.6g} below {law.low:.6g}"
    if law.high is not None and float(x.max()) > law.high + tol:
        return f"a value {float(x.max()):.6g} above {law.high:.6g}"
    # The sum on the whole tensor, then on the halves of lower and higher mean (a kernel that
    # ignores per-element parameters fails one of them).
    order = torch.argsort(mean, stable=True)
    half = x.numel() // 2
    for part in (None, order[:half], order[half:]):
        bad = (
            _sum_test(x, mean, var, slack)
            if part is None
            else _sum_test(x[part], mean[part], var[part], slack[part])
        )
        if bad:
            return bad
    if law.kappa is not None:
        keep = sd > 64 * slack  # rounding would swamp the standardized value
        if int(keep.sum()) > 1:
            z2 = ((x - mean)[keep] / sd[keep]) ** 2
            off = float((z2 - 1).sum())
            bound = Z * math.sqrt(law.kappa * z2.numel()) + 64 * float((slack[keep] / sd[keep]).sum()) + 1e-9
            if abs(off) > bound:
                return f"spread: mean squared standardized value {float(z2.mean()):.4g}, expected 1"
    return None


def _ks_test(e: torch.Tensor, a: torch.Tensor) -> str | None:
    """Two-sample Kolmogorov-Smirnov test of the reference's draw against the solution's."""
    pos = _positions(a.numel(), a.device)
    parts = [(e, a)] if not e.is_complex() else [(e.real, a.real), (e.imag, a.imag)]
    for ee, aa in parts:
        x = _flat(ee, ee.shape, pos, ee.device).nan_to_num(nan=math.inf).sort().values
        y = _flat(aa, aa.shape, pos, aa.device).to(x.device).nan_to_num(nan=math.inf).sort().values
        n = x.numel()
        grid = torch.cat([x, y])
        fx = torch.searchsorted(x, grid, right=True).to(torch.float64) / n
        fy = torch.searchsorted(y, grid, right=True).to(torch.float64) / n
        d = float((fx - fy).abs().max())
        crit = KS_C * math.sqrt(2.0 / n)
        if d > crit:
            return (
                f"distribution differs from the reference's draw (Kolmogorov-Smirnov D={d:.4g} > {crit:.4g})"
            )
    return None


def _num(v: Any, default: float) -> Any:
    return default if v is None or isinstance(v, bool) else v


def _law(packet: str, b: dict[str, Any]) -> _Law | None:
    if packet == "bernoulli":
        p = b.get("p") if b.get("p") is not None else b.get("self")
        if p is None:
            return None
        p = p.to(torch.float64) if isinstance(p, torch.Tensor) else float(p)
        return _Law(p, p * (1 - p), binary=True)
    if packet in ("uniform", "rand", "rand_like"):
        lo, hi = float(_num(b.get("from"), 0.0)), float(_num(b.get("to"), 1.0))
        return _Law((lo + hi) / 2, (hi - lo) ** 2 / 12, low=lo, high=hi, kappa=0.8)
    if packet in ("normal", "randn", "randn_like"):
        mean, std = (_num(b.get(k), d) for k, d in (("mean", 0.0), ("std", 1.0)))
        mean = mean.to(torch.float64) if isinstance(mean, torch.Tensor) else float(mean)
        std = std.to(torch.float64) if isinstance(std, torch.Tensor) else float(std)
        return _Law(mean, std * std, kappa=2.0)
    if packet == "exponential":
        rate = float(_num(b.get("lambd"), 1.0))
        return _Law(1 / rate, 1 / rate**2, low=0.0, kappa=8.0) if rate > 0 else None
    if packet in ("randint", "randint_like", "random"):
        first, end = b.get("low", b.get("from")), b.get("high", b.get("to"))
        if packet == "random" and first is None and end is None:
            return None
        start = int(_num(first, 0))
        if not isinstance(end, int) or isinstance(end, bool) or end <= start:
            return None
        mean, var = (start + end - 1) / 2, ((end - start) ** 2 - 1) / 12
        return _Law(mean, var, low=start, high=end - 1, integer=True, kappa=2.0)
    return None


class _Random:
    """The tensor check of a random call (see the module docstring)."""

    def __init__(self, kind: OpKind, bound: dict[str, Any]) -> None:
        self.kind = kind
        self.bound = bound
        self.law = _law(kind.packet, bound)

    def __call__(self, e: Any, a: Any, path: str, acc: Acc) -> Comparison | None:
        bad = _structure(e, a, path, acc, strides=False)
        if bad is not None or a.numel() == 0 or a.layout != torch.strided:
            return bad
        try:
            problem = self._test(e, a, path, acc)
        except (RuntimeError, ValueError):  # parameters that do not broadcast to it: compare draws
            problem = _ks_test(e, a)
        return acc.fail("value", path, f"random result fails its test: {problem}") if problem else None

    def _test(self, e: torch.Tensor, a: torch.Tensor, path: str, acc: Acc) -> str | None:
        packet, b = self.kind.packet, self.bound
        if packet in _DROPOUT:
            keep = 1.0 - float(_num(b.get("p"), 0.5))
            if a.dtype == torch.bool or path.endswith("[1]"):
                return _law_test(a, _Law(keep, keep * (1 - keep), binary=True))
            return self._dropout(a, b.get("input"), keep, acc)
        if self.law is not None:
            return _law_test(a, self.law)
        if packet == "randperm":
            ref = torch.arange(a.numel(), device=a.device, dtype=torch.int64)
            return (
                None if torch.equal(a.reshape(-1).to(torch.int64).sort().values, ref) else "not a permutation"
            )
        if packet == "multinomial":
            probs = b.get("self")
            classes = probs.shape[-1] if isinstance(probs, torch.Tensor) and probs.dim() else 0
            if bool((a < 0).any()) or bool((a >= classes).any()):
                return f"a class outside [0, {classes})"
            if not b.get("replacement") and a.dim() and a.shape[-1] > 1:
                s = a.sort(dim=-1).values
                if bool((s[..., 1:] == s[..., :-1]).any()):
                    return "a class drawn twice in one row without replacement"
        return _ks_test(e, a)

    def _dropout(self, a: torch.Tensor, x: Any, keep: float, acc: Acc) -> str | None:
        if not isinstance(x, torch.Tensor) or x.shape != a.shape or keep <= 0:
            return _law_test((a != 0).to(torch.float32), _Law(keep, keep * (1 - keep), binary=True))
        xx, aa = x.to(torch.float64), a.to(torch.float64)
        scaled = xx / keep
        ok = (aa == 0) | ((aa - scaled).abs() <= acc.atol + acc.rtol * scaled.abs())
        if not bool(ok.all()):
            return f"{int((~ok).sum())} values are neither 0 nor input/(1-p)"
        live = xx != 0
        kept = ((aa != 0) & live).to(torch.float64)[live]
        return _law_test(kept, _Law(keep, keep * (1 - keep), binary=True)) if kept.numel() else None


def _bind(op: str, args: Sequence[Any], kwargs: dict[str, Any]) -> dict[str, Any]:
    """The call's materialized arguments by schema name, defaults included."""
    try:
        schema = schema_args(op)
    except EngineError:
        return {}
    bound = {a.name: a.default for a in schema}
    positional = [a.name for a in schema if not a.kwarg_only]
    bound.update(zip(positional, args))
    bound.update(kwargs)
    return bound


def tensor_check(kind: OpKind, args: Sequence[Any], kwargs: dict[str, Any]) -> TensorCheck | None:
    """How the tensors of a call of this kind are compared (``None``: element by element).

    ``args``/``kwargs``: the call's arguments (those the operator does not write keep the
    values it was called with), for the parameters of a random operator's distribution.
    """
    check = _plain_check(kind, args, kwargs)
    if not kind.opaque:
        return check
    return _Opaque(tuple(f"output[{i}]" for i in kind.opaque), check or compare_tensor)


def _plain_check(kind: OpKind, args: Sequence[Any], kwargs: dict[str, Any]) -> TensorCheck | None:
    if kind.uninitialized:
        return _uninitialized
    if kind.random and kind.op is not None:
        return _Random(kind, _bind(kind.op, args, kwargs))
    if kind.inplace_view:
        return _view
    return None


@dataclass(frozen=True)
class _Opaque:
    """Structure only at the opaque output positions (and inside them); ``rest`` elsewhere."""

    paths: tuple[str, ...]
    rest: TensorCheck

    def __call__(self, e: Any, a: Any, path: str, acc: Acc) -> Comparison | None:
        if any(path == p or path.startswith(p + "[") for p in self.paths):
            return _structure(e, a, path, acc, strides=False)
        return self.rest(e, a, path, acc)
