"""sweep validate, sweep schema, sweep plan: exit codes and exact output, in-process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.cli import app

REPO = Path(__file__).resolve().parents[2]
FIX = REPO / "tests" / "data" / "dataset"
runner = CliRunner()


def test_validate_good_roots() -> None:
    good, other = (FIX / "good").resolve(), (FIX / "other_root").resolve()
    result = runner.invoke(app, ["validate", str(good), str(other)])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"roots: {good}, {other}\n"
        "definitions: 2\n"
        "solutions: 4\n"
        "workloads: 5\n"
        "  vec_add  3\n"
        "  vec_mul  2\n"
        "traces: 0\n"
        f"warning: {other}/solutions/tester/ew2/vec_sub/orphan_py.json: definition: solution 'orphan_py' "
        "is for 'vec_sub', which no root defines (did you mean 'vec_mul'?)\n"
        "ok: no errors\n"
    )


def test_validate_reports_every_error_and_exits_1() -> None:
    root = (FIX / "workload_mismatch").resolve()
    result = runner.invoke(app, ["validate", str(root)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[-1] == "5 errors"
    errors = [x for x in lines if x.startswith("error: ")]
    assert len(errors) == 5
    assert (
        errors[0]
        == f"error: {root}/workloads/ew/vec_add.jsonl:1: workload.axes.d: const axis is 8, workload gives 16"
    )


def test_validate_single_error_wording() -> None:
    root = (FIX / "constraint_broken").resolve()
    result = runner.invoke(app, ["validate", str(root)])
    assert result.exit_code == 1
    assert result.stdout.splitlines()[-2:] == [
        f"error: {root}/workloads/ew/vec_add.jsonl:2: workload.constraints: 'n % 2 == 0' does not hold (n=3)",
        "1 error",
    ]


def test_validate_missing_root(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    result = runner.invoke(app, ["validate", str(missing)])
    assert result.exit_code == 1
    assert result.stderr == f"error: dataset root '{missing}' is not a folder ({missing})\n"


def test_validate_shipped_content() -> None:
    result = runner.invoke(app, ["validate", str(REPO)])
    assert result.exit_code == 0, result.output
    # softmax, RMSNorm and GEMM, and the three multi-GPU ones (definitions/collective/)
    assert "definitions: 6\n" in result.stdout
    assert result.stdout.endswith("ok: no errors\n")


@pytest.mark.parametrize("kind", ["definition", "solution", "workload", "trace"])
def test_schema_prints_json_schema(kind: str) -> None:
    result = runner.invoke(app, ["schema", kind])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.stdout)
    assert schema["title"] == kind.capitalize()
    assert schema["type"] == "object"
    assert "properties" in schema


def test_schema_trace_lists_statuses() -> None:
    text = runner.invoke(app, ["schema", "trace"]).stdout
    assert "INCORRECT_NUMERICAL" in text and "TIMEOUT" in text


def test_schema_unknown_kind() -> None:
    result = runner.invoke(app, ["schema", "config"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: invalid value for 'KIND': 'config' is not one of")


def test_plan_summary() -> None:
    result = runner.invoke(app, ["plan", str(FIX / "configs" / "good.yaml")])
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        "sweep 'fixture' on CPU\n"
        "definitions: 2\n"
        "  vec_add  3 tasks\n"
        "  vec_mul  2 tasks\n"
        "solutions: 2\n"
        "  vec_add_py  3 tasks\n"
        "  vec_mul_py  2 tasks\n"
        "left out: 2 (--verbose lists them)\n"
        "  1 solution: its definition is not in the dataset\n"
        "  1 solution: target_hardware does not include CPU\n"
        "total: 5 tasks\n"
    )


def test_plan_verbose_lists_what_is_left_out() -> None:
    result = runner.invoke(app, ["plan", str(FIX / "configs" / "good.yaml"), "--verbose"])
    assert result.exit_code == 0, result.output
    assert (
        "left out: 2\n"
        "  1 solution: its definition is not in the dataset\n"
        "    orphan_py: its definition 'vec_sub' is not in the dataset\n"
        "  1 solution: target_hardware does not include CPU\n"
        "    vec_add_gpu_only: target_hardware [H100] does not include CPU\n"
    ) in result.stdout


def test_plan_auto_hardware_is_explained(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: auto\ndataset: {FIX / 'good'}\n")
    result = runner.invoke(app, ["plan", str(cfg)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "sweep 'auto' on CPU (hardware 'auto' -> CPU)"


def test_plan_flags_override_the_config() -> None:
    result = runner.invoke(
        app, ["plan", str(FIX / "configs" / "good.yaml"), "--hardware", "H100", "--limit-per-definition", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "sweep 'fixture' on H100\n" in result.stdout
    assert "  vec_add_gpu_only  1 tasks\n" in result.stdout
    assert result.stdout.endswith("total: 3 tasks\n")


def test_plan_json_lists_tasks() -> None:
    result = runner.invoke(app, ["plan", str(FIX / "configs" / "good.yaml"), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)
    assert [(r["definition"], r["solution"], r["workload"]) for r in rows] == [
        ("vec_add", "vec_add_py", "wl-0002"),
        ("vec_add", "vec_add_py", "wl-0004"),
        ("vec_add", "vec_add_py", "wl-0016"),
        ("vec_mul", "vec_mul_py", "wm-1"),
        ("vec_mul", "vec_mul_py", "wm-3"),
    ]
    assert set(rows[0]) == {"task_id", "definition", "solution", "solution_hash", "workload", "hardware"}
    assert {r["hardware"] for r in rows} == {"CPU"}
    again = json.loads(runner.invoke(app, ["plan", str(FIX / "configs" / "good.yaml"), "--json"]).stdout)
    assert [r["task_id"] for r in again] == [r["task_id"] for r in rows]


def test_plan_config_error() -> None:
    path = FIX / "configs" / "unknown_key.yaml"
    result = runner.invoke(app, ["plan", str(path)])
    assert result.exit_code == 1
    assert (
        result.stderr
        == f"error: {path}:6: unknown key 'tolerence' in evaluation (did you mean 'tolerance'?)\n"
    )


def test_plan_selection_error(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: x\ndataset: {FIX / 'good'}\ndefinitions:\n  names: [vec_ad]\n")
    result = runner.invoke(app, ["plan", str(cfg)])
    assert result.exit_code == 1
    assert result.stderr == (
        "error: the config selects things the dataset does not have:\n"
        f"{cfg}:4: definitions.names: 'vec_ad' matches nothing in the dataset (did you mean 'vec_add'?)\n"
    )


def test_plan_dataset_error(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"name: x\ndataset: {FIX / 'missing_axis'}\n")
    result = runner.invoke(app, ["plan", str(cfg)])
    assert result.exit_code == 1
    root = (FIX / "missing_axis").resolve()
    # A bad record stops a plan only when nothing is left to run (this root has no solution).
    assert result.stderr == (
        "error: nothing to run: no solution is for a loaded definition with workloads; "
        "the dataset has 1 error:\n"
        f"  {root}/workloads/ew/vec_add.jsonl:2: workload.axes.n: var axis 'n' is not given\n"
    )


def test_plan_bad_flag_value() -> None:
    result = runner.invoke(app, ["plan", str(FIX / "configs" / "good.yaml"), "--hardware", ""])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: bad command-line value: --hardware: ")


def test_plan_of_several_gpu_types_counts_each() -> None:
    good = str(FIX / "configs" / "good.yaml")
    result = runner.invoke(app, ["plan", good, "--hardware", "H100,cpu", "--limit-per-definition", "1"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "sweep 'fixture' on 2 targets: H100, CPU"
    assert "H100: 3 tasks\n  definitions: 2\n    vec_add  2 tasks\n" in result.stdout
    assert "CPU: 2 tasks\n" in result.stdout
    # Left out once each, though both plans leave the orphan out.
    assert "left out: 2 (--verbose lists them)\n" in result.stdout
    assert result.stdout.endswith("total: 5 tasks (H100 3, CPU 2)\n")
    rows = json.loads(
        runner.invoke(
            app, ["plan", good, "--hardware", "H100,cpu", "--limit-per-definition", "1", "--json"]
        ).stdout
    )
    assert [r["hardware"] for r in rows] == ["H100"] * 3 + ["CPU"] * 2
    assert len({r["task_id"] for r in rows}) == 5


def test_plan_refuses_all_without_a_cluster() -> None:
    result = runner.invoke(app, ["plan", str(FIX / "configs" / "good.yaml"), "--hardware", "all"])
    assert result.exit_code == 1
    assert result.stderr.startswith("error: hardware 'all' means every GPU type of the cluster")
    assert "name the types instead (--hardware H100,H200" in result.stderr
