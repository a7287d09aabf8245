"""Plan expansion: selection, exclusions, order, stable ids, errors with did-you-mean."""

from __future__ import annotations

import builtins
import json
import os
from pathlib import Path
from typing import Any

import pytest

from sweep.config import ConfigOverrides, SweepConfig
from sweep.errors import PlanError
from sweep.plan import (
    Exclusion,
    Plan,
    build_plan,
    expand,
    load_config,
    plan_config,
    select,
    target_hardware,
)
from sweep.plan.dataset import Dataset, load_dataset

from .conftest import FIXTURES as FIX
from .conftest import REPO

GOOD_CFG = FIX / "configs" / "good.yaml"


def _cfg(**fields: Any) -> SweepConfig:
    data: dict[str, Any] = {
        "name": "t",
        "dataset": [str(FIX / "good"), str(FIX / "other_root")],
        "hardware": "cpu",
    }
    data.update(fields)
    return SweepConfig.model_validate(data)


def _triples(plan: Plan) -> list[tuple[str, str, str]]:
    return [(t.definition.name, t.solution.name, t.workload.uuid) for t in plan.tasks]


def test_full_expansion_order_and_exclusions(dataset: Dataset) -> None:
    plan = expand(_cfg(), dataset)
    assert _triples(plan) == [
        ("vec_add", "vec_add_py", "wl-0002"),
        ("vec_add", "vec_add_py", "wl-0004"),
        ("vec_add", "vec_add_py", "wl-0016"),
        ("vec_mul", "vec_mul_py", "wm-1"),
        ("vec_mul", "vec_mul_py", "wm-3"),
    ]
    assert plan.excluded == [
        Exclusion("solution", "orphan_py", "its definition 'vec_sub' is not in the dataset"),
        Exclusion("solution", "vec_add_gpu_only", "target_hardware [H100] does not include CPU"),
    ]
    assert plan.count_by_definition() == {"vec_add": 3, "vec_mul": 2}
    assert plan.count_by_solution() == {"vec_add_py": 3, "vec_mul_py": 2}
    assert plan.hardware == "CPU"


def test_task_fields(dataset: Dataset) -> None:
    cfg = _cfg()
    task = expand(cfg, dataset).tasks[0]
    assert task.hardware == "CPU"
    assert task.sweep == "t"
    assert task.config_hash == cfg.config_hash()
    assert task.settings == cfg.evaluation
    assert task.dataset_root == str((FIX / "good").resolve())
    assert task.solution == dataset.solutions["vec_add_py"]


def test_gpu_target_takes_gpu_solutions(dataset: Dataset) -> None:
    plan = expand(_cfg(hardware="h100"), dataset)
    assert plan.count_by_solution() == {"vec_add_gpu_only": 3, "vec_add_py": 3, "vec_mul_py": 2}
    assert {t.hardware for t in plan.tasks} == {"H100"}
    assert [x.name for x in plan.excluded] == ["orphan_py"]
    other_gpu = expand(_cfg(hardware="A100"), dataset)
    assert "vec_add_gpu_only" not in other_gpu.count_by_solution()  # it names H100 only
    assert "vec_add_py" in other_gpu.count_by_solution()  # "gpu" matches every GPU


def test_auto_means_cpu_in_a_plan(dataset: Dataset) -> None:
    assert target_hardware(_cfg(hardware="auto")) == "CPU"
    assert target_hardware(_cfg(hardware="NVIDIA_H100")) == "H100"
    assert expand(_cfg(hardware="auto"), dataset).hardware == "CPU"


def test_ids_are_stable_and_unique(dataset: Dataset) -> None:
    a = expand(_cfg(), dataset)
    b = expand(_cfg(), load_dataset([FIX / "good", FIX / "other_root"]))
    assert [t.task_id for t in a.tasks] == [t.task_id for t in b.tasks]
    assert len({t.task_id for t in a.tasks}) == len(a.tasks)


def test_ids_follow_what_changes_a_measurement(dataset: Dataset) -> None:
    base = [t.task_id for t in expand(_cfg(), dataset).tasks]
    assert [t.task_id for t in expand(_cfg(name="other"), dataset).tasks] == base
    seeded = [t.task_id for t in expand(_cfg(evaluation={"seed": 5}), dataset).tasks]
    assert not set(seeded) & set(base)
    on_gpu = [t.task_id for t in expand(_cfg(hardware="H100"), dataset).tasks]
    assert not set(on_gpu) & set(base)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"definitions": {"names": ["vec_a*"]}}, {"vec_add"}),
        ({"definitions": {"names": ["vec_mul"]}}, {"vec_mul"}),
        ({"definitions": {"op_types": ["ew2"]}}, {"vec_mul"}),
        ({"definitions": {"tags": ["kind:elementwise", "extra"]}}, {"vec_mul"}),
        ({"definitions": {"tags": ["kind:*"]}}, {"vec_add", "vec_mul"}),
        ({"definitions": {"names": ["vec_*"], "op_types": ["ew"]}}, {"vec_add"}),
    ],
)
def test_definition_selection(dataset: Dataset, fields: dict[str, Any], expected: set[str]) -> None:
    assert set(expand(_cfg(**fields), dataset).count_by_definition()) == expected


def test_solution_selection(dataset: Dataset) -> None:
    plan = expand(_cfg(hardware="H100", solutions={"authors": ["other"]}), dataset)
    assert plan.count_by_solution() == {"vec_add_gpu_only": 3}
    # vec_mul has no selected solution: it is reported, not silently dropped.
    assert Exclusion("definition", "vec_mul", "no solution selected by the config") in plan.excluded
    plan = expand(_cfg(solutions={"names": ["*_py"], "languages": ["python"]}), dataset)
    assert set(plan.count_by_solution()) == {"vec_add_py", "vec_mul_py"}


def test_unselected_definitions_do_not_report_their_solutions(dataset: Dataset) -> None:
    plan = expand(_cfg(definitions={"names": ["vec_mul"]}), dataset)
    assert [x.name for x in plan.excluded] == ["orphan_py"]


def test_workload_limit_and_uuids(dataset: Dataset) -> None:
    plan = expand(_cfg(workloads={"limit_per_definition": 2}), dataset)
    assert [t.workload.uuid for t in plan.tasks] == ["wl-0002", "wl-0004", "wm-1", "wm-3"]
    plan = expand(_cfg(workloads={"uuids": ["wl-0016", "wm-3"]}), dataset)
    assert [t.workload.uuid for t in plan.tasks] == ["wl-0016", "wm-3"]
    plan = expand(_cfg(workloads={"uuids": ["wl-0016"]}), dataset)
    assert Exclusion("definition", "vec_mul", "no selected workload") in plan.excluded


def test_definition_without_workloads_is_reported(dataset: Dataset) -> None:
    ds = Dataset(
        roots=dataset.roots, definitions=dict(dataset.definitions), solutions=dict(dataset.solutions)
    )
    ds.workloads = {"vec_add": dataset.workloads["vec_add"]}
    ds._origins = dict(dataset._origins)
    plan = expand(_cfg(), ds)
    assert Exclusion("definition", "vec_mul", "no workloads in the dataset") in plan.excluded


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"definitions": {"names": ["vec_ad"]}},
            "definitions.names: 'vec_ad' matches nothing in the dataset (did you mean 'vec_add'?)",
        ),
        ({"definitions": {"names": ["zzz*"]}}, "definitions.names: 'zzz*' matches nothing in the dataset"),
        (
            {"definitions": {"op_types": ["eww"]}},
            "definitions.op_types: 'eww' matches nothing in the dataset (did you mean 'ew'?)",
        ),
        (
            {"definitions": {"tags": ["kind:elementwis"]}},
            "definitions.tags: 'kind:elementwis' matches nothing in the dataset (did you mean 'kind:elementwise'?)",
        ),
        (
            {"solutions": {"names": ["vec_add_pi"]}},
            "solutions.names: 'vec_add_pi' matches nothing in the dataset (did you mean 'vec_add_py'?)",
        ),
        (
            {"solutions": {"authors": ["testr"]}},
            "solutions.authors: 'testr' matches nothing in the dataset (did you mean 'tester'?)",
        ),
        (
            {"solutions": {"languages": ["cuda"]}},
            "solutions.languages: 'cuda' matches nothing in the dataset",
        ),
        (
            {"workloads": {"uuids": ["wl-0016x"]}},
            "workloads.uuids: 'wl-0016x' matches nothing in the dataset (did you mean 'wl-0016'?)",
        ),
    ],
)
def test_names_that_match_nothing_are_errors(dataset: Dataset, fields: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanError) as info:
        expand(_cfg(**fields), dataset)
    assert str(info.value) == f"the config selects things the dataset does not have:\n{message}"


def test_all_unmatched_names_are_reported_together(dataset: Dataset) -> None:
    with pytest.raises(PlanError) as info:
        expand(_cfg(definitions={"names": ["a", "b"]}, solutions={"authors": ["c"]}), dataset)
    assert str(info.value).count("matches nothing") == 3


def test_expand_is_pure(dataset: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_io(*args: object, **kwargs: object) -> None:
        raise AssertionError(f"expand touched the file system: {args!r}")

    cfg = _cfg()
    expected = _triples(expand(cfg, dataset))
    for mod, name in ((builtins, "open"), (os, "stat"), (os, "scandir"), (os, "listdir"), (os, "lstat")):
        monkeypatch.setattr(mod, name, no_io)
    assert _triples(expand(cfg, dataset)) == expected


def test_plan_config_loads_everything() -> None:
    plan = plan_config(GOOD_CFG, ConfigOverrides(limit_per_definition=1))
    assert _triples(plan) == [("vec_add", "vec_add_py", "wl-0002"), ("vec_mul", "vec_mul_py", "wm-1")]
    assert plan.config == load_config(GOOD_CFG, ConfigOverrides(limit_per_definition=1))


def test_shipped_configs_plan() -> None:
    local = plan_config(REPO / "configs" / "local.yaml")
    assert local.hardware == "CPU"
    langs = {t.solution.spec.language.value for t in local.tasks}
    assert langs == {"python", "triton"}
    assert [x.name for x in local.excluded] == ["rmsnorm_h1024_cuda"]
    h100 = plan_config(REPO / "configs" / "h100.yaml")
    assert "cuda" in {t.solution.spec.language.value for t in h100.tasks}
    assert [x for x in h100.excluded if x.kind != "params point"] == []  # only points a constraint rules out
    assert len(h100.tasks) > len(local.tasks)


def test_select_checks_filters_without_any_hardware(dataset: Dataset) -> None:
    with pytest.raises(PlanError, match="did you mean 'vec_add_py'"):
        select(_cfg(hardware="auto", solutions={"names": ["vec_add_pi"]}), dataset)
    sel = select(_cfg(hardware="auto"), dataset)
    assert [d.name for d in sel.definitions] == ["vec_add", "vec_mul"]


def test_build_plan_once_for_the_target_a_launcher_found(dataset: Dataset) -> None:
    auto = _cfg(hardware="auto")
    sel = select(auto, dataset)
    assert build_plan(sel, "CPU") == expand(auto, dataset)  # "auto" is CPU in a plan
    on_gpu = build_plan(sel, "H100")
    explicit = expand(_cfg(hardware="H100"), dataset)
    assert on_gpu.hardware == "H100" and on_gpu.config.hardware == "H100"
    assert [(t.task_id, t.config_hash) for t in on_gpu.tasks] == [
        (t.task_id, t.config_hash) for t in explicit.tasks
    ]
    assert on_gpu.excluded == explicit.excluded


def test_ignore_target_hardware_ports_a_solution_and_its_trace_says_so(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    (root / "definitions").mkdir(parents=True)
    (root / "workloads").mkdir()
    (root / "solutions").mkdir()
    defn = {
        "name": "add1",
        "op_type": "e",
        "axes": {"n": {"type": "var"}},
        "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
        "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
        "reference": "def run(x):\n    return x + 1\n",
    }
    (root / "definitions" / "add1.json").write_text(json.dumps(defn))
    wl = {"uuid": "w0", "axes": {"n": 8}, "inputs": {"x": {"type": "random"}}}
    (root / "workloads" / "add1.jsonl").write_text(json.dumps({"definition": "add1", "workload": wl}) + "\n")
    sol = {
        "name": "b200_only",
        "definition": "add1",
        "author": "a",
        "spec": {
            "language": "python",
            "target_hardware": ["B200"],
            "entry_point": "main.py::run",
            "destination_passing_style": False,
        },
        "sources": [{"path": "main.py", "content": "def run(x):\n    return x + 1\n"}],
    }
    (root / "solutions" / "b200_only.json").write_text(json.dumps(sol))
    ds = load_dataset([str(root)])
    base = {"name": "p", "dataset": [str(root)], "hardware": "H100"}
    plan = expand(SweepConfig.model_validate(base), ds)
    assert not plan.tasks and "does not include H100" in plan.excluded[0].reason
    ported = expand(SweepConfig.model_validate({**base, "solutions": {"ignore_target_hardware": True}}), ds)
    (task,) = ported.tasks
    assert task.ported and task.provenance().ported_from == ["B200"]
    assert task.config_hash != plan.config.config_hash()  # the switch is part of what ran
    with pytest.raises(ValueError, match="ignore_target_hardware"):
        SweepConfig.model_validate({**base, "solutions": {"ignore_target_hardware": "yes"}})


def test_a_definition_the_caller_says_cannot_run_is_left_out_with_its_reason(dataset: Dataset) -> None:
    asked: list[tuple[str, str]] = []

    def unavailable(defn: Any, target: str) -> str | None:
        asked.append((defn.name, target))
        return "no kernel for it here" if defn.name == "vec_mul" else None

    sel = select(_cfg(), dataset)
    plan = build_plan(sel, "CPU", unavailable=unavailable)
    assert {t.definition.name for t in plan.tasks} == {"vec_add"}
    assert Exclusion("definition", "vec_mul", "cannot run on CPU: no kernel for it here") in plan.excluded
    assert sorted(asked) == [("vec_add", "CPU"), ("vec_mul", "CPU")]  # once per definition
    # The plan without the check is the plan as before; expand and plan_config take it too.
    assert {t.definition.name for t in build_plan(sel, "CPU").tasks} == {"vec_add", "vec_mul"}
    assert expand(_cfg(), dataset, unavailable=unavailable).excluded == plan.excluded
    assert plan_config(GOOD_CFG, unavailable=lambda d, t: "gone").tasks == []


def test_left_out_reasons_say_what_is_missing(dataset: Dataset) -> None:
    import dataclasses

    from sweep.plan import group_excluded

    no_mul = {k: v for k, v in dataset.solutions.items() if v.definition != "vec_mul"}
    plan = expand(_cfg(), dataclasses.replace(dataset, solutions=no_mul))
    # A definition without any solution is not "no selected solution runs on CPU".
    assert Exclusion("definition", "vec_mul", "no solution in the dataset") in plan.excluded
    plan = expand(_cfg(hardware="H100"), dataset)
    groups = {(kind, why): len(xs) for kind, why, xs in group_excluded(plan.excluded)}
    assert groups[("solution", "its definition is not in the dataset")] == 1
