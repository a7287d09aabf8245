"""The ``compare`` view: per task of a sweep, its latest run against the run before.

A task is (sweep, definition, solution name, workload, hardware). Its runs are the distinct
``run_id`` of its traces (the newest trace of each); run ``b`` is the newest, run ``a`` the
one before, so a resumed or partly re-run sweep still compares each task with its own last
result. ``ratio`` is ``latency_ms_b / latency_ms_a`` when both passed.

``verdict`` follows ``sweep compare``'s rule for one number per side
(:func:`sweep.store.db._compare_stats.verdict`) with the default 5% threshold: ``same`` within
it; ``noisy`` when the change is inside ``z * sqrt(rel_error_a^2 + rel_error_b^2)`` (the
timer's relative standard errors; unknown noise skips this step); else ``faster`` or
``slower``; ``failed`` when a side did not pass. ``sweep compare run:A run:B`` uses the
timed samples as well, and a threshold of your choice.
"""

from __future__ import annotations

from sweep.store.db._compare_stats import Z95
from sweep.store.db._newest import NEWEST_FIRST

__all__ = ["COMPARE_VIEW"]

_THRESHOLD = 0.05

COMPARE_VIEW: tuple[str, str] = (
    "compare",
    f"""WITH per_run AS (
    SELECT * FROM traces
    WHERE solution IS NOT NULL AND sweep IS NOT NULL AND run_id IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY sweep, definition, solution, workload_uuid, hardware, run_id
        {NEWEST_FIRST}) = 1
), ranked AS (
    SELECT *, row_number() OVER (
        PARTITION BY sweep, definition, solution, workload_uuid, hardware
        {NEWEST_FIRST}) AS run_rank
    FROM per_run
), pairs AS (
    SELECT b.sweep, b.definition, b.op_type, b.solution, b.workload_uuid, b.axes, b.hardware,
           a.run_id AS run_id_a, b.run_id AS run_id_b,
           a.solution_hash AS solution_hash_a, b.solution_hash AS solution_hash_b,
           a.status AS status_a, b.status AS status_b,
           CASE WHEN a.status = 'PASSED' THEN a.latency_ms END AS latency_ms_a,
           CASE WHEN b.status = 'PASSED' THEN b.latency_ms END AS latency_ms_b,
           latency_ms_b / nullif(latency_ms_a, 0) AS ratio,
           a.timing_rel_error AS rel_error_a, b.timing_rel_error AS rel_error_b,
           {Z95} * sqrt(a.timing_rel_error ^ 2 + b.timing_rel_error ^ 2) AS noise,
           a.trace_key AS trace_key_a, b.trace_key AS trace_key_b
    FROM ranked b JOIN ranked a
      ON a.run_rank = 2 AND b.run_rank = 1
     AND a.sweep = b.sweep AND a.definition = b.definition AND a.solution = b.solution
     AND a.workload_uuid = b.workload_uuid AND a.hardware = b.hardware
)
SELECT *,
       CASE WHEN ratio IS NULL OR ratio <= 0 THEN 'failed'
            WHEN abs(ln(ratio)) <= ln(1 + {_THRESHOLD}) THEN 'same'
            WHEN noise IS NOT NULL AND abs(ln(ratio)) <= noise THEN 'noisy'
            WHEN ratio > 1 THEN 'slower'
            ELSE 'faster' END AS verdict
FROM pairs""",
)
