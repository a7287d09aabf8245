"""Kernel Tuner's strategies replayed on a measured table (``tune_strategies.py --replay``).

Kernel Tuner (PyPI ``kernel_tuner``; not a dependency of this project: installed apart, e.g.
``pip install --target /tmp/kt kernel_tuner==1.5.0``, and found through ``--kernel-tuner-path``)
tunes CUDA and OpenCL kernels, not Triton, but its simulation mode replays a cache file of
measured results instead of running anything. ``write_cache`` writes the table in that cache's
format (kernel_tuner 1.5.0, ``util.process_cache`` writes the header and ``util.store_cache``
one entry a configuration: its key is the values joined by commas in ``tune_params`` order;
an entry holds the parameters, ``time`` and ``times`` in ms and ``compile_time``,
``verification_time``, ``benchmark_time`` in ms; a configuration that failed at run time
carries ``"__error__": "RuntimeFailedConfig"`` and no ``time``). ``run`` calls
``tune_kernel(..., simulation_mode=True)`` on it with the table's points as the only valid
configurations (failures included, as our strategies see them) and an evaluation budget, and
returns the order in which it evaluated distinct configurations with their latencies.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _tune_replay import Table

KERNEL_NAME = "tune_gemm"
#: Kernel Tuner's strategies worth comparing on a finite constrained space (1.5.0's names).
STRATEGIES = (
    "random_sample",
    "genetic_algorithm",
    "simulated_annealing",
    "dual_annealing",
    "pso",
    "diff_evo",
    "greedy_ils",
    "mls",
    "firefly_algorithm",
)
#: Named on request only (``--kt-strategies``): its Gaussian process scores the whole space each
#: step, over 6 minutes for one seed on the 8,496-point space on a laptop-class core.
SLOW = ("bayes_opt",)


def available(path: str | None) -> str | None:
    """Kernel Tuner's version when importable (``path`` appended to ``sys.path``: this
    environment's numpy, scipy and scikit-learn stay first), else None."""
    if path and path not in sys.path:
        sys.path.append(path)
    try:
        import kernel_tuner

        return str(getattr(kernel_tuner, "__version__", "?"))
    except Exception:  # noqa: BLE001  # not installed, or a dependency missing: said by the caller
        return None


def tune_params(table: Table) -> dict[str, list[Any]]:
    """Each parameter's values as the table's points use them, in first-seen order."""
    names = list(table.points[0])
    return {n: list(dict.fromkeys(p[n] for p in table.points)) for n in names}


def cache_key(point: dict[str, Any], names: Sequence[str]) -> str:
    return ",".join(str(point[n]) for n in names)


def cache_entries(table: Table) -> dict[str, dict[str, Any]]:
    """The cache's entries, one per point: what Kernel Tuner's sequential runner stores."""
    names = list(tune_params(table))
    out: dict[str, dict[str, Any]] = {}
    for p, ms, comp, meas in zip(table.points, table.ms, table.compile_s, table.measure_s):
        entry: dict[str, Any] = {n: p[n] for n in names}
        if ms is None:
            entry["__error__"] = "RuntimeFailedConfig"
        else:
            entry["time"] = ms
            entry["times"] = [ms]
        entry.update(compile_time=1000 * comp, verification_time=0, benchmark_time=1000 * meas)
        entry["timestamp"] = "1970-01-01 00:00:00+00:00"
        out[cache_key(p, names)] = entry
    return out


def header(table: Table) -> dict[str, Any]:
    """The fields ``util.process_cache`` writes before the entries."""
    return {
        "device_name": table.device,
        "kernel_name": KERNEL_NAME,
        "problem_size": [table.size, table.size, table.size],
        "tune_params_keys": list(tune_params(table)),
        "tune_params": tune_params(table),
        "objective": "time",
    }


def write_cache(table: Table, path: Path) -> Path:
    """The table as a closed Kernel Tuner cache file (a ``.json`` name, as it requires)."""
    doc = {**header(table), "cache": cache_entries(table)}
    path.write_text(json.dumps(doc, indent=""))
    return path


def run(
    table: Table, cache: Path, strategy: str, *, max_fevals: int, seed: int
) -> list[tuple[int, float | None]]:
    """Kernel Tuner's ``strategy`` in simulation mode on ``cache``: the distinct configurations it
    evaluated, in order, as (index into the table, latency or None)."""
    import numpy as np
    from kernel_tuner import tune_kernel

    params = tune_params(table)
    names = list(params)
    index = {cache_key(p, names): i for i, p in enumerate(table.points)}
    valid = set(index)

    def restrict(p: dict[str, Any]) -> bool:
        return cache_key(p, names) in valid

    random.seed(seed)
    np.random.seed(seed)
    results, _ = tune_kernel(
        KERNEL_NAME,
        "",
        (table.size, table.size, table.size),
        [],
        params,
        restrictions=restrict,
        cache=str(cache),
        simulation_mode=True,
        strategy=strategy,
        # brute_force takes no option: it evaluates everything
        strategy_options={} if strategy == "brute_force" else {"max_fevals": max_fevals},
        verbose=False,
        quiet=True,
    )
    seen: dict[int, float | None] = {}
    for r in results:
        i = index[cache_key(r, names)]
        if i not in seen:
            seen[i] = None if "__error__" in r or not isinstance(r.get("time"), float) else float(r["time"])
    return list(seen.items())
