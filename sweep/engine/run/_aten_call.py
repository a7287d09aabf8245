"""The BackendBench path: evaluating one traced ATen call (a ``backendbench_args`` workload).

An imported operator's definition declares no inputs or outputs: each workload holds the
whole argument tree of one call. :class:`AtenCall` is the call path of such a workload:
the phases, the timer, the statuses and the guarantees are those of every evaluation
(``_phases.RunState``); it supplies only what differs from named inputs
(``_named_inputs.NamedInputs``):

- setup: the bytes the call needs are counted from its lazy description (outputs from the
  operator's ``meta`` kernel, or assumed as large as the inputs when it has none) and
  compared with the budget before anything is allocated;
- build: the solution is called like the ATen operator (``destination_passing_style``
  false) and must accept the call's positional and keyword arguments;
- inputs: input set ``i`` is drawn with BackendBench's value policy from a host generator
  seeded with ``set_seed(seed, i, "call")``, so the same sweep seed gives the same values
  on any machine, then moved to the device (a ``cpu`` device in the trace stays on the host);
- each callee gets its own storage-preserving clone of the arguments (in-place and ``out=``
  operators write into them); the reference's result and the arguments it writes are kept
  per input set and compared with the solution's, tuples and lists element by element,
  non-tensor values exactly;
- a solution that writes into an argument the operator does not write is wrong
  (INCORRECT_NUMERICAL): an ATen drop-in must leave its other arguments as they were;
- tolerance: the per-dtype default of the loosest floating dtype among the reference's
  result tensors, then the per-definition, per-op_type and global overrides of the settings;
- random and uninitialised results, and the strides an in-place view operator sets, get
  their own checks (``_op_kinds``, ``_call_random``); a random operator's trials run with the
  default generators seeded from the input set (reference and solution apart), and put back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch

from sweep.engine.aten import (
    Args,
    CallSpec,
    OpKind,
    bind_problem,
    clone_call,
    compare_call,
    copy_into,
    describe_call,
    freshly_drawn,
    materialize,
    mutated_values,
    op_kind,
    output_bytes,
    seeded,
    storage_view,
    tensor_check,
    tensor_leaves,
    tree_tensors,
    under,
    written_paths,
)
from sweep.engine.io import MemoryPlan, Stop, set_seed, tolerance
from sweep.engine.timing import flush_bytes, memory_budget
from sweep.errors import SweepError
from sweep.schema import Status
from sweep.schema.op_tags import CALL_INPUT

if TYPE_CHECKING:
    from sweep.engine.run._run_state import RunState
    from sweep.engine.timing import Freshener

__all__ = ["AtenCall"]


_STATUS = {
    "shape": Status.INCORRECT_SHAPE,
    "dtype": Status.INCORRECT_DTYPE,
    "value": Status.INCORRECT_NUMERICAL,
    "structure": Status.INCORRECT_NUMERICAL,
}


@dataclass
class _Expected:
    """The reference's result on one input set, and the arguments it wrote (others ``None``)."""

    out: object
    args: list[Any]
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class _Snapshot:
    """A timed call's arguments before and after it and its result, copied for checking."""

    slot: int
    inputs: Args
    result: object
    after: Args


class AtenCall:
    """The call path of a traced ATen call (see the module docstring)."""

    def __init__(self, run: RunState) -> None:
        self.run = run
        self.call: CallSpec | None = None
        self.budget: int | None = None
        #: Slots: the solution's argument buffers, refilled in place for every input set (so
        #: trials and timed calls share addresses, which defeats caching by address), and
        #: pristine copies of the timing sets, to restore written arguments.
        self.calls: dict[int, Args] = {}
        self.kept: dict[int, Args] = {}
        #: The solution writes into its arguments (found in the trials).
        self.sol_writes = False
        self.first = 0  # the input set of timing slot 0
        self._tol: tuple[float, float] | None = None
        self._kind: OpKind | None = None
        #: The reference's result of each trial, computed before the solution's import.
        self.expected: dict[int, _Expected] = {}

    @property
    def spec(self) -> CallSpec:
        """The call, described on first use (the build phase may run without setup)."""
        if self.call is None:
            try:
                self.call = describe_call(self.run.defn, self.run.wl)
            except SweepError as e:
                raise Stop(
                    Status.RUNTIME_ERROR, f"cannot read the call of workload {self.run.wl.uuid}: {e}"
                ) from None
        return self.call

    @property
    def kind(self) -> OpKind:
        """Random, uninitialised or in-place view: how the results are checked."""
        if self._kind is None:
            self._kind = op_kind(self.spec)
        return self._kind

    def _rng(self, index: int, who: str) -> contextlib.AbstractContextManager[None]:
        """For a random operator, default generators seeded for ``who``'s call on input set
        ``index`` (restored after); for any other, nothing."""
        if not self.kind.random:
            return contextlib.nullcontext()
        return seeded(self.run.device, set_seed(self.run.seed, index, f"rng:{who}") & ((1 << 63) - 1))

    # ---- setup and build -------------------------------------------------------------

    def setup(self) -> None:
        run = self.run
        call = self.spec
        if self.kind.note:
            run.notes.append(self.kind.note)
        out_bytes, how = output_bytes(call)
        have_flush = str(run.device) in run.cache.flush_buffers
        plan = MemoryPlan(
            input_bytes=call.nbytes,
            output_bytes=out_bytes,
            input_sets=run.settings.input_sets,
            flush_bytes=0 if have_flush else flush_bytes(run.device),
            # Operators that write their arguments: a pristine copy per slot, and the
            # reference's written arguments kept for the comparison.
            kept_copies=2 if call.mutates else 0,
        )
        budget, source = memory_budget(run.settings.memory_budget_gb, run.device)
        if plan.total > budget:
            big = max(call.tensors(), key=lambda t: t.nbytes, default=None)
            largest = (
                f"; largest tensor T({list(big.shape)}, {big.dtype}) is {big.nbytes / (1 << 30):.3f} GiB"
                if big
                else ""
            )
            raise Stop(
                Status.RUNTIME_ERROR,
                f"task needs {plan.describe()} (output size {how}), over the memory "
                f"budget of {budget / (1 << 30):.3f} GiB ({source}){largest}; nothing was allocated. "
                "Raise evaluation.memory_budget_gb, lower evaluation.input_sets, or use a smaller workload",
            )
        self.budget = budget

    def check_entry_point(self, fn: Callable[..., object]) -> str | None:
        if self.run.dps:
            raise Stop(
                Status.COMPILE_ERROR,
                f"solution {self.run.sol.name!r} sets destination_passing_style, but a BackendBench operator "
                "is called like the ATen operator (arguments in, result returned): set it to false",
            )
        return bind_problem(fn, self.spec)

    # ---- inputs and the reference ----------------------------------------------------

    def _materialize(self, index: int) -> Args:
        """Input set ``index``, made once per process and shared read-only (callees get clones,
        slots get copies, kept timing sets are copies)."""
        run = self.run
        hit = run.cached_input_set(index, tuple)
        if hit is not None:
            return hit
        # A host generator: the same values on every machine, as on the normal path.
        gen = torch.Generator().manual_seed(set_seed(run.seed, index, CALL_INPUT))
        try:
            args = materialize(self.spec, gen, run.device, max_bytes=self.budget)
        except (SweepError, RuntimeError) as e:
            raise Stop(Status.RUNTIME_ERROR, f"cannot make input set {index}: {e}") from None
        leaves = [t for _, t in tensor_leaves(*args)]
        run.cache.input_sets.put(
            run.input_set_key(index), args, sum(t.numel() * t.element_size() for t in leaves)
        )
        return args

    def _fill(self, slot: int, args: Args) -> Args:
        """Slot ``slot``'s buffers holding a copy of ``args`` (allocated on first use)."""
        buf = self.calls.get(slot)
        if buf is None or not copy_into(buf, args):
            buf = clone_call(*args)
            self.calls[slot] = buf
        return buf

    def _declared(self) -> set[str]:
        """Paths of the arguments the operator writes (its schema, or as seen of the reference)."""
        dummy = (list(range(len(self.spec.args))), dict.fromkeys(self.spec.kwargs))
        return {p for p, _ in mutated_values(self.spec, *dummy)} | set(self.run.ref_mutated)

    def _expected(self, index: int, args: Args, *, cached: bool = True) -> _Expected:
        run = self.run
        key = (run.def_key, run.wl_key, run.seed, index, str(run.device))
        hit = run.cache.call_outputs.get(key) if cached else None
        if isinstance(hit, _Expected):
            run.cache.hits["call_output"] += 1
            return hit
        ra, rk = clone_call(*args)
        out = run.reference_value(index, *ra, **rk)
        for path in written_paths(args, (ra, rk)):
            if path not in run.ref_mutated:
                run.reference_wrote(path)
        declared = self._declared()
        # Keep only the arguments compared later (the operator's written ones), in place.
        expected = _Expected(
            out,
            [a if under(f"args[{i}]", declared) else None for i, a in enumerate(ra)],
            {k: v for k, v in rk.items() if under(f"kwargs[{k!r}]", declared)},
        )
        if not cached:
            return expected
        tensors = tree_tensors(out) + [t for _, t in tensor_leaves(expected.args, expected.kwargs)]
        run.cache.call_outputs.put(key, expected, sum(t.numel() * t.element_size() for t in tensors))
        return expected

    # ---- checking ------------------------------------------------------------------------

    def _tolerance(self, expected: _Expected) -> tuple[float, float]:
        if self._tol is None:
            atol = rtol = 0.0
            for t in tree_tensors(expected.out) + [
                t for _, t in tensor_leaves(expected.args, expected.kwargs)
            ]:
                a, r = tolerance(str(t.dtype).removeprefix("torch."), self.run.tol)
                atol, rtol = max(atol, a), max(rtol, r)
            self._tol = (atol, rtol)
        return self._tol

    def _verdict(self, got: object, args: Args, expected: _Expected, where: str) -> None:
        atol, rtol = self._tolerance(expected)
        check = tensor_check(self.kind, *args)
        v = compare_call(
            self.spec,
            (expected.out, expected.args, expected.kwargs),
            (got, *args),
            atol=atol,
            rtol=rtol,
            check=check,
        )
        self.run.stats.update(v.max_abs_error, v.max_rel_error)
        if v.ok:
            return
        status = _STATUS[v.kind]
        correctness = self.run.correctness_record() if status is Status.INCORRECT_NUMERICAL else None
        raise Stop(status, f"{v.path} ({where}): {v.detail}", correctness=correctness)

    def _check_writes(self, before: Args, after: Args, where: str) -> None:
        written = written_paths(before, after)
        declared = self._declared()
        stray = [p for p in written if not under(p, declared)]
        if stray:
            raise Stop(
                Status.INCORRECT_NUMERICAL,
                f"the solution wrote into {', '.join(stray)} ({where}), which "
                f"{self.spec.op or 'the operator'} leaves unchanged: an ATen operator must not "
                "modify arguments it does not write",
                correctness=self.run.correctness_record(),
            )
        if written:
            self.sol_writes = True

    def reference_trial(self, index: int) -> None:
        args = self._materialize(index)
        with self._rng(index, "reference"):
            self.expected[index] = self._expected(index, args)

    def trial(self, index: int) -> None:
        assert self.run.solution is not None
        args = self._materialize(index)
        expected = self.expected.pop(index, None)
        if expected is None:
            with self._rng(index, "reference"):
                expected = self._expected(index, args)
        slot = index % self.run.settings.input_sets
        sa, sk = self._fill(slot, args)
        with self._rng(index, "solution"):
            got = self.run.call_solution(self.call_solution, slot, f"trial {index}")
        self._verdict(got, (sa, sk), expected, f"trial {index}")
        self._check_writes(args, (sa, sk), f"trial {index}")
        del args, sa, sk, got

    # ---- timing (the phase itself is ``RunState.timing``) ---------------------------------

    def prepare_timing(self, first: int, sets: int) -> None:
        keep = self.reference_mutates() or self.sol_writes
        self.first = first
        self.kept = {}
        for j in range(sets):
            args = self._materialize(first + j)
            self._fill(j, args)
            if keep:
                # A copy: fresh values are drawn into it (``vary``), and the set is shared.
                self.kept[j] = clone_call(*args)

    def varied(self) -> list[str]:
        """The floating and complex tensors of the call (drawn at random by BackendBench's
        policy); integer and boolean ones may be indices or masks, and stay."""
        return [p for p, t in tensor_leaves(*self.calls[0]) if freshly_drawn(t)] if self.calls else []

    def vary(self, slot: int, fresh: Freshener) -> None:
        """New values, from the policy of ``_call_inputs`` (floats in [0, 1), complex parts in
        [-9, 9)), into the floating tensors of the slot (or of its pristine copy)."""
        target = self.kept.get(slot) or self.calls[slot]
        for _, t in tensor_leaves(*target):
            if freshly_drawn(t):
                fresh.uniform(
                    storage_view(t), -9.0 if t.is_complex() else 0.0, 9.0 if t.is_complex() else 1.0
                )
        if slot in self.kept:
            self.restore(slot)

    def restore(self, slot: int) -> None:
        if not copy_into(self.calls[slot], self.kept[slot]):
            raise Stop(
                Status.RUNTIME_ERROR,
                f"cannot restore the arguments of input set {slot} before a timed call: a callee "
                "replaced the storage of an argument with a smaller one, or changed its dtype",
            )

    def call_reference(self, slot: int) -> object:
        reference = self.run.reference
        assert reference is not None
        args, kwargs = self.calls[slot]
        return reference.fn(*args, **kwargs)

    def call_solution(self, slot: int) -> object:
        solution = self.run.solution
        assert solution is not None
        args, kwargs = self.calls[slot]
        return solution.fn(*args, **kwargs)

    def reference_mutates(self) -> bool:
        return bool(self.spec.mutates) or bool(self.run.ref_mutated)

    def solution_mutates(self) -> bool:
        return self.sol_writes

    def reset_outputs(self, sets: int) -> None:
        pass  # results are returned, never written into buffers of ours

    def snapshot(self, slot: int, got: object) -> object:
        before, keep = self.kept.get(slot) or self.calls[slot], self.kind.inplace_view  # as_strided_
        (result,), _ = clone_call([got], {}, offsets=keep)
        return _Snapshot(slot, clone_call(*before), result, clone_call(*self.calls[slot], offsets=keep))

    def check_snapshot(self, snap: object, where: str) -> None:
        assert isinstance(snap, _Snapshot)
        expected = self._expected(self.first + snap.slot, snap.inputs, cached=False)
        self._verdict(snap.result, snap.after, expected, where)

    def release(self) -> None:
        self.calls.clear()
        self.kept.clear()
        self.expected.clear()
