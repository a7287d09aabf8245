"""How long earlier evaluations took: what ``sweep launch`` orders a sweep's tasks by (longest first).

A trace's provenance brackets its evaluation as the process that owns the GPU saw it
(``started_at`` to ``finished_at``: the sandbox's time in the engine, the build included when
the sandbox had not built that solution yet, or the time until a crash or a deadline for a
failure trace). Traces without both times (imported from elsewhere) say nothing here.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

from sweep.errors import StoreError
from sweep.store.read._store import Store

__all__ = ["EarlierRun", "earlier_durations"]

# The latest duration of each (definition, solution, workload, parameter point), with the
# workload's size: the product of its axis values (1 for a workload without axes).
_SQL = """
SELECT definition, solution, workload_uuid, solution_params,
       coalesce(list_product(map_values(axes)), 1) AS size,
       arg_max(epoch(finished_at) - epoch(started_at), least(finished_at, ingested_at)) AS seconds
FROM traces
WHERE solution IS NOT NULL AND started_at IS NOT NULL AND finished_at >= started_at
  AND list_contains(?, definition)
GROUP BY definition, solution, workload_uuid, solution_params, size
"""


@dataclass(frozen=True)
class EarlierRun:
    """The latest duration of one definition, solution, workload and parameter point.

    Attributes:
        definition: The definition's name.
        solution: The solution's name.
        workload_uuid: The workload's uuid.
        params: The parameter point as canonical JSON (``sweep.schema.params.params_json``),
            ``None`` for a solution without parameters.
        size: The product of the workload's axis values.
        seconds: How long its latest evaluation took.
    """

    definition: str
    solution: str
    workload_uuid: str
    params: str | None
    size: float
    seconds: float


def earlier_durations(results_dir: Path, store_path: Path, definitions: Collection[str]) -> list[EarlierRun]:
    """The durations of earlier evaluations of ``definitions``, in the store or only in the
    JSONL logs of ``results_dir`` (none when neither exists yet).

    Args:
        results_dir: The results folder whose logs to read.
        store_path: The DuckDB file (may not exist yet).
        definitions: The definition names of interest (the tasks about to run).

    Raises:
        StoreError: The store cannot be read (newer than this code, or broken).
    """
    results_dir, store_path = Path(results_dir), Path(store_path)
    if not definitions or (not store_path.exists() and not (results_dir / "traces").is_dir()):
        return []
    try:
        with Store(store_path).session(results_dir) as s:
            rows = s.con.execute(_SQL, [sorted(definitions)]).fetchall()
    except StoreError as e:
        if "no trace logs" in str(e):
            return []
        raise
    return [
        EarlierRun(str(d), str(sol), str(wl), None if p is None else str(p), float(size), float(sec))
        for d, sol, wl, p, size, sec in rows
    ]
