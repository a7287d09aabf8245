"""sweep.errors helpers shared across stages."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from sweep.errors import exception_chain


def _raised_from(inner: Exception, outer: Exception, *, cause: bool) -> Exception:
    try:
        try:
            raise inner
        except Exception as e:
            if cause:
                raise outer from e
            raise outer  # the implicit context is what is tested
    except Exception as got:  # noqa: BLE001 - the test keeps whatever was raised
        return got
    raise AssertionError("unreachable")


def test_chain_follows_cause_then_context_outermost_first() -> None:
    a, b, c = ValueError("a"), KeyError("b"), RuntimeError("c")
    middle = _raised_from(a, b, cause=False)
    outer = _raised_from(middle, c, cause=True)
    assert exception_chain(outer) == [c, b, a]


def test_cause_wins_over_context() -> None:
    e = RuntimeError("outer")
    e.__context__ = ValueError("context")
    cause = KeyError("cause")
    e.__cause__ = cause
    assert exception_chain(e) == [e, cause]


def test_a_loop_ends_with_each_exception_once() -> None:
    a, b = ValueError("a"), ValueError("b")
    a.__cause__ = b
    b.__cause__ = a
    assert exception_chain(a) == [a, b]


@given(st.integers(min_value=1, max_value=40), st.integers(min_value=1, max_value=40))
def test_at_most_most(length: int, most: int) -> None:
    errs = [ValueError(str(i)) for i in range(length)]
    for outer, inner in itertools.pairwise(errs):
        outer.__cause__ = inner
    assert exception_chain(errs[0], most=most) == errs[: min(length, most)]


_LINE = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\n"), max_size=20)


@given(lines=st.lists(_LINE, min_size=1, max_size=8), data=st.data())
def test_a_file_that_is_not_utf8_is_named_by_line_and_column(lines: list[str], data: st.DataObject) -> None:
    from pathlib import Path
    from tempfile import TemporaryDirectory

    from sweep.errors import reason
    from sweep.schema.limits import read_text

    bad = data.draw(st.integers(0, len(lines) - 1))
    col = data.draw(st.integers(0, len(lines[bad].encode())))
    raw = [line.encode() for line in lines]
    raw[bad] = raw[bad][:col] + b"\xff" + raw[bad][col:]  # 0xff never starts a UTF-8 sequence
    with TemporaryDirectory() as d:
        path = Path(d) / "trace.txt"
        path.write_bytes(b"\n".join(raw))
        try:
            read_text(path, 1 << 20)
        except UnicodeDecodeError as e:
            said = reason(e)
        else:
            raise AssertionError("read")
    # The column counts bytes; a line cut inside a character breaks before the 0xff.
    first_bad = raw[bad].index(b"\xff")
    try:
        raw[bad][:first_bad].decode()
        expected_col = first_bad + 1
    except UnicodeDecodeError as e:
        expected_col = e.start + 1
    assert said == (
        f"not UTF-8 text: line {bad + 1}, column {expected_col} holds the byte "
        f"0x{raw[bad][expected_col - 1]:02x}; save the file as UTF-8"
    )
