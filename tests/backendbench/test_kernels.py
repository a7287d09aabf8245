"""Importing a BackendBench kernel directory as Solutions."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.backendbench import import_backendbench, import_kernels
from sweep.cli import app
from sweep.errors import DatasetError
from sweep.plan.dataset import load_dataset


def test_kernel_dir_becomes_solutions(local_data: Path, tmp_path: Path) -> None:
    report = import_kernels(local_data / "kernels", tmp_path, author="agent")
    written = sorted(p.relative_to(tmp_path).as_posix() for p in report.solutions)
    assert written == [
        "solutions/agent/backendbench/add__Tensor/add__Tensor_implementation.json",
        "solutions/agent/backendbench/relu__default/relu__default_implementation_v1.json",
        "solutions/agent/backendbench/relu__default/relu__default_implementation_v2.json",
    ]
    skipped = "\n".join(report.skipped)
    assert "mul__Tensor_implementation.py: defines no top-level 'mul__Tensor_kernel_impl'" in skipped
    assert "notes: folder name must be <op>__<overload>" in skipped

    add = json.loads((tmp_path / written[0]).read_text())
    assert add["definition"] == "add__Tensor" and add["author"] == "agent"
    assert add["spec"] == {
        "language": "python",
        "target_hardware": ["*"],
        "entry_point": "add__Tensor_implementation.py::add__Tensor_kernel_impl",
        "destination_passing_style": False,
    }
    source = (local_data / "kernels/add__Tensor/add__Tensor_implementation.py").read_text()
    assert add["sources"] == [{"path": "add__Tensor_implementation.py", "content": source}]
    triton = json.loads((tmp_path / written[1]).read_text())
    assert triton["spec"]["language"] == "triton" and triton["spec"]["target_hardware"] == ["cuda"]
    assert triton["spec"]["entry_point"].endswith("::relu__default_kernel_impl")


def test_kernels_load_beside_the_imported_definitions(
    local_data: Path, edge_file: Path, tmp_path: Path
) -> None:
    import_backendbench(edge_file, tmp_path, ops=["add.Tensor"])
    kernels = tmp_path / "k"
    shutil.copytree(local_data / "kernels/add__Tensor", kernels / "add__Tensor")
    import_kernels(kernels, tmp_path)
    ds = load_dataset([tmp_path])
    sol = ds.solutions["add__Tensor_implementation"]
    assert sol.definition in ds.definitions
    assert sol.spec.destination_passing_style is False


def test_empty_or_missing_kernel_dir_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="not a directory"):
        import_kernels(tmp_path / "nope", tmp_path / "out")
    (tmp_path / "empty" / "relu").mkdir(parents=True)
    with pytest.raises(DatasetError, match="no kernels found.*folder name must be <op>__<overload>"):
        import_kernels(tmp_path / "empty", tmp_path / "out")


def test_invalid_python_is_skipped_with_its_reason(tmp_path: Path) -> None:
    d = tmp_path / "kd" / "abs__default"
    d.mkdir(parents=True)
    (d / "abs__default_implementation.py").write_text("def abs__default_kernel_impl(x:\n")
    (d / "abs__default_implementation_ok.py").write_text(
        "def abs__default_kernel_impl(x):\n    return x.abs()\n"
    )
    report = import_kernels(tmp_path / "kd", tmp_path / "out")
    assert len(report.solutions) == 1
    assert any("not valid Python" in s for s in report.skipped)


def test_cli_kernel_import(local_data: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(
        app, ["import-backendbench-kernels", str(local_data / "kernels"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 0, result.output
    assert "wrote 3 solutions under" in result.output and "skipped: " in result.output
    result = runner.invoke(
        app, ["import-backendbench-kernels", str(tmp_path / "missing"), "--out", str(tmp_path)]
    )
    assert result.exit_code == 1 and "error: " in result.output and "not a directory" in result.output
