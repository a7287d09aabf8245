"""Exactness: text -> nodes -> text, nodes -> JSON -> nodes, and import -> export of real files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.backendbench import ImportReport, export_backendbench, import_backendbench, parse_trace_file
from sweep.backendbench._format import format_row
from sweep.cli import app
from sweep.schema.call_json import decode_call, decode_value, encode_call


def _squash(text: str) -> list[str]:
    return [re.sub(r"\s+", "", line) for line in text.splitlines() if line.strip()]


def test_format_gives_back_every_real_row(bb_files: list[Path]) -> None:
    for path in bb_files:
        lines = [line for line in path.read_text().splitlines() if line.startswith("cnt:")]
        for row, line in zip(parse_trace_file(path), lines):
            text = format_row(row.cnt, row.args, row.kwargs, trailing_comma=row.args_trailing_comma)
            assert text == line, f"{path.name}:{row.line}"


def test_json_encoding_is_lossless_on_every_real_row(bb_files: list[Path]) -> None:
    for path in bb_files:
        for row in parse_trace_file(path):
            args, kwargs = encode_call(row.args, row.kwargs)
            back_args, back_kwargs = decode_call(args, kwargs)
            again = format_row(row.cnt, back_args, back_kwargs, trailing_comma=row.args_trailing_comma)
            assert again == format_row(row.cnt, row.args, row.kwargs, trailing_comma=row.args_trailing_comma)


def test_import_then_export_gives_the_same_rows(
    bb_files: list[Path], imported: dict[str, tuple[Path, ImportReport]], tmp_path: Path
) -> None:
    for path in bb_files:
        root, report = imported[path.name]
        assert report.workloads_added == report.rows_read == len(parse_trace_file(path))
        out = tmp_path / f"{path.stem}.out.txt"
        exported = export_backendbench(root, out)
        assert exported.rows == report.rows_read
        original, back = path.read_text(), out.read_text()
        assert _squash(back) == _squash(original)  # same operators, counts, argument text
        assert back == "".join(line + "\n" for line in original.splitlines() if line.strip())


def test_export_without_synthetic_rows_drops_exactly_those(edge_file: Path, tmp_path: Path) -> None:
    report = import_backendbench(edge_file, tmp_path / "ds")
    assert report.skipped_synthetic == sum(r.synthetic for r in parse_trace_file(edge_file)) > 0
    export_backendbench(tmp_path / "ds", tmp_path / "out.txt")
    expected = [line for line in edge_file.read_text().splitlines() if not line.startswith("cnt: 0,")]
    got = (tmp_path / "out.txt").read_text().splitlines()
    ops_with_rows = {line for line in got if line.startswith("Operator:")}
    assert [line for line in expected if line.startswith("cnt:")] == [
        line for line in got if line.startswith("cnt:")
    ]
    assert ops_with_rows <= {line for line in expected if line.startswith("Operator:")}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"type": "tensor", "shape": [2, -1], "dtype": "float16"},
            "x.shape: must be a list of non-negative integers",
        ),
        ({"type": "tensor", "shape": [2], "dtype": "float17"}, "x.dtype: must be one of"),
        (
            {"type": "tensor", "shape": [2], "dtype": "float16", "stride": [1, 1]},
            "x.stride: 2 entries for a 1-d shape",
        ),
        ({"type": "tensor", "shape": [2], "dtype": "float16", "color": 1}, "x: unknown key(s) color"),
        ({"type": "dtype", "value": "float16", "spelling": "torch.int8"}, "does not spell dtype 'float16'"),
        ({"type": "layout", "value": "jagged"}, "x.value: must be one of"),
        ({"type": "float", "value": "Infinity"}, "must be 'inf', '-inf' or 'nan'"),
        ({"type": "module", "value": "os"}, "x: unknown value type 'module'"),
        ({"shape": [2]}, "x: unknown value type None"),
    ],
)
def test_decode_refuses_malformed_json_with_its_path(value: object, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        decode_value(value, "x")  # type: ignore[arg-type]


def test_cli_round_trip(edge_file: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    root = tmp_path / "ds"
    result = runner.invoke(
        app, ["import-backendbench", str(edge_file), "--out", str(root), "--include-synthetic"]
    )
    assert result.exit_code == 0, result.output
    assert "read 50 rows; wrote" in result.output and "new workloads under" in result.output
    out = tmp_path / "back.txt"
    result = runner.invoke(app, ["export-backendbench", str(root), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 50 rows of " in result.output
    assert _squash(out.read_text()) == _squash(edge_file.read_text())


def test_export_selects_ops_and_skips_other_definitions(
    edge_file: Path, shared_data: Path, tmp_path: Path
) -> None:
    import shutil

    from sweep.errors import DatasetError, ValidationError

    root = tmp_path / "ds"
    import_backendbench(edge_file, root)
    fi = shared_data / "flashinfer-trace"
    for sub in ("definitions/rmsnorm", "workloads/rmsnorm"):
        shutil.copytree(fi / sub, root / sub)
    out = tmp_path / "add.txt"
    report = export_backendbench(root, out, ops=["add.Tensor"])
    assert report.skipped_definitions == ["rmsnorm_h4096"]
    lines = out.read_text().splitlines()
    assert lines[0] == "Operator: aten.add.Tensor" and len(lines) == 5
    with pytest.raises(ValidationError, match="no operator 'relu'"):
        export_backendbench(root, out, ops=["relu"])
    only_fi = tmp_path / "fi"
    for sub in ("definitions/rmsnorm", "workloads/rmsnorm"):
        shutil.copytree(fi / sub, only_fi / sub)
    with pytest.raises(DatasetError, match="no BackendBench definitions"):
        export_backendbench(only_fi, out)
