"""Hostile dataset folders: every bad file is an error naming the file, line and field (what
``sweep validate`` prints), never a traceback; plans check the config against the dataset."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweep.config import SweepConfig
from sweep.errors import MAX_LINE, DatasetError, PlanError
from sweep.plan import expand, load_dataset, validate_roots
from sweep.plan.dataset import load_runnable

from ..conftest import QUICK_S, fuzz_settings

pytestmark = pytest.mark.hostile

GOOD = Path(__file__).resolve().parents[1] / "data" / "dataset" / "good"
WL = {
    "definition": "vec_add",
    "solution": None,
    "evaluation": None,
    "workload": {
        "uuid": "wl-x",
        "axes": {"n": 2},
        "inputs": {
            "x": {"type": "random"},
            "y": {"type": "random"},
            "alpha": {"type": "scalar", "value": 0.5},
        },
    },
}


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A copy of the good fixture root, to spoil."""
    dest = tmp_path / "root"
    shutil.copytree(GOOD, dest)
    return dest


def _workload(**changes: Any) -> dict[str, Any]:
    data = json.loads(json.dumps(WL))
    for dotted, value in changes.items():
        target = data
        *parents, last = dotted.split("__")
        for p in parents:
            target = target[p]
        target[last] = value
    return data


def _add_line(root: Path, line: str) -> Path:
    path = root / "workloads" / "ew" / "vec_add.jsonl"
    with path.open("a", encoding="utf-8") as f:
        f.write(line + "\n")
    return path


def _errors(root: Path) -> list[str]:
    t0 = time.monotonic()
    _ds, errors = validate_roots([root])
    assert time.monotonic() - t0 < QUICK_S
    assert all(len(e) <= MAX_LINE for e in errors)
    return errors


def _only_error(root: Path) -> str:
    errors = _errors(root)
    assert len(errors) == 1, errors
    return errors[0]


def test_deep_json_workload_line(root: Path) -> None:
    path = _add_line(root, "[" * 100_000 + "]" * 100_000)
    assert _only_error(root) == f"{path}:4: not accepted as JSON: nested more than 200 levels deep"


def test_deep_json_inside_a_record(root: Path) -> None:
    line = json.dumps(WL)[:-1] + ', "note": ' + "[" * 5_000 + "]" * 5_000 + "}"
    path = _add_line(root, line)
    assert _only_error(root) == f"{path}:4: not accepted as JSON: nested more than 200 levels deep"


def test_deep_json_definition(root: Path) -> None:
    path = root / "definitions" / "ew" / "deep.json"
    path.write_text("{" + '"a": {' * 100_000 + "}" * 100_001)
    assert _only_error(root) == f"{path}: not accepted as JSON: nested more than 200 levels deep"


def test_deep_json_trace(root: Path) -> None:
    path = root / "traces" / "ew" / "t.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("[" * 100_000 + "\n")
    assert _only_error(root) == f"{path}:1: not accepted as JSON: nested more than 200 levels deep"


def test_a_huge_integer_in_json(root: Path) -> None:
    path = _add_line(
        root, json.dumps(_workload(workload__axes={"n": 1})).replace('"n": 1', '"n": ' + "9" * 5000)
    )
    assert _only_error(root) == f"{path}:4: not accepted as JSON: holds an integer of more than 4,300 digits"


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"workload__axes": {"n": True}}, "workload.axes.n: Input should be a valid integer (got True)"),
        (
            {"workload__axes": {"n": 2**70}},
            "workload.axes.n: Input should be less than or equal to 9223372036854775807",
        ),
        ({"workload__weight": "Infinity"}, "workload.weight: must be a number >= 0, got 'Infinity'"),
    ],
)
def test_bad_workload_values(root: Path, changes: dict[str, Any], message: str) -> None:
    path = _add_line(root, json.dumps(_workload(**changes)))
    assert _only_error(root).startswith(f"{path}:4: {message}")


def test_weight_infinity_token(root: Path) -> None:
    path = _add_line(root, json.dumps(WL)[:-2] + ', "weight": Infinity}}')
    assert _only_error(root) == f"{path}:4: workload.weight: must be a finite number >= 0, got inf"


@pytest.mark.parametrize("bad", ["../../etc/passwd", "/etc/passwd"])
def test_safetensors_paths_are_refused_by_validate(root: Path, bad: str) -> None:
    spec = {"type": "safetensors", "path": bad, "tensor_key": "x"}
    path = _add_line(root, json.dumps(_workload(workload__inputs__x=spec)))
    error = _only_error(root)
    assert error.startswith(f"{path}:4: workload.inputs.x.path: must ")
    assert "it names a file inside the dataset root" in error


def test_a_safetensors_link_out_of_the_root(root: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "blobs").symlink_to(outside)
    spec = {"type": "safetensors", "path": "blobs/x.safetensors", "tensor_key": "x"}
    path = _add_line(root, json.dumps(_workload(workload__inputs__x=spec)))
    assert _only_error(root).startswith(
        f"{path}:4: workload.inputs.x.path: 'blobs/x.safetensors' leads outside the dataset root"
    )


def test_constraint_naming_an_undefined_name(root: Path) -> None:
    path = root / "definitions" / "ew" / "vec_add.json"
    data = json.loads(path.read_text())
    data["constraints"] = ["n % 2 == 0", "nn > 0"]
    path.write_text(json.dumps(data))
    errors = _errors(root)
    assert errors[0] == (
        f"{path}: constraints[1]: unknown name 'nn' in 'nn > 0' (did you mean 'n'?); "
        "a constraint may read axes (n, d) and inputs (x, y, alpha)"
    )


def test_nul_in_a_source_path_and_yes_for_a_bool(root: Path) -> None:
    path = root / "solutions" / "tester" / "ew" / "vec_add" / "vec_add_py.json"
    data = json.loads(path.read_text())
    data["sources"][0]["path"] = "ma\0in.py"
    data["spec"]["destination_passing_style"] = "yes"
    path.write_text(json.dumps(data))
    errors = _errors(root)
    assert f"{path}: spec.destination_passing_style: Input should be a valid boolean (got 'yes')" in errors
    assert any(e.startswith(f"{path}: sources[0].path: must not contain control characters") for e in errors)


def test_a_fifo_and_a_device_link_are_not_read(root: Path) -> None:
    os.mkfifo(root / "definitions" / "ew" / "pipe.json")
    (root / "workloads" / "ew" / "zero.jsonl").symlink_to("/dev/zero")
    errors = _errors(root)
    assert errors == [
        f"{root}/definitions/ew/pipe.json: cannot read: is not a regular file (a device, FIFO or socket)",
        f"{root}/workloads/ew/zero.jsonl: cannot read: is not a regular file (a device, FIFO or socket)",
    ]


def test_a_10_mb_token_is_not_echoed(root: Path) -> None:
    _add_line(root, json.dumps(_workload(definition="d" * 10 * 2**20)))
    error = _only_error(root)
    assert "unknown definition 'ddd" in error
    assert len(error) < 400


@pytest.mark.parametrize("bad", ["a\0b", "~no_such_user_here/x"])
def test_unusable_roots(bad: str) -> None:
    with pytest.raises(DatasetError) as info:
        load_dataset([bad])
    assert str(info.value).startswith(f"dataset root {bad!r} is not a usable path")


def test_tolerance_keys_must_name_something(root: Path) -> None:
    ds = load_dataset([root])
    cfg = SweepConfig.model_validate(
        {
            "name": "x",
            "dataset": [str(root)],
            "evaluation": {"op_type_tolerance": {"eww": {"atol": 1}}, "definition_tolerance": {"vec_ad": {}}},
        }
    )
    with pytest.raises(PlanError) as info:
        expand(cfg, ds)
    assert str(info.value) == (
        "the config selects things the dataset does not have:\n"
        "evaluation.op_type_tolerance: 'eww' is no op_type of the dataset (did you mean 'ew'?)\n"
        "evaluation.definition_tolerance: 'vec_ad' is no definition of the dataset (did you mean 'vec_add'?)"
    )
    ok = cfg.model_copy(
        update={
            "evaluation": cfg.evaluation.model_copy(
                update={"op_type_tolerance": {}, "definition_tolerance": {}}
            )
        }
    )
    assert expand(ok, ds).tasks


def test_unknown_gpu_type_is_a_plan_warning(root: Path) -> None:
    ds = load_dataset([root])
    plan = expand(SweepConfig(name="x", dataset=[str(root)], hardware="FOO9000"), ds)
    [warning] = plan.warnings
    assert warning.startswith("hardware 'FOO9000' is not a GPU type kernel-sweep knows (known: A10, A100, ")
    assert warning.endswith("more); planned for 'FOO9000', without datasheet peaks")
    assert expand(SweepConfig(name="x", dataset=[str(root)], hardware="H100"), ds).warnings == []


# ---- properties ----

_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=15,
)


def _spoil(data: st.DataObject) -> str:
    base = json.loads(json.dumps(WL))
    place = data.draw(
        st.sampled_from(
            [
                ("workload", "axes", "n"),
                ("workload", "uuid"),
                ("definition",),
                ("workload", "weight"),
                ("workload", "inputs", "alpha", "value"),
                ("workload", "inputs", "x"),
                ("workload", "inputs"),
                ("workload",),
                ("evaluation",),
                ("solution",),
                ("provenance",),
            ]
        )
    )
    target = base
    for part in place[:-1]:
        target = target[part]
    target[place[-1]] = data.draw(_JSON)
    return json.dumps(base)


@fuzz_settings(60, slow_ok=True)
@given(data=st.data())
def test_any_workload_line_is_loaded_or_reported(root: Path, data: st.DataObject) -> None:
    how = data.draw(st.sampled_from(["spoiled", "json", "text"]))
    if how == "spoiled":
        line = _spoil(data)
    elif how == "json":
        line = json.dumps(data.draw(_JSON))
    else:
        line = data.draw(st.text(max_size=60)).replace("\n", " ")
    path = root / "workloads" / "ew" / "vec_add.jsonl"
    good = path.read_text().split("\n")[:3]
    path.write_text("\n".join([*good, line]) + "\n", encoding="utf-8", errors="surrogatepass")
    ds, errors = validate_roots([root])
    for e in errors:
        assert e.startswith(str(path)), e
        assert len(e) <= MAX_LINE
    # A line either became a workload or was reported; the good lines always load.
    assert ds.num_workloads() + len(errors) >= 4 if line.strip() else ds.num_workloads() == 3


_SOLUTION = json.loads((GOOD / "solutions" / "tester" / "ew" / "vec_add" / "vec_add_py.json").read_text())


def _spoil_solution(data: st.DataObject) -> str:
    base = json.loads(json.dumps(_SOLUTION))
    base["name"] = "spoiled"
    place = data.draw(
        st.sampled_from(
            [
                ("name",),
                ("definition",),
                ("author",),
                ("spec",),
                ("spec", "language"),
                ("spec", "entry_point"),
                ("spec", "target_hardware"),
                ("spec", "destination_passing_style"),
                ("sources",),
                ("sources", 0, "content"),
                ("sources", 0, "path"),
                ("params",),
            ]
        )
    )
    target = base
    for part in place[:-1]:
        target = target[part]
    target[place[-1]] = data.draw(_JSON | st.text(max_size=30))
    return json.dumps(base)


@fuzz_settings(80, slow_ok=True)
@given(data=st.data())
def test_any_solution_file_is_a_solution_or_broken_and_the_rest_runs(root: Path, data: st.DataObject) -> None:
    """Property: whatever a solution file holds, validate reports it or loads it, a launch's
    load keeps it (as a solution or a broken one) and warns, and the good solution still plans;
    a broken one that names the definition gets COMPILE_ERROR tasks naming its file."""
    how = data.draw(st.sampled_from(["spoiled", "json", "text", "python"]))
    if how == "spoiled":
        text = _spoil_solution(data)
    elif how == "json":
        text = json.dumps(data.draw(_JSON))
    elif how == "python":  # a record whose entry file is anything at all
        rec = {**json.loads(json.dumps(_SOLUTION)), "name": "spoiled"}
        rec["sources"][0]["content"] = data.draw(st.text(max_size=60))
        text = json.dumps(rec)
    else:
        text = data.draw(st.text(max_size=60))
    path = root / "solutions" / "tester" / "ew" / "vec_add" / "spoiled.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _ds, errors = validate_roots([root])
    assert all(e.startswith(str(path)) and len(e) <= MAX_LINE for e in errors), errors
    runnable = load_runnable([root])
    assert runnable.errors[: len(errors)] == errors and len(runnable.errors) <= len(errors) + 1
    assert "vec_add_py" in runnable.solutions and "vec_add_py" not in runnable.broken
    # The file is a solution, a broken one, or (its name taken) said to get no task.
    kept = [
        n for n in [*runnable.solutions, *runnable.broken] if runnable.origin("solution", n).path == str(path)
    ]
    assert kept or any(
        e.startswith(str(path)) and ("duplicate" in e or "gets no task" in e) for e in runnable.errors
    )
    plan = expand(SweepConfig(name="x", dataset=[str(root)], hardware="cpu"), runnable)
    assert plan.warnings == runnable.errors
    assert [t.workload.uuid for t in plan.tasks if t.solution.name == "vec_add_py"] == [
        "wl-0002",
        "wl-0004",
        "wl-0016",
    ]
    for t in plan.tasks:
        if t.broken is not None:
            assert t.broken.startswith(str(path)), t.broken
            assert t.solution.name in runnable.broken
    if not errors:
        assert not runnable.broken and not any(t.broken for t in plan.tasks)


def test_a_broken_file_with_a_name_that_is_not_utf8_gives_writable_tasks(root: Path) -> None:
    """A file name with a byte that is not UTF-8, or a JSON name with a lone surrogate: the
    broken solution's tasks and their trace logs are still valid UTF-8 (traces are JSON)."""
    folder = bytes(root / "solutions" / "tester" / "ew" / "vec_add")
    with open(os.path.join(folder, b"bad\xff.json"), "w") as f:
        f.write('{"definition": "vec_add", "spec": 3}')
    (root / "solutions" / "tester" / "ew" / "vec_add" / "s.json").write_text(
        '{"name": "odd\\ud800", "definition": "vec_add"}'
    )
    from sweep.plan.dataset import load_runnable
    from sweep.schema import Environment, Evaluation, Status, Trace

    plan = expand(SweepConfig(name="x", dataset=[str(root)], hardware="cpu"), load_runnable([root]))
    broken = [t for t in plan.tasks if t.broken]
    assert len(broken) == 6 and {t.solution.name for t in broken} == {"bad\\udcff", "odd\\ud800"}
    for t in broken:
        assert t.broken is not None
        ev = Evaluation(
            status=Status.COMPILE_ERROR,
            environment=Environment(hardware="CPU"),
            timestamp="2026-01-01T00:00:00Z",
            log=t.broken,
        )
        Trace(definition="vec_add", workload=t.workload, solution=t.solution.name, evaluation=ev).to_json()
        t.model_dump_json()
