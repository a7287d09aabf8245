"""``sweep launch``: run a sweep config on Ray (an existing cluster, or an embedded one)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.dataset import VerboseOpt, render_left_out
from sweep._cli.options import (
    HardwareOpt,
    KeepWorkersOpt,
    LimitOpt,
    NameOpt,
    NewHardwareOpt,
    QuietOpt,
    ResultsDirOpt,
    SeedOpt,
    StoreOpt,
    make_overrides,
)
from sweep.store.render import json_value, percent

if TYPE_CHECKING:
    from sweep.launch.driver import LaunchResult

__all__ = ["app", "launch_json", "render_launch", "sweep_state"]


def sweep_state(result: LaunchResult) -> dict[str, tuple[int, int]] | None:
    """The whole sweep as the store has it, per status: ``(tasks, of which this run)``, the
    newest trace of each task of the sweep on the launch's hardware (every target of it,
    added up); ``None`` when it cannot be read."""
    from sweep.schema.hardware import record_name
    from sweep.store import sweep_state as stored_state

    targets = [c.hardware for c in result.per_hardware] or [result.hardware]
    out: dict[str, tuple[int, int]] = {}
    for target in targets:
        state = stored_state(
            Path(result.store_path),
            results_dir=Path(result.results_dir),
            sweep=result.sweep,
            hardware=record_name(target),
            run_id=result.run_id,
        )
        if state is None:
            return None
        for status, count in state.items():
            tasks, now = out.get(status, (0, 0))
            out[status] = (tasks + count.tasks, now + count.this_run)
    return dict(sorted(out.items()))


def _state_line(state: dict[str, tuple[int, int]]) -> str:
    total = sum(n for n, _ in state.values())
    now = sum(k for _, k in state.values())
    passed = state.get("PASSED", (0, 0))[0]
    parts = ", ".join(
        f"{status} {n}" + (f" ({k} now)" if k and k != n else "") for status, (n, k) in state.items()
    )
    return (
        f"sweep state (store): {total} tasks with a trace, {now} of them from this run, "
        f"{total - now} from earlier runs; {parts}; passed {percent(passed / total if total else None)}"
    )


def render_launch(
    result: LaunchResult, *, verbose: bool = False, state: dict[str, tuple[int, int]] | None = None
) -> str:
    """The report printed at the end: the summary table of this run, totals, the whole sweep's
    state in the store (``state``: see :func:`sweep_state`) when earlier runs stored some of it,
    timing and where results are."""
    from sweep.launch.progress import render_failures, render_summary

    lines: list[str] = []
    if result.ran:
        lines.append(render_summary(result.rows))
        failed = sum(n for status, n in result.statuses.items() if status != "PASSED")
        lines.extend(render_failures(result.failures, failed))
        lines.append("")
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(result.statuses.items())) or "none"
    unplaced = f", {len(result.unplaced)} cannot be placed on this cluster" if result.unplaced else ""
    lines.append(
        f"sweep {result.sweep!r} on {result.hardware}: {result.planned} planned, "
        f"{result.skipped} already stored (skipped), {result.ran} ran ({statuses}){unplaced}"
    )
    if len(result.per_hardware) > 1:
        lines.append(
            "per hardware: "
            + "; ".join(
                f"{c.hardware} {c.planned} planned, {c.skipped} skipped, {c.ran} ran"
                + (f", {c.unplaced} cannot be placed" if c.unplaced else "")
                for c in result.per_hardware
            )
        )
    if state and result.skipped:
        lines.append(_state_line(state))
    if result.ran:
        st = result.stats
        workers = max(len(st.workers), 1)
        start = result.wall_s - st.steady_s
        per = st.steady_s * workers / max(result.ran - result.head_start, 1)
        marks = dict(result.phases)
        # from the store taken (it is, before distributed tasks run) to their end
        gangs = (
            marks["gangs"] - max(marks.get("scheduler", 0.0), marks.get("store", 0.0))
            if "gangs" in marks
            else None
        )
        first = (
            "the first worker"
            if gangs is None
            else f"the first worker ({gangs:.1f} s of them the distributed tasks)"
        )
        if result.head_start:
            first += f" ({result.head_start} task(s) evaluated meanwhile by the head start)"
        lines.append(
            f"wall time {result.wall_s:.1f} s: {start:.1f} s to plan, start Ray and {first}, "
            f"{st.steady_s:.1f} s of evaluations on {len(st.workers)} worker(s) "
            f"({per * 1000:.1f} ms per evaluation per worker)"
        )
        if result.kept_workers:
            lines.append(
                f"warm workers: {st.workers_reused} reused, {st.workers_started - st.workers_reused} "
                "started; left running for the next launch ('sweep workers' lists and stops them)"
            )
        lines.extend(f"replaced a stale warm worker {r}" for r in result.replaced)
        if result.stats.retried or result.stats.lost or result.stats.workers_died:
            lines.append(
                f"workers lost: {result.stats.workers_died}; tasks re-run elsewhere: "
                f"{result.stats.retried + result.stats.requeued}; tasks given up (worker lost on "
                f"every try): {result.stats.lost}"
            )
    elif result.planned and result.skipped == result.planned:
        lines.append("nothing to do: every task has a stored trace (use --force to run them again)")
    lines.extend(render_left_out(result.unplaced, verbose=verbose, title="cannot be placed"))
    lines.extend(render_left_out(result.excluded, verbose=verbose))
    lines.extend(f"warning: {w}" for w in result.warnings)
    lines.append(f"run {result.run_id}; results: {result.results_dir} (store {result.store_path})")
    return "\n".join(lines)


def launch_json(result: LaunchResult, state: dict[str, tuple[int, int]] | None = None) -> str:
    """``sweep launch --json``: the summary as one object (``state``: see :func:`sweep_state`)."""
    import json

    data = {
        "sweep": result.sweep,
        "run_id": result.run_id,
        "hardware": result.hardware,
        "per_hardware": [
            {
                "hardware": c.hardware,
                "planned": c.planned,
                "skipped": c.skipped,
                "ran": c.ran,
                "unplaced": c.unplaced,
            }
            for c in result.per_hardware
        ],
        "planned": result.planned,
        "skipped": result.skipped,
        "ran": result.ran,
        "unplaced": len(result.unplaced),
        "statuses": dict(sorted(result.statuses.items())),
        "rows": [
            {
                "definition": r.definition,
                "solution": r.solution,
                **({"hardware": r.hardware} if r.hardware else {}),
                "total": r.total,
                "statuses": dict(r.counts),
                "median_speedup": json_value(r.median_speedup),
            }
            for r in result.rows
        ],
        "failures": [
            {"status": g.status, "reason": g.reason, "count": g.count, "task_id": g.task_id}
            for g in result.failures
        ],
        "sweep_state": None
        if state is None
        else {status: {"tasks": n, "this_run": k} for status, (n, k) in state.items()},
        "wall_s": result.wall_s,
        "workers": {
            "started": result.stats.workers_started,
            "reused": result.stats.workers_reused,
            "kept": result.kept_workers,
            "replaced": result.replaced,
        },
        "left_out": [{"kind": x.kind, "name": x.name, "reason": x.reason} for x in result.excluded],
        "cannot_be_placed": [{"task": x.name, "reason": x.reason, "cause": x.why} for x in result.unplaced],
        "warnings": result.warnings,
        "results_dir": result.results_dir,
        "store": result.store_path,
    }
    return json.dumps(data, indent=2, allow_nan=False)


@app.command()
def launch(
    config: Annotated[Path, typer.Argument(help="Sweep config (YAML).")],
    address: Annotated[
        str | None,
        typer.Option(
            "--address",
            help="Ray cluster address; beats RAY_ADDRESS and the config's ray.address. "
            "With none of the three, an embedded local Ray runs over this machine's GPUs.",
        ),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Run again tasks that already have a stored trace.")
    ] = False,
    quiet: QuietOpt = False,
    verbose: VerboseOpt = False,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the summary as JSON (the progress line stays on stderr).")
    ] = False,
    name: NameOpt = None,
    hardware: HardwareOpt = None,
    new_hardware: NewHardwareOpt = False,
    results_dir: ResultsDirOpt = None,
    store: StoreOpt = None,
    seed: SeedOpt = None,
    limit_per_definition: LimitOpt = None,
    keep_workers: KeepWorkersOpt = None,
    secret_file: Annotated[
        Path | None,
        typer.Option(
            "--secret-file",
            help="Hidden workloads: mix the secret in this file (16+ bytes) into every input seed. "
            "The secret is written nowhere; each trace keeps a commitment ('sweep reveal' checks it).",
        ),
    ] = None,
) -> None:
    """Run every task of a sweep config not yet stored; one trace per task, stored as it arrives.

    Each GPU gets one long-lived worker that evaluates task after task in a sandbox
    process; a kernel that crashes or hangs gets a RUNTIME_ERROR or TIMEOUT trace and the
    sweep goes on. Exit code 0 when the sweep ran, whatever the kernels did. On an existing
    cluster (--address) the workers stay warm after the launch and the next launch reuses
    them ('sweep workers' lists and stops them).

    On a cluster of several GPU types, --hardware H100,H200 (or all: every type it has) runs
    each task once per type, each on nodes of that type.

    Example: sweep launch configs/local.yaml

    Example: ray job submit --working-dir . -- sweep launch configs/h100.yaml

    Example: sweep launch configs/h100.yaml --hardware all

    Example: sweep launch configs/h100.yaml --secret-file ~/secret.txt
    """
    from sweep.launch.driver import LaunchOptions
    from sweep.launch.driver import launch as run_launch
    from sweep.schema.secret import read_secret

    secret = read_secret(secret_file) if secret_file is not None else None

    overrides = make_overrides(
        name=name,
        hardware=hardware,
        new_hardware=new_hardware,
        address=address,
        results_dir=results_dir,
        store=store,
        seed=seed,
        limit_per_definition=limit_per_definition,
        keep_workers=keep_workers,
    )
    options = LaunchOptions(overrides=overrides, force=force, quiet=quiet, secret=secret)
    try:
        result = run_launch(config, options)
    except KeyboardInterrupt:
        echo("interrupted: the traces written so far are stored; launch again to resume", err=True)
        raise typer.Exit(130) from None
    state = sweep_state(result) if result.skipped else None
    if as_json:
        echo(launch_json(result, state))
    else:
        echo(render_launch(result, verbose=verbose, state=state))
