"""What differs between the two kinds of workload: how inputs are made and how kernels are called.

The phases of an evaluation (:class:`~sweep.engine.run._phases.EvalRun`) are the same for every
task; a :class:`CallPath` supplies what depends on how the definition describes a call:

- ``_named_inputs.NamedInputs``: the normal path; the definition names its inputs and
  outputs, the workload gives each input, a solution may write its outputs into buffers it
  is given (destination-passing style);
- ``_aten_call.AtenCall``: an imported BackendBench operator; each workload holds the whole
  argument tree of one ATen call, and the solution is called like the operator.

A path holds the slots of the evaluation: fixed buffers that input sets are copied into in
place, so that trials and timed calls see the same addresses (which defeats caching by
address). It reaches the shared state and helpers (settings, cache, seed, the built
reference and solution, the error statistics, the notes) through the ``RunState`` it is made
with. Every method reports a problem by raising :class:`~sweep.engine.io._outcome.Stop` with
its status; any other exception is an engine bug.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sweep.engine.timing import Freshener

__all__ = ["CallPath"]


class CallPath(Protocol):
    """How one evaluation makes its inputs, calls the reference and the solution, and checks."""

    def setup(self) -> None:
        """Check what the task needs before anything is allocated on the device.

        Called by the setup phase after the checks every path makes (usable device, workload
        matching the definition). Must count the bytes the task needs (input sets, outputs,
        kept copies, the L2 flush buffer unless the cache holds one) and raise
        ``Stop(RUNTIME_ERROR)`` with the breakdown when they exceed the memory budget.
        Allocates nothing on the device.
        """
        ...

    def check_entry_point(self, fn: Callable[..., object]) -> str | None:
        """Why the built solution ``fn`` cannot be called as this path calls it, or ``None``.

        Called by the build phase once the reference and the solution are built. The
        returned text is reported as ``COMPILE_ERROR: entry point '<entry point>': <text>``.
        A problem of the solution's spec rather than of its signature is raised here as a
        ``Stop(COMPILE_ERROR)`` with a message of its own. Calls nothing.
        """
        ...

    def reference_trial(self, index: int) -> None:
        """The reference's side of correctness trial ``index`` (0-based), before the solution's
        module is imported: make input set ``index`` and keep the reference's result on a copy
        of it, for :meth:`trial`. Raises ``Stop`` when the inputs cannot be made or the
        reference fails (the evaluation flags it ``reference_failed``).
        """
        ...

    def trial(self, index: int) -> None:
        """Run correctness trial ``index`` (0-based), on input set ``index``.

        Must take the input set (made again, or from the cache) and the reference's result
        kept by :meth:`reference_trial`, copy the inputs into slot ``index % settings.input_sets``,
        call the solution there through ``EvalRun.call_solution`` (so its failures get their
        status), compare its result with the reference's (updating ``EvalRun.stats``;
        ``Stop`` with the mismatch's status otherwise), and record whether the solution
        wrote into its inputs, for :meth:`solution_mutates`. Holds no reference to the
        input set or the reference's result after it returns.
        """
        ...

    def prepare_timing(self, first: int, sets: int) -> None:
        """Fill slots ``0 .. sets - 1`` with the input sets ``first .. first + sets - 1``.

        Called twice: before the reference is timed, and again before the solution is (its
        trials used the slots since). Must keep a pristine copy of any input that the
        reference or the solution (as far as its trials showed) writes, for :meth:`restore`.
        """
        ...

    def varied(self) -> list[str]:
        """The inputs :meth:`vary` gives new values (drawn at random, and free of constraints
        on their values); empty when none qualifies."""
        ...

    def vary(self, slot: int, fresh: Freshener) -> None:
        """Give slot ``slot``'s :meth:`varied` inputs new values (``fresh``), in place; where a
        pristine copy is kept, draw into it and :meth:`restore` the slot from it.

        Called before every timed call, outside the timed window; must be capturable in a
        CUDA graph (device work only: no synchronization, no host copies).
        """
        ...

    def reference_mutates(self) -> bool:
        """Whether the reference writes into its inputs (so its timed calls need :meth:`restore`)."""
        ...

    def solution_mutates(self) -> bool:
        """Whether the solution wrote into its inputs in the trials (so its timed calls need
        :meth:`restore`)."""
        ...

    def restore(self, slot: int) -> None:
        """Put slot ``slot``'s inputs back as :meth:`prepare_timing` (or the last :meth:`vary`)
        made them, in place.

        Called between timed calls (outside the timed window) and after the reference's
        timing; only when :meth:`reference_mutates` or :meth:`solution_mutates` said so.
        """
        ...

    def call_reference(self, slot: int) -> object:
        """Call the reference on slot ``slot``'s inputs and return its value (timed: no
        synchronization, no copies, no checks)."""
        ...

    def call_solution(self, slot: int) -> object:
        """Call the solution on slot ``slot``'s inputs (and output buffers, if it writes into
        given ones) and return what :meth:`snapshot` and the trial check take as its result
        (timed: no synchronization, no copies, no checks)."""
        ...

    def reset_outputs(self, sets: int) -> None:
        """Fill the output buffers of slots ``0 .. sets - 1`` with values a correct kernel
        overwrites (before the solution's timed calls), if the path gives output buffers."""
        ...

    def snapshot(self, slot: int, got: object) -> object:
        """Copies of what checking the solution's call that just returned ``got`` on slot
        ``slot`` needs: the inputs it was called with (the pristine copies where kept, since
        it may have written the slot), its result, and the arguments it wrote.

        Device copies only, so that it can be captured in a CUDA graph.
        """
        ...

    def check_snapshot(self, snap: object, where: str) -> None:
        """Compute the reference's result on the inputs of ``snap`` (from :meth:`snapshot`)
        and compare the solution's with it, as a trial does; ``where`` names the call in
        messages. Raises ``Stop`` with the mismatch's status."""
        ...

    def release(self) -> None:
        """Drop every buffer the path holds (slots, pristine copies); called once at the end."""
        ...
