"""Parameter spaces in a plan: one task per valid point, exclusions counted, config lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sweep.config import SweepConfig
from sweep.errors import DatasetError, PlanError
from sweep.plan import expand, group_excluded
from sweep.plan.dataset import Dataset, load_dataset

from ..conftest import GOOD_DATASET, dataset_with, tuned_vec_add

GOOD = GOOD_DATASET

SOLUTION = tuned_vec_add({"BLOCK": [2, 4, 8, 16], "MODE": ["a", "b"]}, ["BLOCK <= n"], defaults={"BLOCK": 1})


def _root(tmp_path: Path, **changes: Any) -> Path:
    return dataset_with(tmp_path, {**SOLUTION, **changes})


def _cfg(root: Path, **solutions: Any) -> SweepConfig:
    return SweepConfig.model_validate(
        {
            "name": "t",
            "dataset": [str(root)],
            "hardware": "cpu",
            "solutions": {"names": ["vec_add_tuned"], **solutions},
        }
    )


@pytest.fixture
def ds(tmp_path: Path) -> Dataset:
    return load_dataset([_root(tmp_path)])


def test_one_task_per_valid_point(ds: Dataset) -> None:
    plan = expand(_cfg(ds.roots[0]), ds)
    by_wl: dict[str, list[dict[str, Any]]] = {}
    for t in plan.tasks:
        assert t.params is not None
        by_wl.setdefault(t.workload.uuid, []).append(t.params)
    # n = 2, 4, 16: BLOCK <= n
    assert [p["BLOCK"] for p in by_wl["wl-0002"]] == [2, 2]
    assert len(by_wl["wl-0004"]) == 4 and len(by_wl["wl-0016"]) == 8
    assert len({t.task_id for t in plan.tasks}) == len(plan.tasks) == 14
    groups = {(kind, why): len(xs) for kind, why, xs in group_excluded(plan.excluded)}
    assert groups == {("params point", "violates BLOCK <= n"): 10}
    # the same plan twice: the same ids
    assert [t.task_id for t in expand(_cfg(ds.roots[0]), ds).tasks] == [t.task_id for t in plan.tasks]


def test_config_restricts_and_samples(ds: Dataset) -> None:
    plan = expand(_cfg(ds.roots[0], params={"vec_add_*": {"BLOCK": [2]}}), ds)
    assert {t.params["BLOCK"] for t in plan.tasks if t.params} == {2}
    assert len(plan.tasks) == 6
    sampled = _cfg(ds.roots[0], params_sample={"max_points": 3, "seed": 7})
    a, b = expand(sampled, ds), expand(sampled, ds)
    assert [t.task_id for t in a.tasks] == [t.task_id for t in b.tasks]
    counts: dict[str, int] = {}
    for t in a.tasks:
        counts[t.workload.uuid] = counts.get(t.workload.uuid, 0) + 1
    assert counts == {"wl-0002": 2, "wl-0004": 3, "wl-0016": 3}
    assert any(x.why.startswith("not sampled") for x in a.excluded)


def test_config_typos_refused(ds: Dataset) -> None:
    with pytest.raises(PlanError, match="declares no parameter 'BLOK'.*did you mean 'BLOCK'"):
        expand(_cfg(ds.roots[0], params={"vec_add_tuned": {"BLOK": [2]}}), ds)
    with pytest.raises(PlanError, match="matches no selected solution.*did you mean 'vec_add_tuned'"):
        expand(_cfg(ds.roots[0], params={"vec_add_tune": {"BLOCK": [2]}}), ds)


def test_constraint_naming_unknown_axis(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="'nn'.*neither a parameter nor an axis.*did you mean 'n'"):
        load_dataset([_root(tmp_path, params_constraints=["BLOCK <= nn"])])


def test_solutions_without_params_keep_their_ids(ds: Dataset) -> None:
    cfg = SweepConfig.model_validate({"name": "t", "dataset": [str(GOOD)], "hardware": "cpu"})
    plain = expand(cfg, load_dataset([GOOD]))
    assert all(t.params is None for t in plain.tasks)
    cfg2 = SweepConfig.model_validate(
        {"name": "t", "dataset": [str(GOOD)], "hardware": "cpu", "solutions": {"names": ["vec_add_py"]}}
    )
    ids = {t.task_id for t in plain.tasks}
    assert {t.task_id for t in expand(cfg2, load_dataset([GOOD])).tasks} <= ids
