"""Write argument trees back in the trace text format (Python ``repr`` style).

The inverse of :mod:`sweep.backendbench._parser`: for every row of the real trace files,
``format_row(parse(row)) == row``. Spellings the nodes remember (``torch.float16``, a
positional stride, a trailing comma) are written as they were read.
"""

from __future__ import annotations

from sweep.schema import call_args as ca

__all__ = ["format_call", "format_row", "format_value"]


def format_value(v: ca.ArgValue) -> str:
    """One value as trace text."""
    if v is None or v is True or v is False:
        return repr(v)
    if isinstance(v, (int, float, str)):
        # repr gives 1e-07, inf, -inf, nan, and the quotes Python would choose.
        return repr(v)
    if isinstance(v, ca.TensorArg):
        return _tensor(v)
    if isinstance(v, list):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    if isinstance(v, ca.TupleArg):
        return _tuple(v.items, v.trailing_comma)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k!r}: {format_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, ca.DTypeArg):
        return v.spelling or _dtype(v.name)
    if isinstance(v, ca.DeviceArg):
        return repr(f"torch.device('{v.name}')" if v.call_form else v.name)
    if isinstance(v, (ca.LayoutArg, ca.MemoryFormatArg)):
        return f"torch.{v.name}"
    raise TypeError(f"not an argument value: {type(v).__name__}")


def format_call(
    args: tuple[ca.ArgValue, ...], kwargs: dict[str, ca.ArgValue], *, trailing_comma: bool
) -> str:
    """``(<args tuple>, <kwargs dict>)`` as in a trace row."""
    return f"({_tuple(args, trailing_comma)}, {format_value(kwargs)})"


def format_row(
    cnt: int, args: tuple[ca.ArgValue, ...], kwargs: dict[str, ca.ArgValue], *, trailing_comma: bool
) -> str:
    """A whole ``cnt: <n>, (...)`` row (no newline)."""
    return f"cnt: {cnt}, {format_call(args, kwargs, trailing_comma=trailing_comma)}"


def _tuple(items: tuple[ca.ArgValue, ...], trailing_comma: bool) -> str:
    inner = ", ".join(format_value(x) for x in items)
    return "(" + inner + ("," if trailing_comma else "") + ")"


def _dtype(name: str) -> str:
    abbr = ca.DTYPE_TO_ABBREV.get(name)
    return abbr if abbr is not None else f"torch.{name}"


def _tensor(t: ca.TensorArg) -> str:
    st = t.style
    parts = [format_value(list(t.shape)), st.dtype_spelling or _dtype(t.dtype)]
    if t.stride is not None:
        body = format_value(list(t.stride)) if st.stride_list else _tuple(t.stride, len(t.stride) == 1)
        parts.append(f"stride={body}" if st.stride_keyword else body)
    elif st.none_stride or (t.device is not None and not st.device_keyword):
        parts.append("None")
    if t.device is not None:
        dev = format_value(t.device)
        parts.append(f"device={dev}" if st.device_keyword else dev)
    return "T(" + ", ".join(parts) + ")"
