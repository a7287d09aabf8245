"""A sweep's whole state as the store has it: per status, its tasks and how many one run made.

``sweep launch`` prints it after a resume, when the run's own counts cover only part of the
sweep.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from sweep.errors import SweepError
from sweep.store.db._connection import sql_literal
from sweep.store.db._newest import RANK_TIME
from sweep.store.read._query import query

__all__ = ["StatusCount", "sweep_state"]


@dataclass(frozen=True)
class StatusCount:
    """Tasks whose newest trace has this status, and how many of those ``run_id`` wrote."""

    tasks: int
    this_run: int


def sweep_state(
    store_path: Path, *, results_dir: Path, sweep: str, hardware: str, run_id: str
) -> dict[str, StatusCount] | None:
    """Per status, the tasks of ``sweep`` on ``hardware`` (as traces spell it, e.g.
    ``NVIDIA_H100``), by the newest trace of each; ``None`` when the store cannot be read."""
    sql = (
        f"SELECT status, count(*) AS tasks, count(*) FILTER (WHERE run_id = {sql_literal(run_id)}) AS now "
        f"FROM (SELECT task_id, arg_max(status, {RANK_TIME}) AS status, arg_max(run_id, {RANK_TIME}) AS run_id "
        f"FROM traces WHERE task_id IS NOT NULL AND sweep = {sql_literal(sweep)} AND hardware = {sql_literal(hardware)} "
        "GROUP BY task_id) GROUP BY status ORDER BY status"
    )
    try:
        rows = query(store_path, sql, results_dir=results_dir).rows
    except SweepError:
        return None
    return {str(r[0]): StatusCount(int(str(r[1])), int(str(r[2]))) for r in rows}
