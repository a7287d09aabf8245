"""Which overload of an ATen operator a recorded call was: a profiler trace names the packet
(``aten::softmax``) and the kinds of its arguments, not the overload (``softmax.int``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["ARG_KINDS", "pick_overload"]

#: The kinds of a recorded argument: a tensor, a scalar, a list of scalars, a list of tensors,
#: ``None``.
ARG_KINDS = ("tensor", "scalar", "scalar_list", "tensor_list", "none")

_SCALAR_TYPES = ("int", "float", "bool", "Scalar", "SymInt", "ScalarType", "Layout", "MemoryFormat", "str")


def _type_text(arg: Any) -> tuple[str, bool]:
    """A schema argument's type without its optional wrapper, and whether it is optional
    (torch prints ``Optional[Tensor]``; schemas in text write ``Tensor?``)."""
    text = str(arg.type)
    if text.startswith("Optional[") and text.endswith("]"):
        return text[len("Optional[") : -1], True
    if text.endswith("?"):
        return text[:-1], True
    return text, False


def _accepts(arg: Any, kind: str) -> bool:
    """Whether a schema argument takes a recorded argument of ``kind``."""
    base, optional = _type_text(arg)
    if kind == "none":
        return optional or arg.has_default_value()
    if kind == "tensor":
        return base == "Tensor"
    if kind == "tensor_list":
        return base in ("List[Tensor]", "List[Optional[Tensor]]", "Tensor[]", "Tensor?[]")
    if kind == "scalar_list":
        return (
            base.startswith("List[")
            and "Tensor" not in base
            or (base.endswith("[]") and "Tensor" not in base)
        )
    return base in _SCALAR_TYPES


def _optional(arg: Any) -> bool:
    return arg.has_default_value() or _type_text(arg)[1]


def pick_overload(packet: str, kinds: Sequence[str], namespace: str = "aten") -> str | None:
    """The first overload of ``namespace.packet`` (in torch's order, ``default`` first) whose
    positional arguments take ``kinds`` in order, every argument left out having a default;
    ``None`` when torch has no such operator or no overload fits."""
    import torch

    try:
        ns = getattr(torch.ops, namespace)
        pkt = getattr(ns, packet)
        names = list(pkt.overloads())
    except (AttributeError, RuntimeError):
        return None
    names.sort(key=lambda n: (n != "default", n))
    for name in names:
        schema = getattr(pkt, name)._schema
        positional = [a for a in schema.arguments if not a.kwarg_only]
        if len(kinds) > len(positional):
            continue
        if not all(_accepts(a, k) for a, k in zip(positional, kinds)):
            continue
        rest = positional[len(kinds) :] + [a for a in schema.arguments if a.kwarg_only]
        if all(_optional(a) for a in rest):
            return str(name)
    return None
