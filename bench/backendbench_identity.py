"""ATen-identity kernels over the real rows of a BackendBench trace file: does every row pass?

For every operator of the trace, a solution that calls the operator itself
(``torch.ops.aten.<op>.<overload>(*args, **kwargs)``, what the reference does) is evaluated on
the first ``--rows`` non-synthetic rows (``cnt != 0``) through ``sweep.engine.evaluate``, in
one process with one engine cache. The plan is made as ``sweep launch`` makes it
(``sweep.plan.build_plan`` with the engine's operator check), so an operator this torch lacks,
or has no kernel for on this hardware, is refused before anything runs, with its reason.

Since the solution is the reference, every evaluated row must pass: a failure is a gap of the
evaluation (inputs an operator rejects, a check that cannot tell two correct results apart),
not of the kernel. Prints per operator the rows passed, the statuses and the first log line of
each failure, then the totals. Exit status 1 when a row did not pass.

Usage (from the repository root; on the GPU machine with ``--device cuda``):

    PYTHONPATH=. python3 bench/backendbench_identity.py ../shared/data/backendbench/sample.trace.txt \
        [--device cpu] [--rows 3] [--ops 'relu__default,index_*'] [--max-mb 256] [--out traces.jsonl]

Timing is short (``--warmup-ms 1 --rep-ms 2``, at most 6 timed calls per set): the point is
the statuses, timed calls and their checks included, not the speedups.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sweep.backendbench import import_backendbench, op_expression, parse_op_name
from sweep.config import EvalSettings, SweepConfig, Tolerance
from sweep.engine import EngineCache, evaluate, operator_problem, prepare_process
from sweep.plan import build_plan, select
from sweep.plan.dataset import load_dataset
from sweep.schema import Definition, Solution, Trace
from sweep.schema.hardware import short_name
from sweep.schema.task import Task


def aten_identity(defn: Definition, op: str) -> Solution:
    """A solution that calls the operator itself (what the reference does)."""
    src = f"import torch\n\n\ndef kernel_impl(*args, **kwargs):\n    return {op_expression(parse_op_name(op))}(*args, **kwargs)\n"
    return Solution.model_validate(
        {
            "name": f"{defn.name}_aten",
            "definition": defn.name,
            "author": "aten",
            "spec": {
                "language": "python",
                "target_hardware": ["*"],
                "entry_point": "impl.py::kernel_impl",
                "destination_passing_style": False,
            },
            "sources": [{"path": "impl.py", "content": src}],
        }
    )


def _op_of(defn: Definition) -> str:
    tag = next(t for t in defn.tags if t.startswith("aten:"))
    return "aten." + tag.removeprefix("aten:")


def _write_solutions(root: Path) -> None:
    ds = load_dataset([root])
    for name, defn in ds.definitions.items():
        sol = aten_identity(defn, _op_of(defn))
        path = root / "solutions" / "aten" / "backendbench" / name / f"{sol.name}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(sol.to_json(), encoding="utf-8")


def _tasks(root: Path, args: argparse.Namespace, hardware: str) -> tuple[list[Task], list[str]]:
    settings = EvalSettings(
        seed=args.seed,
        trials=args.trials,
        input_sets=2,
        warmup_ms=args.warmup_ms,
        rep_ms=args.rep_ms,
        min_iterations=2,
        max_iterations=args.max_iterations,
        log_limit_bytes=65536,
        op_type_tolerance={"backendbench": Tolerance(atol=1e-2, rtol=1e-2)},  # BackendBench's own
    )
    config = SweepConfig.model_validate(
        {
            "name": "backendbench-identity",
            "dataset": [str(root)],
            "hardware": hardware,
            "workloads": {"limit_per_definition": args.rows},
            "evaluation": settings.model_dump(),
            **({"definitions": {"names": args.ops}} if args.ops else {}),
        }
    )
    plan = build_plan(select(config, load_dataset([root])), hardware, unavailable=operator_problem)
    refused = [f"{x.name}: {x.reason}" for x in plan.excluded]
    return plan.tasks, refused


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("trace", type=Path, help="a BackendBench trace file")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--rows", type=int, default=3, help="non-synthetic rows per operator (file order)")
    parser.add_argument("--ops", default="", help="definition names or globs, comma-separated (add__Tensor)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--warmup-ms", type=float, default=1.0)
    parser.add_argument("--rep-ms", type=float, default=2.0)
    parser.add_argument("--max-iterations", type=int, default=6)
    parser.add_argument(
        "--max-mb", type=float, default=None, help="skip rows whose inputs need more than this (MiB)"
    )
    parser.add_argument("--out", type=Path, default=None, help="write every trace here, one JSON line each")
    args = parser.parse_args()
    args.ops = [o for o in args.ops.split(",") if o]

    import torch

    from sweep.engine._call_inputs import describe_call  # the bench reads the engine's own sizes

    prepare_process(args.device)
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    hardware = short_name(name)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        report = import_backendbench(args.trace, root)
        _write_solutions(root)
        tasks, refused = _tasks(root, args, hardware)
        print(
            f"{name} | torch {torch.__version__} | {args.trace.name}: {len(report.operators)} operators, "
            f"{report.workloads_added} non-synthetic rows | {len(tasks)} evaluations "
            f"(<= {args.rows} rows per operator), {len(refused)} operator(s) refused at plan time"
        )
        cache = EngineCache()
        by_op: dict[str, list[Trace]] = defaultdict(list)
        skipped: Counter[str] = Counter()
        failures: list[str] = []
        traces: list[Trace] = []
        started = time.perf_counter()
        for task in tasks:
            defn = task.definition.name
            if (
                args.max_mb is not None
                and describe_call(task.definition, task.workload).nbytes > args.max_mb * 2**20
            ):
                skipped[defn] += 1
                continue
            trace = evaluate(task, device=args.device, cache=cache)
            traces.append(trace)
            by_op[defn].append(trace)
            ev = trace.evaluation
            assert ev is not None
            if ev.status.value != "PASSED":
                first = ev.log.strip().splitlines()[0] if ev.log.strip() else ""
                failures.append(f"{defn} {task.workload.uuid[:8]}: {first[:300]}")
        wall = time.perf_counter() - started

    width = max((len(n) for n in by_op), default=10)
    print(f"{'operator':<{width}}  passed  statuses")
    passed = total = 0
    for defn, items in sorted(by_op.items()):
        counts = Counter(t.evaluation.status.value for t in items if t.evaluation is not None)
        ok = counts.get("PASSED", 0)
        passed, total = passed + ok, total + len(items)
        extra = f" ({skipped[defn]} skipped by --max-mb)" if skipped[defn] else ""
        print(
            f"{defn:<{width}}  {ok:>2}/{len(items):<3}  {', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}{extra}"
        )
    for defn in sorted(set(skipped) - set(by_op)):
        print(f"{defn:<{width}}   -/-    all {skipped[defn]} row(s) skipped by --max-mb")
    for line in refused:
        print(f"refused at plan time: {line}")
    print(
        f"overall: {passed}/{total} rows passed over {len(by_op)} operators; "
        f"{sum(skipped.values())} row(s) skipped by --max-mb; {len(refused)} operator(s) refused; "
        f"wall {wall:.1f} s"
    )
    for line in failures:
        print("FAILED:", line)
    if args.out:
        args.out.write_text("".join(t.to_json() + "\n" for t in traces), encoding="utf-8")
        print(f"wrote {len(traces)} traces to {args.out}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
