"""The plan stage: dataset folders in, the list of tasks out.

- :mod:`sweep.plan.dataset`: loading FlashInfer-Bench dataset folders (:func:`load_dataset`).
- :mod:`sweep.plan.expand`: a config over a dataset -> :class:`Plan` (definition x solution x
  workload, pure and deterministic), with what was left out and why: :func:`select` (every
  filter checked, no hardware) then :func:`build_plan` (the tasks for one target), or both
  at once with :func:`expand`.
- :mod:`sweep.plan.pair`: one definition x solution pair and its workloads (``sweep eval``).

``load_config`` and ``ConfigOverrides`` are re-exported from ``sweep.config`` for callers
that plan straight from a file.
"""

from sweep.config import ConfigOverrides, load_config
from sweep.plan.dataset import LAYOUT, Dataset, Origin, RecordKind, load_dataset, validate_roots
from sweep.plan.expand import (
    Exclusion,
    Plan,
    Selection,
    Unavailable,
    build_plan,
    expand,
    group_excluded,
    plan_config,
    select,
    target_hardware,
    with_lines,
)
from sweep.plan.pair import PairSelection, select_pair

__all__ = [
    "LAYOUT",
    "ConfigOverrides",
    "Dataset",
    "Exclusion",
    "Origin",
    "PairSelection",
    "Plan",
    "RecordKind",
    "Selection",
    "Unavailable",
    "build_plan",
    "expand",
    "group_excluded",
    "load_config",
    "load_dataset",
    "plan_config",
    "select",
    "select_pair",
    "target_hardware",
    "validate_roots",
    "with_lines",
]
