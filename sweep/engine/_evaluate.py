"""The engine's entry points: ``evaluate`` (one task, one Trace) and ``build``.

The phases of an evaluation live in ``_phases`` (what differs per kind of workload in its
call paths, ``_named_inputs`` and ``_aten_call``); here: the device and Triton's mode, output
capture, restoring global state, and turning the outcome into a Trace with its provenance.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime, timezone

import torch

from sweep.engine._process import env_problem, prepare_process
from sweep.engine.guard import _integrity
from sweep.engine.guard._global_state import preserved_state
from sweep.engine.io._outcome import Result, Stop, traceback_text
from sweep.engine.run._cache import EngineCache
from sweep.engine.run._clock import mark, restart
from sweep.engine.run._phases import new_run
from sweep.engine.timing._capture import capture_output
from sweep.engine.timing._envinfo import environment, nvml_for, resolve_device
from sweep.engine.timing._nvml import Nvml
from sweep.errors import EngineError
from sweep.schema import (
    FLAG_REFERENCE_FAILED,
    FLAG_TAMPERED,
    Environment,
    Evaluation,
    Status,
    Trace,
)
from sweep.schema.task import Task
from sweep.schema.trace_log import clip_log

__all__ = ["build", "default_cache", "evaluate", "process_cache", "trace_of", "warm_process"]

_default_cache: EngineCache | None = None


def default_cache() -> EngineCache:
    """The process-wide cache used when a caller passes none."""
    global _default_cache
    if _default_cache is None:
        _default_cache = EngineCache()
    return _default_cache


def process_cache() -> EngineCache:
    """The cache of a task's process (a sandbox's), made ready by :func:`warm_process`."""
    return default_cache()


def warm_process(device_kind: str) -> None:
    """In a task's fresh process, before its task arrives (off the task's time: a sandbox is
    forked and started while the previous task runs): what every evaluation here would
    otherwise do first. The environment record and the NVML handle of the device, the flush
    buffer on a GPU, in the process's cache (:func:`process_cache`); and one read of the
    harness's snapshot (``_integrity``): the first reads in a process just forked copy the
    pages of every object they touch (reference counts are written), 0.1-0.2 s that the
    checks of the task's evaluation would pay (``bench/eval_phases.py``). Runs no solution code."""
    dev = resolve_device("cuda:0" if device_kind.startswith("cuda") else "cpu")
    cache = default_cache()
    nvml = _nvml(cache, dev)
    _environment(dev, cache, nvml)
    if dev.type == "cuda":
        from sweep.engine.timing import flush_bytes

        cache.flush_buffers[str(dev)] = torch.empty(flush_bytes(dev), dtype=torch.int8, device=dev)
    _integrity.guard().changes()


def _set_mode(device: torch.device) -> None:
    """Triton interpreted on CPU, compiled on GPUs (a GPU evaluation in a process that
    evaluated on CPU before must not inherit the interpreter); the right current device."""
    if device.type == "cpu":
        prepare_process("cpu")
        return
    os.environ.pop("TRITON_INTERPRET", None)
    if device.index is not None and torch.cuda.current_device() != device.index:
        torch.cuda.set_device(device)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


def _environment(device: torch.device, cache: EngineCache, nvml: Nvml) -> Environment:
    key = str(device)
    env = cache.environments.get(key)
    if env is None:
        env = environment(device, nvml)
        cache.environments[key] = env
    return env


def evaluate(
    task: Task, device: str | None, cache: EngineCache | None, on_phase: Callable[[str], None] | None
) -> Trace:
    """The body of :func:`sweep.engine.evaluate` (its docstring says what it promises), for
    a task of one process."""
    restart("evaluate")
    started = _now()
    cache = cache if cache is not None else default_cache()
    dev = resolve_device(device)
    problem = env_problem(task.settings.process_env())
    if problem is not None:
        raise EngineError(problem)
    _set_mode(dev)
    nvml = _nvml(cache, dev)
    env = _environment(dev, cache, nvml)
    mark("device, NVML, environment record")
    guard = _integrity.guard()
    threads = torch.get_num_threads()
    # Fixed, so that an evaluation times alike wherever it runs (a launch's worker, sweep eval).
    torch.set_num_threads(task.settings.cpu_threads)
    with preserved_state() as flags, capture_output() as captured:
        run = new_run(task, dev, cache, flags)
        mark("harness guards, output capture, call path")
        run.guard, run.on_phase = guard, on_phase
        try:
            result = run.run_phases(nvml)
        except Stop as stop:
            result = Result(
                status=stop.status,
                messages=[f"{stop.status.value}: {stop.message}", *run.notes],
                correctness=stop.correctness,
                flags=stop.flags or None,
            )
            if stop.detail:
                result.messages.append(stop.detail)
        except Exception as e:  # noqa: BLE001 - an engine bug must still give a trace
            result = Result(
                status=Status.RUNTIME_ERROR,
                messages=[
                    f"RUNTIME_ERROR: the engine failed while evaluating: {type(e).__name__}: {e}",
                    traceback_text(e),
                ],
            )
        finally:
            run.release()
            mark("release of buffers")
    torch.set_num_threads(threads)
    result = _untampered(result, guard, run.solution_loaded)
    mark("global state put back, final integrity check")
    output = captured.text.strip()
    log = "\n".join(result.messages)
    if output:
        log += "\n--- output of the evaluation ---\n" + output
    fields: dict[str, object] = {
        "status": result.status,
        "environment": env,
        "timestamp": _now(),
        "log": clip_log(log, task.settings.log_limit_bytes),
        # A secret run's seed would let anyone make its inputs again: its trace keeps the
        # commitment (provenance) instead.
        "seed": run.seed if task.secret_salt is None else None,
    }
    for name in ("correctness", "performance", "timing", "reference_timing", "clocks", "energy", "flags"):
        value = getattr(result, name)
        if value is not None:
            fields[name] = value
    trace = trace_of(task, Evaluation(**fields), started)
    mark("trace record")
    return trace


def _untampered(result: Result, guard: _integrity.Guard, solution_loaded: bool) -> Result:
    """``result``, or a ``tampered`` RUNTIME_ERROR when the solution changed the harness since
    its last check (a destructor, a thread) and the result says nothing of it yet; the harness
    is put back either way, before the trace is built and sent."""
    changes = guard.changes()
    guard.restore()
    flags = result.flags or []
    if not changes or not solution_loaded or FLAG_TAMPERED in flags or FLAG_REFERENCE_FAILED in flags:
        return result
    if result.status is not Status.PASSED:  # its own failure stands, and it tampered too
        result.messages.append(f"TAMPERED too (at the end of the evaluation): {'; '.join(changes[:8])}")
        result.flags = [*flags, FLAG_TAMPERED]
        return result
    return Result(
        status=Status.RUNTIME_ERROR,
        messages=[
            (
                "RUNTIME_ERROR: TAMPERED: the solution changed what the harness times and checks with "
                f"(at the end of the evaluation): {'; '.join(changes[:8])}. A result is never PASSED after that"
            ),
            *result.messages,
        ],
        flags=[FLAG_TAMPERED],
    )


def trace_of(task: Task, evaluation: Evaluation, started: str | None = None) -> Trace:
    """The trace of ``task`` with ``evaluation``, its provenance stamped by this process."""
    provenance = task.provenance(worker_pid=os.getpid(), started_at=started, finished_at=_now())
    return Trace(
        definition=task.definition.name,
        workload=task.workload,
        solution=task.solution.name,
        evaluation=evaluation,
        provenance=provenance,
        **({"solution_params": task.params} if task.params is not None else {}),
    )


def _nvml(cache: EngineCache, device: torch.device) -> Nvml:
    """One NVML handle per device and cache."""
    handles = cache.nvml_handles
    key = str(device)
    if key not in handles:
        handles[key] = nvml_for(device)
    return handles[key]


def build(task: Task, *, device: str | None = None, cache: EngineCache | None = None) -> None:
    """The build phase alone: load the reference and compile/import the solution into ``cache``.

    For callers that give compilation its own deadline; ``evaluate`` then finds the build
    cached. Never raises for a failed build (``evaluate`` reports it as COMPILE_ERROR).
    """
    cache = cache if cache is not None else default_cache()
    dev = resolve_device(device)
    _set_mode(dev)
    with preserved_state() as flags, capture_output():
        run = new_run(task, dev, cache, flags)  # builds only import: the interpreter runs nothing yet
        try:
            run.build()
        except Stop:
            pass
