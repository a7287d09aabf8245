"""The views of energy per call (``evaluation.energy``), read from the trace record's JSON.

No column of ``traces`` holds energy: the figures are extracted from ``record`` here, so
stores written before energy was measured need no migration, and traces without energy
simply do not appear.

- ``energy``: per ranked PASSED trace of ``current_traces`` (``latest`` at current versions) that carries both sides' joules per call:
  the solution's and the reference's energy per call, the energy speedup (reference over
  solution: above 1, the solution costs less energy), mean power and mean SM clock of each
  side's energy window, beside the latency and speedup;
- ``energy_pareto``: per definition, hardware and solution, the geometric means over its
  workloads of the speedup and the energy speedup, and whether it is on the latency-energy
  Pareto front of its definition and hardware (no other solution is at least as good on
  both and better on one); ``dominated_by`` names one that beats it. Both are ratios over the
  reference, so solutions measured on different workloads can still be set side by side
  (the reference itself sits at 1, 1). Figures within a relative :data:`PARETO_TIE` of each
  other are equal there: a geometric mean (``exp(avg(ln x))``) moves the last bits of a
  double, and no measurement of time or energy resolves a part in a billion.
"""

from __future__ import annotations

__all__ = ["ENERGY_DEPENDS", "PARETO_TIE", "energy_views"]

#: Relative difference under which two solutions' figures count as equal on the Pareto front.
PARETO_TIE = 1e-9


def _num(path: str) -> str:
    return f"TRY_CAST(json_extract(record, '$.evaluation.energy.{path}') AS DOUBLE)"


_ENERGY = """SELECT * FROM (
SELECT definition, op_type, workload_uuid, axes, hardware, solution, solution_hash, author,
       language, latency_ms, reference_latency_ms, speedup_factor,
       {sol_j} AS energy_j, {ref_j} AS ref_energy_j,
       ref_energy_j / nullif(energy_j, 0) AS energy_speedup,
       {sol_w} AS power_w, {ref_w} AS ref_power_w,
       {sol_mhz} AS sm_clock_mhz, {ref_mhz} AS ref_sm_clock_mhz,
       settings_hash, timestamp, trace_key
FROM current_traces
WHERE status = 'PASSED' AND {ranked}
) WHERE energy_j > 0 AND ref_energy_j > 0"""

_PARETO = """WITH per AS (
    SELECT definition, any_value(op_type) AS op_type, hardware, solution, solution_hash,
           count(*) AS workloads,
           exp(avg(ln(speedup_factor)) FILTER (WHERE speedup_factor > 0)) AS geomean_speedup,
           exp(avg(ln(energy_speedup))) AS geomean_energy_speedup,
           median(energy_j) AS median_energy_j, median(power_w) AS median_power_w
    FROM energy
    GROUP BY definition, hardware, solution, solution_hash
)
SELECT p.*, d.solution IS NULL AS on_front, d.solution AS dominated_by
FROM per p
LEFT JOIN LATERAL (
    SELECT q.solution FROM per q
    WHERE q.definition = p.definition AND q.hardware = p.hardware
      AND q.geomean_speedup >= p.geomean_speedup * (1 - {tie})
      AND q.geomean_energy_speedup >= p.geomean_energy_speedup * (1 - {tie})
      AND (q.geomean_speedup > p.geomean_speedup * (1 + {tie})
           OR q.geomean_energy_speedup > p.geomean_energy_speedup * (1 + {tie}))
    ORDER BY q.geomean_speedup * q.geomean_energy_speedup DESC, q.solution
    LIMIT 1
) d ON true"""


def energy_views(ranked: str) -> list[tuple[str, str]]:
    """(name, body) of the energy views, in dependency order (after ``latest``); ``ranked`` is
    the condition of a ranked trace (``_views.RANKED``)."""
    body = _ENERGY.format(
        sol_j=_num("solution.joules_per_call"),
        ref_j=_num("reference.joules_per_call"),
        sol_w=_num("solution.mean_power_w"),
        ref_w=_num("reference.mean_power_w"),
        sol_mhz=_num("solution.mean_sm_clock_mhz"),
        ref_mhz=_num("reference.mean_sm_clock_mhz"),
        ranked=ranked,
    )
    return [("energy", body), ("energy_pareto", _PARETO.format(tie=repr(PARETO_TIE)))]


#: The views each energy view reads.
ENERGY_DEPENDS: dict[str, list[str]] = {"energy": ["current_traces"], "energy_pareto": ["energy"]}
