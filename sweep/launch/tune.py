"""``sweep tune``: a guided search run through the launch path.

One connection to the cluster for the whole search; each round's tasks run as a launch's do
(:func:`~sweep.launch._run.run_sweep`: the compile pool ahead of the GPU workers, each trace
stored as it comes, in completion order), and the round's latencies are read back from the
store by its run id. The decisions go to ``<results_dir>/tuning/<sweep>.search.json``
beside the store; every evaluated point is a trace like any other, so ``sweep
export-tuning`` and every view read them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from sweep.cluster.connect import RayConnection, auto_target, connect, gpu_targets, pools_for_targets
from sweep.config import SweepConfig, load_config, resolve_address
from sweep.errors import PlanError
from sweep.launch._placing import split_unplaceable
from sweep.launch._run import StartClock, StoreOpening, run_sweep
from sweep.launch._search_groups import groups_of
from sweep.launch.driver import LaunchOptions, new_run_id, plans_for, sandbox_spec, warm_workers_for
from sweep.launch.search import Known, Outcome, search_group
from sweep.plan import Plan, select, with_lines
from sweep.plan.dataset import Dataset, load_runnable
from sweep.schema.task import Task
from sweep.store import query, write_output

__all__ = ["ClusterRunner", "stored_known", "tune"]


class ClusterRunner:
    """Runs a round of tasks on a connected cluster and gives their latencies."""

    def __init__(
        self,
        config: SweepConfig,
        dataset: Dataset,
        plans: Sequence[Plan],
        conn: RayConnection,
        opts: LaunchOptions,
        address: str | None,
    ) -> None:
        self.config, self.dataset, self.plans, self.conn, self.opts = config, dataset, plans, conn, opts
        self.address = address
        self.spec = sandbox_spec(config, opts)

    def __call__(self, tasks: Sequence[Task], again: bool) -> Mapping[str, float | None]:
        run_id = new_run_id()
        nodes = [(n.gpus, n.accelerator_types) for n in self.conn.info.nodes]
        todo = split_unplaceable(tasks, nodes).runnable  # the rest: no trace, no latency
        if not todo:
            return {t.task_id: None for t in tasks}
        work = Counter(t.hardware for t in todo)
        pools = pools_for_targets(dict(work), self.conn.info)
        opening = StoreOpening(self.config, self.dataset, run_id, todo)
        # Each round is a launch of its own (its run id on its traces, read back below); its
        # warm workers, even on an embedded Ray, are the previous round's, claimed again.
        warm = warm_workers_for(self.config, self.address, self.conn, run_id, rounds=True)
        try:
            run_sweep(
                run_id,
                self.plans,
                todo,
                opening,
                pools,
                (self.spec, self.opts.scheduler, None),
                warm,
                StartClock(),
            )
        finally:
            opening.discard()
        out = self.config.output
        sql = f"SELECT task_id, status, latency_ms FROM traces WHERE run_id = '{run_id}'"
        rows = query(Path(out.store_path()), sql, results_dir=Path(out.results_dir)).rows
        got: dict[str, float | None] = {t.task_id: None for t in tasks}
        for task_id, status, latency in rows:
            got[str(task_id)] = float(str(latency)) if status == "PASSED" and latency is not None else None
        return got


def stored_known(config: SweepConfig, targets: Sequence[str]) -> Known:
    """What the store has: the newest trace of each task id (this search's targets), and the
    best PASSED latency of each point on any other hardware (a store merged from elsewhere)."""
    out = config.output
    store, results = Path(out.store_path()), Path(out.results_dir)
    known = Known()
    if not store.exists() and not (results / "traces").is_dir():
        return known
    sql = (
        "SELECT task_id, hardware, definition, solution, workload_uuid, solution_params, status, latency_ms "
        "FROM latest WHERE solution_params IS NOT NULL"
    )
    for task_id, hardware, definition, solution, workload, params, status, latency in query(
        store, sql, results_dir=results
    ).rows:
        value = float(str(latency)) if status == "PASSED" and latency is not None else None
        if hardware in targets:
            known.by_task[str(task_id)] = value
        elif value is not None:
            key = (str(definition), str(solution), str(workload), str(params))
            known.elsewhere[key] = min(value, known.elsewhere.get(key, value))
    return known


def tune(config_path: str | Path, options: LaunchOptions | None = None) -> list[Outcome]:
    """Search every solution space the config selects, as ``solutions.search`` says.

    Raises:
        ConfigError, PlanError, DatasetError, ClusterError, StoreError: As for a launch.
    """
    opts = options or LaunchOptions()
    config = load_config(config_path, opts.overrides)
    dataset = load_runnable(config.dataset)
    try:
        selection = select(config, dataset)
    except PlanError as e:
        raise with_lines(e, config_path) from None
    flag = opts.overrides.address if opts.overrides is not None else None
    address = resolve_address(flag, config)
    conn = connect(config, address)
    try:
        choice = config.hardware_choice()
        if choice.mode == "named":
            targets = list(choice.targets)
        else:
            targets = [auto_target(conn.info)] if choice.mode == "auto" else gpu_targets(conn.info)
        plans = plans_for(selection, targets)
        groups = groups_of(plans, config.solutions.search)
        if not groups:
            raise PlanError("nothing to tune: no selected solution has a parameter space (params)")
        known = stored_known(config, targets)
        runner = ClusterRunner(config, dataset, plans, conn, opts, address)
        outcomes = [search_group(g, config.solutions.search, runner, known) for g in groups]
    finally:
        conn.close()
    record = {
        "format": "kernel-sweep-search",
        "version": 1,
        "sweep": config.name,
        "search": config.solutions.search.model_dump(mode="json"),
        "decisions": [asdict(o) for o in outcomes],
    }
    text = json.dumps(record, indent=2, allow_nan=False, default=str)
    target = Path(config.output.results_dir) / "tuning" / f"{config.name}.search.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    store = Path(config.output.store_path())
    write_output(
        target, text, store_path=store, results_dir=Path(config.output.results_dir), flag="output.results_dir"
    )
    return outcomes
