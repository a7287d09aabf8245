"""Hostile BackendBench trace files: refused with file:line:column (a TraceParseError), or
imported into records that validate and read back; never a traceback, nothing written on
refusal."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.backendbench import build_records, import_backendbench, parse_trace
from sweep.backendbench._parser import MAX_NESTING
from sweep.errors import DatasetError, SweepError, TraceParseError
from sweep.plan.dataset import validate_roots
from sweep.schema import Workload
from sweep.schema.call_args import TensorArg, TupleArg

pytestmark = pytest.mark.hostile

OP = "Operator: aten.add.Tensor\n"


def _refused(row: str) -> str:
    t0 = time.monotonic()
    with pytest.raises(TraceParseError) as info:
        parse_trace(OP + row, filename="t.txt")
    assert time.monotonic() - t0 < 2.0
    message = str(info.value)
    assert message.startswith("t.txt:2"), message
    assert len(message) < 500
    return message


@pytest.mark.parametrize(
    ("literal", "why"),
    [
        ("'\\x'", "truncated \\xXX escape"),
        ("'\\N{BOGUS}'", "unknown Unicode character name"),
        ("'\\u12'", "truncated \\uXXXX escape"),
        ("'\\d'", "invalid escape sequence '\\d'"),
        ('"\\x4"', "truncated \\xXX escape"),
    ],
)
def test_bad_string_escapes(literal: str, why: str) -> None:
    assert f"t.txt:2:11: invalid escape in a string ({why})" in _refused(f"cnt: 1, (({literal},), {{}})")
    assert "invalid escape in a string" in _refused(f"cnt: 1, ((), {{{literal}: 1}})")


def test_lone_surrogates_are_refused() -> None:
    # A Python string, but no UTF-8 or JSON text: its record could not be written.
    assert "t.txt:2:11: a string with a lone surrogate" in _refused("cnt: 1, (('\\ud800',), {})")
    assert "a string with a lone surrogate" in _refused("cnt: 1, ((), {'\\udc80': 1})")
    assert "a string with a lone surrogate" in _refused("cnt: 1, (('a\udfff',), {})")


def test_a_file_name_that_is_not_utf8_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    trace = tmp_path / os.fsdecode(b"t\xff.trace.txt")
    trace.write_text(OP + "cnt: 1, ((T([2], f32),), {})\n")
    with pytest.raises(TraceParseError, match="is not valid UTF-8"):
        import_backendbench(trace, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_good_escapes_still_read() -> None:
    [row] = parse_trace(OP + "cnt: 1, (('a\\n\\x41\\u00e9\\N{BULLET}\\'',), {})")
    assert row.args == ("a\nAé•'",)


@pytest.mark.parametrize(
    "row",
    [
        "cnt: 1, ((" + "9" * 5000 + ",), {})",
        "cnt: 1, ((-" + "9" * 5000 + ",), {})",
        "cnt: 1, (([1, " + "9" * 5000 + "],), {})",
        "cnt: 1, ((T([" + "9" * 5000 + "], f32),), {})",
        "cnt: 1, ((T([2, 3], f32, stride=(" + "9" * 5000 + ", 1)),), {})",
        "cnt: 1, ((), {'k': " + "9" * 5000 + "})",
        "cnt: 1, ((9223372036854775808,), {})",
        "cnt: 1, ((-9223372036854775809,), {})",
        "cnt: 1, ((T([9223372036854775808], f32),), {})",
    ],
)
def test_integers_beyond_64_bits(row: str) -> None:
    assert "an integer beyond the 64-bit range" in _refused(row)


@pytest.mark.parametrize("cnt", ["9" * 5000, "9223372036854775808"])
def test_counts_beyond_64_bits(cnt: str) -> None:
    assert "with a count under 2**63" in _refused(f"cnt: {cnt}, ((1,), {{}})")


@pytest.mark.parametrize(
    "row",
    [
        "cnt: 1, ((T([4294967296, 4294967296], f32),), {})",
        "cnt: 1, ((T([4294967296, 4294967296], f32, None),), {})",
    ],
)
def test_tensors_of_more_than_2_63_elements(row: str) -> None:
    assert "T() shape has more than 2**63-1 elements" in _refused(row)


def test_64_bit_extremes_import() -> None:
    rows = parse_trace(OP + "cnt: 9223372036854775807, ((9223372036854775807, -9223372036854775808), {})")
    assert rows[0].args == (2**63 - 1, -(2**63))
    [op] = build_records(rows, source_file="t.txt")
    assert op.workloads[0].weight == 2**63 - 1


@pytest.mark.parametrize("depth", [MAX_NESTING, 300, 450, 3000])
@pytest.mark.parametrize("bracket", ["[]", "()", "{}"])
def test_nesting_is_bounded(depth: int, bracket: str) -> None:
    open_, close = bracket
    inner = "'k': " if open_ == "{" else ""
    item = open_ * 1 + inner
    body = (item * depth) + "1" + (("," if open_ == "(" else "") + close) * depth
    assert f"nested too deeply (more than {MAX_NESTING} levels)" in _refused(f"cnt: 1, (({body},), {{}})")


def test_what_nests_just_under_the_bound_imports_and_loads_again(tmp_path: Path) -> None:
    depth = MAX_NESTING - 3  # the row's own tuple and the args tuple are two levels
    rows = [
        "cnt: 1, (" + "(" * depth + "1," + ")," * depth + " {})",
        "cnt: 2, ((" + "{'a': " * depth + "1" + "}" * depth + ",), {})",
        "cnt: 3, ((" + "[" * depth + "T([2], f16)" + "]" * depth + ",), {})",
    ]
    trace = tmp_path / "t.txt"
    trace.write_text(OP + "\n".join(rows) + "\n")
    report = import_backendbench(trace, tmp_path / "root")
    assert report.workloads_added == 3
    ds, errors = validate_roots([tmp_path / "root"])
    assert errors == []
    assert ds.num_workloads() == 3


@pytest.mark.parametrize("make", ["fifo", "dev_zero", "folder"])
def test_a_trace_file_that_is_not_a_regular_file(tmp_path: Path, make: str) -> None:
    path = tmp_path / "t.txt"
    if make == "fifo":
        os.mkfifo(path)
    elif make == "dev_zero":
        path.symlink_to("/dev/zero")
    else:
        path.mkdir()
    out = tmp_path / "out"
    with pytest.raises(TraceParseError) as info:
        import_backendbench(path, out)
    assert str(info.value).startswith(f"{path}: cannot read trace file: is ")
    assert not out.exists()


def test_nothing_is_written_when_a_row_is_refused(tmp_path: Path) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text(OP + "cnt: 1, ((T([2], f32),), {})\ncnt: 1, (('\\x',), {})\n")
    out = tmp_path / "out"
    with pytest.raises(TraceParseError):
        import_backendbench(trace, out)
    assert not out.exists()


@pytest.mark.parametrize("where", ["definitions", "workloads"])
def test_a_link_out_of_the_dataset_root_is_never_written_through(tmp_path: Path, where: str) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text(OP + "cnt: 1, ((T([2], f32), T([2], f32)), {})\n")
    out, outside = tmp_path / "out", tmp_path / "outside"
    outside.mkdir()
    (out / where).mkdir(parents=True)
    (out / where / "backendbench").symlink_to(outside)
    with pytest.raises(DatasetError, match="leads out of"):
        import_backendbench(trace, out)
    assert list(outside.iterdir()) == []


@pytest.mark.parametrize("make", ["dev_zero", "fifo", "dangling", "victim"])
def test_a_workloads_file_that_is_a_link_or_no_file_is_never_appended_to(tmp_path: Path, make: str) -> None:
    trace = tmp_path / "t.txt"
    trace.write_text(OP + "cnt: 1, ((T([2], f32), T([2], f32)), {})\n")
    out = tmp_path / "out"
    path = out / "workloads" / "backendbench" / "add__Tensor.jsonl"
    path.parent.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_text("")
    if make == "dev_zero":
        path.symlink_to("/dev/zero")
    elif make == "fifo":
        os.mkfifo(path)
    elif make == "dangling":
        path.symlink_to(tmp_path / "nowhere")
    else:
        path.symlink_to(victim)
    if make == "victim":  # a link out of the root: refused, the file it leads to untouched
        with pytest.raises(DatasetError, match="leads out of"):
            import_backendbench(trace, out)
        assert victim.read_text() == "" and path.is_symlink()
        return
    with pytest.raises(DatasetError, match="cannot read"):
        import_backendbench(trace, out)
    assert not (tmp_path / "nowhere").exists()


# ---- properties: rows made of the grammar's pieces, well and badly put together ----

_PIECES = st.sampled_from(
    [
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ", ",
        ": ",
        "=",
        "T(",
        "T([2, 3], f16)",
        "[1, 2]",
        "f32",
        "bf16",
        "torch.float16",
        "torch.channels_last",
        "'cuda'",
        "\"torch.device('cpu')\"",
        "'f16'",
        "'k'",
        "'\\x'",
        "'\\n'",
        "None",
        "True",
        "inf",
        "-inf",
        "nan",
        "1e-07",
        "-",
        "0",
        "-1",
        "9223372036854775807",
        "9223372036854775808",
        "9" * 30,
        "stride=",
        "device=",
        "(1, 2)",
        "eval",
        "os.system('x')",
        "__import__",
        "'",
        '"',
        "\\",
        "\0",
        "#",
        "lambda",
    ]
)


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(pieces=st.lists(_PIECES, max_size=30), cnt=st.sampled_from(["0", "1", "7", "18446744073709551616"]))
def test_any_row_is_refused_or_imported(pieces: list[str], cnt: str) -> None:
    _refused_or_imported("".join(pieces), cnt)


def _refused_or_imported(args: str, cnt: str) -> None:
    text = OP + f"cnt: {cnt}, (" + args + ", {})\n"
    try:
        rows = parse_trace(text, filename="t.txt")
    except TraceParseError as e:
        assert str(e).startswith("t.txt:2"), str(e)
        return
    try:
        ops = build_records(rows, source_file="t.txt", include_synthetic=True)
    except SweepError as e:  # pragma: no cover - the parser should refuse first
        pytest.fail(f"parsed but not importable: {e}")
    for op in ops:
        for w in op.workloads:
            assert Workload.model_validate_json(w.to_json()) == w
    for row in rows:
        _check_ints(row.args)
        _check_ints(tuple(row.kwargs.values()))


def _check_ints(values: tuple[object, ...]) -> None:
    for v in values:
        if isinstance(v, int) and not isinstance(v, bool):
            assert -(2**63) <= v < 2**63
        elif isinstance(v, TensorArg):
            _check_ints(v.shape + (v.stride or ()))
        elif isinstance(v, TupleArg):
            _check_ints(v.items)
        elif isinstance(v, list):
            _check_ints(tuple(v))
        elif isinstance(v, dict):
            _check_ints(tuple(v.values()))


_ATOMS = st.one_of(
    st.integers(min_value=-(2**64), max_value=2**64).map(str),
    st.floats(allow_nan=False).map(repr),
    st.sampled_from(
        ["None", "True", "inf", "-inf", "f16", "torch.float32", "torch.sparse_coo", "'cuda'", "'\\x41'"]
    ),
    st.text(alphabet="ab\\'\"x0{N}u ", max_size=8).map(lambda s: f"'{s}'"),
    st.lists(st.integers(min_value=0, max_value=2**64), max_size=3).map(
        lambda shape: f"T({shape}, f32)" if shape else "T([], f32)"
    ),
)
_VALUES = st.recursive(
    _ATOMS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3).map(lambda xs: "[" + ", ".join(xs) + "]"),
        st.lists(inner, max_size=3).map(lambda xs: "(" + ", ".join(xs) + ("," if len(xs) == 1 else "") + ")"),
        st.dictionaries(st.sampled_from(["'a'", "'device'", "'dtype'"]), inner, max_size=2).map(
            lambda d: "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"
        ),
    ),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(args=st.lists(_VALUES, max_size=4))
def test_any_structured_row_is_refused_or_imported(args: list[str]) -> None:
    _refused_or_imported("(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")", "1")


@pytest.mark.parametrize("target", ["store", "wal", "fifo", "folder"])
def test_an_exported_trace_file_is_never_written_over_a_store_or_a_non_file(
    tmp_path: Path, target: str
) -> None:
    import duckdb

    from sweep.backendbench import export_backendbench

    trace = tmp_path / "t.txt"
    trace.write_text(OP + "cnt: 1, ((T([2], f32), T([2], f32)), {})\n")
    import_backendbench(trace, tmp_path / "ds")
    store = tmp_path / "sweep.duckdb"
    duckdb.connect(str(store)).close()
    out = {"store": store, "wal": Path(f"{store}.wal"), "fifo": tmp_path / "fifo", "folder": tmp_path / "ds"}[
        target
    ]
    if target == "wal":
        out.write_bytes(b"log")
    if target == "fifo":
        os.mkfifo(out)
    before = store.read_bytes()
    with pytest.raises(DatasetError, match="cannot write"):
        export_backendbench(tmp_path / "ds", out)
    assert store.read_bytes() == before
