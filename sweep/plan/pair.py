"""Picking one definition, one solution and its workloads out of dataset roots (for ``sweep eval``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sweep.errors import EngineError, did_you_mean, listing, shown
from sweep.plan.dataset import Dataset, load_runnable
from sweep.plan.selection import selectable_solutions
from sweep.schema import Definition, Solution, Workload

__all__ = ["PairSelection", "select_file_pair", "select_pair"]


@dataclass(frozen=True)
class PairSelection:
    """A definition, one of its solutions, the workloads to run and their dataset roots.

    ``broken``: why the solution cannot be evaluated (``Task.broken``: every trace is a
    COMPILE_ERROR), ``None`` for a valid one; ``warnings``: the dataset's other problems, to
    say once.
    """

    definition: Definition
    solution: Solution
    workloads: list[Workload]
    roots: list[Path]
    broken: str | None = None
    warnings: tuple[str, ...] = ()


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

    The roots load to run (:func:`~sweep.plan.dataset.load_runnable`): a record with problems
    elsewhere in them is a warning, and a broken solution is picked like any other (its traces
    are COMPILE_ERRORs).

    Raises:
        DatasetError: A root cannot be loaded, or nothing of the roots can run.
        EngineError: A name or uuid is unknown or ambiguous, or the solution belongs to
            another definition (or to no definition, for a broken file that names none).
    """
    ds = load_runnable(list(roots))
    solutions = selectable_solutions(ds)
    defn = ds.definitions.get(definition)
    if defn is None:
        failed = ds.failed_definitions.get(definition)
        why = f" (its file did not load: {failed})" if failed else did_you_mean(definition, ds.definitions)
        raise EngineError(f"no definition {shown(definition)} in {listing(str(r) for r in ds.roots)}{why}")
    sol = solutions.get(solution)
    if sol is None:
        mine = [n for n, s in solutions.items() if s.definition == definition]
        unplanned = ds.broken.get(solution)
        if unplanned is not None:  # a file that is no record and names no definition
            raise EngineError(
                f"solution {shown(solution)} cannot be evaluated: " + "; ".join(unplanned.messages)
            )
        raise EngineError(
            f"no solution {shown(solution)}{did_you_mean(solution, solutions)}; solutions of "
            f"{shown(definition)}: {listing(sorted(mine))}"
        )
    if sol.definition != definition:
        raise EngineError(
            f"solution {shown(solution)} is for definition {shown(sol.definition)}, not {shown(definition)}"
        )
    workloads, wl_roots = _workloads(ds, definition, workload_ids)
    broken = ds.broken.get(solution)
    return PairSelection(
        definition=defn,
        solution=sol,
        workloads=workloads,
        roots=wl_roots,
        broken=broken.reason if broken is not None else None,
        # The picked solution's own problems are in its traces; the rest is said once.
        warnings=tuple(e for e in ds.errors if broken is None or e not in broken.messages),
    )


def select_file_pair(
    roots: Sequence[str | Path],
    definition: str,
    files: Sequence[Path],
    workload_ids: Sequence[str] = (),
) -> PairSelection:
    """A definition of ``roots`` and a solution packed in memory from source ``files`` (as
    ``sweep new solution`` packs them: the language from the sources, the calling style from
    the entry point's signature), never written; its name is the entry file's stem.

    Raises:
        DatasetError: A root cannot be loaded, or the definition is not in it.
        ValidationError: A file cannot be read, or its entry point fits no calling style.
        EngineError: A workload uuid is unknown or ambiguous, or the definition has none.
    """
    from sweep.plan.new_records import pack_solution

    packed = pack_solution(
        [Path(r) for r in roots], definition, list(files), author="local", check_name=False
    )
    ds = load_runnable(list(roots))
    workloads, wl_roots = _workloads(ds, definition, workload_ids)
    return PairSelection(
        definition=ds.definitions[definition],
        solution=packed.solution,
        workloads=workloads,
        roots=wl_roots,
        warnings=tuple(ds.errors),
    )


def _workloads(
    ds: Dataset, definition: str, workload_ids: Sequence[str]
) -> tuple[list[Workload], list[Path]]:
    """The workloads of ``definition`` that ``workload_ids`` pick (all when empty) and their roots."""
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
    return workloads, [ds.root_of("workload", w.uuid) for w in workloads]
