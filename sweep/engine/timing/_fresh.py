"""Fresh input values for every timed call, and which timed calls are checked again.

A kernel can serve a timed call from a result it remembers instead of computing it: keyed
by the inputs' address, by a call count, or by the inputs' content (a fingerprint of a few
elements, read on the host or compared on the device, with no host synchronization).
Rotating over a few input sets does not stop the last kind, because the remembered outputs
are right. So:

- before every timed call (outside the timed window, before the L2 flush), the inputs
  drawn at random get new values, drawn on the device from the same distribution as the
  input set's own (:class:`Freshener`; each path decides which of its inputs qualify):
  no timed call sees values an earlier call saw, and a content cache never hits. The seed of
  these draws (and of :class:`CheckSchedule`) is new in each evaluation, while the input
  sets' is the workload's: a cache kept in a file, from an earlier task of the same workload
  (another launch, another parameter point), does not hit either;
- the outputs of a random sample of timed calls (:class:`CheckSchedule`: one call at a
  random place in each doubling window, calls 1, 2-3, 4-7, 8-15, ...) are compared with
  the reference's result on that call's own inputs, as is the last timed call on each
  input set: a kernel that returns stale results (cached by address or by call count, or
  by a fingerprint that the fresh values happen to match) fails.

The cost of a fresh draw is one random-number kernel per varied input (about a copy of
its bytes); with CUDA graphs it is captured with the call and subtracted with the flush.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import torch

__all__ = ["CheckSchedule", "Freshener", "Rechecks"]


def _hash(seed: int, *parts: object) -> int:
    text = "\x1f".join(str(p) for p in (seed, *parts))
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


class Freshener:
    """Draws new values into tensors in place, on their device, from a generator of its own
    seeded from the evaluation's seed.

    The generator is not the device's default one: a solution's random draws do not shift
    it, and a failed CUDA-graph capture, which can leave a generator in capture mode, is
    followed by :meth:`renew`. CUDA graphs that draw must be given it (:meth:`register`), so
    that each replay draws new values.
    """

    def __init__(self, device: torch.device, seed: int, stream: str = "") -> None:
        self.device = device
        self.seed = seed
        self.stream = stream  # one freshener per side of a pair: each side's draws its own
        self.renewals = 0
        self.gen = self._generator()

    def _generator(self) -> torch.Generator:
        seed = _hash(self.seed, "fresh", self.stream, self.renewals) & ((1 << 63) - 1)
        return torch.Generator(device=self.device).manual_seed(seed)

    def renew(self) -> None:
        """A new generator (after a failed capture, which may have left this one unusable)."""
        self.renewals += 1
        self.gen = self._generator()

    def register(self, graph: torch.cuda.CUDAGraph) -> None:
        """Let ``graph`` draw from this generator (before its capture begins); a torch
        without graph-safe generators fails the capture instead, and the events timer runs."""
        register = getattr(graph, "register_generator_state", None)
        if register is not None:
            register(self.gen)

    def uniform(self, t: torch.Tensor, low: float, high: float) -> None:
        """Floating (and complex: both parts) values uniform in ``[low, high)``; integers
        uniform in ``[low, high)``; booleans a fair coin."""
        if t.numel() == 0:
            return
        if t.dtype == torch.bool:
            t.random_(0, 2, generator=self.gen)
        elif t.is_complex():
            if t.dtype == torch.complex32:
                t.copy_(self._complex64(t.shape, low, high, t.device))
            else:
                torch.view_as_real(t).uniform_(low, high, generator=self.gen)
        elif t.is_floating_point():
            if t.element_size() == 1:  # float8: no random kernels of its own
                wide = torch.empty(t.shape, dtype=torch.float32, device=t.device)
                t.copy_(wide.uniform_(low, high, generator=self.gen))
            else:
                t.uniform_(low, high, generator=self.gen)
        else:
            t.random_(int(low), int(high), generator=self.gen)

    def _complex64(self, shape: torch.Size, low: float, high: float, device: torch.device) -> torch.Tensor:
        pairs = torch.empty((*shape, 2), dtype=torch.float32, device=device)
        return torch.view_as_complex(pairs.uniform_(low, high, generator=self.gen))


class CheckSchedule:
    """Which timed calls (or graph replays) are checked: one at a random place in each
    doubling window of their 1-based count (1, 2-3, 4-7, ...), fixed by the seed, so a
    kernel cannot tell which; about ``log2(calls)`` checks in all."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def due(self, n: int) -> bool:
        """Whether call (or replay) number ``n`` (1-based) is checked."""
        if n < 1:
            return False
        j = n.bit_length() - 1  # n is in [2**j, 2**(j + 1))
        return n == (1 << j) + _hash(self.seed, "window", j) % (1 << j)

    def pick(self, calls: int) -> int:
        """The iteration (0-based) of a captured graph of ``calls`` calls whose result is
        kept for checking."""
        return _hash(self.seed, "graph", calls) % max(1, calls)


class Rechecks:
    """Checks of timed calls (see the module's docstring): ``snapshot(slot, result)`` copies
    what a check needs (device copies only), ``check(snapshot, where)`` compares it with the
    reference (raising ``Stop``).

    The copies are taken right after a due call, outside its timed window, and checked once
    the batch is over (:meth:`settle`), so a check never drains the device in the middle of
    a batch. The reference is timed with a ``check`` of ``None``: the same copies at the
    same calls, never checked, so both sides of a speedup pay the same side work.
    """

    def __init__(
        self,
        schedule: CheckSchedule,
        snapshot: Callable[[int, object], object],
        check: Callable[[object, str], None] | None,
        first: int,
    ) -> None:
        self.schedule = schedule
        self.snapshot = snapshot
        self.check = check
        self.first = first  # the input set of slot 0, for messages
        self.count = 0
        self.pending: list[tuple[object, str]] = []

    def after_call(self, n: int, slot: int, result: object) -> None:
        """After timed call ``n`` (1-based) on ``slot`` returned ``result``: copy what its
        check needs if it is due."""
        if self.schedule.due(n):
            where = f"timed call {n}, on input set {self.first + slot}"
            self.pending.append((self.snapshot(slot, result), where))

    def settle(self) -> None:
        """Check the copies taken since the last call (the device must be done with them)."""
        pending, self.pending = self.pending, []
        for snap, where in pending:
            self.verify(snap, where)

    def verify(self, snap: object, where: str) -> None:
        """Check a snapshot now (the caller is outside any timed window)."""
        if self.check is None:
            return
        self.count += 1
        self.check(snap, where)
