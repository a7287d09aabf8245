"""The compile pool beside a GPU worker (``_compile_pool``): tasks compiled ahead in processes
of their own, a variant that cannot compile ends there as COMPILE_ERROR, and a launch with a
pool gives exactly the traces a launch without one gives."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sweep.launch.driver import LaunchOptions, launch
from sweep.sandbox import SandboxSpec
from sweep.sandbox.compile_pool import CompilePool, compile_workers_for
from sweep.sandbox.packing import Envelope
from sweep.schema import EvalSettings, Provenance, Solution, Timeouts
from sweep.schema.task import Task

from ..conftest import wait_until
from .conftest import read_traces, toy_definition, write_config

_BROKEN = "raise RuntimeError('BLOCK_M=512 does not fit this GPU')\n"
_GOOD = "def run(x, y):\n    y.copy_(x + 1)\n"


def _task(name: str, source: str) -> Task:
    from sweep.schema import Workload

    sol = Solution.model_validate(
        {
            "name": name,
            "definition": "add_one",
            "author": "tests",
            "spec": {"language": "triton", "target_hardware": ["*"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": source}],
        }
    )
    wl = Workload.model_validate({"uuid": "w0", "axes": {"n": 16}, "inputs": {"x": {"type": "random"}}})
    settings = EvalSettings(timeouts=Timeouts(compile_s=60, run_s=60))
    return Task.make(toy_definition(), sol, wl, settings, "CPU", sweep="tests")


def test_the_pool_ends_a_variant_that_cannot_compile_and_passes_the_others_on() -> None:
    spec = SandboxSpec(device_kind="cpu", preload=("torch", "sweep.engine._evaluate"))
    broken, good = Envelope.of(_task("broken", _BROKEN)), Envelope.of(_task("good", _GOOD))
    assert broken.compiled and good.compiled  # Triton: worth compiling ahead
    pool = CompilePool(spec, 2, Provenance(run_id="r"))
    try:
        pool.submit([broken, good])
        pool.submit([broken])  # already there: not compiled twice
        assert pool.pending(broken) and pool.pending(good)
        _until(lambda: pool.stats.compiled + pool.stats.compile_errors == 2)
        done = pool.outcome(broken)
        assert done is not None
        evaluation = json.loads(done.trace_json)["evaluation"]
        assert evaluation["status"] == "COMPILE_ERROR"
        assert "BLOCK_M=512 does not fit this GPU" in evaluation["log"]
        assert "compiling ahead of the GPU" in evaluation["log"]
        assert pool.outcome(good) is None  # compiled: the GPU evaluates it
        assert pool.outcome(good) is None and not pool.pending(good)  # asked once, then forgotten
        assert (pool.stats.submitted, pool.stats.compiled, pool.stats.compile_errors) == (2, 1, 1)
    finally:
        pool.close()


def _until(condition: Callable[[], bool]) -> None:
    assert wait_until(condition, 300, every_s=0.05), "the pool did not get there in time"


def test_a_compile_process_writes_where_the_tasks_evaluation_will_look(tmp_path: Path) -> None:
    # The pool's backend makes ready the task's own folders as the engine's does: its
    # solution's compilers' caches, named in its environment, which its sandbox lets it write
    # (a compile ahead that wrote Triton's shared cache would be refused, and for nothing).
    from sweep.sandbox import Sandbox
    from sweep.sandbox.compile_pool import COMPILE_BACKEND

    source = (
        "import os\n"
        "with open(os.path.join(os.environ['TRITON_CACHE_DIR'], 'compiled-here'), 'w') as f:\n"
        "    f.write(str(os.getpid()))\n" + _GOOD
    )
    task = _task("writes_its_cache", source)
    spec = SandboxSpec(backend=COMPILE_BACKEND, device_kind="cpu", env=(("SWEEP_CACHE_DIR", str(tmp_path)),))
    with Sandbox(spec) as sb:
        trace = sb.run(task)
    assert trace.evaluation is None, trace.evaluation  # compiled, nothing definite against it
    mark = tmp_path / "compilers" / task.solution.content_hash / "triton" / "compiled-here"
    assert mark.is_file(), sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))


@pytest.fixture
def pool() -> Iterator[CompilePool]:
    """A pool of one compile process, preloading torch (so that it starts slowly), closed after."""
    pool = CompilePool(SandboxSpec(device_kind="cpu", preload=("torch",)), 1, Provenance())
    try:
        yield pool
    finally:
        pool.close()


def test_a_task_asked_for_while_the_pool_starts_waits_for_its_first_process(pool: CompilePool) -> None:
    broken = Envelope.of(_task("broken", _BROKEN))
    envs = [Envelope.of(_task(f"good{i}", f"# variant {i}\n{_GOOD}")) for i in range(3)]
    pool.submit([*envs, broken])
    assert pool._up == 0  # its one process is still starting (importing torch)
    # Not taken back: the pool's to end, ahead of the tasks queued before it (but for the
    # one its process may have taken as it came up).
    done = pool.outcome(broken)
    assert done is not None and json.loads(done.trace_json)["evaluation"]["status"] == "COMPILE_ERROR"
    assert pool.stats.taken_back == 0 and pool.stats.compile_errors == 1 and pool.stats.compiled <= 1


def test_a_task_still_queued_is_taken_back_when_every_process_is_busy(pool: CompilePool) -> None:
    pool.wait_started(300)
    envs = [Envelope.of(_task(f"good{i}", f"# variant {i}\n{_GOOD}")) for i in range(4)]
    assert len({e.task_id for e in envs}) == 4
    pool.submit(envs)
    _until(lambda: pool._slots[envs[0].task_id].state != "queued")
    # Its one process is busy with the first: the GPU takes the last back.
    assert pool.outcome(envs[-1]) is None
    assert pool.stats.taken_back == 1
    _until(lambda: pool.stats.compiled == 3)  # the others are compiled; the last is skipped
    assert [pool.outcome(e) for e in envs[:-1]] == [None, None, None]


def test_a_queued_task_the_gpu_needs_goes_first_when_a_process_is_idle(pool: CompilePool) -> None:
    pool.wait_started(300)
    _until(lambda: pool._idle == 1)
    broken = Envelope.of(_task("broken", _BROKEN))
    pool.submit([broken])
    done = pool.outcome(broken)  # queued or running: either way the pool's result
    assert done is not None and pool.stats.taken_back == 0


def test_a_task_never_submitted_is_the_gpus() -> None:
    pool = CompilePool(SandboxSpec(device_kind="cpu"), 1, Provenance())
    try:
        assert pool.outcome(Envelope.of(_task("good", _GOOD))) is None
    finally:
        pool.close()


@pytest.mark.parametrize(
    ("requested", "kind", "cpus", "gpus", "expected"),
    [
        (-1, "cuda", 16, 1, 8),
        (-1, "cuda", 16, 2, 7),
        (-1, "cuda", 2, 2, 0),
        (-1, "cpu", 64, 0, 0),
        (3, "cpu", 2, 0, 3),
        (0, "cuda", 64, 1, 0),
    ],
)
def test_how_many_compile_processes(requested: int, kind: str, cpus: int, gpus: int, expected: int) -> None:
    assert compile_workers_for(requested, kind, cpus, gpus) == expected


def _triton_dataset(root: Path) -> Path:
    """``toy_add`` with Triton-language solutions: two that work, one whose every point fails to
    compile (its module raises), as a parameter space of three points each."""
    from .conftest import write_dataset

    write_dataset(root, {}, n_workloads=2)
    folder = root / "solutions" / "tests" / "toy" / "toy_add"
    sources = {"ok_a": _GOOD, "ok_b": _GOOD, "broken": _BROKEN + _GOOD}
    for name, code in sources.items():
        sol = {
            "name": name,
            "definition": "toy_add",
            "author": "tests",
            "spec": {"language": "triton", "target_hardware": ["*"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": f"# {name}\n" + code.replace("y):", "y, BLOCK=1):")}],
            "params": {"BLOCK": [1, 2, 4]},
        }
        (folder / f"{name}.json").write_text(json.dumps(sol))
    return root


def test_a_launch_with_a_compile_pool(two_nodes: dict[str, str], tmp_path: Path) -> None:
    data = _triton_dataset(tmp_path / "data")
    results = tmp_path / "results"
    cfg = write_config(
        tmp_path / "pool.yaml",
        [data],
        results,
        hardware="H200",
        extra="ray: {compile_workers: 1}\n",
    )
    result = launch(cfg, LaunchOptions(quiet=True))
    assert (result.planned, result.ran) == (18, 18)
    assert result.statuses == {"PASSED": 12, "COMPILE_ERROR": 6}
    traces = read_traces(results)
    assert Counter(t["provenance"]["task_id"] for t in traces).most_common(1)[0][1] == 1  # type: ignore[index]
    assert len(traces) == 18
    for t in traces:
        evaluation = t["evaluation"]
        assert isinstance(evaluation, dict)
        if t["solution"] == "broken":
            # ended by the pool, never run on the GPU's sandbox
            assert evaluation["status"] == "COMPILE_ERROR"
            assert "compiling ahead of the GPU" in evaluation["log"]
        else:
            assert evaluation["status"] == "PASSED"
