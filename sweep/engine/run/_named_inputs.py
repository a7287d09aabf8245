"""The normal path: a definition that names its inputs and outputs.

Input set ``i`` holds a value per named input (``_inputs.make_inputs``); the definition's
constraints must hold on it. The reference runs on a clone of the inputs; its outputs are
checked against the definition and cached per input set. The solution runs on slot
buffers refilled in place; with ``destination_passing_style`` it writes its outputs into
buffers of the slot, filled before each call with values a correct kernel overwrites.
Inputs that the solution or the reference writes into are found by comparing bytes and
restored before timed calls (outside the timed window).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from sweep.engine.builds import check_signature
from sweep.engine.io import (
    INT_RANGE_BITS,
    ConstraintError,
    InputError,
    InputSet,
    Mismatch,
    Stop,
    bits,
    check_reference,
    compare_outputs,
    constraint_inputs,
    evaluate_constraint,
    is_sequence,
    make_inputs,
    memory_plan,
    nbytes,
    normalize_outputs,
    torch_dtype,
)
from sweep.engine.timing import flush_bytes, memory_budget
from sweep.schema import RandomInput, Status

if TYPE_CHECKING:
    from sweep.engine.run._run_state import RunState
    from sweep.engine.timing import Freshener

__all__ = ["NamedInputs"]


@dataclass(frozen=True)
class _Snapshot:
    """A timed call's inputs and result, copied for checking (``NamedInputs.snapshot``)."""

    slot: int
    inputs: list[object]
    result: object


def _clone_result(value: object) -> object:
    if isinstance(value, torch.Tensor):
        return value.clone()
    if isinstance(value, list):
        return [_clone_result(v) for v in value]
    if is_sequence(value):  # a tuple, or a tvm-ffi Array
        return tuple(_clone_result(v) for v in value)
    return value


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


class NamedInputs:
    """The call path of a workload of named inputs (see the module docstring)."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.in_names = list(run.defn.inputs)
        self.out_names = list(run.defn.outputs)
        self.axes = {**run.wl.axes, **run.defn.const_axes()}
        self.slots: list[dict[str, object]] = []
        self.slot_outs: list[list[torch.Tensor]] = []
        #: Inputs the solution writes into (found in the trials), restored before timed calls.
        self.mutated: list[str] = []
        self.pristine: list[dict[str, torch.Tensor]] = []
        self.first = 0  # the input set of timing slot 0
        self._varied = self.varied()
        #: The reference's outputs of each trial, computed before the solution's import.
        self.expected: dict[int, list[torch.Tensor]] = {}

    # ---- setup and build -------------------------------------------------------------

    def setup(self) -> None:
        run = self.run
        for name, spec in run.defn.outputs.items():
            try:
                torch_dtype(spec.dtype.value)
            except InputError as e:
                raise Stop(Status.RUNTIME_ERROR, f"output {name!r}: {e}") from None
        have_flush = str(run.device) in run.cache.flush_buffers
        plan = memory_plan(
            run.defn, run.wl, run.settings.input_sets, 0 if have_flush else flush_bytes(run.device)
        )
        budget, source = memory_budget(run.settings.memory_budget_gb, run.device)
        if plan.total > budget:
            raise Stop(
                Status.RUNTIME_ERROR,
                f"task needs {plan.describe()}, over the memory budget of {budget / (1 << 30):.3f} GiB "
                f"({source}); nothing was allocated. Raise evaluation.memory_budget_gb, lower "
                "evaluation.input_sets, or use a smaller workload",
            )

    def check_entry_point(self, fn: Callable[..., object]) -> str | None:
        return check_signature(fn, self.run.defn, self.run.dps)

    # ---- inputs and the reference ----------------------------------------------------

    def _inputs(self, index: int) -> InputSet:
        run = self.run
        hit = run.cached_input_set(index, InputSet)
        if hit is not None:
            return hit
        try:
            inputs = make_inputs(run.defn, run.wl, run.seed, index, run.device, run.task.dataset_root)
        except InputError as e:
            raise Stop(Status.RUNTIME_ERROR, f"cannot make inputs: {e}") from None
        self._check_constraints(inputs)
        tensors = [v for v in inputs.values.values() if isinstance(v, torch.Tensor)]
        run.cache.input_sets.put(run.input_set_key(index), inputs, nbytes(tensors))
        return inputs

    def _check_constraints(self, inputs: InputSet) -> None:
        names: dict[str, object] = {**self.axes, **inputs.values}
        for text in self.run.defn.constraints or []:
            try:
                ok = evaluate_constraint(text, names)
            except ConstraintError as e:
                raise Stop(Status.RUNTIME_ERROR, f"constraint {text!r} cannot be evaluated: {e}") from None
            if ok:
                continue
            used = sorted(constraint_inputs(text, set(self.in_names)))
            randoms = [n for n in used if isinstance(self.run.wl.inputs.get(n), RandomInput)]
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

    def _reference_outputs(self, inputs: InputSet) -> list[torch.Tensor]:
        run = self.run
        key = (run.def_key, run.wl_key, run.seed, inputs.index, str(run.device))
        hit = run.cache.reference_outputs.get(key)
        if hit is not None:
            run.cache.hits["reference_output"] += 1
            return hit
        args = self._clone_args(inputs)
        value = run.reference_value(inputs.index, *args)
        outs = normalize_outputs(value, self.out_names)
        if isinstance(outs, Mismatch):
            raise Stop(Status.RUNTIME_ERROR, f"the reference {outs.message}")
        problem = check_reference(outs, run.defn, self.axes)
        if problem:
            raise Stop(Status.RUNTIME_ERROR, f"{problem} (input set {inputs.index})")
        for name, arg in zip(self.in_names, args):
            orig = inputs.values[name]
            if (
                name not in run.ref_mutated
                and isinstance(arg, torch.Tensor)
                and isinstance(orig, torch.Tensor)
            ) and not torch.equal(bits(arg), bits(orig)):
                run.reference_wrote(name)
        tensors = [o for o in outs if isinstance(o, torch.Tensor)]
        run.cache.reference_outputs.put(key, tensors, nbytes(tensors))
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
        run = self.run
        if run.dps and not self.slot_outs[slot]:
            for name, spec in run.defn.outputs.items():
                shape = run.defn.resolve_shape(spec, self.axes) or ()
                self.slot_outs[slot].append(
                    torch.empty(shape, dtype=torch_dtype(spec.dtype.value), device=run.device)
                )

    def call_solution(self, slot: int) -> object:
        solution = self.run.solution
        assert solution is not None
        args = [self.slots[slot][n] for n in self.in_names]
        if self.run.dps:
            outs = self.slot_outs[slot]
            solution.fn(*args, *outs)
            return list(outs)
        return solution.fn(*args)

    def _outputs_of(self, value: object) -> list[object]:
        if self.run.dps:
            assert isinstance(value, list)
            return value
        outs = normalize_outputs(value, self.out_names)
        if isinstance(outs, Mismatch):
            raise Stop(outs.status, f"the solution {outs.message}")
        return outs

    def _check(self, got: object, expected: list[torch.Tensor], where: str) -> None:
        run = self.run
        outs = self._outputs_of(got)
        mismatch = compare_outputs(outs, expected, run.defn, self.axes, run.tol, run.stats, where)
        if mismatch is not None:
            correctness = run.correctness_record() if mismatch.status is Status.INCORRECT_NUMERICAL else None
            raise Stop(mismatch.status, mismatch.message, correctness=correctness)

    def reference_trial(self, index: int) -> None:
        self.expected[index] = self._reference_outputs(self._inputs(index))

    def trial(self, index: int) -> None:
        inputs = self._inputs(index)
        expected = self.expected.pop(index, None)
        if expected is None:
            expected = self._reference_outputs(inputs)
        slot = index % self.run.settings.input_sets
        self._fill_slot(slot, inputs)
        for out in self.slot_outs[slot]:
            _poison(out)
        got = self.run.call_solution(self.call_solution, slot, f"trial {index}")
        self._check(got, expected, f"trial {index}")
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
        if self.mutated and not self.run.notes:
            self.run.notes.append(
                f"note: the solution writes into its input(s) {', '.join(self.mutated)}; they are "
                "restored before every timed call (outside the timed window)"
            )

    # ---- timing ------------------------------------------------------------------------

    def prepare_timing(self, first: int, sets: int) -> None:
        """Fill the slots with input sets ``first .. first + sets - 1``, keeping pristine copies
        of the inputs a callee writes."""
        keep = sorted(set(self.mutated) | set(self.run.ref_mutated))
        self.first = first
        self.pristine = []
        for j in range(sets):
            inputs = self._inputs(first + j)
            self._fill_slot(j, inputs)
            if keep:
                kept = {n: inputs.values[n] for n in keep}
                # Copies: fresh values are drawn into them (``vary``), and the set's own
                # tensors are the engine cache's, read by later tasks.
                self.pristine.append({n: v.clone() for n, v in kept.items() if isinstance(v, torch.Tensor)})
            del inputs

    def varied(self) -> list[str]:
        """The inputs drawn at random that no constraint of the definition reads."""
        constrained: set[str] = set()
        for text in self.run.defn.constraints or []:
            try:
                constrained |= constraint_inputs(text, set(self.in_names))
            except ConstraintError:
                constrained |= set(self.in_names)
        return [
            n
            for n in self.in_names
            if isinstance(self.run.wl.inputs.get(n), RandomInput) and n not in constrained
        ]

    def vary(self, slot: int, fresh: Freshener) -> None:
        """New values, from the policy of ``_inputs`` (floats in [-1, 1), integers in
        [0, 16), booleans a coin), into the slot's varied inputs (or their pristine copies)."""
        kept = self.pristine[slot] if self.pristine else {}
        for name in self._varied:
            target = kept.get(name)
            if target is None:
                target = self.slots[slot][name]  # type: ignore[assignment]
            assert isinstance(target, torch.Tensor)
            if target.is_floating_point() or target.is_complex():
                fresh.uniform(target, -1.0, 1.0)
            else:
                fresh.uniform(target, 0, 1 << INT_RANGE_BITS)
        if kept:
            self.restore(slot)

    def restore(self, slot: int) -> None:
        """Put slot ``slot``'s inputs back as they were made (outside the timed window)."""
        for name, value in self.pristine[slot].items():
            buf = self.slots[slot][name]
            assert isinstance(buf, torch.Tensor)
            buf.copy_(value)

    def call_reference(self, slot: int) -> object:
        reference = self.run.reference
        assert reference is not None
        return reference.fn(*[self.slots[slot][n] for n in self.in_names])

    def reference_mutates(self) -> bool:
        return bool(self.run.ref_mutated)

    def solution_mutates(self) -> bool:
        return bool(self.mutated)

    def reset_outputs(self, sets: int) -> None:
        for j in range(sets):
            for out in self.slot_outs[j]:
                _poison(out)

    def snapshot(self, slot: int, got: object) -> object:
        kept = self.pristine[slot] if self.pristine else {}
        inputs = [kept.get(n, self.slots[slot][n]) for n in self.in_names]
        return _Snapshot(
            slot,
            [v.clone() if isinstance(v, torch.Tensor) else v for v in inputs],
            _clone_result(got),
        )

    def check_snapshot(self, snap: object, where: str) -> None:
        assert isinstance(snap, _Snapshot)
        index = self.first + snap.slot
        value = self.run.reference_value(index, *snap.inputs)
        expected = normalize_outputs(value, self.out_names)
        if isinstance(expected, Mismatch):
            raise Stop(Status.RUNTIME_ERROR, f"the reference {expected.message}")
        self._check(snap.result, [e for e in expected if isinstance(e, torch.Tensor)], where)

    def release(self) -> None:
        """Drop every buffer this evaluation holds."""
        self.slots.clear()
        self.slot_outs.clear()
        self.pristine.clear()
        self.expected.clear()
