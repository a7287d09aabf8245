"""Score commands: project (what a solution set does to a model), scores (fast_p, win@p, pass
rate), reveal (check a secret run's commitments against the secret)."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.store import ResultsOpt, StoreFileOpt
from sweep.config import DEFAULT_STORE_PATH
from sweep.errors import StoreError, shown

if TYPE_CHECKING:
    from sweep.store import ModelProjection, ScoreAtP

__all__ = ["app", "parse_ps", "render_projection", "render_scores"]


def parse_ps(text: str) -> list[float]:
    """``"0.5,1,2"`` -> ``[0.5, 1.0, 2.0]``; a part that is no number is a clean error."""
    out = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            out.append(float(part))
        except ValueError:
            raise StoreError(
                f"--p: {shown(part)} is not a number; give thresholds like --p 0.5,1,2"
            ) from None
    return out


def _json(data: object) -> str:
    from sweep.store.render import json_value

    def clean(v: object) -> object:
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, list):
            return [clean(x) for x in v]
        return json_value(v)

    return json.dumps(clean(data), indent=2, allow_nan=False)


def render_projection(p: ModelProjection) -> str:
    """What ``sweep project`` prints."""
    from sweep.store import SET_SUMMARY_COLUMNS
    from sweep.store.render import format_table

    cols = list(SET_SUMMARY_COLUMNS)
    rows = [tuple(asdict(s)[c] for c in cols) for s in p.sets]
    out = [
        format_table(cols, rows, width=None, human=True)
        if rows
        else "(no solution set has traces with a reference time)"
    ]
    for s in p.sets:
        if s.top:
            out.append("")
            out.append(f"{s.solution_set} on {s.hardware}: top definitions by time share")
            tcols = [
                "definition",
                "time_share",
                "speedup",
                "gain_of_covered",
                "share_of_gain",
                "failed",
                "not_run",
            ]
            out.append(
                format_table(
                    tcols, [tuple(asdict(g)[c] for c in tcols) for g in s.top], width=None, human=True
                )
            )
    out.extend(f"note: {n}" for n in p.notes)
    return "\n".join(out)


def render_scores(rows: list[ScoreAtP]) -> str:
    """What ``sweep scores`` prints."""
    from sweep.store.render import format_table

    cols = [
        "solution_set",
        "hardware",
        "p",
        "tasks",
        "definitions",
        "fast_p",
        "win_at_p",
        "win_tasks",
        "pass_rate",
    ]
    if not rows:
        return "(no traces)"
    return format_table(cols, [tuple(asdict(r)[c] for c in cols) for r in rows], width=None, human=True)


@app.command()
def project(
    store: StoreFileOpt = DEFAULT_STORE_PATH,
    results_dir: ResultsOpt = None,
    uncovered: Annotated[
        float | None,
        typer.Option("--uncovered", help="Fraction of end-to-end time outside these kernels, in [0, 1)."),
    ] = None,
    hardware: Annotated[str | None, typer.Option("--hardware", help="Only this hardware.")] = None,
    sets: Annotated[
        str | None, typer.Option("--sets", help="Comma-separated solution sets (authors); all when omitted.")
    ] = None,
    top: Annotated[int, typer.Option("--top", min=1, max=1000, help="Definitions listed per set.")] = 5,
    as_json: Annotated[bool, typer.Option("--json", help="Print the projection as JSON.")] = False,
) -> None:
    """Projected speedup of each solution set on the model the store's weighted workloads describe.

    Example: sweep project --uncovered 0.4 --json
    """
    from sweep.store import model_projection

    names = [x.strip() for x in sets.split(",") if x.strip()] if sets else None
    p = model_projection(
        store, results_dir=results_dir, uncovered=uncovered, hardware=hardware, solution_sets=names, top=top
    )
    echo(_json(asdict(p)) if as_json else render_projection(p))


@app.command()
def scores(
    store: StoreFileOpt = DEFAULT_STORE_PATH,
    results_dir: ResultsOpt = None,
    p: Annotated[str, typer.Option("--p", help="Comma-separated speedup thresholds.")] = "0,0.5,1,1.5,2",
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="win@p's baseline: a solution set (author) where it ran, else the fastest set; "
            "'reference' for the reference's latency. Default: the set named 'baseline'.",
        ),
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print rows as JSON.")] = False,
) -> None:
    """KernelBench's fast_p, FlashInfer-Bench's win@p and the pass rate per solution set and hardware.

    Example: sweep scores --p 0.8,1,1.5 --baseline flashinfer --json
    """
    from sweep.store import scores_at

    chosen = {} if baseline is None else {"baseline": baseline}
    rows = scores_at(store, parse_ps(p), results_dir=results_dir, **chosen)
    echo(_json([asdict(r) for r in rows]) if as_json else render_scores(rows))


@app.command()
def reveal(
    secret_file: Annotated[
        Path,
        typer.Option("--secret-file", help="The secret a launch was given (--secret-file), now revealed."),
    ],
    store: StoreFileOpt = DEFAULT_STORE_PATH,
    results_dir: ResultsOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the counts as JSON.")] = False,
) -> None:
    """Check that the stored secret runs used this secret (each trace's commitment).

    Exit code 1 when a secret run's commitment is not this secret's.

    Example: sweep reveal --secret-file secret.txt --store results/sweep.duckdb
    """
    from sweep.schema.secret import read_secret
    from sweep.store import reveal as check

    r = check(store, read_secret(secret_file), results_dir=results_dir)
    if as_json:
        echo(_json(asdict(r)))
    else:
        echo(f"verified {r.verified} of {r.secret_traces} secret traces against the secret")
    if r.mismatched:
        shown_rows = "; ".join(f"{d} workload {w} (trace {k})" for d, w, k in r.mismatched[:10])
        more = f" and {len(r.mismatched) - 10} more" if len(r.mismatched) > 10 else ""
        raise StoreError(
            f"{len(r.mismatched)} secret traces were not run with this secret: {shown_rows}{more}; "
            "they came from a launch with another secret, or their commitment was altered"
        )
