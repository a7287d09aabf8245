"""The argument tree of one ATen call: its tensors by path, and copying it in place.

A call's arguments are a list and a dict whose values nest lists, tuples and dicts of
tensors and plain values. A tensor is named by its path (``args[0]``, ``kwargs['out']``,
``args[1][2]``); tensors may be views that overlap or share a storage (an expanded tensor),
so copies go through the whole extent of the storage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from sweep.engine.io import bits

__all__ = [
    "Args",
    "copy_into",
    "freshly_drawn",
    "storage_view",
    "tensor_leaves",
    "tree_tensors",
    "under",
    "written_paths",
]

Args = tuple[list[Any], dict[str, Any]]


def tensor_leaves(args: Sequence[Any], kwargs: dict[str, Any]) -> list[tuple[str, torch.Tensor]]:
    """Every tensor of a call with its path (``args[0]``, ``kwargs['out']``, ``args[1][2]``)."""
    out: list[tuple[str, torch.Tensor]] = []

    def walk(v: Any, path: str) -> None:
        if isinstance(v, torch.Tensor):
            out.append((path, v))
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, f"{path}[{i}]")
        elif isinstance(v, dict):
            for k, x in v.items():
                walk(x, f"{path}[{k!r}]")

    for i, a in enumerate(args):
        walk(a, f"args[{i}]")
    for k, v in kwargs.items():
        walk(v, f"kwargs[{k!r}]")
    return out


def under(path: str, roots: set[str]) -> bool:
    """``path`` is one of ``roots`` or inside one (``args[0][1]`` is inside ``args[0]``)."""
    return any(path == r or path.startswith(r + "[") for r in roots)


def tree_tensors(value: object) -> list[torch.Tensor]:
    """Every tensor in a value (a tensor, or lists, tuples and dicts of them)."""
    return [t for _, t in tensor_leaves([value], {})]


def written_paths(before: Args, after: Args) -> list[str]:
    """Paths of the tensors whose bytes differ between two copies of one call's arguments."""
    pairs = zip(tensor_leaves(*before), tensor_leaves(*after))
    return [
        path for (path, b), (_, a) in pairs if b.layout == torch.strided and not torch.equal(bits(b), bits(a))
    ]


def freshly_drawn(t: torch.Tensor) -> bool:
    """Whether a tensor of a call gets new values before timed calls: the floating and
    complex ones (drawn at random by BackendBench's policy; integers may be indices)."""
    return t.layout == torch.strided and (t.is_floating_point() or t.is_complex())


def storage_view(t: torch.Tensor) -> torch.Tensor:
    """The whole extent of a strided tensor's storage as a flat view (so a tensor whose
    elements overlap, like an expanded one, can be copied into)."""
    if t.is_contiguous():
        return t.reshape(-1)
    extent = 1 + sum((s - 1) * st for s, st in zip(t.shape, t.stride()))
    return t.as_strided((extent,), (1,))


def copy_into(dst: Args, src: Args) -> bool:
    """Copy the tensors of ``src`` into those of ``dst`` in place, storage and all, and give
    each ``dst`` tensor the shape, strides and storage offset of its ``src`` again (an
    in-place view operator, ``as_strided_``, ``t_``, ``resize_``, changes them on its
    argument); ``False`` (nothing copied) when the dtypes or devices differ, a tensor is not
    strided, or a storage is too small for the view (a callee swapped it)."""
    pairs = list(zip(tensor_leaves(*dst), tensor_leaves(*src)))
    for (_, d), (_, s) in pairs:
        if (d.dtype, d.layout, d.device) != (s.dtype, s.layout, s.device) or d.layout != torch.strided:
            return False
        need = (s.storage_offset() + storage_view(s).numel()) * s.element_size() if s.numel() else 0
        if d.untyped_storage().nbytes() < need:
            return False
    for (_, d), (_, s) in pairs:
        if (d.shape, d.stride(), d.storage_offset()) != (s.shape, s.stride(), s.storage_offset()):
            d.as_strided_(s.shape, s.stride(), s.storage_offset())
        if d.numel():
            storage_view(d).copy_(storage_view(s))
    return True
