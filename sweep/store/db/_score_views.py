"""The score views: what a set of solutions does to a model, the metrics people quote, and the
secret runs (docs/scores.md has every formula and where it comes from).

A *solution set* is an author (a backend, an agent, a person): the solutions that stand in
for the references together. The views read ``current_traces`` (``latest`` at each solution's current version: one trace per task, public and
secret runs kept apart) and are created by ``_schema.py`` with the others.

- ``workload_times``: per hardware, definition and workload, the workload's weight (how often
  the model calls it; 1 when the workload says nothing) and the reference's latency (the
  median over the newest public traces whose reference ran).
- ``time_share``: ``weight x reference latency`` and its share of all such time on the
  hardware, per workload and per definition.
- ``set_projection``: per solution set and workload, the set's fastest PASSED ranked latency,
  or the reference's where the set failed or never ran the workload (``outcome`` says which).
- ``definition_gain`` / ``projection``: those summed per definition / per set: covered time
  before and after, the covered speedup (Amdahl's covered part), the time still at the
  reference's because of failures or gaps.
- ``scores_at_p``: KernelBench's fast_p, FlashInfer-Bench's win@p (against the set named
  ``baseline``, else the fastest set) and the pass rate per set, hardware and p (for other p or
  another baseline, :func:`sweep.store.scores_at`).
- ``secret_leaderboard``: solutions ranked by their secret runs, only where every secret run
  passed, beside their public runs.
"""

from __future__ import annotations

from sweep.store.db._connection import sql_literal

__all__ = [
    "DEFAULT_BASELINE",
    "DEFAULT_PS",
    "IS_SECRET",
    "REFERENCE_BASELINE",
    "SCORE_VIEW_DEPENDS",
    "SET_KEY",
    "at_p_sql",
    "score_views",
]

#: True for a trace of a secret run (``--secret-file``): its provenance holds a commitment.
IS_SECRET = "(json_extract_string(record, '$.provenance.secret_commitment') IS NOT NULL)"

#: The solution set of a trace: its author.
SET_KEY = "coalesce(author, '(unknown)')"

#: The p of ``scores_at_p`` (thresholds on the speedup over the reference).
DEFAULT_PS: tuple[float, ...] = (0.0, 0.5, 0.8, 1.0, 1.2, 1.5, 2.0, 3.0)

_REF_FAILED = "coalesce(list_contains(flags, 'reference_failed'), false)"
_IMPOSSIBLE = "coalesce(list_contains(flags, 'impossible'), false)"

# A weight is a count of calls: a number >= 0; anything else (absent, null) counts as 1.
_WEIGHT = "greatest(coalesce(TRY_CAST(json_extract_string(record, '$.workload.weight') AS DOUBLE), 1.0), 0.0)"


#: The solution set whose latency is win@p's baseline where it ran (FlashInfer-Bench's default).
DEFAULT_BASELINE = "baseline"

#: The baseline name that means the reference's own latency in each trace.
REFERENCE_BASELINE = "reference"


def at_p_sql(ps: tuple[float, ...], baseline: str = DEFAULT_BASELINE) -> str:
    """The body of ``scores_at_p`` for thresholds ``ps`` (finite numbers, checked by callers).

    Per solution set and hardware, over the set's tasks (definition and workload pairs it has a
    newest public trace of, leaving out those whose reference failed: not the set's doing). A
    set's answer to a task is its fastest correct (PASSED, not 'impossible') trace.

    - ``fast_p``: KernelBench's fast_p, tasks where the answer's speedup over the reference is
      above p, over all of the set's tasks (failures in the denominator).
    - ``win_at_p``: FlashInfer-Bench's win@p, per workload against a baseline latency: the
      ``baseline`` set's answer where it has one, else the fastest answer of any set (that set
      is then not scored on the workload); ``reference`` as the baseline means the reference's
      latency. A win is ``baseline latency / answer latency > p``; a task without an answer
      loses. Over the set's tasks that have a baseline (``win_tasks``); NULL where none has.
    - ``pass_rate``: tasks with a correct answer, over the set's tasks.
    """
    values = ", ".join(f"({float(p)!r}::DOUBLE)" for p in ps)
    ok = f"status = 'PASSED' AND NOT {_IMPOSSIBLE}"
    if baseline.lower() == REFERENCE_BASELINE:
        base_ms, base_set = "b.reference_ms", "NULL"
    else:
        base_ms, base_set = "coalesce(b.named_ms, b.fastest_ms)", "coalesce(b.named_set, b.fastest_set)"
    named = f"lower(solution_set) = lower({sql_literal(baseline)}) AND best_ms IS NOT NULL"
    return f"""WITH tasks AS (
    SELECT {SET_KEY} AS solution_set, hardware, definition, workload_uuid,
           max(speedup_factor) FILTER (WHERE {ok}) AS speedup,
           min(latency_ms) FILTER (WHERE {ok} AND latency_ms > 0) AS best_ms,
           median(reference_latency_ms) FILTER (WHERE reference_latency_ms > 0) AS reference_ms,
           bool_or({ok}) AS correct
    FROM current_traces
    WHERE NOT {IS_SECRET} AND NOT {_REF_FAILED}
    GROUP BY ALL
), ranked AS (
    SELECT *, row_number() OVER (PARTITION BY hardware, definition, workload_uuid
                                 ORDER BY best_ms ASC NULLS LAST, solution_set) AS place
    FROM tasks
), bases AS (
    SELECT hardware, definition, workload_uuid,
           min(best_ms) FILTER (WHERE {named}) AS named_ms,
           min(solution_set) FILTER (WHERE {named}) AS named_set,
           min(best_ms) FILTER (WHERE place = 1) AS fastest_ms,
           min(solution_set) FILTER (WHERE place = 1 AND best_ms IS NOT NULL) AS fastest_set,
           median(reference_ms) AS reference_ms
    FROM ranked GROUP BY ALL
), against AS (
    SELECT t.solution_set, t.hardware, t.best_ms, {base_ms} AS base_ms
    FROM tasks t JOIN bases b USING (hardware, definition, workload_uuid)
    WHERE {base_ms} IS NOT NULL AND t.solution_set IS DISTINCT FROM {base_set}
), defs AS (
    SELECT solution_set, hardware, count(DISTINCT definition) AS definitions FROM tasks GROUP BY ALL
), ps(p) AS (VALUES {values}),
fast AS (
    SELECT t.solution_set, t.hardware, ps.p, count(*) AS tasks,
           avg(CASE WHEN t.correct AND t.speedup > ps.p THEN 1.0 ELSE 0.0 END) AS fast_p,
           avg(CASE WHEN t.correct THEN 1.0 ELSE 0.0 END) AS pass_rate
    FROM tasks t CROSS JOIN ps GROUP BY t.solution_set, t.hardware, ps.p
), wins AS (
    SELECT a.solution_set, a.hardware, ps.p, count(*) AS win_tasks,
           avg(CASE WHEN a.best_ms > 0 AND a.base_ms > 0 AND a.base_ms / a.best_ms > ps.p
                    THEN 1.0 ELSE 0.0 END) AS win_at_p
    FROM against a CROSS JOIN ps GROUP BY a.solution_set, a.hardware, ps.p
)
SELECT f.solution_set, f.hardware, f.p, f.tasks, d.definitions, f.fast_p, w.win_at_p,
       coalesce(w.win_tasks, 0) AS win_tasks, f.pass_rate
FROM fast f JOIN defs d USING (solution_set, hardware)
LEFT JOIN wins w USING (solution_set, hardware, p)"""


def score_views(ranked: str) -> list[tuple[str, str]]:
    """(name, body) of the score views, in dependency order (after ``latest``).

    Args:
        ranked: SQL true for a trace that is ranked (``_views.RANKED``, its one home).
    """
    return [
        (
            "workload_times",
            f"""SELECT hardware, definition, any_value(op_type) AS op_type, workload_uuid,
       max({_WEIGHT}) AS weight,
       median(reference_latency_ms) FILTER (WHERE reference_latency_ms > 0 AND NOT {_REF_FAILED})
           AS reference_ms
FROM current_traces
WHERE NOT {IS_SECRET}
GROUP BY hardware, definition, workload_uuid""",
        ),
        (
            "time_share",
            """SELECT hardware, definition, op_type, workload_uuid, weight, reference_ms,
       weight * reference_ms AS weighted_ms,
       weight * reference_ms / nullif(sum(weight * reference_ms) OVER (PARTITION BY hardware), 0) AS share,
       sum(weight * reference_ms) OVER (PARTITION BY hardware, definition)
           / nullif(sum(weight * reference_ms) OVER (PARTITION BY hardware), 0) AS definition_share
FROM workload_times
WHERE reference_ms IS NOT NULL""",
        ),
        (
            "set_projection",
            f"""WITH sets AS (
    SELECT DISTINCT {SET_KEY} AS solution_set, hardware FROM current_traces WHERE NOT {IS_SECRET}
), runs AS (
    SELECT {SET_KEY} AS solution_set, hardware, definition, workload_uuid, count(*) AS traces,
           min(latency_ms) FILTER (WHERE status = 'PASSED' AND {ranked} AND latency_ms > 0) AS best_ms,
           arg_min(solution, latency_ms) FILTER (WHERE status = 'PASSED' AND {ranked} AND latency_ms > 0)
               AS solution
    FROM current_traces WHERE NOT {IS_SECRET}
    GROUP BY ALL
)
SELECT s.solution_set, w.hardware, w.definition, w.op_type, w.workload_uuid, w.weight, w.reference_ms,
       r.solution, r.best_ms AS solution_ms,
       CASE WHEN r.traces IS NULL THEN 'not_run' WHEN r.best_ms IS NULL THEN 'failed' ELSE 'passed' END
           AS outcome,
       w.weight * w.reference_ms AS reference_weighted_ms,
       w.weight * coalesce(r.best_ms, w.reference_ms) AS projected_weighted_ms
FROM sets s
JOIN workload_times w ON w.hardware = s.hardware AND w.reference_ms IS NOT NULL
LEFT JOIN runs r ON r.solution_set = s.solution_set AND r.hardware = w.hardware
                AND r.definition = w.definition AND r.workload_uuid = w.workload_uuid""",
        ),
        (
            "definition_gain",
            """WITH d AS (
    SELECT solution_set, hardware, definition, any_value(op_type) AS op_type, count(*) AS workloads,
           count(*) FILTER (WHERE outcome = 'passed') AS passed,
           count(*) FILTER (WHERE outcome = 'failed') AS failed,
           count(*) FILTER (WHERE outcome = 'not_run') AS not_run,
           sum(reference_weighted_ms) AS reference_ms, sum(projected_weighted_ms) AS projected_ms
    FROM set_projection GROUP BY ALL
)
SELECT *, reference_ms / nullif(projected_ms, 0) AS speedup,
       reference_ms - projected_ms AS saved_ms,
       reference_ms / nullif(sum(reference_ms) OVER w, 0) AS time_share,
       (reference_ms - projected_ms) / nullif(sum(reference_ms) OVER w, 0) AS gain_of_covered,
       (reference_ms - projected_ms) / nullif(sum(reference_ms - projected_ms) OVER w, 0) AS share_of_gain
FROM d
WINDOW w AS (PARTITION BY solution_set, hardware)""",
        ),
        (
            "projection",
            """SELECT solution_set, hardware, count(*) AS workloads,
       count(DISTINCT definition) AS definitions,
       count(*) FILTER (WHERE outcome = 'passed') AS passed,
       count(*) FILTER (WHERE outcome = 'failed') AS failed,
       count(*) FILTER (WHERE outcome = 'not_run') AS not_run,
       sum(reference_weighted_ms) AS covered_reference_ms,
       sum(projected_weighted_ms) AS covered_projected_ms,
       sum(reference_weighted_ms) / nullif(sum(projected_weighted_ms), 0) AS covered_speedup,
       coalesce(sum(reference_weighted_ms) FILTER (WHERE outcome <> 'passed'), 0)
           / nullif(sum(reference_weighted_ms), 0) AS share_at_reference_time
FROM set_projection
GROUP BY solution_set, hardware""",
        ),
        ("scores_at_p", at_p_sql(DEFAULT_PS)),
        (
            # Secret runs: per solution and hardware, its newest secret traces beside its public
            # ones; ranked (per definition and hardware) only where every secret run passed.
            "secret_leaderboard",
            f"""WITH runs AS (
    SELECT definition, solution, solution_hash, any_value(author) AS author, hardware, {IS_SECRET} AS secret,
           count(*) AS traces, count(*) FILTER (WHERE status = 'PASSED') AS passed,
           exp(avg(ln(speedup_factor)) FILTER (WHERE status = 'PASSED' AND speedup_factor > 0)) AS speedup
    FROM current_traces WHERE {ranked}
    GROUP BY definition, solution, solution_hash, hardware, secret
), joined AS (
    SELECT s.definition, s.solution, s.solution_hash, s.author, s.hardware,
           s.traces AS secret_traces, s.passed AS secret_passed, s.speedup AS secret_speedup,
           p.traces AS public_traces, p.passed AS public_passed, p.speedup AS public_speedup,
           s.passed = s.traces AS secret_all_passed
    FROM runs s
    LEFT JOIN runs p ON NOT p.secret AND p.definition = s.definition AND p.solution = s.solution
                    AND p.solution_hash IS NOT DISTINCT FROM s.solution_hash AND p.hardware = s.hardware
    WHERE s.secret
)
SELECT *, CASE WHEN secret_all_passed THEN row_number() OVER (
    PARTITION BY definition, hardware, secret_all_passed
    ORDER BY secret_speedup DESC NULLS LAST, solution ASC) END AS rank
FROM joined""",
        ),
    ]


#: The views (or macros) each score view reads.
SCORE_VIEW_DEPENDS: dict[str, list[str]] = {
    "workload_times": ["current_traces"],
    "time_share": ["workload_times"],
    "set_projection": ["current_traces", "workload_times"],
    "definition_gain": ["set_projection"],
    "projection": ["set_projection"],
    "scores_at_p": ["current_traces"],
    "secret_leaderboard": ["current_traces"],
}
