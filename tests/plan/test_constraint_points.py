"""No point silently lost: a constraint that cannot be evaluated stops the plan and ``sweep
validate``, naming the constraint, the file and the point (issue 33, point 0)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.config import SweepConfig
from sweep.errors import PlanError
from sweep.plan import expand
from sweep.plan.dataset import load_dataset

from ..conftest import dataset_with, tuned_vec_add

runner = CliRunner()

SOLUTION = tuned_vec_add({"CHUNK": [1, 2, 4, 8], "MODE": ["lin", "exp"]}, ["CHUNK <= 2 or MODE == 'exp'"])


def _root(tmp_path: Path, **changes: Any) -> Path:
    return dataset_with(tmp_path, {**SOLUTION, **changes})


def _config(tmp_path: Path, root: Path, extra: str = "") -> Path:
    path = tmp_path / "sweep.yaml"
    path.write_text(
        f"name: t\ndataset: [{root}]\nhardware: cpu\nsolutions:\n  names: [vec_add_tuned]\n{extra}"
    )
    return path


def test_string_constraints_keep_every_admissible_point(tmp_path: Path) -> None:
    root = _root(tmp_path)
    cfg = SweepConfig.model_validate(
        {"name": "t", "dataset": [str(root)], "hardware": "cpu", "solutions": {"names": ["vec_add_tuned"]}}
    )
    ds = load_dataset([root])
    plan = expand(cfg, ds)
    per_workload = len(ds.workloads["vec_add"])
    assert len(plan.tasks) == 6 * per_workload  # (1|2, lin|exp) and (4|8, exp)
    assert all(x.reason == "violates CHUNK <= 2 or MODE == 'exp'" for x in plan.excluded)


def test_a_point_that_cannot_be_judged_stops_the_plan(tmp_path: Path) -> None:
    root = _root(
        tmp_path, params={"CHUNK": [1, 2, "auto"]}, params_constraints=["CHUNK * 2 <= n or CHUNK == 'auto'"]
    )
    cfg = SweepConfig.model_validate({"name": "t", "dataset": [str(root)], "hardware": "cpu"})
    with pytest.raises(
        PlanError, match=r"cannot evaluate CHUNK \* 2 <= n.*at the point \{\"CHUNK\":\"auto\"\}"
    ):
        expand(cfg, load_dataset([root], strict=False))


def test_validate_names_file_constraint_and_point(tmp_path: Path) -> None:
    root = _root(
        tmp_path, params={"CHUNK": [1, 2, "auto"]}, params_constraints=["CHUNK * 2 <= n or CHUNK == 'auto'"]
    )
    r = runner.invoke(app, ["validate", str(root)])
    assert r.exit_code == 1
    assert (
        "vec_add_tuned.json: params_constraints: cannot evaluate CHUNK * 2 <= n or CHUNK == 'auto'"
        in r.output
    )
    assert 'at the point {"CHUNK":"auto"} on workload' in r.output


def test_validate_config_names_the_config_file(tmp_path: Path) -> None:
    root = _root(tmp_path)
    # The config's own lists make MODE a number for one value: judged with the config's space.
    cfg = _config(tmp_path, root, "  params:\n    vec_add_tuned: {CHUNK: [1, 2, 4, 'x']}\n")
    r = runner.invoke(app, ["validate", "--config", str(cfg)])
    assert r.exit_code == 1, r.output
    assert f"{cfg}:" in r.output and "cannot evaluate CHUNK <= 2" in r.output and '"CHUNK":"x"' in r.output
    r = runner.invoke(app, ["plan", str(cfg)])
    assert r.exit_code == 1 and "cannot evaluate CHUNK <= 2" in r.output and f"{cfg}:" in r.output
    assert runner.invoke(app, ["validate", "--config", str(_config(tmp_path, root))]).exit_code == 0


def test_a_static_kind_problem_is_a_validate_error(tmp_path: Path) -> None:
    root = _root(tmp_path, params_constraints=["CHUNK <= 2 or MODE == 3"])
    r = runner.invoke(app, ["validate", str(root)])
    assert r.exit_code == 1
    assert "never equal" in r.output and "vec_add_tuned.json" in r.output


def test_validate_needs_roots_or_a_config() -> None:
    r = runner.invoke(app, ["validate"])
    assert r.exit_code == 1 and "error: give dataset roots" in r.output
