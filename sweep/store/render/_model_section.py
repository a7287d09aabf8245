"""The report's first section: what each solution set does to the model the store describes
(projected speedup, the definitions that take the most time and the share of the gain each
gives). The numbers are :func:`sweep.store.model_projection`'s; formulas in docs/scores.md."""

from __future__ import annotations

from sweep.store.read import Session
from sweep.store.scores import SET_SUMMARY_COLUMNS, ModelProjection, projection_of

__all__ = ["MODEL_TITLE", "model_rows"]

MODEL_TITLE = "What this does to my model (projected speedup per solution set)"
_TOP_TITLE = "Where the time goes (top definitions by time share, per solution set)"

_SET_COLUMNS = [*SET_SUMMARY_COLUMNS, "covered_reference_ms", "covered_projected_ms"]
_TOP_COLUMNS = [
    "solution_set",
    "hardware",
    "definition",
    "time_share",
    "definition_speedup",
    "gain_of_covered",
    "share_of_gain",
    "failed",
    "not_run",
]


def _set_note(p: ModelProjection) -> str:
    u = (
        f"end_to_end_speedup: 1 / (u + (1 - u) / covered_speedup) with u = {p.uncovered:g} of the time "
        "outside these kernels (--uncovered); bound: 1 / u, what making these kernels free would give. "
        if p.uncovered is not None
        else "end_to_end_speedup and bound: give --uncovered (the fraction of end-to-end time outside "
        "these kernels). "
    )
    return (
        "covered_speedup: the weighted reference time (weight = the workload's call count x the "
        "reference's latency, over the workloads stored for the hardware) over the same time with "
        "each workload at the set's fastest PASSED latency. Failed and never-run workloads count at the "
        "reference's time (failed, not_run; share_at_reference_time is their part of the covered time). "
        + u
        + "; ".join(n for n in p.notes if "no reference time" in n)
    ).strip()


def model_rows(
    s: Session, *, uncovered: float | None, top: int
) -> list[tuple[str, list[str], list[tuple[object, ...]], str]]:
    """``(title, columns, rows, note)`` of the section's two tables, from an open session."""
    p = projection_of(s, uncovered=uncovered, top=top)
    sets: list[tuple[object, ...]] = [
        (
            x.solution_set,
            x.hardware,
            x.covered_speedup,
            x.end_to_end_speedup,
            x.bound,
            x.passed,
            x.failed,
            x.not_run,
            x.share_at_reference_time,
            x.covered_reference_ms,
            x.covered_projected_ms,
        )
        for x in p.sets
    ]
    tops: list[tuple[object, ...]] = [
        (
            x.solution_set,
            x.hardware,
            g.definition,
            g.time_share,
            g.speedup,
            g.gain_of_covered,
            g.share_of_gain,
            g.failed,
            g.not_run,
        )
        for x in p.sets
        for g in x.top
    ]
    top_note = (
        f"Per set, its {top} definitions with the most reference time. time_share: the definition's part "
        "of the covered reference time, the most it could give; gain_of_covered: the time it saves over "
        "the covered reference time (how much of that possible gain it takes); share_of_gain: its part "
        "of all the time the set saves."
    )
    return [
        (MODEL_TITLE, list(_SET_COLUMNS), sets, _set_note(p)),
        (_TOP_TITLE, list(_TOP_COLUMNS), tops, top_note),
    ]
