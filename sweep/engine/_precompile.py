"""Compile ahead: build a task's solution and compile its Triton kernels, run nothing.

A node's compile processes (the cluster's compile pool) call :func:`precompile` for the tasks
its GPU worker will evaluate next, so the GPU never waits on a compiler:

- the build phase as an evaluation runs it (the reference imported, the solution imported or
  its extension built, the entry point and parameter point checked); a torch extension is
  built into the extensions folder the GPU's process then loads from;
- for a Triton solution on a GPU, the solution is called once on the inputs of the
  evaluation's first timed input set, with every Triton launch turned into
  Triton's own "warm-up" (compile, do not launch) and the compiled kernel loaded on the GPU.
  Compiling writes Triton's on-disk cache, keyed by the kernel's source, its specialisation
  (dtypes, alignment, integer values Triton specialises on, constexprs such as block sizes)
  and the GPU's architecture, which is the key the GPU's process looks up at its own first
  call; loading checks shared memory and threads against this GPU's limits.

No kernel of the solution runs here; making the inputs launches a few of torch's (random
values, microseconds on the GPU the evaluations beside it share), and their memory is given
back after each task.

The result is a Trace: a COMPILE_ERROR with the compiler's message when the solution cannot be
built or a kernel cannot be compiled or loaded for this GPU (the task's final trace: its
evaluation is not run), else a trace without an evaluation (compiled, or nothing definite
learnt: the GPU's evaluation decides).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

import torch

from sweep.engine._evaluate import _environment, _now, _nvml, _set_mode, default_cache, trace_of
from sweep.engine.guard._global_state import preserved_state
from sweep.engine.io._outcome import Stop
from sweep.engine.run._cache import EngineCache
from sweep.engine.run._phases import new_run
from sweep.engine.timing._capture import capture_output
from sweep.engine.timing._envinfo import resolve_device
from sweep.schema import Evaluation, Status, Trace
from sweep.schema.task import Task
from sweep.schema.trace_log import clip_log

__all__ = ["compile_only", "precompile"]

#: The first words of a compile-ahead COMPILE_ERROR's log, after the status.
AHEAD = "found while compiling ahead of the GPU, in the node's compile pool"


@contextlib.contextmanager
def compile_only() -> Iterator[None]:
    """Within: every Triton kernel call compiles (into Triton's cache) and loads its kernel on
    the current GPU, but launches nothing."""
    from triton.runtime.jit import JITFunction

    original = JITFunction.run

    def run(self: Any, *args: Any, grid: Any, warmup: bool, **kwargs: Any) -> Any:
        kernel = original(self, *args, grid=grid, warmup=True, **kwargs)
        if kernel is not None:
            if hasattr(kernel, "result"):  # an asynchronous compile's future
                kernel = kernel.result()
            # Loading is where Triton checks shared memory and threads against the GPU.
            kernel._init_handles()
        return kernel

    JITFunction.run = run
    try:
        yield
    finally:
        JITFunction.run = original


def precompile(task: Task, *, device: str | None = None, cache: EngineCache | None = None) -> Trace:
    """Build ``task``'s solution and compile its Triton kernels for ``device``'s GPU without
    running them (see the module); a COMPILE_ERROR trace when that fails, else a trace with
    no evaluation."""
    cache = cache if cache is not None else default_cache()
    dev = resolve_device(device)
    _set_mode(dev)
    stop: Stop | None = None
    with preserved_state() as flags, capture_output() as captured:
        run = new_run(task, dev, cache, flags)
        seed = run.seed
        try:
            run.setup()
            run.build()
            if dev.type == "cuda" and task.solution.spec.language.value == "triton":
                # The evaluation's own inputs, on the GPU: Triton's cache key holds what it
                # specialises on (dtypes, alignment, integer values) and an entry point may
                # choose its constexprs by its inputs' device or values, so anything less
                # than the real inputs can compile a kernel the evaluation never asks for.
                run.path.prepare_timing(run.settings.trials, 1)
                with compile_only():
                    run.call_solution(run.path.call_solution, 0, "compile-ahead call")
        except Stop as e:
            stop = e if e.status == Status.COMPILE_ERROR else None
        except Exception:  # noqa: BLE001, S110 - nothing definite: the GPU's evaluation decides
            pass
        finally:
            run.release()
            if dev.type == "cuda":
                # Give the inputs' memory back to the GPU the evaluations beside it use.
                torch.cuda.empty_cache()
    if stop is None:
        return Trace(definition=task.definition.name, workload=task.workload, solution=task.solution.name)
    log = f"COMPILE_ERROR: {stop.message}\n({AHEAD}, process {os.getpid()})"
    if stop.detail:
        log += "\n" + stop.detail
    output = captured.text.strip()
    if output:
        log += "\n--- output of the compile ---\n" + output
    evaluation = Evaluation(
        status=Status.COMPILE_ERROR,
        environment=_environment(dev, cache, _nvml(cache, dev)),
        timestamp=_now(),
        log=clip_log(log, task.settings.log_limit_bytes),
        seed=seed,
    )
    return trace_of(task, evaluation)
