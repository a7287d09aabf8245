"""Suite-wide hooks and fixtures: GPU tests run only where CUDA is present (the lent device
machine); the real data files, and BackendBench trace files imported once (used by the
BackendBench tests and by the engine's tests of evaluating imported calls)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    import hypothesis

    from sweep.config import EvalSettings
    from sweep.launch.driver import LaunchResult

REPO = Path(__file__).resolve().parent.parent
#: Real third-party files (FlashInfer-Bench, BackendBench), copied into the repository with their
#: sources in its README, so a clone from anywhere passes its own tests.
SHARED_DATA = Path(__file__).resolve().parent / "data" / "real"


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # once, in the process that starts xdist's workers
        _compile_package()
    # Triton kernels run on the CPU only under Triton's interpreter, which must be chosen before
    # anything imports triton: set it for the whole session, whichever test imports triton first.
    if not _cuda_available():
        from sweep.engine import prepare_process

        prepare_process("cpu")
    # A Ray head started by a test on a loaded 2-core machine can take more than Ray's default
    # 30 s to start its dashboard's modules (a `ray start --head` then fails).
    os.environ.setdefault("RAY_DASHBOARD_SUBPROCESS_MODULE_WAIT_READY_TIMEOUT", "300")


def _compile_package() -> None:
    """Compile ``sweep`` to ``.pyc`` files once, before any test starts a process.

    The suite starts hundreds of Python processes that import ``sweep`` (zygotes, Ray workers,
    CLI and driver subprocesses). Where ``PYTHONDONTWRITEBYTECODE`` is set, as on the project's
    2-core VMs, none of them writes what it compiled, so each compiled the package from
    source again. Python checks each ``.pyc`` against its source, so an edited module is
    compiled afresh as before.
    """
    import compileall

    compileall.compile_dir(REPO / "sweep", quiet=1)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    gpu_items = [i for i in items if i.get_closest_marker("gpu")]
    if not gpu_items or _cuda_available():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU; run on the device machine with -m gpu")
    for item in gpu_items:
        item.add_marker(skip)


@pytest.fixture
def task_channel() -> Iterator[Path]:
    """A folder that a sandboxed task may write and the test read, under ``/dev/shm``. Once its
    task has arrived a sandbox writes only its own folder, ``/dev`` and the compilers' caches
    (``sweep.sandbox._confine_files.task_roots``): a test whose solution reports to it through
    files (its process ids, a barrier across GPUs) puts them here."""
    base = Path("/dev/shm")
    if not (base.is_dir() and os.access(base, os.W_OK)):
        pytest.skip("no writable /dev/shm for a sandboxed task to report through")
    folder = Path(tempfile.mkdtemp(prefix="sweep-test-", dir=base))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """``tests/data/real``: real FlashInfer-Bench and BackendBench files (sources in its README)."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real data folder missing: {SHARED_DATA} (tests read real files from it)")
    return SHARED_DATA


# ---- BackendBench trace files: the real ones and small local ones ----

BACKENDBENCH_DATA = Path(__file__).resolve().parent / "data" / "backendbench"


@pytest.fixture(scope="session")
def bb_files(shared_data: Path) -> list[Path]:
    """Every real BackendBench trace file in the shared data."""
    files = sorted((shared_data / "backendbench").glob("*.txt"))
    assert len(files) >= 2, f"expected the real trace files under {shared_data / 'backendbench'}"
    return files


@pytest.fixture(scope="session")
def edge_file(shared_data: Path) -> Path:
    return shared_data / "backendbench" / "edge_cases.trace.txt"


@pytest.fixture(scope="session")
def sample_file(shared_data: Path) -> Path:
    return shared_data / "backendbench" / "sample.trace.txt"


@pytest.fixture(scope="session")
def local_data() -> Path:
    """``tests/data/backendbench``: small hand-made traces and a kernel directory."""
    return BACKENDBENCH_DATA


@pytest.fixture(scope="session")
def imported(
    bb_files: list[Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, tuple[Path, object]]:
    """Each real trace file imported once (synthetic rows included): stem -> (root, report).

    Read-only for tests: copy a root before changing it.
    """
    from sweep.backendbench import import_backendbench

    out: dict[str, tuple[Path, object]] = {}
    for path in bb_files:
        root = tmp_path_factory.mktemp(f"bb-{path.stem.replace('.', '-')}")
        out[path.name] = (root, import_backendbench(path, root, include_synthetic=True))
    return out


# ---- A dataset with a parameterized solution (the plan's and the search's tests) ----

#: The small valid dataset the plan's tests copy and change.
GOOD_DATASET = Path(__file__).resolve().parent / "data" / "dataset" / "good"


def tuned_vec_add(
    params: dict[str, list[object]], constraints: list[str], defaults: dict[str, object] | None = None
) -> dict[str, object]:
    """A Python solution ``vec_add_tuned`` of ``vec_add`` with tunable ``params`` (each a
    keyword of ``run``, defaulting to ``defaults`` or else its first value) and constraints."""
    keywords = ", ".join(f"{k}={(defaults or {}).get(k, v[0])!r}" for k, v in params.items())
    return {
        "name": "vec_add_tuned",
        "definition": "vec_add",
        "author": "tester",
        "spec": {
            "language": "python",
            "target_hardware": ["cpu"],
            "entry_point": "main.py::run",
            "destination_passing_style": False,
        },
        "sources": [
            {"path": "main.py", "content": f"def run(x, y, alpha, {keywords}):\n    return x + alpha * y\n"}
        ],
        "params": params,
        "params_constraints": constraints,
    }


def dataset_with(tmp_path: Path, solution: dict[str, object]) -> Path:
    """A copy of :data:`GOOD_DATASET` under ``tmp_path/ds`` with ``solution`` (one of ``vec_add``) added."""
    root = tmp_path / "ds"
    shutil.copytree(GOOD_DATASET, root)
    path = root / "solutions" / "tester" / "ew" / "vec_add" / f"{solution['name']}.json"
    path.write_text(json.dumps(solution))
    return root


# ---- Evaluation settings for tests ----


def quick_settings(**changes: object) -> EvalSettings:
    """Settings of a quick evaluation (one trial of one input set, no warm-up, a few timed
    calls) with ``changes``: each test says only where it differs."""
    from sweep.config import EvalSettings

    base: dict[str, object] = {
        "trials": 1,
        "warmup_ms": 0,
        "rep_ms": 1,
        "min_iterations": 2,
        "max_iterations": 3,
        "input_sets": 1,
    }
    return EvalSettings.model_validate({**base, **changes})


# ---- A launch's result, built by hand ----


def launch_result(**changes: Any) -> LaunchResult:
    """The result of a launch on a CPU that planned nothing, with ``changes``: each test of
    what a launch reports says only what its launch did (no Ray runs)."""
    from collections import Counter

    from sweep.cluster.scheduler import SchedulerStats
    from sweep.launch.driver import LaunchResult

    base = LaunchResult(
        run_id="r1",
        sweep="s",
        hardware="CPU",
        planned=0,
        skipped=0,
        ran=0,
        statuses=Counter(),
        rows=[],
        wall_s=0.1,
        results_dir="/res",
        store_path="/res/sweep.duckdb",
        cluster=None,
        stats=SchedulerStats(),
        excluded=[],
    )
    return dataclasses.replace(base, **changes)


def fuzz_settings(max_examples: int, *, slow_ok: bool = False) -> hypothesis.settings:
    """Hypothesis settings of the hostile tests: the same examples every run (derandomized), no
    deadline, and function-scoped fixtures allowed (each example rewrites its own files);
    ``slow_ok`` also allows slow example generation."""
    from hypothesis import HealthCheck, settings

    checks = [HealthCheck.function_scoped_fixture, *([HealthCheck.too_slow] if slow_ok else [])]
    return settings(max_examples=max_examples, deadline=None, derandomize=True, suppress_health_check=checks)


#: The bound of the hostile tests' "refused quickly" checks: far above what a loaded machine takes
#: (a busy CI runner stretches milliseconds to seconds), far below what a runaway case takes
#: (exponential work, a hang), which is what those checks are for.
QUICK_S = 30.0

#: How long a test waits for a state another thread or process brings about: generous, so that a
#: loaded machine (CI's two shared cores) only makes the test slower, never makes it fail.
WAIT_S = 120.0


def wait_until(condition: Callable[[], bool], timeout_s: float = WAIT_S, every_s: float = 0.02) -> bool:
    """Poll ``condition`` until it holds (True) or ``timeout_s`` has passed (False): for a state
    that comes about in its own time, where a fixed sleep or a short deadline would be flaky."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() >= deadline:
            return False
        time.sleep(every_s)
    return True


# ---- One sandbox for a module's `sweep eval` calls ----


class _Borrowed:
    """A started sandbox lent to one ``sweep eval``: its ``with`` block leaves it running."""

    def __init__(self, sandbox: object) -> None:
        self.sandbox = sandbox

    def __enter__(self) -> object:
        return self.sandbox

    def __exit__(self, *exc: object) -> None:
        pass


class SharedSandboxes:
    """Stands in for ``Sandbox`` in :mod:`sweep.launch.local`: one sandbox per spec, kept
    across the calls of a module. Each task still runs in a process of its own, forked
    from the zygote (what a launch's worker does task after task); what is shared is the
    zygote's start and preload (about 7 s of CPU), which is not what these tests test.
    ``calls`` counts the evaluations that borrowed one, so a test can tell it was used."""

    def __init__(self) -> None:
        from sweep.sandbox import Sandbox, SandboxSpec

        self._make = Sandbox
        self.by_spec: dict[SandboxSpec, Sandbox] = {}
        self.calls = 0

    def __call__(self, spec: object, stamp: object = None) -> _Borrowed:
        if spec not in self.by_spec:
            self.by_spec[spec] = self._make(spec, stamp)  # type: ignore[arg-type]
        self.calls += 1
        return _Borrowed(self.by_spec[spec])

    def close(self) -> None:
        for sb in self.by_spec.values():
            sb.close()
        self.by_spec.clear()


@pytest.fixture(scope="module")
def _eval_sandboxes() -> Iterator[SharedSandboxes]:
    shared = SharedSandboxes()
    try:
        yield shared
    finally:
        shared.close()


@pytest.fixture
def shared_eval_sandbox(_eval_sandboxes: SharedSandboxes, monkeypatch: pytest.MonkeyPatch) -> SharedSandboxes:
    """For a test: every ``sweep eval`` (``evaluate_from_dataset``) runs its tasks in the
    module's one sandbox per spec instead of starting its own. For tests whose subject is the
    command (its output, errors, exit codes), not a fresh sandbox's start, which
    ``tests/engine/test_cli_eval.py::test_eval_prints_a_table_of_traces`` keeps."""
    import sweep.launch.local

    monkeypatch.setattr(sweep.launch.local, "Sandbox", _eval_sandboxes)
    return _eval_sandboxes


#: What the decoy ``sweep`` package (:func:`decoy_cwd`) raises when it is imported.
DECOY_MESSAGE = "the decoy sweep of the working folder was imported"


@pytest.fixture
def decoy_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder holding a ``sweep`` package of its own (another checkout, an older copy)
    that raises when imported: a child process that imports it instead of the running one fails."""
    folder = tmp_path / "decoy"
    (folder / "sweep").mkdir(parents=True)
    (folder / "sweep" / "__init__.py").write_text(f"raise ImportError({DECOY_MESSAGE!r})\n")
    monkeypatch.chdir(folder)
    return folder
