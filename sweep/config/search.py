"""The ``solutions.search`` section of a sweep config: how points of a space are chosen.

docs/tuning.md is the user's page; the search itself runs in :mod:`sweep.launch.search`.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from sweep.schema.limits import INT64_MAX, INT64_MIN
from sweep.schema.params import MAX_GRID_POINTS
from sweep.schema.settings import StrictModel

__all__ = ["SearchSettings", "ShapeBucket"]


class ShapeBucket(StrictModel):
    """One shape bucket: the workloads whose axes lie in every range given (inclusive)."""

    name: str = Field(min_length=1, max_length=200)
    axes: dict[str, Annotated[list[int], Field(min_length=2, max_length=2)]] = Field(
        min_length=1, description="axis -> [low, high], inclusive; a workload must fall in every range"
    )

    @field_validator("axes")
    @classmethod
    def _ranges(cls, v: dict[str, list[int]]) -> dict[str, list[int]]:
        for axis, (low, high) in v.items():
            if low > high:
                raise ValueError(f"axes.{axis}: low {low} is more than high {high}")
        return v


class SearchSettings(StrictModel):
    """How the points of each solution's space are chosen on each workload (or shape bucket).

    ``grid`` runs every valid point (as always); ``random``, ``forest`` (Bayesian
    optimisation with a random-forest surrogate, scikit-learn: the ``tune`` extra) and
    ``evolution`` (a seeded evolutionary local search) propose points on the driver, in
    rounds of ``parallel`` points, until the budget is spent or the best has not improved
    for ``patience`` evaluations. docs/tuning.md says which to pick.
    """

    strategy: Literal["grid", "random", "forest", "evolution"] = "grid"
    budget_evaluations: int | None = Field(
        default=None, ge=1, le=MAX_GRID_POINTS, description="at most this many points per workload or bucket"
    )
    budget_s: float | None = Field(default=None, gt=0, le=30 * 86400, description="wall seconds per workload")
    seed: int = Field(default=0, ge=INT64_MIN, le=INT64_MAX)
    patience: int | None = Field(
        default=None,
        ge=1,
        le=MAX_GRID_POINTS,
        description="stop after this many evaluations without a better point",
    )
    parallel: int = Field(
        default=8, ge=1, le=4096, description="points proposed per round (the GPUs to fill)"
    )
    initial: int = Field(default=8, ge=1, le=4096, description="random points before a model guides (forest)")
    remeasure_top: int = Field(default=3, ge=0, le=32, description="best points measured again side by side")
    remeasure_rounds: int = Field(default=3, ge=1, le=100, description="interleaved rounds of re-measurement")
    tie_threshold: float = Field(default=0.02, ge=0, le=1, description="relative difference declared a tie")
    buckets: Literal["none", "auto"] | list[ShapeBucket] = Field(
        default="none",
        description="one decision per shape bucket: 'auto' groups workloads by the power of two of each axis",
    )
    holdout: float = Field(
        default=0.0, ge=0, lt=1, description="share of each bucket's workloads held back to check its choice"
    )
