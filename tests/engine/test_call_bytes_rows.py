"""An ATen-identity solution is never flagged ``impossible`` on a real BackendBench row.

The rows (``tests/data/backendbench/real_rows.trace.txt``, see the README beside it) are, for
every operator of the shared ``sample`` and ``edge_cases`` files, small real rows and its
row of most input bytes (often a synthetic ``cnt: 0`` one, tensors of up to 1e11 elements,
counted on ``meta`` only).

The counted work is checked against what the reference is seen to do when it runs, found
here independently of the counting (no schema, no storage identity, no operator names):

- an output is *new* when its bytes lie outside every argument's storage (``data_ptr``
  ranges), else it views an argument;
- a new output is *uninitialised* when, with torch's deterministic mode filling fresh memory
  (NaN, the largest integer), it holds only the fill, and without it holds something else;
- an argument is *written* when its bytes differ after the call, and *read* when drawing it
  again changes a new output or a written argument.

The least an identity kernel can move is what it reads, writes and creates; at the H100's
datasheet peaks that takes ``max(moved / bandwidth, FLOPs / peak)``. At that latency (the
fastest an identity kernel could ever run) the roofline must not say ``impossible``; a call
that moves nothing and does no FLOPs has no floor at all, so no latency is impossible.
A row is not run for itself (a synthetic one may describe 1e11 elements): what each of its
arguments and outputs does is taken from the smallest row of its operator with the same
tensor paths, none empty, that runs on this CPU, and weighed with the row's own sizes.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import torch

from sweep.backendbench import build_records, parse_trace_file
from sweep.engine.aten._aten_ops import operator_problem
from sweep.engine.aten._call_inputs import CallSpec, clone_call, describe_call, materialize, materialize_meta
from sweep.engine.aten._call_tree import storage_view, tensor_leaves, tree_tensors
from sweep.engine.run._roofline import IMPOSSIBLE, assess
from sweep.engine.run._work import Work, count_work
from sweep.schema import Definition, Performance, Workload
from sweep.schema.peaks import datasheet_ceilings

pytestmark = [
    pytest.mark.slow,
    # complex32 rows of edge_cases: torch warns that ComplexHalf is experimental.
    pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental"),
]

ROWS = Path(__file__).resolve().parents[1] / "data" / "backendbench" / "real_rows.trace.txt"
H100 = "NVIDIA H100 80GB HBM3"
#: Rows whose arguments take more than this are not run on this CPU.
RUN_LIMIT = 100 * 2**20
#: ... or FLOPs more than this (float16 matrix products are slow on a CPU).
FLOP_LIMIT = 5e8
#: No timed call, of a kernel or of none, takes less (100 ns).
TINY_MS = 1e-4


@functools.cache
def _rows() -> list[tuple[Definition, Workload, str]]:
    items = build_records(parse_trace_file(ROWS), source_file=ROWS.name, include_synthetic=True)
    return [(item.definition, w, item.op) for item in items for w in item.workloads]


def _reference(defn: Definition) -> Any:
    namespace: dict[str, Any] = {}
    exec(defn.reference, namespace)  # noqa: S102 - the importer's own reference source
    return namespace["run"]


# ---- what the reference is seen to do on the CPU ---------------------------------------------


@dataclass
class Seen:
    """What one run of the reference did, by argument path and output position."""

    read: set[str] = field(default_factory=set)
    written: set[str] = field(default_factory=set)
    new: set[int] = field(default_factory=set)  # initialised outputs outside every argument
    uninitialised: set[int] = field(default_factory=set)


def _range(t: torch.Tensor) -> tuple[int, int]:
    start = t.data_ptr()
    span = (
        (1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))) * t.element_size() if t.numel() else 0
    )
    return start, start + span


def _parts(t: torch.Tensor) -> list[torch.Tensor]:
    if t.layout == torch.sparse_coo:
        return [t._indices(), t._values()]
    return [t]


def _outputs(value: object) -> list[torch.Tensor]:
    return [p for t in tree_tensors(value) for p in _parts(t)]


def _inside_arguments(out: torch.Tensor, args: Any, kwargs: Any) -> bool:
    """Whether the bytes of ``out`` overlap the storage of an argument."""
    lo, hi = _range(out)
    for _, t in tensor_leaves(args, kwargs):
        base = t.untyped_storage().data_ptr()
        if lo < base + t.untyped_storage().nbytes() and base < hi:
            return True
    return False


def _bits(t: torch.Tensor) -> torch.Tensor:
    flat = t.detach().contiguous().reshape(-1)
    return flat.view(torch.uint8) if flat.numel() else flat


def _fill_value(t: torch.Tensor) -> bool:
    """Whether ``t`` holds only what deterministic mode fills fresh memory with."""
    if t.numel() == 0:
        return False
    if t.is_floating_point() or t.is_complex():
        return bool(torch.isnan(t).all())
    if t.dtype == torch.bool:
        return bool(t.all())
    return bool((t == torch.iinfo(t.dtype).max).all())


@contextlib.contextmanager
def _filling() -> Iterator[None]:
    was = (
        torch.are_deterministic_algorithms_enabled(),
        torch.is_deterministic_algorithms_warn_only_enabled(),
    )
    fill = torch.utils.deterministic.fill_uninitialized_memory  # type: ignore[attr-defined]
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.utils.deterministic.fill_uninitialized_memory = True  # type: ignore[attr-defined]
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was[0], warn_only=was[1])
        torch.utils.deterministic.fill_uninitialized_memory = fill  # type: ignore[attr-defined]


def _call(ref: Any, args: Any, kwargs: Any) -> object:
    torch.manual_seed(0)
    with torch.no_grad():
        return ref(*args, **kwargs)


def _draw(spec: CallSpec, seed: int) -> Any:
    return materialize(spec, torch.Generator().manual_seed(seed), "cpu")


def _perturbed(
    drawn: Callable[[int], dict[str, torch.Tensor]],
    path: str,
    t: torch.Tensor,
    leaves: dict[str, torch.Tensor],
) -> Iterator[torch.Tensor]:
    """Other values for the argument at ``path``, each differing from ``t``: new draws of the
    input policy (valid indices), then constants and the values of a like argument (an
    output of random data can hide a change: ``x >= 0``, ``isnan``, ``min`` of integers)."""
    if t.layout != torch.strided or t.numel() == 0:
        return
    candidates: list[Any] = [lambda s=seed: drawn(s)[path] for seed in (1, 2)]
    if t.dtype == torch.bool:
        candidates.append(lambda: ~t)
    else:
        candidates += [lambda: torch.zeros_like(t), lambda: torch.ones_like(t), lambda: -t]
        if t.is_floating_point() or t.is_complex():
            candidates += [lambda: torch.full_like(t, float("nan")), lambda: torch.full_like(t, float("inf"))]
    for p, u in leaves.items():
        if p == path or u.numel() == 0 or u.layout != torch.strided:
            continue
        if (u.shape, u.stride(), u.dtype) == (t.shape, t.stride(), t.dtype):
            candidates.append(lambda u=u: u.clone())
        elif not u.is_complex() or t.is_complex():
            # One value of another argument everywhere (``eq`` of two random tensors).
            candidates.append(lambda u=u: torch.full_like(t, u.reshape(-1)[0].item()))
    for make in candidates:
        other = make()
        if not torch.equal(_bits(other), _bits(t)):
            yield other


def observe(spec: CallSpec, ref: Any) -> Seen:
    """What the reference does on this call (see the module docstring)."""
    base = _draw(spec, 0)
    plain = clone_call(*base)
    out_plain = _outputs(_call(ref, *plain))  # first, before any filled memory is freed
    filled = clone_call(*base)
    with _filling():
        value = _call(ref, *filled)
    outs = _outputs(value)
    seen = Seen()
    for i, o in enumerate(outs):
        if o.numel() == 0 or _inside_arguments(o, *filled):
            continue  # nothing to write, or a view of an argument
        uninit = _fill_value(o) and not (i < len(out_plain) and _fill_value(out_plain[i]))
        (seen.uninitialised if uninit else seen.new).add(i)
    before = dict(tensor_leaves(*base))
    after = dict(tensor_leaves(*filled))
    seen.written = {p for p, t in before.items() if not torch.equal(_bits(t), _bits(after[p]))}

    def effect(value: object, args: Any) -> list[torch.Tensor]:
        leaves = dict(tensor_leaves(*args))
        news = [o for i, o in enumerate(_outputs(value)) if i in seen.new]
        return [_bits(o) for o in news] + [_bits(leaves[p]) for p in sorted(seen.written)]

    expected = effect(value, filled)

    @functools.cache
    def drawn(seed: int) -> dict[str, torch.Tensor]:
        return dict(tensor_leaves(*_draw(spec, seed)))

    for path, t in before.items():
        for other in _perturbed(drawn, path, t, before):
            args = clone_call(*base)
            storage_view(dict(tensor_leaves(*args))[path]).copy_(storage_view(other))
            try:
                with _filling():
                    got = effect(_call(ref, *args), args)
            except Exception:  # noqa: BLE001 - the values made it fail: it looked at them
                seen.read.add(path)
                break
            if len(got) != len(expected) or any(not torch.equal(g, e) for g, e in zip(got, expected)):
                seen.read.add(path)
                break
    return seen


def least_bytes(spec: CallSpec, ref: Any, seen: Seen) -> float:
    """Bytes an identity kernel must move on this call, by what ``seen`` says each argument
    and output does, with this call's sizes (outputs' sizes from the ``meta`` result)."""
    args, kwargs = materialize_meta(spec)
    leaves = dict(tensor_leaves(args, kwargs))
    sizes = {p: t.untyped_storage().nbytes() for p, t in leaves.items()}
    outs = _outputs(_call(ref, args, kwargs))
    moved = sum(sizes[p] for p in seen.read) + sum(sizes[p] for p in seen.written)
    return float(moved + sum(outs[i].numel() * outs[i].element_size() for i in seen.new))


# ---- the roofline of an identity kernel -----------------------------------------------------


def _assess(defn: Definition, wl: Workload, work: Work, latency_ms: float) -> tuple[Performance, list[str]]:
    """What the engine's roofline makes of ``latency_ms`` on an H100 for this call."""
    cache = SimpleNamespace(
        work={("d", "w"): work},
        environments={"cuda:0": SimpleNamespace(hardware="NVIDIA_H100", device_name=H100)},
    )
    run = SimpleNamespace(
        def_key="d",
        wl_key="w",
        cache=cache,
        defn=defn,
        wl=wl,
        device=torch.device("cuda:0"),
        task=SimpleNamespace(ceilings=None),
        settings=SimpleNamespace(suspicious_speedup=10.0),
    )
    perf = Performance(latency_ms=latency_ms, reference_latency_ms=latency_ms, speedup_factor=1.0)
    got = assess(run, perf)  # type: ignore[arg-type]
    return got.performance, got.flags or []


def _fastest_ms(work: Work, least: float) -> float:
    """The fastest an identity kernel moving ``least`` bytes and doing the counted FLOPs can
    run at the H100's datasheet peaks."""
    sheet = datasheet_ceilings(H100, hardware="NVIDIA_H100")
    assert sheet is not None and sheet.gbps
    peak = sheet.flops_peak(work.dtypes) or 0.0
    compute = (work.flops or 0.0) / (peak * 1e12) * 1e3 if peak else 0.0
    return max(least / (sheet.gbps * 1e9) * 1e3, compute)


@functools.cache
def _spec(index: int) -> CallSpec:
    defn, wl, _ = _rows()[index]
    return describe_call(defn, wl)


@functools.cache
def _structure(index: int) -> frozenset[str]:
    """The paths of the row's tensors (``args[0]``, ``args[1][2]``, ``kwargs['out']``)."""
    return frozenset(p for p, _ in tensor_leaves(*materialize_meta(_spec(index))))


def _full(index: int) -> bool:
    return all(t.numel for t in _spec(index).tensors())


@functools.cache
def _runs_here(index: int) -> bool:
    defn, wl, _ = _rows()[index]
    if _spec(index).nbytes > RUN_LIMIT or operator_problem(defn, "cpu") is not None:
        return False
    return (count_work(defn, wl, _reference(defn)).flops or 0.0) <= FLOP_LIMIT


@functools.cache
def _observed(index: int) -> Seen | None:
    """What row ``index`` of :func:`_rows` was seen to do on the CPU (None: it cannot run)."""
    if not _runs_here(index):
        return None
    try:
        return observe(_spec(index), _reference(_rows()[index][0]))
    except Exception:  # noqa: BLE001 - torch's CPU kernel refuses it: no observation
        return None


def _seen_for(index: int) -> Seen | None:
    """What a row like this one was seen to do: the row itself when a tensor of it is empty
    (nothing to move), else the smallest row of its operator with the same tensor paths,
    none of them empty, that runs here (this row's own sizes are weighed, not that row's)."""
    if not _full(index):
        return _observed(index)
    op = _rows()[index][2]
    alike = [
        (_spec(i).nbytes, i)
        for i, (_, _, o) in enumerate(_rows())
        if o == op and _full(i) and _structure(i) == _structure(index) and _runs_here(i)
    ]
    return _observed(min(alike)[1]) if alike else None


def test_every_operator_of_both_files_is_copied_and_run_where_this_cpu_can() -> None:
    ops = {op for _, _, op in _rows()}
    assert len(ops) == 100  # sample.trace.txt's 90 and the ones only edge_cases.trace.txt has
    assert {"aten.split_with_sizes.default", "aten.new_empty.default", "aten._unsafe_view.default"} <= ops
    ran = {op for i, (_, _, op) in enumerate(_rows()) if _seen_for(i) is not None}
    could = {op for i, (_, _, op) in enumerate(_rows()) if _runs_here(i)}
    # Not run: what this torch lacks on a CPU (``_cudnn_rnn``, ...), rows above the limits,
    # and ``_fft_c2c``, whose rows are float16 (the CPU's FFT has no half precision).
    assert could - ran <= {"aten._fft_c2c.default"}
    assert len(ran) >= 90


def _row_id(row: tuple[Definition, Workload, str]) -> str:
    source = row[1].inputs["call"]
    return f"{row[2]}@{source.source.line}"  # type: ignore[union-attr]


@pytest.mark.parametrize("index", range(len(_rows())), ids=[_row_id(r) for r in _rows()])
def test_an_identity_kernel_is_never_impossible(index: int) -> None:
    defn, wl, op = _rows()[index]
    ref = _reference(defn)
    work = count_work(defn, wl, ref)
    assert work.bytes is not None, work.notes
    seen = _seen_for(index)
    if seen is None:
        pytest.skip(f"{op}: no run of this row or one like it on the CPU")
    least = least_bytes(_spec(index), ref, seen)
    fastest = max(TINY_MS, _fastest_ms(work, least))
    perf, flags = _assess(defn, wl, work, fastest)
    assert IMPOSSIBLE not in flags, (op, seen, work, least, perf.floor_ms, fastest)
    if not least and not work.flops:
        # Nothing to move and nothing to compute: no floor, so no latency is impossible.
        assert work.bytes == 0 and perf.floor_ms is None
        assert IMPOSSIBLE not in _assess(defn, wl, work, 1e-12)[1]
