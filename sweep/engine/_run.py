"""The phases of one evaluation, on one device, in this process.

Phases, each of which can end the evaluation with a status (see :class:`Stop`):

1. setup: the workload must match the definition; the memory the task needs is counted
   and compared with the budget before anything is allocated;
2. build: the reference, then the solution (COMPILE_ERROR on failure) and its signature;
3. correctness: ``settings.trials`` trials, each on a fresh input set; the reference runs
   on a clone of the inputs and the solution on its own copy, held in fixed "slot"
   buffers that are refilled in place between trials;
4. timing: the slots are refilled with input sets never seen before; the reference and
   the solution are timed rotating over the slots; the outputs of the last timed call
   on each slot are checked against the reference again, so a kernel that serves stale
   results (cached by input address, or computed once) fails.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import torch

from sweep.engine._build import (
    BuildError,
    Built,
    build_solution,
    check_signature,
    interpreter_mode,
    reference_solution,
)
from sweep.engine._cache import EngineCache
from sweep.engine._compare import (
    ErrorStats,
    Mismatch,
    check_reference,
    compare_outputs,
    normalize_outputs,
)
from sweep.engine._constraints import ConstraintError, constraint_inputs, evaluate_constraint
from sweep.engine._envinfo import memory_budget
from sweep.engine._global_state import TorchFlags, pinned_flags
from sweep.engine._inputs import InputError, InputSet, base_seed, make_inputs, memory_plan, torch_dtype
from sweep.engine._nvml import Nvml
from sweep.engine._outcome import (
    Result,
    Stop,
    bits,
    nbytes,
    traceback_text,
    triton_mode_problem,
)
from sweep.engine._timing import flush_bytes, time_calls
from sweep.schema import (
    Clocks,
    Correctness,
    Definition,
    EvalSettings,
    Performance,
    RandomInput,
    Solution,
    Status,
    TimingStats,
    Workload,
    check_workload,
)
from sweep.schema.task import Task
from sweep.schema.trace_log import sticky_cuda_error

__all__ = ["Result", "Run", "Stop", "run_phases", "traceback_text", "triton_mode_problem"]

_BUILD_FAILED_AT_CALL = "Error building extension"


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _poison(t: torch.Tensor) -> None:
    """Fill an output buffer with values a correct kernel overwrites (NaN for floats)."""
    if t.is_floating_point() or t.is_complex():
        t.fill_(float("nan"))
    elif t.dtype == torch.bool:
        t.fill_(True)
    elif t.dtype == torch.uint8:
        t.fill_(0xAB)
    else:
        t.fill_(torch.iinfo(t.dtype).min)


class Run:
    """The state of one evaluation."""

    def __init__(self, task: Task, device: torch.device, cache: EngineCache, flags: TorchFlags) -> None:
        self.task = task
        self.defn: Definition = task.definition
        self.sol: Solution = task.solution
        self.wl: Workload = task.workload
        self.settings: EvalSettings = task.settings
        self.device = device
        self.cache = cache
        self.flags = flags
        self.seed = base_seed(self.settings.seed, self.wl.uuid)
        self.in_names = list(self.defn.inputs)
        self.out_names = list(self.defn.outputs)
        self.dps = self.sol.spec.destination_passing_style
        self.tol = self.settings.tolerance_for(self.defn.name, self.defn.op_type)
        self.axes = {**self.wl.axes, **self.defn.const_axes()}
        self.def_key = _key(self.defn.to_json())
        self.wl_key = _key(self.wl.to_json())
        self.stats = ErrorStats()
        self.notes: list[str] = []
        self.slots: list[dict[str, object]] = []
        self.slot_outs: list[list[torch.Tensor]] = []
        self.solution: Built | None = None
        self.reference: Built | None = None
        #: Inputs the solution writes into (found in the trials), restored before timed calls.
        self.mutated: list[str] = []
        #: Inputs the reference writes into: restored after each timed reference call.
        self.ref_mutated: list[str] = list(cache.mutating_references.get(self.def_key, []))
        self.pristine: list[dict[str, torch.Tensor]] = []

    # ---- setup and build -------------------------------------------------------------

    def _preflight(self) -> None:
        """The checks every path makes first: a usable device, a matching workload."""
        if self.cache.fatal_error and self.device.type == "cuda":
            raise Stop(
                Status.RUNTIME_ERROR,
                "this process's CUDA context is unusable after an earlier error "
                f"({self.cache.fatal_error}); evaluate in a new process",
            )
        problems = check_workload(self.defn, self.wl)
        if problems:
            raise Stop(
                Status.RUNTIME_ERROR,
                f"workload {self.wl.uuid} does not match definition {self.defn.name!r}: "
                + "; ".join(problems),
            )

    def setup(self) -> None:
        self._preflight()
        for name, spec in self.defn.outputs.items():
            try:
                torch_dtype(spec.dtype.value)
            except InputError as e:
                raise Stop(Status.RUNTIME_ERROR, f"output {name!r}: {e}") from None
        have_flush = str(self.device) in self.cache.flush_buffers
        plan = memory_plan(
            self.defn, self.wl, self.settings.input_sets, 0 if have_flush else flush_bytes(self.device)
        )
        budget, source = memory_budget(self.settings.memory_budget_gb, self.device)
        if plan.total > budget:
            raise Stop(
                Status.RUNTIME_ERROR,
                f"task needs {plan.describe()}, over the memory budget of {budget / (1 << 30):.3f} GiB "
                f"({source}); nothing was allocated. Raise evaluation.memory_budget_gb, lower "
                "evaluation.input_sets, or use a smaller workload",
            )

    def build(self) -> None:
        self._build_reference_and_solution()
        assert self.solution is not None
        problem = check_signature(self.solution.fn, self.defn, self.dps)
        if problem:
            raise Stop(Status.COMPILE_ERROR, f"entry point {self.sol.spec.entry_point!r}: {problem}")
        if self.solution.note:
            self.notes.append(self.solution.note)

    def _build_reference_and_solution(self) -> None:
        if self.sol.spec.language.value == "triton":
            problem = triton_mode_problem(self.device)
            if problem:
                raise Stop(Status.RUNTIME_ERROR, f"cannot evaluate a Triton solution here: {problem}")
        self.reference = self._built(reference_solution(self.defn), is_reference=True)
        if self.sol.spec.language.value == "cuda" and self.device.type != "cuda":
            raise Stop(
                Status.COMPILE_ERROR,
                f"solution {self.sol.name!r} is written in CUDA and needs a CUDA device; "
                f"this evaluation runs on {self.device.type}",
            )
        self.solution = self._built(self.sol, is_reference=False)

    def _built(self, sol: Solution, *, is_reference: bool) -> Built:
        key = ("ref:" if is_reference else "sol:") + sol.content_hash + ":" + interpreter_mode()
        hit = self.cache.solutions.get(key)
        if hit is None:
            try:
                hit = build_solution(
                    sol, cuda_ok=self.device.type == "cuda", lock_timeout_s=self.settings.timeouts.compile_s
                )
            except BuildError as e:
                # A compiled build that failed is deterministic and costly: keep the failure.
                # Python imports are cheap and retried every time.
                if sol.spec.entry_file.endswith(".py"):
                    raise self._build_stop(e, is_reference, cached=False) from None
                hit = e
            self.cache.solutions[key] = hit
        else:
            self.cache.hits["solution"] += 1
        if isinstance(hit, BuildError):
            raise self._build_stop(hit, is_reference, cached=True)
        return hit

    def _build_stop(self, e: BuildError, is_reference: bool, *, cached: bool) -> Stop:
        again = " (this build failed earlier in this process and is not retried)" if cached else ""
        if is_reference:
            return Stop(
                Status.RUNTIME_ERROR,
                f"the reference of definition {self.defn.name!r} cannot be loaded: {e}{again}",
                e.log,
            )
        return Stop(Status.COMPILE_ERROR, f"{e}{again}", e.log)

    # ---- inputs and the reference ----------------------------------------------------

    def _inputs(self, index: int) -> InputSet:
        try:
            inputs = make_inputs(self.defn, self.wl, self.seed, index, self.device, self.task.dataset_root)
        except InputError as e:
            raise Stop(Status.RUNTIME_ERROR, f"cannot make inputs: {e}") from None
        self._check_constraints(inputs)
        return inputs

    def _check_constraints(self, inputs: InputSet) -> None:
        names: dict[str, object] = {**self.axes, **inputs.values}
        for text in self.defn.constraints or []:
            try:
                ok = evaluate_constraint(text, names)
            except ConstraintError as e:
                raise Stop(Status.RUNTIME_ERROR, f"constraint {text!r} cannot be evaluated: {e}") from None
            if ok:
                continue
            used = sorted(constraint_inputs(text, set(self.in_names)))
            randoms = [n for n in used if isinstance(self.wl.inputs.get(n), RandomInput)]
            hint = (
                f"; inputs {', '.join(randoms)} are random, and random values cannot satisfy a "
                "constraint on tensor values: give them as safetensors inputs in the workload"
                if randoms
                else ""
            )
            raise Stop(
                Status.RUNTIME_ERROR,
                f"constraint {text!r} does not hold on input set {inputs.index}{hint}",
            )

    def _clone_args(self, inputs: InputSet) -> list[object]:
        return [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs.args(self.in_names)]

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def _reference_outputs(self, inputs: InputSet) -> list[torch.Tensor]:
        key = (self.def_key, self.wl_key, self.seed, inputs.index, str(self.device))
        hit = self.cache.reference_outputs.get(key)
        if hit is not None:
            self.cache.hits["reference_output"] += 1
            return hit
        args = self._clone_args(inputs)
        value = self._call_reference(inputs.index, *args)
        outs = normalize_outputs(value, self.out_names)
        if isinstance(outs, Mismatch):
            raise Stop(Status.RUNTIME_ERROR, f"the reference {outs.message}")
        problem = check_reference(outs, self.defn, self.axes)
        if problem:
            raise Stop(Status.RUNTIME_ERROR, f"{problem} (input set {inputs.index})")
        for name, arg in zip(self.in_names, args):
            orig = inputs.values[name]
            if (
                name not in self.ref_mutated
                and isinstance(arg, torch.Tensor)
                and isinstance(orig, torch.Tensor)
            ) and not torch.equal(bits(arg), bits(orig)):
                self.ref_mutated.append(name)
                self.cache.mutating_references[self.def_key] = list(self.ref_mutated)
        tensors = [o for o in outs if isinstance(o, torch.Tensor)]
        self.cache.reference_outputs.put(key, tensors, nbytes(tensors))
        return tensors

    # ---- the solution ------------------------------------------------------------------

    def _fill_slot(self, slot: int, inputs: InputSet) -> None:
        """Copy an input set into the slot's fixed buffers (allocated on first use)."""
        while len(self.slots) <= slot:
            self.slots.append({})
            self.slot_outs.append([])
        buffers = self.slots[slot]
        for name in self.in_names:
            value = inputs.values[name]
            if isinstance(value, torch.Tensor):
                buf = buffers.get(name)
                if not isinstance(buf, torch.Tensor):
                    buf = torch.empty_like(value)
                    buffers[name] = buf
                buf.copy_(value)
            else:
                buffers[name] = value
        if self.dps and not self.slot_outs[slot]:
            for name, spec in self.defn.outputs.items():
                shape = self.defn.resolve_shape(spec, self.axes) or ()
                self.slot_outs[slot].append(
                    torch.empty(shape, dtype=torch_dtype(spec.dtype.value), device=self.device)
                )

    def _call(self, slot: int) -> object:
        assert self.solution is not None
        args = [self.slots[slot][n] for n in self.in_names]
        if self.dps:
            outs = self.slot_outs[slot]
            self.solution.fn(*args, *outs)
            return list(outs)
        return self.solution.fn(*args)

    def _outputs_of(self, value: object) -> list[object]:
        if self.dps:
            assert isinstance(value, list)
            return value
        outs = normalize_outputs(value, self.out_names)
        if isinstance(outs, Mismatch):
            raise Stop(outs.status, f"the solution {outs.message}")
        return outs

    def _solution_failed(self, e: BaseException, where: str) -> Stop:
        self._note_sticky(e)
        text = str(e)
        if _BUILD_FAILED_AT_CALL in text:
            return Stop(
                Status.COMPILE_ERROR, f"the solution's extension failed to build ({where})", traceback_text(e)
            )
        return Stop(
            Status.RUNTIME_ERROR,
            f"the solution raised {type(e).__name__} ({where}): {text}",
            traceback_text(e),
        )

    def _call_reference(self, index: int, *args: object, **kwargs: object) -> object:
        """The reference's value on input set ``index`` (synchronized); its failure is a
        RUNTIME_ERROR that names the definition and the input set."""
        assert self.reference is not None
        try:
            with pinned_flags(self.flags), torch.no_grad():
                value = self.reference.fn(*args, **kwargs)
                self._sync()
        except Exception as e:  # noqa: BLE001 - any failure of the reference is reported
            self._note_sticky(e)
            raise Stop(
                Status.RUNTIME_ERROR,
                f"the reference of {self.defn.name!r} raised {type(e).__name__} on input set {index}: {e}",
                traceback_text(e),
            ) from None
        return value

    def _note_sticky(self, e: BaseException) -> None:
        if self.device.type != "cuda":
            return
        if sticky_cuda_error(str(e)) is not None:
            self.cache.fatal_error = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:200]}"

    def _check(self, got: object, expected: list[torch.Tensor], where: str) -> None:
        outs = self._outputs_of(got)
        mismatch = compare_outputs(outs, expected, self.defn, self.axes, self.tol, self.stats, where)
        if mismatch is not None:
            correctness = self._correctness() if mismatch.status is Status.INCORRECT_NUMERICAL else None
            raise Stop(mismatch.status, mismatch.message, correctness=correctness)

    def _correctness(self) -> Correctness:
        return Correctness(max_absolute_error=self.stats.max_abs, max_relative_error=self.stats.max_rel)

    def correctness(self) -> None:
        n_slots = self.settings.input_sets
        for trial in range(self.settings.trials):
            inputs = self._inputs(trial)
            expected = self._reference_outputs(inputs)
            slot = trial % n_slots
            self._fill_slot(slot, inputs)
            for out in self.slot_outs[slot]:
                _poison(out)
            try:
                with torch.no_grad():
                    got = self._call(slot)
                    self._sync()
            except Exception as e:  # noqa: BLE001 - any failure of the kernel is a status
                raise self._solution_failed(e, f"trial {trial}") from None
            self._check(got, expected, f"trial {trial}")
            self._note_mutation(slot, inputs)
            del inputs

    def _note_mutation(self, slot: int, inputs: InputSet) -> None:
        for name in self.in_names:
            value, now = inputs.values[name], self.slots[slot][name]
            if (
                name in self.mutated
                or not isinstance(value, torch.Tensor)
                or not isinstance(now, torch.Tensor)
            ):
                continue
            if not torch.equal(bits(value), bits(now)):
                self.mutated.append(name)
        if self.mutated and not self.notes:
            self.notes.append(
                f"note: the solution writes into its input(s) {', '.join(self.mutated)}; they are "
                "restored before every timed call (outside the timed window)"
            )

    # ---- timing ------------------------------------------------------------------------

    def _flush(self) -> torch.Tensor | None:
        if self.device.type != "cuda":
            return None
        key = str(self.device)
        buf = self.cache.flush_buffers.get(key)
        if buf is None:
            buf = torch.empty(flush_bytes(self.device), dtype=torch.int8, device=self.device)
            self.cache.flush_buffers[key] = buf
        return buf

    def _time_reference(
        self, flush: torch.Tensor | None, restore: Callable[[int], None] | None
    ) -> TimingStats:
        try:
            with pinned_flags(self.flags), torch.no_grad():
                stats, _ = time_calls(
                    self._ref_call, self.settings.input_sets, self.settings, self.device, flush, restore
                )
        except Exception as e:  # noqa: BLE001
            self._note_sticky(e)
            raise Stop(
                Status.RUNTIME_ERROR,
                f"the reference raised {type(e).__name__} while timed: {e}",
                traceback_text(e),
            ) from None
        return stats

    # Hooks of the timing phase (the BackendBench path overrides them).

    def _prepare_timing(self, first: int, sets: int) -> list[object]:
        """Fill the slots with input sets ``first .. first + sets - 1``; their expected results."""
        keep = sorted(set(self.mutated) | set(self.ref_mutated))
        expected: list[object] = []
        for j in range(sets):
            inputs = self._inputs(first + j)
            expected.append(self._reference_outputs(inputs))
            self._fill_slot(j, inputs)
            if keep:
                kept = {n: inputs.values[n] for n in keep}
                self.pristine.append({n: v for n, v in kept.items() if isinstance(v, torch.Tensor)})
            del inputs
        return expected

    def _restore(self, k: int) -> None:
        """Put slot ``k``'s inputs back as they were made (outside the timed window)."""
        for name, value in self.pristine[k].items():
            buf = self.slots[k][name]
            assert isinstance(buf, torch.Tensor)
            buf.copy_(value)

    def _ref_call(self, k: int) -> object:
        assert self.reference is not None
        return self.reference.fn(*[self.slots[k][n] for n in self.in_names])

    def _ref_mutates(self) -> bool:
        return bool(self.ref_mutated)

    def _sol_mutates(self) -> bool:
        return bool(self.mutated)

    def _reset_outputs(self, sets: int) -> None:
        for j in range(sets):
            for out in self.slot_outs[j]:
                _poison(out)

    def _check_timed(self, got: object, expected: object, k: int, where: str) -> None:
        assert isinstance(expected, list)
        self._check(got, expected, where)

    def release(self) -> None:
        """Drop every buffer this evaluation holds."""
        self.slots.clear()
        self.slot_outs.clear()
        self.pristine.clear()

    def timing(self, nvml: Nvml) -> tuple[TimingStats, TimingStats, Clocks | None]:
        """Time the reference, then right after it the solution, on the same fresh input sets."""
        flush = self._flush()
        sets = self.settings.input_sets
        first = self.settings.trials  # timing sets are never the ones the trials used
        expected = self._prepare_timing(first, sets)
        ref_mutates = self._ref_mutates()
        ref_stats = self._time_reference(flush, self._restore if ref_mutates else None)
        if ref_mutates:
            for j in range(sets):
                self._restore(j)
        self._reset_outputs(sets)
        self._sync()
        before = nvml.read()
        try:
            with torch.no_grad():
                stats, last = time_calls(
                    self._call,
                    sets,
                    self.settings,
                    self.device,
                    flush,
                    self._restore if self._sol_mutates() else None,
                )
            self._sync()
        except Exception as e:  # noqa: BLE001
            raise self._solution_failed(e, "while timed") from None
        after = nvml.read()
        clocks = None
        if nvml.available:
            clocks = Clocks(
                sm_clock_mhz_before=before.sm_clock_mhz,
                sm_clock_mhz_after=after.sm_clock_mhz,
                sm_clock_mhz_max=nvml.max_sm_clock(),
                throttle_reasons_before=before.reasons,
                throttle_reasons_after=after.reasons,
            )
        for j in range(sets):
            try:
                self._check_timed(last[j], expected[j], j, f"last timed call on input set {first + j}")
            except Stop as stop:
                if stop.status is Status.INCORRECT_NUMERICAL:
                    stop.message += (
                        "; the outputs of timed calls differ from the reference although the "
                        "correctness trials passed: the solution may reuse results across calls "
                        "(caching by input address, or computing once)"
                    )
                raise
        return stats, ref_stats, clocks


def run_phases(run: Run, nvml: Nvml) -> Result:
    run.setup()
    run.build()
    run.correctness()
    stats, ref_stats, clocks = run.timing(nvml)
    latency = stats.p50_ms
    ref_latency = ref_stats.p50_ms
    speedup = ref_latency / latency if latency > 0 else 0.0
    summary = (
        f"PASSED: {run.settings.trials} trial(s) + {run.settings.input_sets} timed input set(s) match "
        f"the reference (max abs err {run.stats.max_abs:.3g}, max rel err {run.stats.max_rel:.3g}); "
        f"latency {latency:.4f} ms (median of {stats.iterations}, {stats.clock}), reference "
        f"{ref_latency:.4f} ms, speedup {speedup:.3f}x"
    )
    return Result(
        status=Status.PASSED,
        messages=[summary, *run.notes],
        correctness=run._correctness(),
        performance=Performance(latency_ms=latency, reference_latency_ms=ref_latency, speedup_factor=speedup),
        timing=stats,
        reference_timing=ref_stats,
        clocks=clocks,
    )
