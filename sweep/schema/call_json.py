"""Argument trees to and from the JSON a ``backendbench_args`` workload input stores.

Plain JSON carries what it can say itself: ``null``, booleans, integers, finite floats,
strings and lists. Everything else is an object tagged by ``"type"``::

    {"type": "tensor", "shape": [2, 3], "dtype": "float16", "stride": [1, 2],
     "device": {"type": "device", "value": "cpu"}, "style": {...}}
    {"type": "dtype", "value": "float16", "spelling": "torch.float16"}
    {"type": "layout", "value": "sparse_coo"}
    {"type": "memory_format", "value": "channels_last"}
    {"type": "device", "value": "cpu", "form": "torch.device"}
    {"type": "tuple", "items": [...], "trailing_comma": true}
    {"type": "dict", "items": {...}}
    {"type": "float", "value": "inf"}          (also "-inf", "nan")

Optional keys (``stride``, ``device``, ``style``, ``spelling``, ``form``, ``trailing_comma``)
are written only when they differ from the default. Decoding checks everything and names the
path of a bad value (``args[1][0].shape``). This module imports neither torch nor the schema,
so the schema can call it to validate workloads.
"""

from __future__ import annotations

import math
from typing import TypeAlias

import sweep.schema.call_args as ca
from sweep.errors import listing, shown
from sweep.schema.limits import INT64_MAX, INT64_MIN

__all__ = ["Json", "decode_call", "decode_value", "encode_call", "encode_value"]

Json: TypeAlias = None | bool | int | float | str | list["Json"] | dict[str, "Json"]

_NONFINITE = {"inf": math.inf, "-inf": -math.inf, "nan": math.nan}


def encode_value(v: ca.ArgValue) -> Json:
    """One argument value as JSON (see the module docstring for the form)."""
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isfinite(v):
            return v
        return {"type": "float", "value": "nan" if math.isnan(v) else ("inf" if v > 0 else "-inf")}
    if isinstance(v, list):
        return [encode_value(x) for x in v]
    if isinstance(v, ca.TensorArg):
        return _encode_tensor(v)
    if isinstance(v, ca.TupleArg):
        out: dict[str, Json] = {"type": "tuple", "items": [encode_value(x) for x in v.items]}
        if v.trailing_comma != (len(v.items) == 1):
            out["trailing_comma"] = v.trailing_comma
        return out
    if isinstance(v, dict):
        return {"type": "dict", "items": {k: encode_value(x) for k, x in v.items()}}
    if isinstance(v, ca.DTypeArg):
        d: dict[str, Json] = {"type": "dtype", "value": v.name}
        if v.spelling is not None:
            d["spelling"] = v.spelling
        return d
    if isinstance(v, ca.DeviceArg):
        return _encode_device(v)
    if isinstance(v, ca.LayoutArg):
        return {"type": "layout", "value": v.name}
    if isinstance(v, ca.MemoryFormatArg):
        return {"type": "memory_format", "value": v.name}
    raise TypeError(f"not an argument value: {type(v).__name__}")


def encode_call(
    args: tuple[ca.ArgValue, ...], kwargs: dict[str, ca.ArgValue]
) -> tuple[list[Json], dict[str, Json]]:
    """Positional and keyword arguments as the JSON ``args`` list and ``kwargs`` object."""
    return [encode_value(a) for a in args], {k: encode_value(v) for k, v in kwargs.items()}


def decode_call(
    args: list[Json], kwargs: dict[str, Json]
) -> tuple[tuple[ca.ArgValue, ...], dict[str, ca.ArgValue]]:
    """The inverse of :func:`encode_call`.

    Raises:
        ValueError: A value is malformed; the message starts with its path.
    """
    return (
        tuple(decode_value(a, f"args[{i}]") for i, a in enumerate(args)),
        {k: decode_value(v, f"kwargs[{shown(k)}]") for k, v in kwargs.items()},
    )


def decode_value(j: Json, path: str) -> ca.ArgValue:
    """One JSON value back into an argument value.

    Raises:
        ValueError: ``j`` is malformed; the message starts with ``path``.
    """
    if isinstance(j, int) and not isinstance(j, bool) and not INT64_MIN <= j <= INT64_MAX:
        # An ATen call takes 64-bit integers; a larger one cannot be passed nor stored.
        raise ValueError(f"{path}: {shown(j)} is outside the 64-bit integer range")
    if j is None or isinstance(j, (bool, int, float, str)):
        return j
    if isinstance(j, list):
        return [decode_value(x, f"{path}[{i}]") for i, x in enumerate(j)]
    kind = j.get("type")
    if kind == "tensor":
        return _decode_tensor(j, path)
    if kind == "tuple":
        _keys(j, path, {"items"}, {"trailing_comma"})
        items = j["items"]
        if not isinstance(items, list):
            raise ValueError(f"{path}.items: must be a list")
        trailing = j.get("trailing_comma", len(items) == 1)
        if not isinstance(trailing, bool):
            raise ValueError(f"{path}.trailing_comma: must be true or false")
        return ca.TupleArg(tuple(decode_value(x, f"{path}[{i}]") for i, x in enumerate(items)), trailing)
    if kind == "dict":
        _keys(j, path, {"items"}, set())
        items_d = j["items"]
        if not isinstance(items_d, dict):
            raise ValueError(f"{path}.items: must be an object")
        return {k: decode_value(x, f"{path}[{shown(k)}]") for k, x in items_d.items()}
    if kind == "dtype":
        _keys(j, path, {"value"}, {"spelling"})
        return _decode_dtype(j["value"], j.get("spelling"), path)
    if kind == "device":
        return _decode_device(j, path)
    if kind == "layout":
        _keys(j, path, {"value"}, set())
        return ca.LayoutArg(_choice(j["value"], ca.LAYOUTS, f"{path}.value"))
    if kind == "memory_format":
        _keys(j, path, {"value"}, set())
        return ca.MemoryFormatArg(_choice(j["value"], ca.MEMORY_FORMATS, f"{path}.value"))
    if kind == "float":
        _keys(j, path, {"value"}, set())
        value = j["value"]
        if not isinstance(value, str) or value not in _NONFINITE:
            raise ValueError(f"{path}.value: must be 'inf', '-inf' or 'nan', got {shown(value)}")
        return _NONFINITE[value]
    raise ValueError(
        f"{path}: unknown value type {shown(kind)} (expected one of tensor, tuple, dict, dtype, "
        "device, layout, memory_format, float)"
    )


def _keys(j: dict[str, Json], path: str, required: set[str], optional: set[str]) -> None:
    missing = sorted(required - set(j))
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    extra = sorted(set(j) - required - optional - {"type"})
    if extra:
        raise ValueError(f"{path}: unknown key(s) {', '.join(extra)}")


def _choice(value: Json, allowed: frozenset[str] | set[str], path: str) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{path}: must be one of {listing(sorted(allowed))}, got {shown(value)}")
    return value


def _spellings(name: str) -> set[str]:
    abbrs = {a for a, n in ca.ABBREV_TO_DTYPE.items() if n == name}
    return (
        {f"'{a}'" for a in abbrs}
        | {f'"{a}"' for a in abbrs}
        | {f"torch.{alias}" for alias, n in ca.TORCH_DTYPE_NAMES.items() if n == name}
    )


def _decode_dtype(value: Json, spelling: Json, path: str) -> ca.DTypeArg:
    name = _choice(value, set(ca.ITEMSIZE), f"{path}.value")
    if spelling is None:
        return ca.DTypeArg(name)
    if not isinstance(spelling, str) or spelling not in _spellings(name):
        raise ValueError(f"{path}.spelling: {shown(spelling)} does not spell dtype {name!r}")
    return ca.DTypeArg(name, spelling)


def _encode_device(v: ca.DeviceArg) -> dict[str, Json]:
    d: dict[str, Json] = {"type": "device", "value": v.name}
    if v.call_form:
        d["form"] = "torch.device"
    return d


def _decode_device(j: Json, path: str) -> ca.DeviceArg:
    if not isinstance(j, dict) or j.get("type") != "device":
        raise ValueError(f"{path}: must be a device object")
    _keys(j, path, {"value"}, {"form"})
    name, form = j["value"], j.get("form")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{path}.value: must be a device name such as 'cuda'")
    if form not in (None, "torch.device"):
        raise ValueError(f"{path}.form: must be 'torch.device', got {shown(form)}")
    return ca.DeviceArg(name, call_form=form is not None)


_STYLE_DEFAULTS = ca.TensorStyle()
_STYLE_FLAGS = ("stride_keyword", "stride_list", "none_stride", "device_keyword")


def _encode_tensor(t: ca.TensorArg) -> dict[str, Json]:
    d: dict[str, Json] = {"type": "tensor", "shape": list(t.shape), "dtype": t.dtype}
    if t.stride is not None:
        d["stride"] = list(t.stride)
    if t.device is not None:
        d["device"] = _encode_device(t.device)
    style: dict[str, Json] = {}
    if t.style.dtype_spelling is not None:
        style["dtype_spelling"] = t.style.dtype_spelling
    for flag in _STYLE_FLAGS:
        if getattr(t.style, flag) != getattr(_STYLE_DEFAULTS, flag):
            style[flag] = getattr(t.style, flag)
    if style:
        d["style"] = style
    return d


def _ints(value: Json, path: str) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(type(x) is int and 0 <= x <= INT64_MAX for x in value):
        raise ValueError(f"{path}: must be a list of non-negative integers under 2**63, got {shown(value)}")
    return tuple(value)  # type: ignore[arg-type]


def _decode_tensor(j: dict[str, Json], path: str) -> ca.TensorArg:
    _keys(j, path, {"shape", "dtype"}, {"stride", "device", "style"})
    shape = _ints(j["shape"], f"{path}.shape")
    if math.prod(shape) > INT64_MAX:
        raise ValueError(f"{path}.shape: {shown(list(shape))} has more elements than a 64-bit count holds")
    dtype = _choice(j["dtype"], set(ca.ITEMSIZE), f"{path}.dtype")
    stride = None
    if j.get("stride") is not None:
        stride = _ints(j["stride"], f"{path}.stride")
        if len(stride) != len(shape):
            raise ValueError(f"{path}.stride: {len(stride)} entries for a {len(shape)}-d shape")
    device = _decode_device(j["device"], f"{path}.device") if j.get("device") is not None else None
    raw = j.get("style") or {}
    if not isinstance(raw, dict):
        # ValueError, not TypeError: pydantic reports only ValueError as a validation error.
        raise ValueError(f"{path}.style: must be an object")  # noqa: TRY004
    unknown = sorted(set(raw) - {"dtype_spelling", *_STYLE_FLAGS})
    if unknown:
        raise ValueError(f"{path}.style: unknown key(s) {', '.join(unknown)}")
    flags: dict[str, bool] = {}
    for flag in _STYLE_FLAGS:
        if flag in raw:
            value = raw[flag]
            if not isinstance(value, bool):
                raise ValueError(f"{path}.style.{flag}: must be true or false")
            flags[flag] = value
    spelling = raw.get("dtype_spelling")
    if spelling is not None:
        _decode_dtype(dtype, spelling, f"{path}.style.dtype_spelling")
    style = ca.TensorStyle(dtype_spelling=spelling if isinstance(spelling, str) else None, **flags)
    return ca.TensorArg(shape, dtype, stride, device, style)
