"""One rank of a distributed task, in this process (a sandbox process of its own).

The task carries its :class:`~sweep.schema.distributed.RankSlot`: the rank, the world size and
where the group meets. The phases are those of a single-GPU evaluation, each made by every rank
together: the process group (gloo on the CPU, NCCL on GPUs, one GPU per rank), the reference's
side first (the definition's reference, plain ``torch.distributed`` calls, on this rank's
inputs, seeded by rank, and its timing), then the solution's build (checked against the
harness's snapshot, ``_integrity``), its trials (this rank's outputs against the reference's on
this rank) and its timing (``_dist_timing``: the same calls on every rank, aligned by a barrier
outside the timed window). Ranks agree after each phase (``agree``): a rank that failed its
check stops them all, so none waits alone in a collective. The group is destroyed before the
trace is sent. A rank that crashes or hangs is the gang supervisor's business
(``sweep.sandbox.gang``): it kills every rank and blames the one that failed.

The trace of one rank carries only its own figures (``Evaluation.distributed.ranks``); the
supervisor merges the ranks' traces into the task's one trace.
"""

from __future__ import annotations

import datetime
import os
import traceback
from collections.abc import Callable

import torch
import torch.distributed as dist

from sweep.engine._evaluate import trace_of
from sweep.engine._process import env_problem
from sweep.engine.builds._build import build_solution, reference_solution
from sweep.engine.builds._built import BuildError
from sweep.engine.guard import _integrity
from sweep.engine.io._compare import ErrorStats, Mismatch, check_reference, compare_outputs, normalize_outputs
from sweep.engine.io._inputs import InputError, base_seed, hash_int, make_inputs
from sweep.engine.timing._dist_timing import RankTiming, agree, time_lockstep
from sweep.engine.timing._envinfo import environment, nvml_for
from sweep.schema import Correctness, Environment, Evaluation, Performance, Status, Task, Trace
from sweep.schema.distributed import DistributedResult, RankFigures, full_axes
from sweep.schema.expr import ConstraintError

__all__ = ["MULTICAST_OFF", "evaluate_rank"]

#: NVLink multicast can take a shared host's GPUs out of service: off in every rank's process.
MULTICAST_OFF: dict[str, str] = {
    "NCCL_NVLS_ENABLE": "0",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
    "NVSHMEM_DISABLE_NVLS": "1",
}


class _Stop(Exception):
    def __init__(self, status: Status, message: str, correctness: Correctness | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.correctness = status, message, correctness


def _device(device: str | None, rank: int, world: int) -> torch.device:
    if device is not None and device.startswith("cuda"):
        count = torch.cuda.device_count()
        if count < world:
            raise _Stop(
                Status.RUNTIME_ERROR, f"rank {rank}: {world} ranks need {world} GPUs, {count} visible"
            )
        torch.cuda.set_device(rank)
        return torch.device("cuda", rank)
    return torch.device("cpu")


def evaluate_rank(
    task: Task, *, device: str | None = None, on_phase: Callable[[str], None] | None = None
) -> Trace:
    """Evaluate this process's rank of ``task`` (``task.rank`` set); always one trace."""
    slot, spec = task.rank, task.definition.distributed
    assert slot is not None and spec is not None
    os.environ.update(MULTICAST_OFF)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat()
    state = _RankRun(task)
    try:
        problem = env_problem(task.settings.process_env())
        if problem is not None:
            raise _Stop(Status.RUNTIME_ERROR, f"rank {slot.rank}: {problem}")
        dev = _device(device, slot.rank, slot.world_size)
        state.env = environment(dev, nvml_for(dev))
        dist.init_process_group(
            backend=slot.backend,
            init_method=f"file://{slot.store_file}",
            rank=slot.rank,
            world_size=slot.world_size,
            timeout=datetime.timedelta(
                seconds=task.settings.timeouts.run_s + task.settings.timeouts.compile_s
            ),
        )
        try:
            state.run(dev, on_phase or (lambda _phase: None))
        finally:
            dist.destroy_process_group()
    except _Stop as stop:
        state.status, state.messages = stop.status, [f"{stop.status.value}: {stop.message}", *state.messages]
        state.correctness = stop.correctness or state.correctness
    except Exception as e:  # noqa: BLE001 - a solution's exception, or a peer gone: a trace either way
        state.status = Status.RUNTIME_ERROR
        state.messages.insert(0, f"RUNTIME_ERROR: rank {slot.rank}: {type(e).__name__}: {e}")
        state.messages.append(traceback.format_exc())
    return state.trace(started)


class _RankRun:
    """The state of one rank's evaluation, built up phase by phase."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.slot = task.rank
        self.status = Status.PASSED
        self.messages: list[str] = []
        self.correctness: Correctness | None = None
        self.ref_time: RankTiming | None = None
        self.sol_time: RankTiming | None = None
        self.env: Environment | None = None
        self.seed: int | None = None

    def run(self, dev: torch.device, on_phase: Callable[[str], None]) -> None:
        task, definition = self.task, self.task.definition
        assert self.slot is not None and definition.distributed is not None
        rank = self.slot.rank
        try:
            axes = full_axes(definition.distributed, task.workload.axes)
        except ConstraintError as e:
            raise _Stop(Status.RUNTIME_ERROR, f"rank {rank}: {e}") from None
        shaped = task.workload.model_copy(
            update={"axes": {k: v for k, v in axes.items() if k in definition.axes}}
        )
        self.seed = hash_int(base_seed(task.settings.seed, task.workload.uuid), "rank", rank)
        sets = max(task.settings.trials, task.settings.input_sets)
        try:
            inputs = [
                make_inputs(definition, shaped, self.seed, i, dev, task.dataset_root) for i in range(sets)
            ]
        except InputError as e:
            raise _Stop(Status.RUNTIME_ERROR, f"rank {rank}: inputs: {e}") from None
        names = list(definition.inputs)
        outs = list(definition.outputs)
        # The snapshot is taken here, once the process group exists (torch.distributed sets its
        # own hooks as it starts), before any of the solution's code is imported.
        _integrity.import_first()
        guard = _integrity.Guard()
        ref = build_solution(reference_solution(definition), cuda_ok=dev.type == "cuda").fn
        expected: list[list[torch.Tensor]] = []
        for i in range(task.settings.trials):
            got = normalize_outputs(ref(*inputs[i].args(names)), outs)
            problem = (
                got.message if not isinstance(got, list) else check_reference(got, definition, shaped.axes)
            )
            if not agree(problem is None, dev):
                raise _Stop(
                    Status.RUNTIME_ERROR, f"rank {rank}: the reference failed: {problem or 'on another rank'}"
                )
            assert isinstance(got, list)
            expected.append([t.detach().clone() for t in got if isinstance(t, torch.Tensor)])
        self.ref_time = time_lockstep(lambda i: ref(*inputs[i].args(names)), task.settings, dev)
        on_phase("build")
        try:
            built = build_solution(task.solution, cuda_ok=dev.type == "cuda")
        except BuildError as e:
            agree(False, dev)
            raise _Stop(Status.COMPILE_ERROR, f"rank {rank}: {e}") from None
        changes = guard.changes()
        if not agree(not changes, dev):
            guard.restore()
            raise _Stop(
                Status.RUNTIME_ERROR,
                f"rank {rank}: TAMPERED at import: {'; '.join(changes[:8]) or 'another rank'}",
            )
        on_phase("run")
        call = self._caller(built.fn, definition, shaped.axes, dev)
        stats = ErrorStats()
        tol = task.settings.tolerance_for(definition.name, definition.op_type)
        for i in range(task.settings.trials):
            result = call(list(inputs[i].args(names)))
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
            norm: list[object] | Mismatch = normalize_outputs(result, outs)
            mismatch = (
                norm
                if not isinstance(norm, list)
                else compare_outputs(
                    norm, expected[i], definition, shaped.axes, tol, stats, f"rank {rank}, trial {i}"
                )
            )
            self.correctness = Correctness(max_relative_error=stats.max_rel, max_absolute_error=stats.max_abs)
            if not agree(mismatch is None, dev):
                if mismatch is not None:
                    raise _Stop(mismatch.status, f"rank {rank}: {mismatch.message}", self.correctness)
                raise _Stop(Status.RUNTIME_ERROR, f"rank {rank}: stopped: another rank failed its check")
        self.sol_time = time_lockstep(lambda i: call(list(inputs[i].args(names))), task.settings, dev)
        changes = guard.changes()
        if not agree(not changes, dev):
            guard.restore()
            raise _Stop(
                Status.RUNTIME_ERROR, f"rank {rank}: TAMPERED: {'; '.join(changes[:8]) or 'another rank'}"
            )
        on_phase("timed")

    def _caller(
        self, fn: Callable[..., object], definition: object, axes: dict[str, int], dev: torch.device
    ) -> Callable[[list[object]], object]:
        task = self.task
        if not task.solution.spec.destination_passing_style:
            return lambda args: fn(*args, **(task.params or {}))
        from sweep.engine.io._inputs import torch_dtype

        specs = task.definition.outputs

        def call(args: list[object]) -> object:
            outs = [
                torch.empty(
                    task.definition.resolve_shape(s, axes) or (), dtype=torch_dtype(s.dtype.value), device=dev
                )
                for s in specs.values()
            ]
            fn(*args, *outs, **(task.params or {}))
            return outs

        return call

    def trace(self, started: str) -> Trace:
        """This rank's trace: its status, its figures, its log."""
        task, slot = self.task, self.slot
        assert slot is not None
        status = self.status
        figures = RankFigures(
            rank=slot.rank,
            status=status.value,
            latency_ms=self.sol_time.median_ms if self.sol_time and status is Status.PASSED else None,
            reference_latency_ms=self.ref_time.median_ms if self.ref_time else None,
            iterations=self.sol_time.stats.iterations if self.sol_time else None,
            pid=os.getpid(),
        )
        fields: dict[str, object] = {
            "status": status,
            "environment": self.env or _cpu_env(),
            "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "log": "\n".join(self.messages)[-task.settings.log_limit_bytes :],
            "seed": self.seed,
            "distributed": DistributedResult(
                world_size=slot.world_size, backend=slot.backend, ranks=[figures]
            ),
        }
        if status in (Status.PASSED, Status.INCORRECT_NUMERICAL):
            fields["correctness"] = self.correctness or Correctness()
        if status is Status.PASSED:
            assert self.sol_time is not None and self.ref_time is not None
            lat, ref = self.sol_time.median_ms, self.ref_time.median_ms
            fields["performance"] = Performance(
                latency_ms=lat, reference_latency_ms=ref, speedup_factor=ref / lat if lat > 0 else 0.0
            )
            fields["timing"] = self.sol_time.stats
            fields["reference_timing"] = self.ref_time.stats
        return trace_of(task, Evaluation(**fields), started)


def _cpu_env() -> Environment:
    return Environment(hardware="CPU")
