"""What a long-lived evaluating process keeps between tasks. No torch import here.

One :class:`EngineCache` per process (the cluster's worker makes one and passes it to
every ``evaluate`` call). It holds:

- built solutions and references, by content hash: a solution is imported or compiled
  once per process, whatever the number of workloads;
- reference outputs, by (definition, workload, seed, input set, device), in an LRU capped
  in bytes: solutions of one definition share them (BackendBench calls, whose results are
  trees, in a second LRU of the same cap);
- which definitions' references write into their inputs (so their timed calls get
  restored inputs);
- the work (FLOPs, bytes) of each definition and workload, counted once;
- the environment record and the L2 flush buffer of each device;
- ``fatal_error``: set after a sticky CUDA error; the process must then be replaced.
- ``retire``: set when this process should be replaced after its current task although it
  can still evaluate (a failed CUDA-graph capture leaves torch's CUDA random generator in
  capture mode: a later task drawing random numbers on the GPU would fail for it).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    import torch

    from sweep.engine.builds import BuildError, Built
    from sweep.engine.run._work import Work
    from sweep.engine.timing import Nvml
    from sweep.schema import Environment

__all__ = ["EngineCache", "RefKey"]

#: (definition key, workload key, seed, input set index, device)
RefKey = tuple[str, str, int, int, str]

_V = TypeVar("_V")


@dataclass
class _Lru(Generic[_V]):
    max_bytes: int
    items: OrderedDict[RefKey, tuple[_V, int]] = field(default_factory=OrderedDict)
    nbytes: int = 0

    def get(self, key: RefKey) -> _V | None:
        hit = self.items.get(key)
        if hit is None:
            return None
        self.items.move_to_end(key)
        return hit[0]

    def put(self, key: RefKey, value: _V, size: int) -> None:
        if size > self.max_bytes:
            return
        old = self.items.pop(key, None)
        if old is not None:
            self.nbytes -= old[1]
        self.items[key] = (value, size)
        self.nbytes += size
        while self.nbytes > self.max_bytes and self.items:
            _, (_, dropped) = self.items.popitem(last=False)
            self.nbytes -= dropped

    def clear(self) -> None:
        self.items.clear()
        self.nbytes = 0


class EngineCache:
    """Caches reused across evaluations in one process (see the module docstring).

    Args:
        max_reference_bytes: Cap on the bytes of cached reference outputs (they live on
            the device they were computed on, so this is device memory on a GPU).
    """

    def __init__(self, max_reference_bytes: int = 2 << 30, max_input_bytes: int = 1 << 30) -> None:
        self.solutions: dict[str, Built | BuildError] = {}
        self.reference_outputs: _Lru[list[torch.Tensor]] = _Lru(max_reference_bytes)
        #: (definition key, workload key, seed, input set, device) -> the input set's values.
        #: Making them is seeded host work (tens of ms for millions of elements); every point of
        #: a parameter sweep and every solution of a definition reads the same sets. Read only:
        #: calls get copies (slots, clones).
        self.input_sets: _Lru[object] = _Lru(max_input_bytes)
        #: The BackendBench path's reference results (output and written arguments), same key.
        self.call_outputs: _Lru[object] = _Lru(max_reference_bytes)
        #: Definition key -> inputs its reference writes into.
        self.mutating_references: dict[str, list[str]] = {}
        #: (definition key, workload key) -> the work of one call (``_work.count_work``).
        self.work: dict[tuple[str, str], Work] = {}
        self.environments: dict[str, Environment] = {}
        self.flush_buffers: dict[str, torch.Tensor] = {}
        self.nvml_handles: dict[str, Nvml] = {}
        #: Why this process can no longer evaluate (a sticky CUDA error), or ``None``.
        self.fatal_error: str | None = None
        #: Why this process should be replaced after its current task (it can still evaluate).
        self.retire: str | None = None
        #: Counters, for tests and logs.
        self.hits: dict[str, int] = {"solution": 0, "reference_output": 0, "call_output": 0, "input_set": 0}

    def clear(self) -> None:
        """Drop everything cached (imported modules stay in ``sys.modules``)."""
        self.solutions.clear()
        self.reference_outputs.clear()
        self.input_sets.clear()
        self.call_outputs.clear()
        self.mutating_references.clear()
        self.work.clear()
        self.flush_buffers.clear()

    def __repr__(self) -> str:
        return (
            f"EngineCache(solutions={len(self.solutions)}, reference_outputs={len(self.reference_outputs.items)} "
            f"({self.reference_outputs.nbytes} bytes))"
        )
