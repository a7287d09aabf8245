"""The whitelist trace parser: every real row, every grammar feature, and refusals."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from sweep.backendbench import TensorArg, parse_trace, parse_trace_file
from sweep.errors import TraceParseError
from sweep.schema.call_args import DeviceArg, DTypeArg, LayoutArg, TupleArg, iter_tensors


def _cnt_lines(path: Path) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.startswith("cnt:")]


def test_every_real_row_parses(bb_files: list[Path]) -> None:
    for path in bb_files:
        rows = parse_trace_file(path)
        lines = _cnt_lines(path)
        assert len(rows) == len(lines) > 0, path
        ops_in_file = [
            line.split(":", 1)[1].strip()
            for line in path.read_text().splitlines()
            if line.startswith("Operator:")
        ]
        assert list(dict.fromkeys(r.op for r in rows)) == ops_in_file
        for row, line in zip(rows, lines):
            assert row.cnt == int(line.split(",")[0][4:]), line


def test_sample_counts(sample_file: Path) -> None:
    rows = parse_trace_file(sample_file)
    assert len(rows) == 1554
    assert len({r.op for r in rows}) == 90


def _one(body: str, op: str = "aten.x.default") -> tuple[Any, Any]:
    """Args and kwargs of a one-row trace (``Any``: tests poke at them freely)."""
    rows = parse_trace(f"Operator: {op}\ncnt: 1, {body}\n")
    assert len(rows) == 1
    return rows[0].args, rows[0].kwargs


def test_tensor_forms() -> None:
    (t,), _ = _one("((T([2, 3], f16),), {})")
    assert t == TensorArg((2, 3), "float16")
    (t,), _ = _one("((T([64, 50, 768], f16, stride=(768, 49152, 1)),), {})")
    assert t.stride == (768, 49152, 1) and t.style.stride_keyword
    (t,), _ = _one("((T([2, 2], f32, [1, 2]),), {})")  # BackendBench's own writer
    assert t.stride == (1, 2) and not t.style.stride_keyword and t.style.stride_list
    (t,), _ = _one("((T([], f32),), {})")
    assert t.shape == () and t.numel == 1
    (t,), _ = _one("((T([100, 1], f32, stride=(0, 0)),), {})")
    assert t.stride == (0, 0) and t.storage_numel == 1
    (t,), _ = _one("((T([3], 'bf16', None, 'cpu'),), {})")
    assert t.dtype == "bfloat16" and t.device == DeviceArg("cpu") and t.stride is None
    (t,), _ = _one("((T([3], torch.float64, device='cuda:1'),), {})")
    assert t.dtype == "float64" and t.device == DeviceArg("cuda:1")
    (t,), _ = _one("((T([0, 4], i64, stride=(4, 1)),), {})")
    assert t.storage_numel == 0 and t.nbytes == 0


def test_every_dtype_abbreviation() -> None:
    abbrs = ["bf16", "f64", "f32", "f16", "c32", "c64", "c128", "i8", "i16", "i32", "i64", "b8", "u8"]
    body = "((" + ", ".join(f"T([1], {a})" for a in abbrs) + "), {})"
    args, _ = _one(body)
    assert [t.dtype for t in args] == [
        "bfloat16", "float64", "float32", "float16", "complex32", "complex64", "complex128",
        "int8", "int16", "int32", "int64", "bool", "uint8",
    ]  # fmt: skip


def test_scalars_names_and_containers() -> None:
    args, kwargs = _one(
        "((1e-07, -3, -inf, inf, nan, 0.0, None, True, False, [], [True, False], 'cuda', "
        "torch.sparse_coo, torch.strided, torch.bool, f16, (1,), [T([2], f16), T([3], i64)]), "
        "{'dtype': f16, 'device': \"torch.device('cpu')\", 'layout': torch.strided, 'pin_memory': None})"
    )
    assert args[0] == 1e-07 and args[1] == -3 and args[2] == -math.inf and args[3] == math.inf
    assert math.isnan(args[4]) and isinstance(args[5], float)
    assert args[6:11] == (None, True, False, [], [True, False])
    assert args[11] == "cuda"  # a plain string outside a device position
    assert args[12] == LayoutArg("sparse_coo") and args[13] == LayoutArg("strided")
    assert args[14] == DTypeArg("bool") and args[15] == DTypeArg("float16")
    assert args[16] == TupleArg((1,)) and args[16].trailing_comma
    assert args[14].spelling == "torch.bool" and args[15].spelling is None
    assert [t.shape for t in iter_tensors(args[17])] == [(2,), (3,)]
    assert kwargs == {
        "dtype": DTypeArg("float16"),
        "device": DeviceArg("cpu", call_form=True),
        "layout": LayoutArg("strided"),
        "pin_memory": None,
    }
    assert kwargs["device"].call_form and not DeviceArg("cuda").call_form


def test_trailing_comma_of_args_is_recorded() -> None:
    rows = parse_trace(
        "Operator: aten.a.default\ncnt: 0, ((T([2], f16), [7, 7],), {})\ncnt: 1, ((T([2], f16),), {})\n"
    )
    assert rows[0].args_trailing_comma and rows[0].synthetic
    assert rows[1].args_trailing_comma and not rows[1].synthetic  # the 1-tuple comma
    assert len(rows[0].args) == 2


def test_blank_lines_are_skipped() -> None:
    rows = parse_trace("\nOperator: aten.a.default\n\ncnt: 2, ((1,), {})\n\n")
    assert [(r.cnt, r.line) for r in rows] == [(2, 4)]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("cnt: 1, ((T([2], f16),), {})", "1: a 'cnt:' row before any 'Operator:' line"),
        ("Operator: aten.a.default\ncnt: 1, ((foo,), {})", "2:11: name 'foo' is not allowed"),
        (
            "Operator: aten.a.default\ncnt: 1, ((T([2], f17),), {})",
            "name 'f17' is not allowed (did you mean 'f16'?)",
        ),
        (
            "Operator: aten.a.default\ncnt: 1, ((T([2, 3]),), {})",
            "T() needs T(shape, dtype[, stride][, device])",
        ),
        (
            "Operator: aten.a.default\ncnt: 1, ((T([2, 3], f16, stride=(1,)),), {})",
            "stride has 1 entries for a 2-d shape",
        ),
        (
            "Operator: aten.a.default\ncnt: 1, ((T([2, -3], f16),), {})",
            "shape must be a list or tuple of non-negative integers",
        ),
        ("Operator: aten.a.default\ncnt: 1, ((T([2], f16, layout=1),), {})", "T() takes no keyword 'layout'"),
        ("Operator: aten.a.default\ncnt: 1, ((T([2], 7),), {})", "T() dtype must be a dtype"),
        (
            "Operator: aten.a.default\ncnt: 1, ((T([2], f16), 1), {}) + 1",
            "unexpected text after the row: '+ 1'",
        ),
        ("Operator: aten.a.default\ncnt: 1, ((lambda: 1,), {})", "name 'lambda' is not allowed"),
        ("Operator: aten.a.default\ncnt: 1, ((T([2], f16).data,), {})", "expected ',' or ')'"),
        ("Operator: aten.a.default\ncnt: 1, ((1,), {1: 2})", "dict keys must be strings"),
        ("Operator: aten.a.default\ncnt: 1, ((torch.device('cpu'),), {})", "calls are not allowed"),
        ("Operator: aten.a.default\ncnt: 1, ((torch.nn,), {})", "name 'torch.nn' is not allowed"),
        ("Operator: aten.a.default\ncnt: 1, ((1,), {}", "expected ',' or ')': '<end of row>'"),
        ("Operator: aten.a.default\ncnt: 1, (1, 2, 3)", "a row must be '(<args tuple>, <kwargs dict>)'"),
        ("Operator: aten.a.default\ncnt: x, ((1,), {})", "expected 'cnt: <count>, (<args>, <kwargs>)'"),
        ("Operator: os.system('x')", "not an operator overload name"),
        ("Operator: aten.a.default\nimport os", "expected an 'Operator:' or 'cnt:' line, got 'import os'"),
        ("Operator: aten.a.default\ncnt: 1, ((" + "[" * 3000 + "]" * 3000 + ",), {})", "nested too deeply"),
    ],
)
def test_refusals_name_file_line_and_text(text: str, fragment: str) -> None:
    with pytest.raises(TraceParseError) as info:
        parse_trace(text, filename="bad.trace.txt")
    message = str(info.value)
    assert message.startswith("bad.trace.txt:"), message
    assert fragment in message, message


def test_code_in_a_row_is_never_run(
    local_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The row would create ./SENTINEL if anything evaluated it.
    monkeypatch.chdir(tmp_path)
    path = local_data / "malicious.trace.txt"
    with pytest.raises(TraceParseError) as info:
        parse_trace_file(path)
    message = str(info.value)
    assert f"{path}:3:" in message and "__import__" in message and "calls are not allowed" in message
    assert not (tmp_path / "SENTINEL").exists()


def test_huge_synthetic_row_stays_lazy(local_data: Path) -> None:
    rows = parse_trace_file(local_data / "huge_synthetic.trace.txt")
    huge = rows[1]
    assert huge.synthetic
    (t,) = iter_tensors(huge.args[0])
    assert t.numel == 497 * 3976 * 23856  # ~4.7e10 elements, never allocated
    assert t.nbytes == t.numel * 2


def test_unreadable_file_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(TraceParseError, match="cannot read trace file"):
        parse_trace_file(tmp_path / "missing.txt")


@pytest.mark.parametrize(
    "text",
    [
        "T([2, 3], f16)",
        "T([], f32)",
        "T([5], i64, stride=(1,))",
        "T([5], i64, stride=(1))",
        "T([2, 3], f16, stride=(1, 2))",
        "T([], f32, stride=())",
        "T([2], f16, stride=())",
        "T([2, 3], f16, stride=(1,))",
        "T([2,3], f16)",
        "T([2, 3], f17)",
        "T([0, 4], u8, stride=(4, 1))",
        "T([1, 1, 128, 128], u8, stride=(4194304, 4194304, 2048, 1))",
    ],
)
def test_plain_tensor_fast_path_means_what_the_general_rules_mean(text: str) -> None:
    from sweep.backendbench import _parser

    def general() -> object:
        toks = [*_parser._SLOW_TOKEN.findall(text), _parser._END]
        try:
            return _parser._value(toks, 0)[0]
        except _parser._Refused as e:
            return e.message

    def fast() -> object:
        _parser._TENSOR_CACHE.clear()
        try:
            return _parser._fast_tensor(text, 0)
        except _parser._Refused as e:
            return e.message

    assert _parser._TOKEN.findall(text) == [text]  # really read as one token
    got, want = fast(), general()
    assert got == want
    if isinstance(want, TensorArg):
        assert isinstance(got, TensorArg) and got.style == want.style
