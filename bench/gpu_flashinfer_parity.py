"""kernel-sweep and FlashInfer-Bench's own benchmark runner, side by side, on one GPU.

The same dataset folders (FlashInfer-Bench layout: definitions/, solutions/, workloads/) are
evaluated twice in one run:

- by ``flashinfer_bench.Benchmark`` (its default config: 10 warm-up runs, 50 timed
  iterations, 3 trials; its runner, builders and timer), the upstream package installed from
  its PyPI wheel;
- by ``sweep.engine.evaluate``, task by task in this process, with the default settings
  (``timer: auto``), again with ``timer: events`` (closest to how the PyPI release times: CUDA
  events, L2 flushed) and, when ``cupti-python`` is importable, with ``timer: cupti`` (how
  upstream's main branch times, through flashinfer's CUPTI helper).

Prints one row per (definition, solution, workload): the status each gave, the latencies,
their ratios and which timer produced them, then the rows whose status differs or whose
latency differs by more than 5%. Solutions upstream's loader refuses are listed, not hidden.

Then the "why" of the latency differences, per solution on its first workload, measured on
upstream's own objects (its builder's runnable, its input generator, its ``time_runnable``):
upstream's timed window opens right after a ``torch.cuda.synchronize()``, on an idle GPU, so
it holds the host's time to launch the call as well as the kernel. The table puts upstream's
latency beside the host time of one call (``perf_counter`` around the call, the GPU idle at
its start, as in upstream's window) plus our CUPTI device time: when they agree, the
difference is the launch, which kernel-sweep's timers leave out on purpose.

Usage (on the device machine, from the repository root, after ``source bench/gpu_site.sh``
and with flashinfer-bench and apache-tvm-ffi importable):

    python3 bench/gpu_flashinfer_parity.py --dataset DIR [--dataset DIR ...] [--limit N] [--out FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sweep.engine import EngineCache, evaluate
from sweep.plan.dataset import load_dataset
from sweep.schema import EvalSettings, Task

FOLDERS = ("definitions", "solutions", "workloads")
# flashinfer-bench 0.1.2 (PyPI), bench/timing.py: CUDA events around each call, a synchronize
# before each, L2 zeroed (256 MB) and arguments cloned between calls, the mean of the timed calls
THEIR_TIMER = "events (sync before each call, mean)"


def merge(datasets: list[Path], dest: Path, limit: int | None = None) -> Path:
    """One dataset root holding the definitions, solutions and workloads of ``datasets``;
    with ``limit``, each workload file keeps its first ``limit`` lines (for both sides)."""
    for src in datasets:
        for sub in FOLDERS:
            if (src / sub).is_dir():
                shutil.copytree(src / sub, dest / sub, dirs_exist_ok=True)
    if limit is not None:
        for f in (dest / "workloads").rglob("*.jsonl"):
            lines = [ln for ln in f.read_text().splitlines() if ln.strip()]
            f.write_text("".join(ln + "\n" for ln in lines[:limit]))
    return dest


def ours(root: Path, timer: str, hardware: str) -> dict[tuple[str, str, str], tuple[str, float | None, str]]:
    """(definition, solution, workload) -> (status, latency ms, timer) by kernel-sweep."""
    ds = load_dataset([str(root)])
    cache = EngineCache()
    out: dict[tuple[str, str, str], tuple[str, float | None, str]] = {}
    settings = EvalSettings(timer=timer)  # type: ignore[arg-type]
    for sol in sorted(ds.solutions.values(), key=lambda s: (s.definition, s.name)):
        defn = ds.definitions.get(sol.definition)
        if defn is None:
            continue
        for wl in ds.workloads.get(defn.name, []):
            task = Task.make(defn, sol, wl, settings, hardware, dataset_root=str(root), sweep="parity")
            ev = evaluate(task, device="cuda", cache=cache).evaluation
            assert ev is not None
            lat = ev.performance.latency_ms if ev.performance else None
            used = (ev.timing.timer or ev.timing.clock) if ev.timing else "-"
            out[(defn.name, sol.name, wl.uuid)] = (ev.status.value, lat, used)
            if ev.status.value != "PASSED":
                print(f"  ours ({timer}) {sol.name} {wl.uuid[:8]}: {ev.log.splitlines()[0][:200]}")
    return out


def theirs(root: Path) -> tuple[dict[tuple[str, str, str], tuple[str, float | None, str]], list[str]]:
    """The same by FlashInfer-Bench's benchmark runner; also what its loader refused."""
    from flashinfer_bench import Benchmark, BenchmarkConfig, TraceSet

    refused: list[str] = []
    try:
        ts = TraceSet.from_path(str(root))
    except Exception as e:  # noqa: BLE001 - report and go on without upstream
        return {}, [f"TraceSet.from_path failed: {type(e).__name__}: {e}"]
    bench = Benchmark(ts, BenchmarkConfig())
    try:
        result = bench.run_all(dump_traces=False)
    finally:
        bench.close()
    out: dict[tuple[str, str, str], tuple[str, float | None, str]] = {}
    for def_name, traces in result.traces.items():
        for t in traces:
            ev = t.evaluation
            if ev is None or t.solution is None:
                continue
            lat = ev.performance.latency_ms if ev.performance is not None else None
            out[(def_name, t.solution, t.workload.uuid)] = (ev.status.value, lat, THEIR_TIMER)
            if ev.status.value != "PASSED":
                print(f"  theirs {t.solution} {t.workload.uuid[:8]}: {(ev.log or '').strip()[:300]}")
    return out, refused


def explain(root: Path, cupti: dict[tuple[str, str, str], tuple[str, float | None, str]]) -> None:
    """Upstream's latency against host launch time + device time, one workload per solution."""
    import statistics

    import torch
    from flashinfer_bench import TraceSet
    from flashinfer_bench.bench.evaluators.utils import allocate_outputs
    from flashinfer_bench.bench.timing import do_bench, time_runnable
    from flashinfer_bench.bench.utils import gen_inputs
    from flashinfer_bench.compile.registry import BuilderRegistry

    ts = TraceSet.from_path(str(root))
    registry = BuilderRegistry.get_instance()
    # upstream's window with nothing in it: the synchronize, then two event records back to back
    floor = float(do_bench(lambda _: None, warmup=10, rep=50, setup=lambda: None))  # type: ignore[arg-type]
    rows = [["solution", "workload", "theirs (re-timed)", "host launch (mean)", "ours cupti",
             f"launch+cupti+floor ({floor * 1e3:.1f} us)", "theirs/that"]]  # fmt: skip
    for def_name, sols in sorted(ts.solutions.items()):
        defn = ts.definitions[def_name]
        wls = ts.workloads.get(def_name, [])
        if not wls:
            continue
        wl = wls[0].workload
        for sol in sols:
            try:
                runnable = registry.build(defn, sol)
            except Exception as e:  # noqa: BLE001 - upstream refuses it; the table above says so
                rows.append([sol.name, wl.uuid[:8], f"build failed: {type(e).__name__}", "", "", "", ""])
                continue
            inp = gen_inputs(defn, wl, device="cuda")
            args = list(inp) + (
                allocate_outputs(defn, inp, "cuda") if runnable.metadata.destination_passing_style else []
            )
            theirs_ms = time_runnable(runnable, args, 10, 50, "cuda")
            host: list[float] = []
            for _ in range(60):
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                runnable(*args)
                host.append((time.perf_counter() - t0) * 1e3)
            torch.cuda.synchronize()
            launch = statistics.mean(host[10:])  # upstream averages too (mean of its timed calls)
            dev = cupti.get((def_name, sol.name, wl.uuid), ("-", None, "-"))[1]
            both = None if dev is None else launch + dev + floor
            rows.append([sol.name, wl.uuid[:8], f"{theirs_ms:.4f}", f"{launch:.4f}",
                         "-" if dev is None else f"{dev:.4f}", "-" if both is None else f"{both:.4f}",
                         "-" if both is None else f"{theirs_ms / both:.2f}"])  # fmt: skip
    print("\nwhy the latencies differ: upstream's window = host launch + device time + its empty window (ms)")
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", action="append", required=True, help="a dataset root (repeatable)")
    parser.add_argument("--out", default=None, help="write the rows here as JSON lines")
    parser.add_argument("--limit", type=int, default=None, help="workloads per definition (first N)")
    args = parser.parse_args()

    import torch

    from sweep.schema.hardware import short_name

    hardware = short_name(torch.cuda.get_device_name())
    import flashinfer_bench

    print(
        f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
        f"flashinfer-bench {getattr(flashinfer_bench, '__version__', '?')}"
    )
    with tempfile.TemporaryDirectory(prefix="parity-") as tmp:
        root = merge([Path(d) for d in args.dataset], Path(tmp), args.limit)
        t0 = time.perf_counter()
        up, refused = theirs(root)
        t_up = time.perf_counter() - t0
        t0 = time.perf_counter()
        auto = ours(root, "auto", hardware)
        events = ours(root, "events", hardware)
        cupti = ours(root, "cupti", hardware) if importlib.util.find_spec("cupti") else {}
        t_ours = time.perf_counter() - t0
        explain(root, cupti)
    for line in refused:
        print(f"upstream refused: {line}")
    keys = sorted(set(auto) | set(up))
    header = ["definition", "solution", "workload", "status ours/theirs", "ours auto", "timer",
              "ours events", "ours cupti", "theirs", "auto/theirs", "events/theirs", "cupti/theirs"]  # fmt: skip
    rows = [header]
    notes: list[str] = []
    records = []
    for key in keys:
        a, e, c, u = auto.get(key), events.get(key), cupti.get(key), up.get(key)
        sa, la, ta = a if a else ("-", None, "-")
        _, le, _ = e if e else ("-", None, "-")
        _, lc, _ = c if c else ("-", None, "-")
        su, lu, tu = u if u else ("-", None, "-")

        def ms(v: float | None) -> str:
            return "-" if v is None else f"{v:.4f}"

        def ratio(x: float | None, y: float | None) -> str:
            return "-" if x is None or y is None or y <= 0 else f"{x / y:.3f}"

        rows.append([key[0], key[1], key[2][:8], f"{sa}/{su}", ms(la), ta, ms(le), ms(lc), ms(lu),
                     ratio(la, lu), ratio(le, lu), ratio(lc, lu)])  # fmt: skip
        records.append({"key": key, "ours_auto": a, "ours_events": e, "ours_cupti": c, "theirs": u,
                        "their_timer": tu})  # fmt: skip
        if sa != su:
            notes.append(f"status differs: {key[1]} on {key[2][:8]}: ours {sa}, theirs {su}")
        else:
            for label, mine in (("auto", la), ("events", le), ("cupti", lc)):
                if mine and lu and abs(mine / lu - 1) > 0.05:
                    notes.append(
                        f"latency differs by {mine / lu - 1:+.1%} ({label}): {key[1]} on {key[2][:8]}"
                    )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)))
    print(f"\ntheirs: {THEIR_TIMER}; ours cupti: {'ran' if cupti else 'cupti-python not importable'}")
    print(f"wall: upstream {t_up:.1f} s, kernel-sweep (every timer) {t_ours:.1f} s")
    print(f"differences over 5% or in status: {len(notes)}")
    for n in notes:
        print(f"  {n}")
    if args.out:
        Path(args.out).write_text("".join(json.dumps(r) + "\n" for r in records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
