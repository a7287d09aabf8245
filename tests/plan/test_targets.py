"""Plans of several targets: ``hardware: [H100, H200]`` (or ``H100,H200``), and ``all``."""

from __future__ import annotations

from typing import Any

import pytest

from sweep.config import ConfigOverrides, SweepConfig
from sweep.errors import PlanError
from sweep.plan import (
    ALL_NEEDS_A_CLUSTER,
    Exclusion,
    build_plan,
    combined_excluded,
    expand,
    expand_targets,
    plan_config,
    plan_config_targets,
    plan_targets,
    select,
    target_hardware,
)
from sweep.plan.dataset import Dataset

from .conftest import FIXTURES as FIX

GOOD_CFG = FIX / "configs" / "good.yaml"


def _cfg(hardware: object) -> SweepConfig:
    data: dict[str, Any] = {
        "name": "t",
        "dataset": [str(FIX / "good"), str(FIX / "other_root")],
        "hardware": hardware,
    }
    return SweepConfig.model_validate(data)


@pytest.mark.parametrize(
    ("hardware", "targets"),
    [
        ("auto", ["CPU"]),
        ("cpu", ["CPU"]),
        ("NVIDIA_H100", ["H100"]),
        (["h200", "H100"], ["H200", "H100"]),
        ("H100, h200", ["H100", "H200"]),
        (["cpu", "A100"], ["CPU", "A100"]),
    ],
)
def test_targets_of_a_plan_are_the_named_ones_in_order(hardware: object, targets: list[str]) -> None:
    assert plan_targets(_cfg(hardware)) == targets


def test_all_needs_a_cluster(dataset: Dataset) -> None:
    for call in (
        lambda: plan_targets(_cfg("all")),
        lambda: expand_targets(_cfg("ALL"), dataset),
        lambda: expand(_cfg("all"), dataset),
    ):
        with pytest.raises(PlanError) as err:
            call()
        assert str(err.value) == ALL_NEEDS_A_CLUSTER
    assert "--hardware H100,H200" in ALL_NEEDS_A_CLUSTER


def test_one_plan_per_target_each_the_plan_of_that_target_alone(dataset: Dataset) -> None:
    plans = expand_targets(_cfg(["H200", "H100"]), dataset)
    assert [p.hardware for p in plans] == ["H200", "H100"]
    for p in plans:
        alone = expand(_cfg(p.hardware), dataset)
        assert [t.task_id for t in p.tasks] == [t.task_id for t in alone.tasks]
        # The plan's config names its one target: the tasks' config_hash is the one a launch
        # of that target alone stamps, so results compare whichever way they were launched.
        assert p.config.hardware == p.hardware
        assert {t.config_hash for t in p.tasks} == {alone.config.config_hash()}
        assert {t.hardware for t in p.tasks} == {p.hardware}
    h200, h100 = plans
    assert not {t.task_id for t in h200.tasks} & {t.task_id for t in h100.tasks}
    # vec_add_gpu_only is written for H100: in that plan only, left out of the other.
    assert "vec_add_gpu_only" in h100.count_by_solution()
    assert "vec_add_gpu_only" not in h200.count_by_solution()
    assert (
        Exclusion("solution", "vec_add_gpu_only", "target_hardware [H100] does not include H200")
        in h200.excluded
    )


def test_what_every_target_leaves_out_is_listed_once(dataset: Dataset) -> None:
    plans = expand_targets(_cfg(["cpu", "H200"]), dataset)
    assert combined_excluded(plans) == [
        Exclusion("solution", "orphan_py", "its definition 'vec_sub' is not in the dataset"),
        Exclusion("solution", "vec_add_gpu_only", "target_hardware [H100] does not include CPU"),
        Exclusion("solution", "vec_add_gpu_only", "target_hardware [H100] does not include H200"),
    ]


def test_a_single_target_plan_refuses_several(dataset: Dataset) -> None:
    with pytest.raises(
        PlanError, match=r"hardware names 2 targets \(H100, H200\): one plan is for one target"
    ):
        target_hardware(_cfg("H100,H200"))
    with pytest.raises(PlanError, match="plan each with expand_targets"):
        expand(_cfg(["H100", "H200"]), dataset)
    # One entry in a list is one target.
    assert target_hardware(_cfg(["h100"])) == "H100"


def test_build_plan_keeps_the_config_of_its_own_target(dataset: Dataset) -> None:
    # A config naming the target alone keeps its own hash, as before lists existed.
    for hardware, target in (("h100", "H100"), ("auto", "CPU")):
        cfg = _cfg(hardware)
        plan = build_plan(select(cfg, dataset), target)
        assert plan.config.hardware == hardware
        assert {t.config_hash for t in plan.tasks} == {cfg.config_hash()}


def test_plan_config_targets_from_a_file_and_a_flag() -> None:
    plans = plan_config_targets(GOOD_CFG, ConfigOverrides(hardware="H100,cpu"))
    assert [p.hardware for p in plans] == ["H100", "CPU"]
    assert [t.task_id for t in plans[1].tasks] == [
        t.task_id for t in plan_config(GOOD_CFG, ConfigOverrides(hardware="cpu")).tasks
    ]
    with pytest.raises(PlanError, match="'all' means every GPU type of the cluster"):
        plan_config_targets(GOOD_CFG, ConfigOverrides(hardware="all"))
