"""A whitelist parser for BackendBench operator trace files. Never ``eval``.

A trace file is ``Operator: <namespace.op.overload>`` lines, each followed by rows
``cnt: <n>, (<args tuple>, <kwargs dict>)`` written in a tiny subset of Python. Upstream reads
rows with ``eval`` and full builtins; these files come from third parties, so here each row is
split by one regular expression into tokens and read by a small recursive-descent parser that
knows only literals, ``T(...)`` and an allow-list of names. Anything else is refused with the
file, line, column and the offending text. Nothing is executed and nothing is allocated:
tensors stay :class:`~sweep.schema.call_args.TensorArg` descriptions.

Bounds: every integer fits 64 bits (an ATen call takes no other, and the store keeps them in
BIGINT columns), a tensor has at most 2**63-1 elements, a row nests at most
:data:`MAX_NESTING` levels (the records it becomes must stay under the JSON depth every
reader accepts), and string escapes must be valid Python ones.
"""

from __future__ import annotations

import ast
import math
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from sweep.errors import TraceParseError, clip, did_you_mean, reason
from sweep.schema.call_args import (
    ABBREV_TO_DTYPE,
    LAYOUTS,
    MEMORY_FORMATS,
    TORCH_DTYPE_NAMES,
    ArgValue,
    DeviceArg,
    DTypeArg,
    LayoutArg,
    MemoryFormatArg,
    TensorArg,
    TensorStyle,
    TupleArg,
    parse_op_name,
)
from sweep.schema.limits import INT64_MAX, INT64_MIN, read_text

__all__ = ["ALLOWED_NAMES", "MAX_FILE_BYTES", "MAX_NESTING", "TraceRow", "parse_trace", "parse_trace_file"]

#: The deepest a row may nest brackets (real rows nest three or four).
MAX_NESTING = 50
#: The largest trace file read (the whole BackendBench set is a few megabytes).
MAX_FILE_BYTES = 1024 * 2**20
# Integers of at most this many digits fit 64 bits without a check (10**18 < 2**63).
_SAFE_DIGITS = 18


@dataclass(frozen=True, slots=True)
class TraceRow:
    """One ``cnt:`` row of a trace file.

    Attributes:
        op: The operator overload, e.g. ``"aten.add.Tensor"``.
        cnt: How often the call was seen; 0 marks a synthetic (scaled-up) row.
        args: Positional arguments.
        kwargs: Keyword arguments, in written order.
        line: 1-based line number in the file.
        args_trailing_comma: The args tuple was written with a trailing comma.
        checked: True only for rows the parser made: every value was checked as it was read
            (the checks ``sweep.schema.call_json.decode_call`` makes, and more), so import
            builds their records without decoding the row a second time. A row made by hand
            leaves it False and is checked in full when imported.
    """

    op: str
    cnt: int
    args: tuple[ArgValue, ...]
    kwargs: dict[str, ArgValue]
    line: int
    args_trailing_comma: bool = False
    checked: bool = field(default=False, compare=False, repr=False)

    @property
    def synthetic(self) -> bool:
        """True for rows with ``cnt: 0``: synthetic inputs, not seen in a real model."""
        return self.cnt == 0


# Plain ``T([..], dt[, stride=(..)])`` and lists of non-negative ints, each read as one token:
# most of a trace is these, and one token is much cheaper than a dozen. A plain tensor's
# meaning still comes from the general rules (see ``_fast_tensor``). Numbers of more than 18
# digits take the general rules, which check that they fit 64 bits.
_FAST = r"""
      T\(\[[\d,\ ]*\],\ [a-z0-9]+(?:,\ stride=\([\d,\ ]*\))?\)
    | \[\d{1,18}(?:,\ \d{1,18})*\]
"""
_GENERAL = r"""
      [()\[\]{},:=]
    | -?(?:\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|\d+|inf\b|nan\b)
    | [A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*
    | '(?:[^'\\\n]|\\.)*'
    | "(?:[^"\\\n]|\\.)*"
    | \S
"""
_TOKEN = re.compile(r"\s*(" + _FAST + "|" + _GENERAL + ")", re.VERBOSE)
_SLOW_TOKEN = re.compile(r"\s*(" + _GENERAL + ")", re.VERBOSE)
_TENSOR_CACHE: dict[str, TensorArg] = {}


def clear_tensor_cache() -> None:
    """Forget the parsed tensor arguments kept between calls (a benchmark's cold start)."""
    _TENSOR_CACHE.clear()


_END = "\x00"
_MISS: ArgValue = object()  # type: ignore[assignment]
_CNT = re.compile(r"cnt:\s*(\d{1,19})\s*,(.*)$")
_OPERATOR = re.compile(r"Operator:\s*(\S+)\s*$")
_DEVICE_NAME = re.compile(r"^[a-z_]+(?::\d+)?$")
_DEVICE_CALL = re.compile(r"^torch\.device\('([a-z_]+(?::\d+)?)'\)$")

_NAMES: dict[str, ArgValue] = {
    "True": True,
    "False": False,
    "None": None,
    "inf": float("inf"),
    "nan": float("nan"),
    **{abbr: DTypeArg(name) for abbr, name in ABBREV_TO_DTYPE.items()},
    **{f"torch.{alias}": DTypeArg(name, f"torch.{alias}") for alias, name in TORCH_DTYPE_NAMES.items()},
    **{f"torch.{name}": LayoutArg(name) for name in LAYOUTS},
    **{f"torch.{name}": MemoryFormatArg(name) for name in MEMORY_FORMATS},
}
ALLOWED_NAMES: frozenset[str] = frozenset(_NAMES) | {"T"}


class _Refused(Exception):
    """Raised inside a row; carries the index of the offending token."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.message = message
        self.index = index


def parse_trace(text: str, *, filename: str = "<string>") -> list[TraceRow]:
    """Parse the text of a trace file.

    Args:
        text: The whole file.
        filename: Named in error messages.

    Returns:
        Every row, in file order.

    Raises:
        TraceParseError: A line is outside the grammar; the message names the file, line,
            column and offending text.
    """
    rows: list[TraceRow] = []
    op: str | None = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("cnt:"):
            if op is None:
                raise TraceParseError(
                    f"{filename}:{lineno}: a 'cnt:' row before any 'Operator:' line: {_clip(line)!r}"
                )
            m = _CNT.match(line)
            if m is None or int(m.group(1)) > INT64_MAX:
                raise TraceParseError(
                    f"{filename}:{lineno}: expected 'cnt: <count>, (<args>, <kwargs>)' with a count "
                    f"under 2**63, got {_clip(line)!r}"
                )
            rows.append(_parse_row(op, int(m.group(1)), m.group(2), m.start(2), lineno, filename))
        elif line.startswith("Operator:"):
            m = _OPERATOR.match(line)
            if m is None:
                raise TraceParseError(
                    f"{filename}:{lineno}: expected 'Operator: <name>', got {_clip(line)!r}"
                )
            try:
                op = parse_op_name(m.group(1)).qualified
            except ValueError as e:
                raise TraceParseError(f"{filename}:{lineno}: {e}") from None
        else:
            raise TraceParseError(
                f"{filename}:{lineno}: expected an 'Operator:' or 'cnt:' line, got {_clip(line)!r}"
            )
    return rows


def parse_trace_file(path: str | Path) -> list[TraceRow]:
    """Read and parse one trace file (see :func:`parse_trace`).

    Raises:
        TraceParseError: The file cannot be read or holds text outside the grammar.
    """
    p = Path(path)
    try:
        text = read_text(p, MAX_FILE_BYTES)
    except (OSError, ValueError) as e:  # ValueError: not a regular file, too large, not UTF-8
        raise TraceParseError(f"{clip(str(p), 300)}: cannot read trace file: {reason(e)}") from None
    return parse_trace(text, filename=str(p))


def _clip(text: str, n: int = 120) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def _parse_row(op: str, cnt: int, body: str, offset: int, lineno: int, filename: str) -> TraceRow:
    toks: list[str] = _TOKEN.findall(body)
    toks.append(_END)
    try:
        if len(toks) > MAX_NESTING:  # fewer tokens cannot nest deeper
            _check_nesting(toks)
        value, i = _value(toks, 0)
        if toks[i] != _END:
            raise _Refused("unexpected text after the row", i)
        if not (isinstance(value, TupleArg) and len(value.items) == 2):
            raise _Refused("a row must be '(<args tuple>, <kwargs dict>)'", 0)
        args, kwargs = value.items
        if not isinstance(kwargs, dict):
            raise _Refused("the second element of a row must be the kwargs dict", 0)
        if isinstance(args, TupleArg):
            items, trailing = args.items, args.trailing_comma
        else:
            # ``(x)`` is just x in Python: a one-argument call written without its comma.
            items, trailing = (args,), False
    except RecursionError:
        raise TraceParseError(
            f"{filename}:{lineno}: row nested too deeply: {_clip('cnt: ' + str(cnt) + ',' + body)!r}"
        ) from None
    except _Refused as e:
        col, text = _locate(body, e.index)
        raise TraceParseError(
            f"{filename}:{lineno}:{col + offset}: {e.message}: {_clip(text, 60)!r} "
            f"(in row {_clip('cnt: ' + str(cnt) + ',' + body)!r})"
        ) from None
    return TraceRow(op, cnt, items, kwargs, lineno, trailing, checked=True)


def _check_nesting(toks: list[str]) -> None:
    """Refuse a row nested deeper than :data:`MAX_NESTING`, before the recursive reader."""
    depth = 0
    for k, t in enumerate(toks):
        if t in ("(", "[", "{"):
            depth += 1
            if depth > MAX_NESTING:
                raise _Refused(f"nested too deeply (more than {MAX_NESTING} levels)", k)
        elif t in (")", "]", "}"):
            depth -= 1


def _int(t: str, i: int) -> int:
    """The integer token ``t``, which must fit 64 bits (checked before any long conversion)."""
    if len(t.lstrip("-")) > 19:
        raise _Refused("an integer beyond the 64-bit range", i)
    n = int(t)
    if not INT64_MIN <= n <= INT64_MAX:
        raise _Refused("an integer beyond the 64-bit range", i)
    return n


def _locate(body: str, index: int) -> tuple[int, str]:
    """Column (1-based, in ``body``) and text of token ``index``, for messages."""
    for k, m in enumerate(_TOKEN.finditer(body)):
        if k == index:
            return m.start(1) + 1, body[m.start(1) :]
    return len(body) + 1, "<end of row>"


def _value(toks: list[str], i: int) -> tuple[ArgValue, int]:
    t = toks[i]
    c = t[0]
    if c == "T" and t[1:2] == "(":
        return _fast_tensor(t, i), i + 1
    if c == "[" and len(t) > 1:
        return [int(x) for x in t[1:-1].split(",")], i + 1
    if c == "(":
        items, i, trailing = _sequence(toks, i + 1, ")")
        if len(items) == 1 and not trailing:
            return items[0], i  # parenthesized expression, not a tuple
        return TupleArg(tuple(items), trailing), i
    if c == "[":
        items, i, _ = _sequence(toks, i + 1, "]")
        return items, i
    if c == "{":
        return _dict(toks, i + 1)
    if c == "'" or c == '"':
        return _string_value(toks, i), i + 1
    if c.isdigit() or c == "-" or c == ".":
        if t == "-":
            raise _Refused("a lone '-' (only numbers and -inf may be negative)", i)
        if t.lstrip("-").isdigit():
            return _int(t, i), i + 1
        try:
            return float(t), i + 1
        except ValueError:
            raise _Refused("not a number", i) from None
    if c.isalpha() or c == "_":
        if toks[i + 1] == "(":
            if t == "T":
                return _tensor(toks, i + 2, i)
            raise _Refused("calls are not allowed (only T(...))", i)
        try:
            return _NAMES[t], i + 1
        except KeyError:
            hint = did_you_mean(t, ALLOWED_NAMES)
            raise _Refused(f"name {t!r} is not allowed{hint}", i) from None
    if t == _END:
        raise _Refused("unexpected end of row", i)
    raise _Refused(f"unexpected {t!r}", i)


_PLAIN_T = re.compile(
    r"T\(\[((?:\d{1,18}, )*\d{1,18})?\], ([a-z0-9]+)(?:, stride=\(((?:\d{1,18}, )*\d{1,18}(,?))?\))?\)"
)


def _fast_tensor(tok: str, index: int) -> TensorArg:
    """A plain ``T(...)`` read as one token, cached by its text.

    The common exact forms are read directly; anything else (and every error) goes through
    the general rules, so both paths mean the same thing.
    """
    hit = _TENSOR_CACHE.get(tok)
    if hit is not None:
        return hit
    m = _PLAIN_T.fullmatch(tok)
    dtype = ABBREV_TO_DTYPE.get(m.group(2)) if m is not None else None
    v: ArgValue = None
    if m is not None and dtype is not None:
        shape_txt, stride_txt, comma = m.group(1), m.group(3), m.group(4)
        shape = tuple(map(int, shape_txt.split(", "))) if shape_txt else ()
        if math.prod(shape) > INT64_MAX:
            raise _Refused("T() shape has more than 2**63-1 elements", index)
        if m.group(3) is None and "stride" not in tok:
            v = TensorArg(shape, dtype)
        elif stride_txt is not None:
            stride = tuple(map(int, stride_txt.rstrip(",").split(", ")))
            # ``(5)`` is an int, not a tuple: leave it to the general rules to refuse.
            if len(stride) == len(shape) and (len(stride) > 1 or comma):
                v = TensorArg(shape, dtype, stride)
        elif "stride=()" in tok and not shape:
            v = TensorArg(shape, dtype, ())
    if v is None:
        sub: list[str] = _SLOW_TOKEN.findall(tok)
        sub.append(_END)
        try:
            v, j = _value(sub, 0)
        except _Refused as e:
            raise _Refused(e.message, index) from None
        if not isinstance(v, TensorArg) or sub[j] != _END:
            raise _Refused("malformed T(...)", index)
    assert isinstance(v, TensorArg)
    if len(_TENSOR_CACHE) > 100_000:
        _TENSOR_CACHE.clear()
    _TENSOR_CACHE[tok] = v
    return v


def _sequence(toks: list[str], i: int, close: str) -> tuple[list[ArgValue], int, bool]:
    """Items up to ``close``; returns them, the index after ``close``, and the trailing comma."""
    items: list[ArgValue] = []
    if toks[i] == close:
        return items, i + 1, False
    names = _NAMES
    cache = _TENSOR_CACHE
    while True:
        # Inline the commonest items (cached tensors, names, small ints): a call per item
        # is most of the cost of a row.
        t = toks[i]
        v = cache.get(t, _MISS)
        if v is _MISS:
            v = names.get(t, _MISS)
            if v is _MISS:
                if t.isdigit() and len(t) <= _SAFE_DIGITS:
                    v = int(t)
                    i += 1
                else:
                    v, i = _value(toks, i)
            else:
                i += 1
        else:
            i += 1
        items.append(v)
        t = toks[i]
        if t == ",":
            i += 1
            if toks[i] == close:
                return items, i + 1, True
        elif t == close:
            return items, i + 1, False
        else:
            raise _Refused(f"expected ',' or {close!r}", i)


def _dict(toks: list[str], i: int) -> tuple[dict[str, ArgValue], int]:
    out: dict[str, ArgValue] = {}
    if toks[i] == "}":
        return out, i + 1
    while True:
        k = toks[i]
        if k[0] not in "'\"":
            raise _Refused("dict keys must be strings", i)
        key = _string(k, i)
        if toks[i + 1] != ":":
            raise _Refused("expected ':' after a dict key", i + 1)
        v, i = _value(toks, i + 2)
        if key == "device":
            v = _as_device(v)
        out[key] = v
        t = toks[i]
        if t == ",":
            i += 1
            if toks[i] == "}":
                return out, i + 1
        elif t == "}":
            return out, i + 1
        else:
            raise _Refused("expected ',' or '}'", i)


def _string(tok: str, i: int) -> str:
    # Only escapes need Python's rules; literal_eval of a single string literal runs nothing.
    if "\\" not in tok:
        s = tok[1:-1]
    else:
        try:
            with warnings.catch_warnings():
                # An unknown escape ('\d') is only a warning in Python: here it is refused.
                warnings.simplefilter("error")
                s = str(ast.literal_eval(tok))
        except (SyntaxError, ValueError, Warning) as e:
            # Python says "(unicode error) 'unicodeescape' codec can't decode ...: <why>".
            why = str(getattr(e, "msg", None) or e).rsplit(": ", 1)[-1]
            raise _Refused(f"invalid escape in a string ({why})", i) from None
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:
            # A lone surrogate ('\ud800') is a Python string but no JSON or UTF-8 text: its
            # record could not be written, so the row is refused here, with its place.
            raise _Refused("a string with a lone surrogate (not valid Unicode text)", i) from None
    return s


def _string_value(toks: list[str], i: int) -> ArgValue:
    tok = toks[i]
    s = _string(tok, i)
    name = ABBREV_TO_DTYPE.get(s)
    if name is not None:
        # BackendBench's reader turns a quoted abbreviation into the dtype.
        return DTypeArg(name, tok)
    m = _DEVICE_CALL.match(s)
    if m is not None:
        return DeviceArg(m.group(1), call_form=True)
    return s


def _as_device(v: ArgValue) -> ArgValue:
    if isinstance(v, str) and _DEVICE_NAME.match(v):
        return DeviceArg(v)
    return v


def _tensor(toks: list[str], i: int, start: int) -> tuple[TensorArg, int]:
    """``T(shape, dtype[, stride][, device])``; ``i`` is just past ``T(``."""
    positional: list[tuple[ArgValue, int]] = []
    keywords: dict[str, tuple[ArgValue, int]] = {}
    if toks[i] != ")":
        while True:
            at = i
            if toks[i] != _END and toks[i + 1] == "=" and toks[i][0].isalpha():
                key = toks[i]
                if key not in ("stride", "device"):
                    raise _Refused(f"T() takes no keyword {key!r} (only stride=, device=)", i)
                if key in keywords:
                    raise _Refused(f"T() keyword {key!r} given twice", i)
                v, i = _value(toks, i + 2)
                keywords[key] = (v, at)
            else:
                if keywords:
                    raise _Refused("positional argument after a keyword in T()", i)
                v, i = _value(toks, i)
                positional.append((v, at))
            t = toks[i]
            if t == ",":
                i += 1
                if toks[i] == ")":
                    break
            elif t == ")":
                break
            else:
                raise _Refused("expected ',' or ')' in T()", i)
    end = i + 1
    if len(positional) < 2 or len(positional) > 4:
        raise _Refused("T() needs T(shape, dtype[, stride][, device])", start)
    for key, pos in (("stride", 2), ("device", 3)):
        if key in keywords and len(positional) > pos:
            raise _Refused(f"T() got {key} both positionally and as {key}=", start)

    shape_v, at = positional[0]
    shape = _int_list(shape_v, at, "shape")
    if math.prod(shape) > INT64_MAX:
        raise _Refused("T() shape has more than 2**63-1 elements", at)
    dtype_v, at = positional[1]
    if not isinstance(dtype_v, DTypeArg):
        raise _Refused("T() dtype must be a dtype such as f16 or torch.float16", at)

    stride_v: ArgValue = None
    stride_kw = True
    if "stride" in keywords:
        stride_v, at = keywords["stride"]
    elif len(positional) > 2:
        stride_v, at = positional[2]
        stride_kw = False
    stride: tuple[int, ...] | None = None
    if stride_v is not None:
        stride = _int_list(stride_v, at, "stride")
        if len(stride) != len(shape):
            raise _Refused(f"T() stride has {len(stride)} entries for a {len(shape)}-d shape", at)

    device_v: ArgValue = None
    if "device" in keywords:
        device_v, at = keywords["device"]
    elif len(positional) > 3:
        device_v, at = positional[3]
    device_v = _as_device(device_v)
    if device_v is not None and not isinstance(device_v, DeviceArg):
        raise _Refused("T() device must be a device string such as 'cuda'", at)

    style = TensorStyle(
        dtype_spelling=dtype_v.spelling,
        stride_keyword=stride_kw,
        stride_list=isinstance(stride_v, list),
        none_stride=stride_v is None and len(positional) > 2,
        device_keyword="device" in keywords,
    )
    return TensorArg(shape, dtype_v.name, stride, device_v, style), end


def _int_list(v: ArgValue, at: int, what: str) -> tuple[int, ...]:
    items = v.items if isinstance(v, TupleArg) else v
    if not isinstance(items, (list, tuple)) or not all(type(x) is int and x >= 0 for x in items):
        raise _Refused(f"T() {what} must be a list or tuple of non-negative integers", at)
    return tuple(items)  # type: ignore[arg-type]
