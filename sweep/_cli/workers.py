"""``sweep workers``: list the warm workers of a running Ray cluster; ``sweep workers stop``
stops them (all, or the stale ones)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Annotated

import typer

from sweep._cli.app import app, echo
from sweep.errors import ConfigError

if TYPE_CHECKING:
    from sweep.cluster.warm_admin import StopResult, WarmWorker

__all__ = ["render_stop", "render_workers", "workers_app"]

workers_app = typer.Typer(
    help="List the warm GPU workers of a running Ray cluster (the ones launches leave for the "
    "next), or stop them.",
    rich_markup_mode=None,
)
app.add_typer(workers_app, name="workers")

AddressFlag = Annotated[
    str | None,
    typer.Option(
        "--address",
        help="Ray cluster address (default: RAY_ADDRESS). Warm workers live only on a cluster "
        "started apart (ray start --head).",
    ),
]


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def render_workers(workers: list[WarmWorker]) -> str:
    """The table ``sweep workers`` prints, and a line of totals."""
    from sweep.store.render import format_table

    if not workers:
        return "no warm workers on this cluster"
    rows: list[list[object]] = []
    for w in workers:
        s = w.state
        if s is None:
            rows.append([w.name, "-", "-", "-", "-", "no answer (starting, or hung)", "-", "-", "-"])
            continue
        if s.owner is not None:
            use = f"leased by run {s.owner}" + (
                f", busy {_duration(s.busy_s)}" if s.busy_s is not None else ""
            )
        elif s.busy_s is not None:
            use = f"finishing a call ({_duration(s.busy_s)})"
        else:
            use = f"idle {_duration(s.idle_s)} of {_duration(s.idle_timeout_s)}"
        if s.changed:
            match = "stale: " + "; ".join(s.changed)
        else:
            match = "this checkout" if w.same_code else f"other code ({s.code})"
        rows.append(
            [
                w.name,
                f"{s.hostname} ({s.node_id[:8]})",
                s.gpu_id or "-",
                s.pid,
                time.strftime("%Y-%m-%d %H:%M", time.localtime(s.started_at)),
                use,
                s.launches,
                s.tasks,
                match,
            ]
        )
    cols = ["worker", "node", "gpu", "pid", "started", "use", "launches", "tasks", "code"]
    table = format_table(cols, rows, width=80)
    stale = sum(w.stale for w in workers)
    leased = sum(w.state is not None and w.state.owner is not None for w in workers)
    silent = sum(w.state is None for w in workers)
    return f"{table}\n{len(workers)} warm worker(s): {leased} leased, {stale} stale for this checkout" + (
        f", {silent} not answering" if silent else ""
    )


def render_stop(result: StopResult) -> str:
    """What ``sweep workers stop`` did."""

    def where(w: WarmWorker) -> str:
        return "" if w.state is None else f" ({w.state.hostname}, GPU {w.state.gpu_id or '-'})"

    lines = [f"stopped {w.name}{where(w)}" for w in result.stopped]
    lines += [f"left {w.name} running: {why} (--force stops it too)" for w, why in result.left]
    lines.append(f"{len(result.stopped)} stopped, {len(result.left)} left running")
    return "\n".join(lines)


def _address(flag: str | None) -> str | None:
    import os

    return flag or os.environ.get("RAY_ADDRESS") or None


@workers_app.callback(invoke_without_command=True)
def workers(ctx: typer.Context, address: AddressFlag = None) -> None:
    """List the warm workers: node, GPU, pid, when started, lease or idle time, and whether
    their code is this checkout's (a launch from here reuses only those).

    Example: sweep workers --address 10.0.0.1:6379

    Example: sweep workers stop --stale
    """
    ctx.obj = address
    if ctx.invoked_subcommand is not None:
        return
    from sweep.cluster.warm_admin import attached, warm_workers

    with attached(_address(address)):
        found = warm_workers()
    echo(render_workers(found))


@workers_app.command("stop")
def stop(
    ctx: typer.Context,
    address: AddressFlag = None,
    all_: Annotated[bool, typer.Option("--all", help="Stop every warm worker not in use.")] = False,
    stale: Annotated[
        bool, typer.Option("--stale", help="Stop the ones a launch from this checkout would not reuse.")
    ] = False,
    force: Annotated[
        bool, typer.Option("--force", help="Also stop workers leased by a running launch.")
    ] = False,
) -> None:
    """Stop warm workers (their GPUs are free at once); a worker leased by a running launch
    is left to it unless --force.

    Example: sweep workers stop --all --address 10.0.0.1:6379
    """
    from sweep.cluster.warm_admin import attached, stop_warm_workers

    if all_ == stale:
        raise ConfigError("say which workers to stop: --all or --stale (one of the two)")
    with attached(_address(address or ctx.obj)):
        result = stop_warm_workers(stale_only=stale, force=force)
    echo(render_stop(result))
