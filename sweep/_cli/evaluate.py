"""``sweep eval``: evaluate one definition x solution pair in this process, without Ray."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sweep._cli.app import app, echo
from sweep._cli.options import DeviceOpt, RootsOpt, make_overrides
from sweep.schema import Trace
from sweep.store.render import percent, ratio

__all__ = ["SOURCE_SUFFIXES", "app", "render_traces"]

#: Suffixes that make ``sweep eval``'s SOLUTION a source file rather than a solution's name.
SOURCE_SUFFIXES = frozenset({".py", ".cu", ".cuh", ".cpp", ".cc", ".cxx", ".c", ".h", ".hpp"})


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def render_traces(traces: list[Trace]) -> str:
    """A table of traces: workload, axes, status, latencies, speedup, errors, achieved TFLOP/s
    and GB/s, fraction of peak, flags; then the first log line of every trace that did not
    pass, and the log line explaining each flag."""
    header = [
        "workload",
        "axes",
        "status",
        "latency_ms",
        "ref_ms",
        "speedup",
        "max_abs_err",
        "max_rel_err",
        "tflops",
        "gbps",
        "peak",
        "flags",
    ]
    rows: list[list[str]] = []
    notes: list[str] = []
    for t in traces:
        ev = t.evaluation
        assert ev is not None
        perf, corr = ev.performance, ev.correctness
        axes = ",".join(f"{k}={v}" for k, v in t.workload.axes.items())
        rows.append(
            [
                t.workload.uuid[:8],
                axes,
                ev.status.value,
                _ms(perf.latency_ms if perf else None),
                _ms(perf.reference_latency_ms if perf else None),
                ratio(perf.speedup_factor if perf else None),
                f"{corr.max_absolute_error:.3g}" if corr else "-",
                f"{corr.max_relative_error:.3g}" if corr else "-",
                _rate(perf.tflops if perf else None),
                _rate(perf.gbps if perf else None),
                percent(perf.peak_fraction if perf else None),
                ",".join(ev.flags or []) or "-",
            ]
        )
        if ev.status.value != "PASSED":
            first = ev.log.strip().splitlines()[0] if ev.log.strip() else ev.status.value
            notes.append(f"{t.workload.uuid[:8]}: {first}")
        for line in ev.log.splitlines():
            if line.startswith(("IMPOSSIBLE:", "SUSPICIOUS:")):
                notes.append(f"{t.workload.uuid[:8]}: {line}")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in [header, *rows]]
    if traces and traces[0].evaluation is not None:
        env = traces[0].evaluation.environment
        lines.insert(0, f"{traces[0].definition} / {traces[0].solution} on {env.device_name or env.hardware}")
    if notes:
        lines.append("")
        lines.extend(notes)
    return "\n".join(lines)


@app.command("eval")
def eval_command(
    definition: Annotated[str, typer.Argument(help="Definition name.")],
    solution: Annotated[
        str,
        typer.Argument(
            help="Solution name (a solution of DEFINITION), or a source file (kernel.py, kernel.cu...) "
            "evaluated as it is: packed in memory as 'sweep new solution' packs it, nothing written."
        ),
    ],
    workload: Annotated[
        list[str] | None,
        typer.Option("--workload", "-w", help="Workload uuid or unique prefix (repeatable; default: all)."),
    ] = None,
    root: RootsOpt = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one Trace record per line instead.")
    ] = False,
    device: DeviceOpt = None,
    seed: Annotated[int | None, typer.Option("--seed", help="Input seed (default 0).")] = None,
    trials: Annotated[
        int | None, typer.Option("--trials", min=1, help="Correctness trials (default 3).")
    ] = None,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Print the whole log of every trace that did not pass.")
    ] = False,
    no_fail: Annotated[
        bool, typer.Option("--no-fail", help="Exit 0 even when a trace did not pass.")
    ] = False,
) -> None:
    """Evaluate one solution on its definition's workloads here, without Ray, and print the traces.

    Fractions of peak use the ceilings 'sweep calibrate' measured (results/calibration/) when
    there are some for this hardware, else the datasheet's.

    A problem of another record of the roots is a warning (stderr), said once; a solution
    that is not valid (its file, its entry point) gives COMPILE_ERROR traces.

    Exit codes: 0 every trace PASSED (or --no-fail); 1 a trace did not pass, or an error
    (unknown names, a file that cannot be packed).

    Example: sweep eval rmsnorm_h1024 rmsnorm_h1024_triton --device cpu -w 9160fce7

    Example: sweep eval rmsnorm_h1024 my_kernel.py --device cpu -v
    """
    from sweep.config import DEFAULT_RESULTS_DIR, EvalSettings, apply_settings_overrides
    from sweep.launch import evaluate_from_dataset
    from sweep.store import load_calibrations

    settings = apply_settings_overrides(EvalSettings(), make_overrides(seed=seed, trials=trials))

    def emit(trace: Trace) -> None:
        if json_out:
            echo(trace.to_json())

    as_file = Path(solution).suffix.lower() in SOURCE_SUFFIXES
    traces = evaluate_from_dataset(
        root or [Path(".")],
        definition,
        solution,
        files=[Path(solution)] if as_file else [],
        workload_ids=workload or [],
        settings=settings,
        device=device,
        on_trace=emit,
        ceilings=load_calibrations(Path(DEFAULT_RESULTS_DIR)),
        on_warning=lambda w: echo(f"warning: {w}", err=True),
    )
    if not json_out:
        echo(render_traces(traces))
        if verbose:
            for t in traces:
                ev = t.evaluation
                if ev is not None and ev.status.value != "PASSED":
                    echo(
                        f"\n--- log of workload {t.workload.uuid} ({ev.status.value}) ---\n{ev.log.rstrip()}"
                    )
    failed = [t for t in traces if t.evaluation is None or t.evaluation.status.value != "PASSED"]
    if failed and not no_fail:
        if not json_out:
            echo(f"{len(failed)} of {len(traces)} traces did not pass (exit 1; --no-fail exits 0)", err=True)
        raise typer.Exit(1)
