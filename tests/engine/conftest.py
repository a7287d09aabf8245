"""Fixtures of the engine tests: a private build cache, fast settings, record factories.

Test modules reach the helpers through the ``kit`` fixture (conftest modules are not
importable under ``--import-mode=importlib``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from sweep.config import EvalSettings
from sweep.engine import EngineCache, evaluate
from sweep.schema import Definition, Solution, Trace, Workload
from sweep.schema.task import Task

ENGINE_DATA = Path(__file__).resolve().parent.parent / "data" / "engine"
REPO = Path(__file__).resolve().parent.parent.parent


class Kit:
    """Helpers shared by the engine tests."""

    data = ENGINE_DATA
    repo = REPO
    #: Small and quick: 2 trials, 2 input sets, a few timed calls.
    fast = EvalSettings(
        trials=2,
        warmup_ms=0,
        rep_ms=1,
        min_iterations=2,
        max_iterations=6,
        input_sets=2,
        log_limit_bytes=65536,
    )

    def __init__(self, cache_dir: Path) -> None:
        self.cache_dir = cache_dir

    @staticmethod
    def definition(rel: str) -> Definition:
        """A definition JSON under tests/data/engine/definitions."""
        return Definition.model_validate_json((ENGINE_DATA / "definitions" / rel).read_text())

    @staticmethod
    def workloads(rel: str) -> list[Workload]:
        """The workloads of a JSONL file under tests/data/engine/workloads."""
        lines = (ENGINE_DATA / "workloads" / rel).read_text().splitlines()
        return [Workload.model_validate(json.loads(line)["workload"]) for line in lines if line.strip()]

    @staticmethod
    def solution(
        definition: str,
        sources: dict[str, str] | str,
        *,
        dps: bool = False,
        language: str = "python",
        entry: str = "main.py::run",
        name: str = "sol",
        binding: str | None = None,
    ) -> Solution:
        """A solution record from inline sources (a plain string is ``main.py``)."""
        files = {"main.py": sources} if isinstance(sources, str) else sources
        spec: dict[str, object] = {
            "language": language,
            "target_hardware": ["cpu", "gpu"],
            "entry_point": entry,
            "destination_passing_style": dps,
        }
        if binding:
            spec["binding"] = binding
        return Solution.model_validate(
            {
                "name": name,
                "definition": definition,
                "author": "tests",
                "spec": spec,
                "sources": [{"path": p, "content": c} for p, c in files.items()],
            }
        )

    def run(
        self,
        definition: Definition,
        solution: Solution,
        workload: Workload,
        settings: EvalSettings | None = None,
        *,
        cache: EngineCache | None = None,
        root: str | None = None,
        device: str = "cpu",
    ) -> Trace:
        """Evaluate one task on the CPU with a fresh cache (unless one is given)."""
        task = Task.make(
            definition, solution, workload, settings or self.fast, "CPU", dataset_root=root, sweep="tests"
        )
        return evaluate(task, device=device, cache=cache if cache is not None else EngineCache())

    @staticmethod
    def status(trace: Trace) -> str:
        assert trace.evaluation is not None
        return trace.evaluation.status.value

    @staticmethod
    def log(trace: Trace) -> str:
        assert trace.evaluation is not None
        return trace.evaluation.log


@pytest.fixture(scope="session", autouse=True)
def _build_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Every build of this session goes to a private folder, never ~/.cache
    (``SWEEP_TEST_CACHE_DIR`` names a fixed one, to share builds with a bench run)."""
    fixed = os.environ.get("SWEEP_TEST_CACHE_DIR")
    folder = Path(fixed) if fixed else tmp_path_factory.mktemp("sweep-cache")
    old = os.environ.get("SWEEP_CACHE_DIR")
    os.environ["SWEEP_CACHE_DIR"] = str(folder)
    yield folder
    if old is None:
        os.environ.pop("SWEEP_CACHE_DIR", None)
    else:
        os.environ["SWEEP_CACHE_DIR"] = old


@pytest.fixture
def kit(_build_cache: Path) -> Kit:
    return Kit(_build_cache)


@pytest.fixture(scope="session")
def vadd() -> Definition:
    return Kit.definition("vadd/vadd_f32.json")


@pytest.fixture(scope="session")
def vadd_wl() -> Workload:
    return Kit.workloads("vadd/vadd_f32.jsonl")[0]
