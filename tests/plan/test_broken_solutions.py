"""Broken solutions are traces, not refused sweeps: ``sweep validate`` reports them as errors,
a plan keeps them, one COMPILE_ERROR task per workload carrying why (``Task.broken``), and
the rest of the dataset runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from sweep.config import SweepConfig
from sweep.errors import DatasetError, PlanError
from sweep.plan import build_plan, expand, select, select_pair
from sweep.plan.broken import NOT_RUN
from sweep.plan.dataset import load_dataset, load_runnable, validate_roots

GOOD = Path(__file__).resolve().parents[1] / "data" / "dataset" / "good"
SOLS = Path("solutions") / "tester" / "ew" / "vec_add"


def _record(name: str, source: str = "def run(x, y, alpha):\n    return x + alpha * y\n") -> dict[str, Any]:
    return {
        "name": name,
        "definition": "vec_add",
        "author": "tester",
        "spec": {
            "language": "python",
            "target_hardware": ["cpu", "gpu"],
            "entry_point": "main.py::run",
            "destination_passing_style": False,
        },
        "sources": [{"path": "main.py", "content": source}],
    }


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The good fixture (vec_add, 3 workloads, vec_add_py for cpu and gpu, vec_add_gpu_only)."""
    dest = tmp_path / "root"
    shutil.copytree(GOOD, dest)
    return dest


def _write(root: Path, stem: str, content: str | dict[str, Any]) -> Path:
    path = root / SOLS / f"{stem}.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content))
    return path


def _cfg(root: Path, **fields: Any) -> SweepConfig:
    return SweepConfig.model_validate({"name": "t", "dataset": [str(root)], "hardware": "cpu", **fields})


def _spoil(root: Path) -> dict[str, Path]:
    """One broken solution of each kind beside the good one."""
    no_schema = _record("no_entry_point")
    del no_schema["spec"]["entry_point"]
    return {
        "syntax": _write(root, "syntax", _record("syntax", "def run(x, y, alpha):\n    return x +\n")),
        "no_entry": _write(root, "no_entry", _record("no_entry", "def runn(x, y, alpha):\n    return x\n")),
        "no_entry_point": _write(root, "schema", no_schema),
        "bad_json": _write(root, "bad_json", '{"name": "bad_json", "definition": "vec_add",, }'),
    }


def test_validate_reports_every_broken_solution_as_an_error(root: Path) -> None:
    files = _spoil(root)
    ds, errors = validate_roots([root])
    assert errors == [
        f"{files['bad_json']}:1: not valid JSON: Expecting property name enclosed in double quotes (column 46)",
        f"{files['no_entry_point']}: spec.entry_point: required field is missing",
        (
            f"{files['no_entry']}: spec.entry_point: 'main.py::run': main.py defines no 'run' "
            "(did you mean 'runn'?) (top-level functions: runn)"
        ),
        f"{files['syntax']}: sources: main.py: not valid Python: invalid syntax (line 2)",
    ]
    # Kept, not dropped: a record with errors stays (and is broken), a file that is no
    # record is broken with what its JSON says (nothing: it is not JSON) and its file's stem.
    assert ds.valid_solutions() == 2
    assert sorted(ds.broken) == ["bad_json", "no_entry", "no_entry_point", "syntax"]
    assert ds.broken["syntax"].record == ds.solutions["syntax"]
    assert ds.broken["no_entry_point"].record is None
    assert ds.broken["no_entry_point"].definition == "vec_add"
    assert ds.broken["bad_json"].definition is None and ds.broken["bad_json"].solution is None
    with pytest.raises(DatasetError, match="dataset has 4 errors"):
        load_dataset([root])


def test_a_plan_runs_the_good_and_makes_compile_error_tasks_of_the_broken(root: Path) -> None:
    files = _spoil(root)
    ds = load_runnable([root])
    assert ds.errors == validate_roots([root])[1]
    plan = expand(_cfg(root), ds)
    assert plan.warnings == ds.errors  # each problem said once
    by_solution: dict[str, list[str | None]] = {}
    for t in plan.tasks:
        by_solution.setdefault(t.solution.name, []).append(t.broken)
    assert by_solution["vec_add_py"] == [None, None, None]
    for name in ("no_entry", "no_entry_point", "syntax"):
        reasons = by_solution[name]
        assert len(reasons) == 3, name  # one task per workload
        reason = reasons[0]
        assert reason is not None
        assert reason.startswith(str(files[name]) + ": ")
        assert reason.endswith(f"solution {name!r}: {NOT_RUN}")
    assert "bad_json" not in by_solution
    left = [(x.kind, x.name) for x in plan.excluded if x.name == "bad_json"]
    assert left == [("solution", "bad_json")]


def test_broken_task_ids_never_meet_valid_ones_and_follow_the_file(root: Path) -> None:
    path = _write(root, "later", _record("later", "def run(x, y, alpha):\n    return x +\n"))
    broken = {t.workload.uuid: t.task_id for t in expand(_cfg(root), load_runnable([root])).tasks if t.broken}
    again = {t.workload.uuid: t.task_id for t in expand(_cfg(root), load_runnable([root])).tasks if t.broken}
    assert broken == again  # stable: a resumed launch skips what it stored
    path.write_text(json.dumps(_record("later")))  # fixed
    fixed = {
        t.workload.uuid: t
        for t in expand(_cfg(root), load_runnable([root])).tasks
        if t.solution.name == "later"
    }
    assert all(t.broken is None for t in fixed.values())
    assert not set(broken.values()) & {t.task_id for t in fixed.values()}
    # A file that is no record: its stand-in's hash follows the text, so an edit is new tasks.
    path.write_text('{"name": "later", "definition": "vec_add", "spec": 1}')
    first = {t.task_id for t in expand(_cfg(root), load_runnable([root])).tasks if t.broken}
    path.write_text('{"name": "later", "definition": "vec_add", "spec": 2}')
    second = {t.task_id for t in expand(_cfg(root), load_runnable([root])).tasks if t.broken}
    assert len(first) == len(second) == 3 and not first & second


def test_a_broken_record_with_a_parameter_space_runs_one_task_per_workload(root: Path) -> None:
    rec = _record("spaced", "def run(x, y, alpha, BLOCK=1):\n    return x\n")
    rec["params"] = {"BLOCK": [1, 2, 4]}
    rec["params_constraints"] = ["BLOCK <= nope"]  # names nothing: the static checks' error
    _write(root, "spaced", rec)
    ds = load_runnable([root])
    plan = expand(_cfg(root), ds)  # no PlanError: the problem is the solution's, a warning
    tasks = [t for t in plan.tasks if t.solution.name == "spaced"]
    assert len(tasks) == 3 and all(t.params is None and t.broken for t in tasks)
    assert any("nope" in w for w in plan.warnings)


def test_a_file_that_is_no_record_keeps_what_its_json_says(root: Path) -> None:
    _write(root, "stem_name", {"name": 7, "definition": "vec_add", "author": "ann", "sources": []})
    _write(
        root,
        "gpu_kernel",
        {
            "name": "gpu_kernel",
            "definition": "vec_add",
            "spec": {"language": "triton", "target_hardware": ["B200"]},
        },
    )
    ds = load_runnable([root])
    stem = ds.broken["stem_name"]  # "name" is no string: the file's stem
    assert stem.stand_in is not None and stem.stand_in.author == "ann"
    gpu = ds.broken["gpu_kernel"].stand_in
    assert gpu is not None and gpu.spec.language.value == "triton" and gpu.spec.target_hardware == ["B200"]
    plan = expand(_cfg(root), ds)
    assert {t.solution.name for t in plan.tasks if t.broken} == {"stem_name"}
    assert [x.reason for x in plan.excluded if x.name == "gpu_kernel"] == [
        "target_hardware [B200] does not include CPU"
    ]
    # Filters apply as to any solution: an author the file does not give is not selected.
    authors = expand(_cfg(root, solutions={"authors": ["ann"]}), ds)
    assert {t.solution.name for t in authors.tasks} == {"stem_name"}
    named = expand(_cfg(root, solutions={"names": ["stem_name"]}), ds)
    assert {t.solution.name for t in named.tasks} == {"stem_name"}


def test_a_broken_file_never_takes_a_valid_records_name(root: Path) -> None:
    # "aaa" sorts before vec_add_py's file: a broken file claiming its name must not evict it.
    _write(root, "aaa", {"name": "vec_add_py", "definition": "vec_add"})
    ds = load_runnable([root])
    assert "vec_add_py" in ds.solutions and "vec_add_py" not in ds.broken
    assert ds.errors[-1].endswith(
        f"is also the name of the solution in {ds.origin('solution', 'vec_add_py')}: this file gets no task"
    )
    _, errors = validate_roots([root])
    assert len(errors) == len(ds.errors) - 1  # validate reports the file's errors as ever


def test_a_broken_definition_leaves_out_its_workloads_and_solutions_by_name(
    root: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    (other / "definitions").mkdir(parents=True)
    (other / "definitions" / "mul.json").write_text('{"name": "vec_mul", "op_type": 3}')
    (other / "workloads").mkdir()
    line = {
        "definition": "vec_mul",
        "solution": None,
        "evaluation": None,
        "workload": {"uuid": "m-{}", "axes": {}, "inputs": {}},
    }
    text = "".join(
        json.dumps({**line, "workload": {**line["workload"], "uuid": f"m-{i}"}}) + "\n" for i in range(5)
    )
    (other / "workloads" / "mul.jsonl").write_text(text)
    (other / "solutions").mkdir()
    mul = {**_record("mul_py"), "definition": "vec_mul"}
    (other / "solutions" / "mul_py.json").write_text(json.dumps(mul))
    _, strict = validate_roots([root, other])
    wl = other / "workloads" / "mul.jsonl"
    # validate: one error a line, as ever
    assert [e for e in strict if e.startswith(str(wl))] == [
        f"{wl}:{i}: definition: definition 'vec_mul' did not load (its file has errors)" for i in range(1, 6)
    ]
    ds = load_runnable([root, other])
    assert [e for e in ds.errors if e.startswith(str(wl))] == [
        f"{wl}: lines 1-5: definition: definition 'vec_mul' did not load (its file has errors); 5 workloads left out"
    ]
    [sol] = [e for e in ds.errors if "mul_py" in e]
    assert "solution 'mul_py' is for 'vec_mul', which did not load" in sol
    plan = expand(_cfg(root), ds)  # vec_add still runs
    assert {t.definition.name for t in plan.tasks} == {"vec_add"} and len(plan.tasks) == 3
    # Naming the broken definition with a good one is no config error; naming it alone is
    # nothing to run.
    both = expand(_cfg(root, definitions={"names": ["vec_add", "vec_mul"]}), ds)
    assert len(both.tasks) == 3
    with pytest.raises(PlanError, match=r"^nothing to run: the config selects no definition that has both"):
        select(_cfg(root, definitions={"names": ["vec_mul"]}), ds)


def test_nothing_runnable_stops_with_why(tmp_path: Path) -> None:
    root = tmp_path / "r"
    (root / "definitions").mkdir(parents=True)
    (root / "definitions" / "d.json").write_text("{")
    with pytest.raises(
        DatasetError, match=r"^nothing to run: no definition loaded; the dataset has 1 error:\n"
    ):
        load_runnable([root])


def test_eval_pair_of_a_good_and_of_a_broken_solution(root: Path) -> None:
    files = _spoil(root)
    good = select_pair([root], "vec_add", "vec_add_py")
    assert good.broken is None and len(good.warnings) == 4
    bad = select_pair([root], "vec_add", "syntax")
    assert bad.broken is not None and bad.broken.startswith(f"{files['syntax']}: sources: main.py")
    assert len(bad.warnings) == 3  # its own problem is in its traces
    schema = select_pair([root], "vec_add", "no_entry_point")
    assert schema.solution.name == "no_entry_point" and schema.broken is not None


def test_build_plan_of_a_selection_with_broken_solutions_on_each_target(root: Path) -> None:
    _spoil(root)
    ds = load_runnable([root])
    selection = select(_cfg(root, hardware=["H100", "H200"]), ds)
    for target in ("H100", "H200"):
        plan = build_plan(selection, target)
        assert {t.solution.name for t in plan.tasks if t.broken} == {"no_entry", "no_entry_point", "syntax"}
        assert all(t.hardware == target for t in plan.tasks)
