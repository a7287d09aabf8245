"""The report's energy sections (``evaluation.energy``): energy per call and its speedup over
the reference, and the latency-energy Pareto front per definition and hardware. Shown only
when some trace carries energy (the views ``energy`` and ``energy_pareto``)."""

from __future__ import annotations

__all__ = ["ENERGY_SECTIONS"]

#: (title, SQL, note) of each section, in display order.
ENERGY_SECTIONS: list[tuple[str, str, str]] = [
    (
        "Energy per call (evaluation.energy)",
        """
SELECT definition, solution, hardware, count(*) AS workloads,
       median(energy_j) * 1000 AS median_energy_mj, median(ref_energy_j) * 1000 AS median_ref_energy_mj,
       exp(avg(ln(energy_speedup))) AS geomean_energy_speedup,
       exp(avg(ln(speedup_factor)) FILTER (WHERE speedup_factor > 0)) AS geomean_speedup,
       median(power_w) AS median_power_w, median(sm_clock_mhz) AS median_sm_clock_mhz
FROM energy
GROUP BY definition, solution, hardware
ORDER BY definition, hardware, geomean_energy_speedup DESC, solution""",
        (
            "Energy per call: NVML's energy counter over windows of at least 1 s of back-to-back calls, "
            "the idle power read just before subtracted (docs/energy.md). energy speedup: the reference's "
            "joules per call over the solution's (above 1: the solution costs less energy). power and SM "
            "clock: the solution's, over its energy window."
        ),
    ),
    (
        "Latency-energy Pareto front (per definition and hardware)",
        """
SELECT definition, hardware, solution, workloads, geomean_speedup, geomean_energy_speedup,
       CASE WHEN on_front THEN 'front' ELSE 'beaten by ' || dominated_by END AS pareto
FROM energy_pareto
ORDER BY definition, hardware, on_front DESC, geomean_speedup DESC, solution""",
        (
            "front: no other solution of the definition on that hardware is at least as fast and as "
            "frugal, and better on one (geometric means over its workloads of the speedup and the energy "
            "speedup; the reference sits at 1, 1). A solution faster but costlier in energy than another "
            "is on the front with it."
        ),
    ),
]
