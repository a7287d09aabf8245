"""Fixtures of the engine tests: a private build cache, fast settings, record factories.

Test modules reach the helpers through the ``kit`` fixture (conftest modules are not
importable under ``--import-mode=importlib``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from sweep.config import EvalSettings
from sweep.engine import EngineCache, evaluate
from sweep.schema import Definition, Evaluation, Solution, Trace, Workload
from sweep.schema.task import Task

from ..conftest import quick_settings

ENGINE_DATA = Path(__file__).resolve().parent.parent / "data" / "engine"
REPO = Path(__file__).resolve().parent.parent.parent
#: Small and quick: 2 trials, 2 input sets, a few timed calls (``kit.fast``).
FAST = quick_settings(trials=2, max_iterations=6, input_sets=2, log_limit_bytes=65536)


#: Evaluates the task of three record files (definition, solution, workload) on the CPU and
#: prints its trace (a fresh process: :meth:`Kit.evaluate_in_two_processes`).
_EVAL_ONE = textwrap.dedent(
    """
    import sys
    from sweep.config import EvalSettings
    from sweep.engine import evaluate
    from sweep.schema import Definition, Solution, Workload
    from sweep.schema.task import Task
    d = Definition.model_validate_json(open(sys.argv[1]).read())
    s = Solution.model_validate_json(open(sys.argv[2]).read())
    w = Workload.model_validate_json(open(sys.argv[3]).read())
    settings = EvalSettings(trials=2, warmup_ms=0, rep_ms=1, min_iterations=2, max_iterations=4, input_sets=2)
    print(evaluate(Task.make(d, s, w, settings, "CPU"), device="cpu").to_json())
    """
)


#: A CUDA vector add (``z = x + y``, destination-passing) and its torch binding.
_VADD_CU = r"""
#include <torch/extension.h>
#include <cuda_runtime.h>

__global__ void vadd_kernel(const float* x, const float* y, float* z, int64_t n) {
    int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
    if (i < n) z[i] = x[i] + y[i];
}

void run(torch::Tensor x, torch::Tensor y, torch::Tensor z) {
    const int64_t n = x.numel();
    const int threads = 256;
    vadd_kernel<<<(n + threads - 1) / threads, threads>>>(x.data_ptr<float>(), y.data_ptr<float>(),
                                                          z.data_ptr<float>(), n);
}
"""
_VADD_BINDING = r"""
#include <torch/extension.h>
void run(torch::Tensor x, torch::Tensor y, torch::Tensor z);
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("run", &run, "z = x + y"); }
"""


class Kit:
    """Helpers shared by the engine tests."""

    data = ENGINE_DATA
    repo = REPO
    fast = FAST
    #: A solution that keeps its results by the inputs' addresses: a cheat the checks must catch.
    pointer_cache = (
        "_memo = {}\n\n"
        "def run(x, y):\n"
        "    key = (x.data_ptr(), y.data_ptr())\n"
        "    if key not in _memo:\n"
        "        _memo[key] = x + y\n"
        "    return _memo[key]\n"
    )

    @staticmethod
    def timed(timer: str, *, trials: int = 1) -> EvalSettings:
        """Settings that time on the GPU with ``timer`` (enough calls for a timer to be judged)."""
        return EvalSettings(
            trials=trials, warmup_ms=5, rep_ms=10, max_ms=300, min_iterations=10, input_sets=2, timer=timer
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
    def passed(trace: Trace) -> Evaluation:
        """The trace's evaluation, which must have PASSED (the assertion shows its log)."""
        ev = trace.evaluation
        assert ev.status.value == "PASSED", ev.log
        return ev

    #: The sources of :meth:`cuda_vadd`: ``kernel.cu`` and ``binding.cpp``.
    cuda_vadd_sources: ClassVar[dict[str, str]] = {"kernel.cu": _VADD_CU, "binding.cpp": _VADD_BINDING}

    @classmethod
    def cuda_vadd(cls, name: str = "vadd_cu", kernel: str = _VADD_CU) -> Solution:
        """A CUDA solution of ``vadd_f32`` built as a torch extension (``kernel`` its ``kernel.cu``)."""
        sources = {**cls.cuda_vadd_sources, "kernel.cu": kernel}
        return cls.solution(
            "vadd_f32", sources, language="cuda", binding="torch", entry="kernel.cu::run", dps=True, name=name
        )

    @staticmethod
    def fresh_python(script: str, *args: str, timeout: float = 300) -> list[str]:
        """Run ``script`` in a fresh Python without Triton's interpreter set (Triton's mode is
        fixed per process, and this one may have run Triton interpreted); its stdout lines.
        It must exit cleanly."""
        env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
        out = subprocess.run(
            [sys.executable, "-c", script, *args],
            check=False,
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
        )
        assert out.returncode == 0, out.stderr[-3000:]
        return out.stdout.strip().splitlines()

    def run_with_reference(self, defn: Definition, reference: str, workload: Workload) -> Trace:
        """Evaluate an honest ``z = x + y`` solution of ``defn`` given another ``reference``."""
        plain = self.solution(defn.name, "def run(x, y):\n    return x + y\n")
        return self.run(self.with_reference(defn, reference), plain, workload)

    @staticmethod
    def with_reference(defn: Definition, reference: str) -> Definition:
        """``defn`` with another reference implementation."""
        data = defn.model_dump(mode="json", exclude_unset=True)
        data["reference"] = reference
        return Definition.model_validate(data)

    @staticmethod
    def record_files(folder: Path, defn: Definition, sol: Solution, wl: Workload) -> list[str]:
        """The three records as JSON files ``d.json``, ``s.json``, ``w.json`` in ``folder``."""
        files = []
        for name, rec in (("d", defn), ("s", sol), ("w", wl)):
            path = folder / f"{name}.json"
            path.write_text(rec.model_dump_json(exclude_unset=True))
            files.append(str(path))
        return files

    @staticmethod
    def evaluate_in_two_processes(
        defn: Definition, sol: Solution, wl: Workload, tmp_path: Path, env: dict[str, str] | None = None
    ) -> list[Trace]:
        """Evaluate one task in two fresh processes at once (sharing ``tmp_path/cache`` as the
        build cache, and ``env``); both must exit cleanly. Whichever takes the build lock first
        holds it until the other has asked for it (the build's test hook), so their builds
        overlap under any load, and one of them waits for the other."""
        from sweep.engine.builds._lock import RENDEZVOUS_ENV

        files = Kit.record_files(tmp_path, defn, sol, wl)
        env = {
            **os.environ,
            "SWEEP_CACHE_DIR": str(tmp_path / "cache"),
            RENDEZVOUS_ENV: str(tmp_path / "rendezvous"),
            **(env or {}),
        }
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _EVAL_ONE, *files],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=600) for p in procs]
        assert all(p.returncode == 0 for p in procs), [o[1][-2000:] for o in outs]
        return [Trace.model_validate(json.loads(o[0].strip().splitlines()[-1])) for o in outs]

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
