"""The one error family of kernel-sweep.

Every user-facing failure is a :class:`SweepError`. The CLI prints ``str(err)``
and exits 1; nothing else should reach the user as a traceback.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pydantic

__all__ = [
    "ClusterError",
    "ConfigError",
    "DatasetError",
    "DistributedTaskError",
    "EngineError",
    "FieldError",
    "PlanError",
    "ProfileError",
    "StoreError",
    "SweepError",
    "TraceParseError",
    "ValidationError",
    "clip",
    "clip_lines",
    "did_you_mean",
    "exception_chain",
    "field_errors",
    "format_validation_error",
    "listing",
    "loc_path",
    "printable",
    "reason",
    "shown",
]


class SweepError(Exception):
    """Base class of every error kernel-sweep reports to its users."""


class ValidationError(SweepError):
    """A record (definition, solution, workload, trace) breaks the schema or a rule."""


class DatasetError(SweepError):
    """A dataset folder or one of its files cannot be loaded."""


class ConfigError(SweepError):
    """A sweep config is malformed or names something that does not exist."""


class PlanError(SweepError):
    """A sweep config cannot be expanded into tasks.

    Attributes:
        problems: Each problem with its place in the config (``("definitions", "names", 0)``)
            where it has one, so a caller that knows the file can add its lines.
    """

    def __init__(self, message: str, problems: Sequence[tuple[tuple[str | int, ...], str]] = ()) -> None:
        super().__init__(message)
        self.problems = list(problems)


class EngineError(SweepError):
    """An evaluation could not be set up (not a kernel failure, which is a Trace status)."""


class DistributedTaskError(EngineError):
    """A task of a distributed definition (one call made by several ranks) was given to a
    path that runs one process; only a gang (``sweep launch``) runs it."""


class StoreError(SweepError):
    """The results store cannot be opened, written or queried."""


class ClusterError(SweepError):
    """The Ray cluster is unreachable or cannot run the sweep."""


class ProfileError(SweepError):
    """``sweep profile`` cannot run: no GPU, a profiling tool missing or unusable."""


class TraceParseError(SweepError):
    """A BackendBench trace file holds text outside the allowed grammar."""


#: The most characters of a user's value an error message echoes (see :func:`shown`).
MAX_SHOWN = 80
#: The longest line the CLI prints for an error; a last guard (see :func:`clip_lines`).
MAX_LINE = 2000
# Words longer than this are not compared for "did you mean": no real name is that long,
# and difflib's cost grows with the product of the lengths.
_MAX_SUGGEST_LEN = 200


def shown(value: object, limit: int = MAX_SHOWN) -> str:
    """``repr(value)`` for an error message, at most about ``limit`` characters.

    A longer value is cut and ends in ``...`` followed by its full length, so a message never
    echoes a huge token (a 10 MB string in a config, a 100k-term expression). Every message
    that quotes what a user wrote goes through here. Never raises.
    """
    if isinstance(value, str) and len(value) > limit:
        # Cut before repr: repr of a 10 MB string would be built only to be thrown away.
        return f"{repr(value[:limit])[: limit - 3]}... ({len(value):,} characters)"
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 4 * limit:
        # repr of an int over 4,300 digits raises; its size is what matters here.
        sign = "-" if value < 0 else ""
        return f"{sign}<an integer of about {int(value.bit_length() * 0.30103) + 1:,} digits>"
    try:
        text = repr(value)
    except (RecursionError, ValueError, MemoryError):  # a deeply nested list, a huge int inside
        return f"<a {type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


# What a terminal acts on instead of showing: C0 controls but newline and tab (ESC starts the
# sequences that move the cursor, recolour, retitle the window or write to the clipboard; CR
# and BS overwrite what was printed), DEL, C1 controls (CSI 0x9b is ESC [ on many
# terminals), and the Unicode marks that reorder the text shown (the "Trojan source" ones).
_UNPRINTABLE = "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_UNPRINTABLE}]")
_CONTROL_OR_BREAK = re.compile(f"[{_UNPRINTABLE}\n\t]")
_NAMED = {"\n": "\\n", "\t": "\\t", "\r": "\\r"}


def _escape(m: re.Match[str]) -> str:
    c = m.group()
    return _NAMED.get(c) or f"\\u{ord(c):04x}"


def printable(text: str, *, one_line: bool = False) -> str:
    """``text`` safe to print on a terminal: every character a terminal would act on rather
    than show (controls but newline and tab, DEL, C1 controls, bidirectional overrides) written
    out as an escape (``\\u001b``, ``\\r``), so data (a name in an ingested trace, a query's
    answer) can neither recolour, move nor hide what is printed. With ``one_line``, newlines
    and tabs too (a table cell). The escapes are JSON's: printed JSON stays JSON of the same
    data. Everything the CLI prints goes through here (``sweep._cli.app.echo``). Never raises.
    """
    pattern = _CONTROL_OR_BREAK if one_line else _CONTROL
    return pattern.sub(_escape, text) if pattern.search(text) else text


def clip(text: str, limit: int = MAX_SHOWN) -> str:
    """``text`` unquoted for a message (a field path, a file name), cut like :func:`shown`."""
    return text if len(text) <= limit else f"{text[: limit - 3]}... ({len(text):,} characters)"


def listing(names: Iterable[str], *, most: int = 20) -> str:
    """Names for a message, comma-separated: at most ``most`` of them, each clipped like
    :func:`shown` (but without quotes), then how many more; ``"none"`` when empty."""
    items = list(names)
    if not items:
        return "none"
    clipped = [clip(n) for n in items[:most]]
    more = f", and {len(items) - most:,} more" if len(items) > most else ""
    return ", ".join(clipped) + more


def clip_lines(message: str, limit: int = MAX_LINE) -> str:
    """``message`` with every line cut to ``limit`` characters (the CLI's last guard).

    Messages quote user values through :func:`shown`; this catches any that do not, so an
    error never floods a terminal.
    """

    def cut(line: str) -> str:
        if len(line) <= limit:
            return line
        tail = f"... ({len(line):,} characters)"
        return line[: limit - len(tail)] + tail

    return "\n".join(cut(x) for x in message.split("\n"))


def reason(err: BaseException) -> str:
    """Why an operation failed, for a message that already names the file: an
    :class:`OSError` without the file name it carries (``No such file or directory``; the
    name may be huge), anything else as its text, clipped."""
    if isinstance(err, OSError) and err.strerror:
        return err.strerror
    if isinstance(err, UnicodeDecodeError) and isinstance(err.object, bytes) and err.start < len(err.object):
        return _not_utf8(err.object, err.start)
    return clip(str(err), 300)


def _not_utf8(data: bytes, start: int) -> str:
    """Where bytes stop being UTF-8, by line and column (a byte offset says little to a person
    with an editor), and the fix."""
    line = data.count(b"\n", 0, start) + 1
    column = start - (data.rfind(b"\n", 0, start) + 1) + 1
    return (
        f"not UTF-8 text: line {line}, column {column} holds the byte 0x{data[start]:02x}; "
        "save the file as UTF-8"
    )


def exception_chain(err: BaseException, *, most: int = 16) -> list[BaseException]:
    """``err`` and the exceptions it came from (each one's ``__cause__``, else its
    ``__context__``), outermost first: each once, at most ``most`` of them (a chain may loop)."""
    seen: set[int] = set()
    chain: list[BaseException] = []
    cur: BaseException | None = err
    while cur is not None and id(cur) not in seen and len(chain) < most:
        seen.add(id(cur))
        chain.append(cur)
        cur = cur.__cause__ or cur.__context__
    return chain


def did_you_mean(word: str, choices: Iterable[str], *, n: int = 1) -> str:
    """Return a ``" (did you mean 'x'?)"`` hint, or ``""`` when nothing is close.

    Args:
        word: The unknown word the user wrote.
        choices: The words that would have been accepted.
        n: How many suggestions to offer at most.
    """
    if len(word) > _MAX_SUGGEST_LEN:
        return ""
    matches = difflib.get_close_matches(word, list(choices), n=n, cutoff=0.6)
    if not matches:
        return ""
    return " (did you mean " + " or ".join(repr(m) for m in matches) + "?)"


# ---- pydantic validation errors, one line each: file, line, field path, expectation ----
#
# Pydantic's own ``loc`` includes the tag of a discriminated union (``axes.M.const.value``) and
# its messages start with ``"Value error, "`` for rules raised in validators. Both are cleaned
# here so a user sees ``axes.M.value: Input should be greater than or equal to 1 (got 0)``.


def _walk(obj: object, key: str | int) -> tuple[bool, object]:
    if isinstance(obj, dict) and isinstance(key, str) and key in obj:
        return True, obj[key]
    if isinstance(obj, list) and isinstance(key, int) and 0 <= key < len(obj):
        return True, obj[key]
    return False, None


def loc_path(loc: Sequence[str | int], data: object) -> str:
    """The dotted field path of a pydantic ``loc`` (``inputs.x.shape[0]``).

    Union tags that pydantic inserts (``'const'``, ``'random'``, ``'function-after[...]'``)
    are recognised by walking ``data``: a part that is not a key of the object in hand is a
    tag and is left out.
    """
    out = ""
    cur: object = data
    for part in loc:
        found, nxt = _walk(cur, part)
        if not found:
            # A tag of a union or a validator wrapper: not a place in the user's data.
            continue
        cur = nxt
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


@dataclass(frozen=True)
class FieldError:
    """One problem pydantic found in user data, cleaned for people.

    Attributes:
        loc: Pydantic's location (tags of unions included), to find the place in a source file.
        path: The dotted path in the user's data (``inputs.x.shape[0]``); for a missing key,
            its parent's path and the key; ``""`` at the top level.
        kind: Pydantic's error type (``missing``, ``extra_forbidden``, ``int_parsing``...).
        message: Pydantic's message without its ``Value error, `` style prefixes.
        got: `` (got <value>)``, or ``""`` where the message already says it or the value is
            a whole mapping or list.
    """

    loc: tuple[str | int, ...]
    path: str
    kind: str
    message: str
    got: str


def field_errors(err: pydantic.ValidationError, data: object) -> list[FieldError]:
    """The problems of ``err`` (raised validating ``data``), one :class:`FieldError` each."""
    out: list[FieldError] = []
    for e in err.errors(include_url=False):
        loc = tuple(e["loc"])
        kind = str(e["type"])
        if kind == "missing" and loc:
            # The missing key is not in the data: walk to its parent, then name it.
            above = loc_path(loc[:-1], data)
            path = f"{above}.{loc[-1]}" if above else str(loc[-1])
        else:
            path = loc_path(loc, data)
        msg = str(e["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        value = e.get("input")
        got = (
            ""
            if kind in ("missing", "value_error", "assertion_error") or isinstance(value, (dict, list))
            else f" (got {shown(value)})"
        )
        out.append(FieldError(loc=loc, path=path, kind=kind, message=msg, got=got))
    return out


def format_validation_error(
    err: pydantic.ValidationError, data: object, *, prefix: str = "", missing: str = "field"
) -> list[str]:
    """One message per pydantic error: ``<prefix>: <path>: <message> (got <value>)``.

    Args:
        err: The error pydantic raised.
        data: The object that was validated (to find real paths and shown values).
        prefix: Where the record came from, e.g. ``"defs/x.json"`` or ``"wl.jsonl:3"``.
        missing: What a missing entry is called (``"field"`` in a record, ``"key"`` in YAML).
    """
    lines: list[str] = []
    for f in field_errors(err, data):
        msg = f"required {missing} is missing" if f.kind == "missing" else f.message + f.got
        where = ": ".join(p for p in (prefix, f.path) if p)
        lines.append(f"{where}: {msg}" if where else msg)
    return lines
