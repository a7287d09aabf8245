"""The plan stage: dataset folders in, the list of tasks out.

- :mod:`sweep.plan.dataset`: loading FlashInfer-Bench dataset folders (:func:`load_dataset`,
  every problem an error; :func:`load_runnable`, for running: problems are warnings), with
  :mod:`sweep.plan.broken`: solutions that cannot be evaluated as they are, whose tasks are
  COMPILE_ERROR traces.
- :mod:`sweep.plan.selection`: :func:`select`, what a config selects from a dataset, every
  filter checked (no hardware yet).
- :mod:`sweep.plan.expand`: a selection -> :class:`Plan` (definition x solution x workload,
  pure and deterministic), with what was left out and why: :func:`build_plan` (the tasks for
  one target), or select and build at once with :func:`expand` (the config's one target) or
  :func:`expand_targets` (one plan per target of ``hardware: [H100, H200]``).
- :mod:`sweep.plan.pair`: one definition x solution pair and its workloads (``sweep eval``).

``load_config`` and ``ConfigOverrides`` are re-exported from ``sweep.config`` for callers
that plan straight from a file.
"""

from sweep.config import ConfigOverrides, load_config
from sweep.plan import expand as _expand
from sweep.plan.dataset import (
    LAYOUT,
    BrokenSolution,
    Dataset,
    Origin,
    RecordKind,
    load_dataset,
    load_runnable,
    validate_roots,
)
from sweep.plan.expand import *
from sweep.plan.pair import PairSelection, select_file_pair, select_pair
from sweep.plan.selection import Selection, select, with_lines

__all__ = [
    "LAYOUT",
    "BrokenSolution",
    "ConfigOverrides",
    "Dataset",
    "Origin",
    "PairSelection",
    "RecordKind",
    "Selection",
    "load_config",
    "load_dataset",
    "load_runnable",
    "select",
    "select_file_pair",
    "select_pair",
    "validate_roots",
    "with_lines",
]
__all__ += _expand.__all__
