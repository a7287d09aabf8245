"""The store's views and macros, as SQL: what SQL users query besides the tables.

In dependency order (:data:`VIEW_DEPENDS` says which each reads), over evaluated traces only
(workload-only records live in ``workloads``). ``_schema.py`` creates them.
"""

from __future__ import annotations

from sweep.store.db._compare_view import COMPARE_VIEW
from sweep.store.db._energy_views import ENERGY_DEPENDS, energy_views
from sweep.store.db._newest import NEWEST_FIRST
from sweep.store.db._score_views import IS_SECRET, SCORE_VIEW_DEPENDS, score_views

__all__ = [
    "CURRENT",
    "MACROS",
    "RANKED",
    "SOLUTION_KEY",
    "VIEWS",
    "VIEW_DEPENDS",
    "VIEW_NAMES",
    "leaderboard_sql",
]

# A trace that is ranked and counted in pass rates: not flagged 'impossible' (latency under the
# physical floor), nor 'reference_failed' (the reference raised, timed out or crashed: not the
# solution's failure, counted apart).
RANKED = "NOT coalesce(list_contains(flags, 'impossible') OR list_contains(flags, 'reference_failed'), false)"

#: The identity of a solution across stores: its content hash when known, else its name.
SOLUTION_KEY = "coalesce(solution_hash, 'name:' || solution)"
_SOL_KEY = SOLUTION_KEY

#: The traces every ranking reads: ``latest``, each solution (definition and name) at its
#: current version only (``current_versions``). An edited solution keeps its name and gets a
#: new content hash; without this, both versions would rank, count and average together.
CURRENT = "current_traces"

# Newest first: the time a trace claims, never later than when it was stored (_newest.py).
_NEWEST = NEWEST_FIRST

# A public run (no secret mixed into its inputs): the public views rank only these; the secret
# runs of the same task are kept apart in ``latest`` and ranked by ``secret_leaderboard``.
_PUBLIC = f"NOT {IS_SECRET}"


def leaderboard_sql(source: str) -> str:
    """The ``leaderboard`` view's body over ``source`` (a relation with the columns of
    ``latest``): the view reads :data:`CURRENT`; ``sweep report --all-versions`` reads every
    version, each labelled."""
    return f"""WITH per_solution AS (
SELECT definition, any_value(op_type) AS op_type, solution, solution_hash,
       any_value(author) AS author, any_value(language) AS language, hardware,
       count(*) AS traces, count(*) FILTER (WHERE status = 'PASSED') AS passed, passed / traces AS pass_rate,
       exp(avg(ln(speedup_factor)) FILTER (WHERE status = 'PASSED' AND speedup_factor > 0))
           AS geomean_speedup,
       bool_and(status = 'PASSED') AS op_correct,
       exp(avg(ln(CASE WHEN status = 'PASSED' AND speedup_factor > 0 THEN speedup_factor
                       ELSE 1.0 END))) AS op_speedup,
       op_correct AND op_speedup > 1.0 AS perf_at_1,
       passed AS passed_rows, traces - passed AS failed_rows, op_speedup AS bb_speedup_failures_as_1
FROM {source}
WHERE {RANKED} AND {_PUBLIC}
GROUP BY definition, solution, solution_hash, hardware
)
SELECT *, row_number() OVER (
    PARTITION BY definition, hardware
    ORDER BY op_correct DESC, pass_rate DESC, geomean_speedup DESC NULLS LAST, solution ASC) AS rank
FROM per_solution"""


#: (name, body) of every view, in dependency order. Over evaluated traces only (workload-only
#: records live in ``workloads``).
VIEWS: list[tuple[str, str]] = [
    (
        "latest",
        f"""SELECT * FROM traces
QUALIFY row_number() OVER (
    PARTITION BY definition, {_SOL_KEY}, coalesce(solution_params, ''), workload_uuid, hardware,
    coalesce(settings_hash, ''), {IS_SECRET} {_NEWEST}) = 1""",
    ),
    (
        # The one definition of a solution's current version: per definition and solution
        # name, the identity (content hash, else name) of its newest trace, as every view
        # ranks (_newest.py). ``versions`` counts the identities the name has had.
        "current_versions",
        f"""SELECT definition, solution,
       first({_SOL_KEY} {_NEWEST}) AS solution_key,
       first(solution_hash {_NEWEST}) AS solution_hash,
       count(DISTINCT {_SOL_KEY}) AS versions
FROM traces
GROUP BY definition, solution""",
    ),
    (
        # ``latest`` at each solution's current version only: what the rankings, scores and
        # the report read, so an edited solution is one row, with its new figures.
        CURRENT,
        """SELECT l.* FROM latest l
SEMI JOIN current_versions v
  ON l.definition = v.definition AND l.solution = v.solution
 AND coalesce(l.solution_hash, 'name:' || l.solution) = v.solution_key""",
    ),
    (
        "best",
        f"""SELECT definition, op_type, workload_uuid, axes, hardware, solution, solution_hash,
       author, language, latency_ms, reference_latency_ms, speedup_factor, settings_hash,
       timestamp, trace_key, tflops, gbps, peak_fraction, flags
FROM current_traces
WHERE status = 'PASSED' AND {RANKED} AND {_PUBLIC}
QUALIFY row_number() OVER (
    PARTITION BY definition, workload_uuid, hardware ORDER BY latency_ms ASC, solution ASC) = 1""",
    ),
    (
        # Newest trace per hardware regardless of settings, so clusters whose settings differ
        # slightly still line up; the settings hashes are shown so a mismatch is visible.
        # pair_key stands for (definition, solution hash or name, parameter point, workload)
        # (_schema.pair_key_sql). The newest trace of each pair key and hardware, and their
        # pairs, are kept by every insert of traces (_cross_hardware.py, schema 7): a query
        # reads those pairs instead of ranking every trace and joining them again.
        "cross_hardware",
        """SELECT definition, op_type, solution, solution_hash, workload_uuid, axes, hardware_a, hardware_b,
       status_a, status_b, latency_ms_a, latency_ms_b, latency_ms_b / nullif(latency_ms_a, 0) AS latency_ratio,
       speedup_a, speedup_b, speedup_b / nullif(speedup_a, 0) AS speedup_ratio,
       settings_hash_a, settings_hash_b, trace_key_a, trace_key_b
FROM cross_hardware_pairs""",
    ),
    (
        # Parameter sweeps: the fastest PASSED point per (definition, solution, workload,
        # hardware, settings), its speedup over the solution's default point (the first value
        # of every list of its declared params, from the solutions table; NULL when that point
        # has no PASSED trace) and over the reference.
        "best_params",
        f"""WITH defaults AS (
    SELECT solution_hash, '{{' || string_agg(
        to_json(k)::VARCHAR || ':' || json_extract(record, '$.params."' || k || '"[0]')::VARCHAR, ','
        ORDER BY k) || '}}' AS default_params
    FROM (SELECT DISTINCT solution_hash, record::VARCHAR AS record, unnest(json_keys(record, '$.params')) AS k
          FROM solutions WHERE json_type(record, '$.params') = 'OBJECT')
    GROUP BY solution_hash
), points AS (
    SELECT * FROM current_traces WHERE solution_params IS NOT NULL AND status = 'PASSED' AND {RANKED} AND {_PUBLIC}
), fastest AS (
    SELECT *, count(*) OVER w AS points_passed FROM points
    WINDOW w AS (PARTITION BY definition, {_SOL_KEY}, workload_uuid, hardware, coalesce(settings_hash, ''))
    QUALIFY row_number() OVER (
        PARTITION BY definition, {_SOL_KEY}, workload_uuid, hardware, coalesce(settings_hash, '')
        ORDER BY latency_ms ASC, solution_params ASC) = 1
)
SELECT f.definition, f.op_type, f.solution, f.solution_hash, f.workload_uuid, f.axes, f.hardware,
       f.solution_params AS best_params, f.latency_ms, d.default_params,
       p.latency_ms AS default_latency_ms, p.latency_ms / nullif(f.latency_ms, 0) AS speedup_over_default,
       f.reference_latency_ms, f.speedup_factor AS speedup_over_reference, f.points_passed,
       f.settings_hash, f.trace_key
FROM fastest f
LEFT JOIN defaults d ON d.solution_hash = f.solution_hash
LEFT JOIN points p
  ON p.definition = f.definition AND p.solution_hash = f.solution_hash AND p.workload_uuid = f.workload_uuid
 AND p.hardware = f.hardware AND coalesce(p.settings_hash, '') = coalesce(f.settings_hash, '')
 AND p.solution_params = d.default_params""",
    ),
    (
        # BackendBench per solution (one op): correct when every workload passed; op_speedup
        # (= bb_speedup_failures_as_1) counts failed workloads as 1.0. rank: correctness first
        # (all passed, pass rate, then speedup over PASSED). 'impossible' and 'reference_failed'
        # traces left out.
        "leaderboard",
        leaderboard_sql(CURRENT),
    ),
    (
        # Per (author, op, hardware): the author's best solution, as BackendBench scores a
        # backend; solutions, failed_solutions, passed_rows, failed_rows count all of them.
        "op_scores",
        """SELECT coalesce(author, '(unknown)') AS author, hardware, definition, op_type,
       solution, op_correct AS correct, op_speedup AS speedup, pass_rate,
       op_speedup AS bb_speedup_failures_as_1, geomean_speedup AS geomean_speedup_passed,
       count(*) OVER w AS solutions,
       count(*) FILTER (WHERE NOT op_correct) OVER w AS failed_solutions,
       sum(passed_rows) OVER w AS passed_rows, sum(failed_rows) OVER w AS failed_rows
FROM leaderboard
WINDOW w AS (PARTITION BY coalesce(author, '(unknown)'), hardware, definition)
QUALIFY row_number() OVER (
    PARTITION BY coalesce(author, '(unknown)'), hardware, definition
    ORDER BY op_correct DESC, op_speedup DESC, solution ASC) = 1""",
    ),
    (
        # BackendBench per backend (author), beside the failures; geomean_speedup (=
        # bb_speedup_failures_as_1) counts failures as 1.0, speedup_correct_ops does not.
        "backend_scores",
        """SELECT author, hardware, count(*) AS ops, count(*) FILTER (WHERE correct) AS correct_ops,
       avg(CASE WHEN correct THEN 1.0 ELSE 0.0 END) AS correctness_rate,
       exp(avg(ln(speedup))) AS geomean_speedup,
       avg(CASE WHEN correct AND speedup > 1.0 THEN 1.0 ELSE 0.0 END) AS perf_at_1,
       ops - correct_ops AS failed_ops, avg(pass_rate) AS bb_correctness_score, geomean_speedup AS bb_speedup_failures_as_1,
       exp(avg(ln(speedup)) FILTER (WHERE correct AND speedup > 0)) AS speedup_correct_ops,
       sum(passed_rows)::BIGINT AS passed_rows, sum(failed_rows)::BIGINT AS failed_rows,
       sum(failed_solutions)::BIGINT AS failed_solutions
FROM op_scores
GROUP BY author, hardware""",
    ),
    COMPARE_VIEW,  # latest run against the previous one, per task of a sweep
    *score_views(RANKED),  # what a solution set does to a model, fast_p, win@p, secret runs
    *energy_views(RANKED),  # energy per call and the latency-energy Pareto front
]

VIEW_NAMES: list[str] = [name for name, _ in VIEWS]

#: The views (or macros) each view reads, to create only what a query needs.
VIEW_DEPENDS: dict[str, list[str]] = {
    "latest": [],
    "current_versions": [],
    CURRENT: ["latest", "current_versions"],
    "best": [CURRENT],
    "cross_hardware": [],
    "best_params": [CURRENT],
    "leaderboard": [CURRENT],
    "op_scores": ["leaderboard"],
    "backend_scores": ["op_scores"],
    "perf_at": ["op_scores"],
    "compare": [],
    **SCORE_VIEW_DEPENDS,
    **ENERGY_DEPENDS,
}

#: Table macros. ``perf_at(p)``: BackendBench's perf@p per backend (author) and hardware.
MACROS: list[str] = [
    """CREATE OR REPLACE MACRO perf_at(p) AS TABLE
SELECT author, hardware, count(*) AS ops,
       avg(CASE WHEN correct AND speedup > p THEN 1.0 ELSE 0.0 END) AS perf_at_p
FROM op_scores
GROUP BY author, hardware"""
]
