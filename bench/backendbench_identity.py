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

    PYTHONPATH=. python3 bench/backendbench_identity.py tests/data/real/backendbench/sample.trace.txt \
        [--device cpu] [--rows 3 | --all-rows] [--ops 'relu__default,index_*'] [--max-mb 256] \
        [--jobs 4] [--out traces.jsonl]

``--jobs N`` splits the operators over N processes (round robin over their sorted names), each
with its own engine cache; on one GPU they share the device (each gets 0.9/N of its memory),
which is harmless here since only the statuses count; rows over ``--alone-mb`` then run in one
process with the whole device. The totals are given twice: over every operator this torch has, and over the
operators upstream's benchmark includes (``UPSTREAM_EXCLUDED`` below says which it leaves out).

Timing is short (``--warmup-ms 1 --rep-ms 2``, at most 6 timed calls per set): the point is
the statuses, timed calls and their checks included, not the speedups.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from gpu_backendbench import aten_identity  # bench/ is this script's folder, first on sys.path

from sweep.backendbench import import_backendbench
from sweep.config import EvalSettings, SweepConfig, Tolerance
from sweep.engine import EngineCache, evaluate, operator_problem, prepare_process
from sweep.plan import build_plan, select
from sweep.plan.dataset import load_dataset
from sweep.schema import Definition, Trace
from sweep.schema.hardware import short_name
from sweep.schema.task import Task

# Upstream's filter (BackendBench/op_categories.py at 66e0dbc, applied by
# scripts/dataset_filters.py): an operator is left out of its benchmark when one of these strings
# is a substring of its name. Kept as upstream spells them: a few entries there run together for
# want of a comma ("scatter.value_reduce_outgather.default"), so gather.default, index.Tensor and
# nll_loss.default stay in upstream's benchmark, and in this count.
UPSTREAM_EXCLUDED = (
    # tensor creation and manipulation
    "cat.default", "cat.out", "cat.names", "cat.names_outclone.default", "clone.out", "copy_.default",
    "elu_backward.default", "elu_backward.grad_input", "masked_fill_.Scalarmasked_fill_.Tensor",
    "new_empty.default", "new_empty.out", "new_empty_strided.default", "new_empty_strided.out",
    "new_full.default", "new_full.out", "new_ones.default", "new_ones.out", "new_zeros.default",
    "new_zeros.out", "nonzero.default", "nonzero.out", "repeat.default", "repeat.out", "split.Tensor",
    "split_with_sizes.default", "unsqueeze_.default",
    # random
    "bernoulli.default", "bernoulli.out", "bernoulli.Tensor", "bernoulli.Tensor_out",
    # "unsupported": indices, missing kernels, cuDNN/cuFFT trouble
    "embedding.default", "embedding.out", "scatter.src", "scatter.src_out", "scatter.reduce",
    "scatter.reduce_out", "scatter.value", "scatter.value_out", "scatter.value_reduce",
    "scatter.value_reduce_outgather.default", "gather.out", "gather.dimname",
    "gather.dimname_outindex.Tensor", "index.Tensor_outnll_loss.default",
    "nll_loss.outim2col_backward.default", "im2col_backward.default", "im2col_backward.grad_input",
    "col2im_backward.default", "col2im_backward.grad_input", "native_layer_norm_backward.default",
    "native_layer_norm_backward.out", "upsample_nearest2d_backward.default",
    "upsample_nearest2d_backward.grad_input", "upsample_bilinear2d_backward.default",
    "upsample_bilinear2d_backward.grad_input", "_cudnn_rnn_backward.default",
    "_cudnn_rnn_backward.out", "_fft_c2c.default", "_fft_c2c.out", "_cudnn_rnn.default",
    "_cudnn_rnn.out",
)  # fmt: skip


def upstream_includes(op: str) -> bool:
    """Whether upstream's benchmark includes the operator (``aten.add.Tensor`` or ``add.Tensor``)."""
    name = op.removeprefix("aten.")
    return not any(s in name for s in UPSTREAM_EXCLUDED)


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
    """The plan's tasks (this shard's operators only) and the operators refused at plan time."""
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
    k, n = args.shard
    names = sorted({t.definition.name for t in plan.tasks})
    mine = {name for i, name in enumerate(names) if i % n == k}
    return [t for t in plan.tasks if t.definition.name in mine], refused if k == 0 else []


def _parse_shard(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 0 <= int(k) < int(n)):
        raise argparse.ArgumentTypeError(f"--shard takes K/N with 0 <= K < N, not {text!r}")
    return int(k), int(n)


def run_shard(args: argparse.Namespace) -> dict[str, object]:
    """Evaluate this shard's rows; the outcome as plain data (one entry per evaluated row)."""
    import torch

    from sweep.engine.aten import describe_call  # the bench reads the engine's own sizes

    prepare_process(args.device)
    shards = args.shard[1]
    if args.device.startswith("cuda") and shards > 1:
        # the engine sizes a task by the GPU's free memory, which other shards' caches take:
        # give each shard its own share, and hand cached blocks back after every task
        torch.cuda.set_per_process_memory_fraction(0.9 / shards)
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else "cpu"
    hardware = short_name(name)
    rows: list[dict[str, str]] = []
    skipped: Counter[str] = Counter()
    traces: list[Trace] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        report = import_backendbench(args.trace, root)
        _write_solutions(root)
        tasks, refused = _tasks(root, args, hardware)
        ops = {d.name: _op_of(d) for d in load_dataset([root]).definitions.values()}
        cache = EngineCache()
        started = time.perf_counter()
        lo, hi = args.band
        for task in tasks:
            defn = task.definition.name
            mib = describe_call(task.definition, task.workload).nbytes / 2**20
            if not (lo <= mib < hi or task.workload.uuid in args.also):
                continue  # another process's row
            if args.max_mb is not None and mib > args.max_mb:
                skipped[defn] += 1
                continue
            trace = evaluate(task, device=args.device, cache=cache)
            if args.device.startswith("cuda") and shards > 1:
                torch.cuda.empty_cache()
            traces.append(trace)
            ev = trace.evaluation
            assert ev is not None
            first = ev.log.strip().splitlines()[0] if ev.log.strip() else ""
            rows.append(
                {
                    "definition": defn,
                    "op": ops[defn],
                    "workload": task.workload.uuid,
                    "status": ev.status.value,
                    "log": "" if ev.status.value == "PASSED" else first[:300],
                }
            )
        wall = time.perf_counter() - started
    if args.out:
        args.out.write_text("".join(t.to_json() + "\n" for t in traces), encoding="utf-8")
    return {
        "header": f"{name} | torch {torch.__version__} | {args.trace.name}: {len(report.operators)} operators, "
        f"{report.workloads_added} non-synthetic rows",
        "rows": rows,
        "skipped": dict(skipped),
        "refused": refused,
        "wall": wall,
    }


def _spawn(
    argv: list[str], tmp: Path, n: int, shard: str, band: str, also: list[str], out: bool
) -> tuple[subprocess.Popen[bytes], Path, str]:
    result = tmp / f"{n}.json"
    extra = ["--shard", shard, "--band", band, "--jobs", "1", "--result", str(result)]
    if also:
        (tmp / "also.json").write_text(json.dumps(also))
        extra += ["--also", str(tmp / "also.json")]
    if out:
        extra += ["--out", str(tmp / f"{n}.jsonl")]
    return subprocess.Popen([sys.executable, __file__, *argv, *extra]), result, shard


def _collect(procs: list[tuple[subprocess.Popen[bytes], Path, str]]) -> list[dict[str, object]]:
    outcomes = []
    for proc, result, shard in procs:
        code = proc.wait()
        if not result.exists():
            raise SystemExit(f"shard {shard} died (exit status {code}) before writing its outcome")
        outcomes.append(json.loads(result.read_text()))
    return outcomes


def run_jobs(args: argparse.Namespace, argv: list[str]) -> list[dict[str, object]]:
    """Run ``args.jobs`` shards as child processes of this script, then one more process, alone
    on the device, for the rows over ``--alone-mb`` and the rows a shard lost to memory the
    other shards held (a shared device's shortage, not the row's); their outcomes."""
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        big = f"{args.alone_mb}"
        shared = _collect(
            [
                _spawn(argv, tmp, k, f"{k}/{args.jobs}", f"0:{big}", [], bool(args.out))
                for k in range(args.jobs)
            ]
        )
        again = [
            r["workload"]
            for o in shared
            for r in o["rows"]  # type: ignore[attr-defined]
            if r["status"] == "RUNTIME_ERROR" and "out of memory" in r["log"]
        ]
        for o in shared:
            o["rows"] = [r for r in o["rows"] if r["workload"] not in again]  # type: ignore[attr-defined]
        alone = _collect([_spawn(argv, tmp, args.jobs, "0/1", f"{big}:inf", again, bool(args.out))])
        if again:
            print(f"{len(again)} row(s) ran out of memory beside the other shards and ran again alone")
        if args.out:
            # a row that ran again keeps its second trace only
            lines = [
                ln
                for k in range(args.jobs)
                for ln in (tmp / f"{k}.jsonl").read_text().splitlines(keepends=True)
                if not any(u in ln for u in again)
            ]
            args.out.write_text("".join(lines) + (tmp / f"{args.jobs}.jsonl").read_text())
    return shared + alone


def _parse_band(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition(":")
    return float(lo), float(hi)


def print_report(outcomes: list[dict[str, object]], args: argparse.Namespace, wall: float) -> int:
    """The per-operator table and the totals; the exit status (1 when a row did not pass)."""
    rows = [r for o in outcomes for r in o["rows"]]  # type: ignore[attr-defined]
    skipped: Counter[str] = Counter()
    refused: list[str] = []
    for o in outcomes:
        skipped.update(o["skipped"])  # type: ignore[arg-type]
        refused += o["refused"]  # type: ignore[operator]
    refused = list(dict.fromkeys(refused))  # the pass for large rows says it again
    print(f"{outcomes[0]['header']} | {len(rows)} evaluations (<= {args.rows} rows per operator), "
          f"{len(refused)} operator(s) refused at plan time, {args.jobs} process(es)")  # fmt: skip
    by_op: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        by_op[r["definition"]].append(r)
    width = max((len(n) for n in by_op), default=10)
    print(f"{'operator':<{width}}  upstream  passed  statuses")
    for defn, items in sorted(by_op.items()):
        counts = Counter(r["status"] for r in items)
        ok = counts.get("PASSED", 0)
        extra = f" ({skipped[defn]} skipped by --max-mb)" if skipped[defn] else ""
        inc = "yes" if upstream_includes(items[0]["op"]) else "no"
        print(f"{defn:<{width}}  {inc:<8}  {ok:>3}/{len(items):<3} "
              f"{', '.join(f'{k} {v}' for k, v in sorted(counts.items()))}{extra}")  # fmt: skip
    for defn in sorted(set(skipped) - set(by_op)):
        print(f"{defn:<{width}}   -/-    all {skipped[defn]} row(s) skipped by --max-mb")
    for line in refused:
        print(f"refused at plan time: {line}")
    passed = sum(r["status"] == "PASSED" for r in rows)
    inc_rows = [r for r in rows if upstream_includes(r["op"])]
    inc_passed = sum(r["status"] == "PASSED" for r in inc_rows)
    inc_ops = {r["definition"] for r in inc_rows}
    share = passed / len(rows) if rows else 0.0
    print(
        f"overall: {passed}/{len(rows)} rows passed ({share:.2%}; target >= 99.5%) over {len(by_op)} "
        f"operators; {sum(skipped.values())} row(s) skipped by --max-mb; {len(refused)} operator(s) refused; "
        f"wall {wall:.1f} s"
    )
    print(
        f"operators upstream's benchmark includes: {inc_passed}/{len(inc_rows)} rows passed over "
        f"{len(inc_ops)} operators (target: all)"
    )
    for r in rows:
        if r["status"] != "PASSED":
            print(f"FAILED: {r['definition']} {r['workload'][:8]}: {r['status']}: {r['log']}")
    if args.out:
        print(f"wrote {len(rows)} traces to {args.out}")
    return 0 if passed == len(rows) else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("trace", type=Path, help="a BackendBench trace file")
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda")
    parser.add_argument("--rows", type=int, default=3, help="non-synthetic rows per operator (file order)")
    parser.add_argument("--all-rows", action="store_true", help="every non-synthetic row (overrides --rows)")
    parser.add_argument("--ops", default="", help="definition names or globs, comma-separated (add__Tensor)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--trials", type=int, default=2)
    parser.add_argument("--warmup-ms", type=float, default=1.0)
    parser.add_argument("--rep-ms", type=float, default=2.0)
    parser.add_argument("--max-iterations", type=int, default=6)
    parser.add_argument(
        "--max-mb", type=float, default=None, help="skip rows whose inputs need more than this (MiB)"
    )
    parser.add_argument("--jobs", type=int, default=1, help="processes, the operators split between them")
    parser.add_argument(
        "--alone-mb", type=float, default=200.0, help="with --jobs: rows over this (MiB) run after, alone"
    )
    parser.add_argument("--shard", type=_parse_shard, default=(0, 1), help=argparse.SUPPRESS)
    parser.add_argument("--band", type=_parse_band, default=(0.0, float("inf")), help=argparse.SUPPRESS)
    parser.add_argument("--also", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--result", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, default=None, help="write every trace here, one JSON line each")
    argv = sys.argv[1:]
    args = parser.parse_args()
    if args.all_rows:
        args.rows = 1_000_000
    args.ops = [o for o in args.ops.split(",") if o]
    args.also = set(json.loads(args.also.read_text())) if args.also else set()
    started = time.perf_counter()
    if args.jobs > 1:
        # each shard writes its own traces; the parent joins them into --out
        keep = [a for a in argv if not a.startswith("--out=")]
        if "--out" in keep:
            i = keep.index("--out")
            keep = keep[:i] + keep[i + 2 :]
        outcomes = run_jobs(args, keep)
    else:
        outcome = run_shard(args)
        if args.result is not None:
            args.result.write_text(json.dumps(outcome))
            return 0
        outcomes = [outcome]
    return print_report(outcomes, args, time.perf_counter() - started)


if __name__ == "__main__":
    sys.exit(main())
