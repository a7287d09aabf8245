"""Picking one definition, one solution and its workloads out of dataset roots (for ``sweep eval``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sweep.errors import EngineError, did_you_mean, listing, shown
from sweep.plan.dataset import load_dataset
from sweep.schema import Definition, Solution, Workload

__all__ = ["PairSelection", "select_pair"]


@dataclass(frozen=True)
class PairSelection:
    """A definition, one of its solutions, the workloads to run and their dataset roots."""

    definition: Definition
    solution: Solution
    workloads: list[Workload]
    roots: list[Path]


def select_pair(
    roots: Sequence[str | Path],
    definition: str,
    solution: str,
    workload_ids: Sequence[str] = (),
) -> PairSelection:
    """Load ``roots`` and pick the pair.

    Args:
        roots: Dataset roots.
        definition: Definition name.
        solution: Solution name; it must be a solution of ``definition``.
        workload_ids: Workload uuids (or unique uuid prefixes); empty selects all.

    Raises:
        DatasetError: A root cannot be loaded.
        EngineError: A name or uuid is unknown or ambiguous, or the solution belongs to
            another definition.
    """
    ds = load_dataset(list(roots))
    defn = ds.definitions.get(definition)
    if defn is None:
        raise EngineError(
            f"no definition {shown(definition)} in {listing(str(r) for r in ds.roots)}"
            f"{did_you_mean(definition, ds.definitions)}"
        )
    sol = ds.solutions.get(solution)
    if sol is None:
        mine = [n for n, s in ds.solutions.items() if s.definition == definition]
        raise EngineError(
            f"no solution {shown(solution)}{did_you_mean(solution, ds.solutions)}; solutions of "
            f"{shown(definition)}: {listing(sorted(mine))}"
        )
    if sol.definition != definition:
        raise EngineError(
            f"solution {shown(solution)} is for definition {shown(sol.definition)}, not {shown(definition)}"
        )
    available = ds.workloads.get(definition, [])
    if not available:
        raise EngineError(f"definition {shown(definition)} has no workloads in the dataset roots")
    chosen: list[Workload] = []
    for wid in workload_ids:
        hits = [w for w in available if w.uuid == wid] or [w for w in available if w.uuid.startswith(wid)]
        if not hits:
            raise EngineError(
                f"definition {shown(definition)} has no workload {shown(wid)}"
                f"{did_you_mean(wid, [w.uuid for w in available])} "
                f"(it has: {listing(w.uuid[:8] for w in available)})"
            )
        if len(hits) > 1:
            raise EngineError(f"workload prefix {shown(wid)} is ambiguous: {listing(w.uuid for w in hits)}")
        chosen.append(hits[0])
    workloads = chosen or list(available)
    wl_roots = [ds.root_of("workload", w.uuid) for w in workloads]
    return PairSelection(definition=defn, solution=sol, workloads=workloads, roots=wl_roots)
