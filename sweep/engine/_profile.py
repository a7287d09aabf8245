"""Profile mode: the solution's calls alone, bracketed for a profiler.

Under ``ncu --profile-from-start off`` only what runs between ``cudaProfilerStart`` and
``cudaProfilerStop`` is profiled. :func:`profile_run` builds the task's solution (never the
reference: it is neither built nor called), makes the inputs of the evaluation's first timed
input set (the same seed, the same input-set index, so the same values as the sweep timed),
calls the solution once to warm up (Triton compiles there, outside the range), then calls it
``calls`` times inside the profiler range. No L2 flush, no reference, no input generation
inside the range. compute-sanitizer has no such range: it checks every kernel of the process,
input generation (torch's own kernels) included.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sweep.engine._evaluate import _set_mode
from sweep.engine.guard._global_state import preserved_state
from sweep.engine.io._outcome import Stop
from sweep.engine.run._cache import EngineCache
from sweep.engine.run._phases import new_run
from sweep.engine.timing._envinfo import resolve_device
from sweep.errors import EngineError
from sweep.schema.task import Task

__all__ = ["ProfiledCalls", "profile_run"]


@dataclass(frozen=True)
class ProfiledCalls:
    """What :func:`profile_run` did: the solution, the input set and the calls in the range."""

    solution: str
    input_set: int
    calls: int
    elapsed_ms: float

    def describe(self) -> str:
        return (
            f"profiled {self.calls} call(s) of solution {self.solution!r} on input set {self.input_set} "
            f"({self.elapsed_ms / self.calls:.4f} ms per call by CUDA events)"
        )


def profile_run(task: Task, device: str | None = None, calls: int = 5) -> ProfiledCalls:
    """Run ``task``'s solution ``calls`` times inside a CUDA profiler range (see the module).

    Raises:
        EngineError: Not a CUDA device, or the solution cannot be built or called (the
            message is the status the evaluation would give).
    """
    if calls < 1:
        raise EngineError(f"calls must be at least 1 (got {calls})")
    dev = resolve_device(device)
    if dev.type != "cuda":
        raise EngineError(f"profiling needs a CUDA GPU; this process runs on {dev.type}")
    _set_mode(dev)
    with preserved_state() as flags:
        run = new_run(task, dev, EngineCache(), flags)
        try:
            run.setup()
            run.build()
            first = run.settings.trials  # the timing phase's first input set
            run.path.prepare_timing(first, 1)
            run.call_solution(run.path.call_solution, 0, "warm-up call")
            start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            torch.cuda.synchronize(dev)
            torch.cuda.profiler.start()  # type: ignore[no-untyped-call]
            try:
                start.record()
                with torch.no_grad():
                    for _ in range(calls):
                        run.path.call_solution(0)
                end.record()
                torch.cuda.synchronize(dev)
            finally:
                torch.cuda.profiler.stop()  # type: ignore[no-untyped-call]
        except Stop as stop:
            raise EngineError(f"{stop.status.value}: {stop.message}") from None
        finally:
            run.release()
    return ProfiledCalls(task.solution.name, first, calls, float(start.elapsed_time(end)))
