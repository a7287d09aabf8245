"""``sweep profile``: chosen tasks of a sweep again, under ncu and compute-sanitizer."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sweep._cli.app import app, echo

if TYPE_CHECKING:
    from sweep.launch.profile import ProfileResult

__all__ = ["app", "render_profiles"]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}%"


def render_profiles(result: ProfileResult) -> str:
    """What ``sweep profile`` prints: per task its kernels and each sanitizer tool's verdict."""
    lines: list[str] = []
    for p in result.profiles:
        lines.append(f"task {p.task_id}: {p.definition} / {p.solution} / {p.workload}  ({p.folder})")
        for k in p.kernels or []:
            lines.append(
                f"  ncu  {k.kernel[:60]:<60} {_ms(k.duration_ms)} ms  SM {_pct(k.sm_throughput_pct)}  "
                f"DRAM {_pct(k.dram_throughput_pct)}  occupancy {_pct(k.achieved_occupancy_pct)}  "
                f"{k.limiter or '-'}"
            )
        for r in p.sanitizer:
            verdict = "no errors" if r.errors == 0 else f"{r.errors} error(s)"
            lines.append(f"  compute-sanitizer {r.tool}: {verdict}")
            lines.extend(f"    {f.count} x {f.kind} in {f.kernel}: {f.first_message}" for f in r.findings)
        lines.extend(f"  problem: {text}" for text in p.problems)
    for tid in result.missing:
        lines.append(
            f"task {tid}: not in this config's plan (its solution, workload or settings changed); skipped"
        )
    lines.append(f"rows in the profiles and sanitizer_findings tables of {result.store_path}")
    return "\n".join(lines)


@app.command()
def profile(
    config: Annotated[Path, typer.Argument(help="The sweep's YAML config.")],
    where: Annotated[
        str | None,
        typer.Option("--where", help="SQL condition on the store's latest view picking the tasks."),
    ] = None,
    tasks: Annotated[
        list[str] | None, typer.Option("--tasks", help="Task ids to profile (repeatable).")
    ] = None,
    tool: Annotated[str, typer.Option("--tool", help="ncu, sanitizer or both.")] = "both",
    ncu_set: Annotated[str, typer.Option("--ncu-set", help="ncu's section set: basic or full.")] = "basic",
    device: Annotated[
        str | None, typer.Option("--device", help="With --local: cuda or cuda:N (default: cuda).")
    ] = None,
    local: Annotated[
        bool,
        typer.Option("--local", help="Run here, one task after another, not on the sweep's Ray GPU workers."),
    ] = False,
) -> None:
    """Profile tasks of a sweep under ncu and compute-sanitizer (one process per task and tool),
    each task a Ray task on one GPU of the sweep's cluster (as launch connects), or --local.

    Default: the best PASSED solution per definition x workload x hardware (the store's best
    view). Only the solution's calls are in ncu's range; compute-sanitizer checks the whole
    process. Reports go to RESULTS/profiles/<task_id>/, rows to the profiles and
    sanitizer_findings tables. Needs a CUDA GPU and the tools on PATH.

    Example: sweep profile sweep.yaml --tool sanitizer --where "definition = 'rmsnorm_h1024'"
    """
    from sweep.launch.profile import ProfileOptions
    from sweep.launch.profile import profile as run_profile

    opts = ProfileOptions(
        where=where,
        task_ids=list(tasks or []),
        tool=tool,
        ncu_set=ncu_set,
        device=device,
        local=local,
        on_step=lambda text: echo(text, err=True),
    )
    echo(render_profiles(run_profile(config, opts)))
