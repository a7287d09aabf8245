"""Import: definitions and workloads that load and validate, exact op selection, idempotence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.backendbench import (
    CALL_INPUT,
    ImportReport,
    build_records,
    import_backendbench,
    op_expression,
    parse_op_name,
    parse_trace,
    parse_trace_file,
    select_ops,
)
from sweep.cli import app
from sweep.errors import ValidationError
from sweep.plan.dataset import load_dataset
from sweep.schema import BackendBenchArgsInput, check_workload

OPS = [
    "aten.relu.default",
    "aten.relu_.default",
    "aten.leaky_relu.default",
    "aten.add.Tensor",
    "aten.add.Scalar",
    "aten.add_.Tensor",
]


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        (["relu"], ["aten.relu.default"]),
        (["relu.default"], ["aten.relu.default"]),
        (["aten.relu.default"], ["aten.relu.default"]),
        (["relu_"], ["aten.relu_.default"]),
        (["add"], ["aten.add.Tensor", "aten.add.Scalar"]),
        (["add.Tensor", "leaky_relu"], ["aten.leaky_relu.default", "aten.add.Tensor"]),
        ([" relu "], ["aten.relu.default"]),
    ],
)
def test_op_selection_is_by_exact_name(wanted: list[str], expected: list[str]) -> None:
    assert select_ops(OPS, wanted) == expected


def test_unknown_op_names_suggest_close_ones() -> None:
    with pytest.raises(ValidationError, match=r"no operator 'rellu' in the trace \(did you mean 'relu'"):
        select_ops(OPS, ["rellu"])
    with pytest.raises(ValidationError, match="no operator 'add.Tensorr'"):
        select_ops(OPS, ["add.Tensorr"])


def test_imported_dataset_loads_and_every_workload_checks(
    sample_file: Path, imported: dict[str, tuple[Path, ImportReport]]
) -> None:
    root, report = imported[sample_file.name]
    ds = load_dataset([root])
    assert len(ds.definitions) == len(report.operators) == 90
    assert ds.num_workloads() == 1554
    for name, defn in ds.definitions.items():
        assert defn.op_type == "backendbench" and "backendbench" in defn.tags
        for w in ds.workloads[name]:
            assert check_workload(defn, w) == []


def test_mapping_keeps_everything(edge_file: Path, tmp_path: Path) -> None:
    import_backendbench(edge_file, tmp_path, include_synthetic=True)
    ds = load_dataset([tmp_path])
    rows = parse_trace_file(edge_file)
    to_copy = ds.workloads["_to_copy__default"]
    first = to_copy[0]
    call = first.inputs[CALL_INPUT]
    assert isinstance(call, BackendBenchArgsInput)
    assert first.weight == 72 and call.synthetic is False
    lines = edge_file.read_text().splitlines()
    line = 1 + lines.index("cnt: 72, ((T([], f32),), {'dtype': f16, 'device': \"torch.device('cpu')\"})")
    assert call.source is not None and (call.source.file, call.source.line) == (edge_file.name, line)
    assert call.args == [{"type": "tensor", "shape": [], "dtype": "float32"}]
    assert call.kwargs == {
        "dtype": {"type": "dtype", "value": "float16"},
        "device": {"type": "device", "value": "cpu", "form": "torch.device"},
    }
    strided = to_copy[1].inputs[CALL_INPUT]
    assert isinstance(strided, BackendBenchArgsInput)
    assert strided.args[0] == {
        "type": "tensor", "shape": [1, 1, 128, 128], "dtype": "uint8", "stride": [4194304, 4194304, 2048, 1],
    }  # fmt: skip
    assert strided.kwargs == {"dtype": {"type": "dtype", "value": "bool", "spelling": "torch.bool"}}
    synthetic = ds.workloads["_adaptive_avg_pool2d__default"][0]
    s_call = synthetic.inputs[CALL_INPUT]
    assert isinstance(s_call, BackendBenchArgsInput)
    assert synthetic.weight == 0 and s_call.synthetic is True and s_call.args_trailing_comma is True
    total = sum(len(v) for v in ds.workloads.values())
    assert total == len(rows)


def test_definition_shape_and_reference(edge_file: Path, tmp_path: Path) -> None:
    import_backendbench(edge_file, tmp_path, ops=["add_.Tensor", "add.Tensor"])
    raw = json.loads((tmp_path / "definitions/backendbench/add___Tensor.json").read_text())
    assert raw["name"] == "add___Tensor"
    assert raw["tags"] == ["backendbench", "aten:add_.Tensor", "mutates:self@0"]
    assert raw["axes"] == {} and raw["inputs"] == {} and raw["outputs"] == {}
    assert "torch.ops.aten.add_.Tensor(*args, **kwargs)" in raw["reference"]
    plain = json.loads((tmp_path / "definitions/backendbench/add__Tensor.json").read_text())
    assert plain["tags"] == ["backendbench", "aten:add.Tensor"]
    # The reference is real code that calls the overload.
    import torch

    namespace: dict[str, object] = {}
    # The reference text we generated ourselves, run as the engine will run it.
    exec(compile(plain["reference"], "reference.py", "exec"), namespace)  # noqa: S102
    run = namespace["run"]
    assert callable(run)
    out = run(torch.ones(2), torch.ones(2), alpha=3)
    assert torch.equal(out, torch.full((2,), 4.0))


def test_workload_lines_are_workload_only_traces(edge_file: Path, tmp_path: Path) -> None:
    import_backendbench(edge_file, tmp_path, ops=["add.Tensor"])
    lines = (tmp_path / "workloads/backendbench/add__Tensor.jsonl").read_text().splitlines()
    assert len(lines) == 4
    obj = json.loads(lines[0])
    assert obj["definition"] == "add__Tensor" and obj["solution"] is None and obj["evaluation"] is None
    assert obj["workload"]["axes"] == {} and obj["workload"]["weight"] == 1355


def test_reimport_is_idempotent_and_duplicates_stay_distinct(tmp_path: Path) -> None:
    text = "Operator: aten.fill_.Tensor\ncnt: 2, ((T([3], i64), T([], i64),), {})\ncnt: 1, ((T([3], i64), T([], i64),), {})\n"
    trace = tmp_path / "dup.trace.txt"
    trace.write_text(text)
    first = import_backendbench(trace, tmp_path / "ds")
    assert first.workloads_added == 2  # identical arguments, two rows, two workloads
    again = import_backendbench(trace, tmp_path / "ds")
    assert again.workloads_added == 0 and again.workloads_present == 2
    lines = (tmp_path / "ds/workloads/backendbench/fill___Tensor.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert len({json.loads(line)["workload"]["uuid"] for line in lines}) == 2


def test_synthetic_rows_are_skipped_unless_asked(local_data: Path, tmp_path: Path) -> None:
    rows = parse_trace_file(local_data / "huge_synthetic.trace.txt")
    assert len(build_records(rows, source_file="x")[0].workloads) == 1
    kept = build_records(rows, source_file="x", include_synthetic=True)[0].workloads
    assert [w.weight for w in kept] == [24, 0]


def test_unknown_torch_operator_is_a_warning_not_a_failure(tmp_path: Path) -> None:
    rows = parse_trace("Operator: aten.no_such_op_.default\ncnt: 1, ((T([2], f16),), {})\n")
    report_items = build_records(rows, source_file="x")
    assert report_items[0].definition.tags == ["backendbench", "aten:no_such_op_.default", "mutates:self@0"]


def test_cli_import_errors_are_clear(local_data: Path, edge_file: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["import-backendbench", str(local_data / "malicious.trace.txt"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 1
    assert "error: " in result.output and "malicious.trace.txt:3:" in result.output
    assert "calls are not allowed (only T(...))" in result.output
    result = runner.invoke(
        app, ["import-backendbench", str(edge_file), "--out", str(tmp_path), "--ops", "relu"]
    )
    assert result.exit_code == 1 and "no operator 'relu' in the trace" in result.output
    result = runner.invoke(
        app, ["import-backendbench", str(edge_file), "--out", str(tmp_path), "--ops", "add.Tensor"]
    )
    assert result.exit_code == 0, result.output
    assert "wrote 1 definitions and 4 new workloads" in result.output
    assert "rows of operators not in --ops" in result.output


def test_help_has_examples() -> None:
    runner = CliRunner()
    for cmd in ("import-backendbench", "export-backendbench", "import-backendbench-kernels"):
        result = runner.invoke(app, [cmd, "--help"])
        assert result.exit_code == 0 and "Example: sweep " + cmd in result.output.replace("\n", " ")


def test_an_overload_named_like_a_python_keyword_gets_a_reference_that_runs() -> None:
    import torch

    (item,) = build_records(
        parse_trace("Operator: aten.random_.from\ncnt: 1, ((T([4, 5], i64), -3, 7), {})\n"), source_file="t"
    )
    assert "getattr(torch.ops.aten.random_, 'from')(*args, **kwargs)" in item.definition.reference
    namespace: dict[str, object] = {}
    exec(compile(item.definition.reference, "reference.py", "exec"), namespace)  # noqa: S102  (ours)
    x = torch.zeros(4, 5, dtype=torch.int64)
    run = namespace["run"]
    assert callable(run)
    run(x, -3, 7)
    assert bool(((x >= -3) & (x < 7)).all())
    assert op_expression(parse_op_name("aten.add.Tensor")) == "torch.ops.aten.add.Tensor"
