"""``sweep eval``: one solution of one definition over its workloads, in this process (no Ray).

The in-process path of the launch stage: the plan stage picks the pair, the engine
evaluates each workload, the caller gets each trace as it is ready.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from sweep.errors import EngineError
from sweep.plan import select_pair
from sweep.schema import Ceilings, EvalSettings, Trace

__all__ = ["evaluate_from_dataset"]


def evaluate_from_dataset(
    roots: Sequence[str | Path],
    definition: str,
    solution: str,
    *,
    workload_ids: Sequence[str] = (),
    settings: EvalSettings | None = None,
    device: str | None = None,
    on_trace: Callable[[Trace], None] | None = None,
    ceilings: list[Ceilings] | None = None,
    on_warning: Callable[[str], None] | None = None,
) -> list[Trace]:
    """Evaluate one solution of one definition over its workloads, in this process.

    Safetensors inputs resolve against the root each workload came from; ``ceilings``
    (calibrations, :func:`sweep.store.load_calibrations`) give the fraction of peak on the
    hardware they measured.

    An imported ATen operator that this torch lacks, or has no kernel of for ``device``, is
    refused before anything is evaluated, as a launch leaves it out of its plan.

    The roots load as for a launch: each problem of a record is given to ``on_warning``,
    once, before anything runs, and the rest evaluates; a broken solution
    (:mod:`sweep.plan.broken`) gives a COMPILE_ERROR trace per workload, nothing of it run.

    Raises:
        DatasetError: A root cannot be loaded, or nothing of the roots can run.
        EngineError: Unknown names, an invalid/unavailable ``device``, or an operator this
            torch cannot run there.
    """
    pick = select_pair(roots, definition, solution, workload_ids)
    for warning in pick.warnings:
        if on_warning is not None:
            on_warning(warning)
    from sweep.engine import EngineCache, evaluate_pair, operator_problem

    problem = operator_problem(pick.definition, device or "auto")
    if problem:
        raise EngineError(f"definition {pick.definition.name!r} cannot be evaluated here: {problem}")

    settings = settings or EvalSettings()
    cache = EngineCache()
    traces: list[Trace] = []
    for wl, root in zip(pick.workloads, pick.roots):
        traces.extend(
            evaluate_pair(
                pick.definition,
                pick.solution,
                [wl],
                settings,
                dataset_root=str(root),
                device=device,
                cache=cache,
                on_trace=on_trace,
                ceilings=ceilings,
                broken=pick.broken,
            )
        )
    return traces
