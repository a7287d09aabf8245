"""A distributed definition (one call by several ranks) given to a one-process path: every
entry (``sweep eval``, the engine's evaluate, evaluate_pair, build, profile mode) refuses it up
front with one ``DistributedTaskError`` naming the definition, its world size and the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from sweep import engine
from sweep.cli import app
from sweep.errors import DistributedTaskError, EngineError
from sweep.schema.distributed import MAX_WORLD_SIZE, outside_gang
from sweep.schema.task import Task
from tests.data.distributed.allreduce import definition, solution, workload

from ..conftest import quick_settings

_REPO = Path(__file__).resolve().parents[2]


def _says_what_to_do(text: str, name: str, world: str) -> None:
    assert f"definition '{name}'" in text and f"world size {world}" in text
    assert "sweep launch" in text and "run_gang" in text


def test_sweep_eval_refuses_a_shipped_collective_before_anything_runs() -> None:
    cwd = os.getcwd()
    os.chdir(_REPO)
    try:
        result = CliRunner().invoke(
            app,
            [
                "eval",
                "all_reduce_sum_f32",
                "all_reduce_sum_f32_torch",
                "--root",
                str(_REPO),
                "--device",
                "cpu",
            ],
        )
    finally:
        os.chdir(cwd)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("error: ") and "Traceback" not in result.output
    _says_what_to_do(" ".join(result.output.split()), "all_reduce_sum_f32", "2 and 4 (axis W)")
    assert "sweep eval evaluates in one process" in " ".join(result.output.split())


def _task(world: int | None = 2) -> Task:
    return Task.make(definition(world), solution("good"), workload(64, 2), quick_settings(), "CPU")


@pytest.mark.parametrize(
    ("call", "entry"),
    [
        (lambda t: engine.evaluate(t, device="cpu"), "sweep.engine.evaluate"),
        (lambda t: engine.build(t, device="cpu"), "sweep.engine.build"),
        (lambda t: engine.profile_run(t, "cpu"), "profile mode"),
        (
            lambda t: engine.evaluate_pair(t.definition, t.solution, [t.workload], device="cpu"),
            "sweep.engine.evaluate_pair",
        ),
    ],
)
def test_the_library_entries_refuse_with_the_same_message(call, entry: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DistributedTaskError) as got:
        call(_task(None))
    assert isinstance(got.value, EngineError)  # callers catching the engine's errors catch it
    _says_what_to_do(str(got.value), "all_reduce_sum", "2 (axis W)")
    assert f"but {entry} evaluates in one process" in str(got.value)


def test_a_fixed_world_size_is_named_and_profile_main_prints_it(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from sweep.engine.profile_main import main

    with pytest.raises(DistributedTaskError) as got:
        engine.evaluate(_task(2), device="cpu")
    _says_what_to_do(str(got.value), "all_reduce_sum", "2,")
    task_file = tmp_path / "task.json"
    task_file.write_text(_task(2).model_dump_json())
    assert main([str(task_file), "1", "cpu"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: definition 'all_reduce_sum'") and "profile mode" in err


@given(
    st.integers(1, MAX_WORLD_SIZE),
    st.lists(st.integers(1, MAX_WORLD_SIZE), max_size=5),
    st.text(max_size=300),
)
def test_the_message_names_every_world_size_and_a_clipped_name(
    fixed: int, sizes: list[int], name: str
) -> None:
    from sweep.schema.distributed import Distributed

    text = str(outside_gang(name, Distributed(world_size=fixed), [], "x"))
    assert f"world size {fixed}," in text and "sweep launch" in text and len(text) < 800
    text = str(outside_gang(name, Distributed(world_size_axis="W"), [{"W": n} for n in sizes], "x"))
    want = " and ".join(map(str, sorted(set(sizes)))) if sizes else "unset"
    assert f"world size {want} (axis W)" in text
