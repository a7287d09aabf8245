"""``sweep eval`` and ``sweep launch`` time alike: the same tasks through both, side by side.

Both run each task in a sandbox process of its own with ``evaluation.cpu_threads`` intra-op
threads (``sweep eval`` used to run in the command's own process with every core's threads,
and disagreed with a launch by about 2x on the CPU). This evaluates the shipped torch solutions
of ``softmax_f32`` and ``rmsnorm_h1024`` over their workloads through ``sweep eval``'s path
(:func:`sweep.launch.evaluate_from_dataset`) and through ``sweep launch`` on an embedded Ray,
``--rounds`` times each, alternating which goes first, and prints per task the median latency
of each, their ratio, and the threads each trace recorded; then the median ratio.

Usage: ``python bench/eval_vs_launch.py [--rounds 2] [--device cpu|cuda]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from sweep.launch import evaluate_from_dataset
from sweep.launch.driver import LaunchOptions, launch
from sweep.schema import Trace

PAIRS = [("softmax_f32", "softmax_f32_torch"), ("rmsnorm_h1024", "rmsnorm_h1024_torch")]
EVALUATION = {"trials": 2, "warmup_ms": 10, "rep_ms": 50}


def via_eval(device: str) -> list[Trace]:
    from sweep.config import EvalSettings

    settings = EvalSettings(**EVALUATION)  # type: ignore[arg-type]
    out: list[Trace] = []
    for definition, solution in PAIRS:
        out += evaluate_from_dataset([REPO], definition, solution, settings=settings, device=device)
    return out


def via_launch(folder: Path) -> list[Trace]:
    config = folder / "sweep.yaml"
    names = ", ".join(s for _, s in PAIRS)
    config.write_text(
        f"name: eval_vs_launch\ndataset: [{REPO}]\nhardware: auto\n"
        f"solutions:\n  names: [{names}]\n"
        f"evaluation: {{trials: {EVALUATION['trials']}, warmup_ms: {EVALUATION['warmup_ms']}, "
        f"rep_ms: {EVALUATION['rep_ms']}}}\n"
        f"output:\n  results_dir: {folder / 'results'}\n"
    )
    launch(config, LaunchOptions(force=True, quiet=True))
    traces = []
    for log in (folder / "results").rglob("*.jsonl"):
        for line in log.read_text().splitlines():
            if line.strip():
                trace = Trace.model_validate_json(line)
                if trace.evaluation is not None and trace.solution in {s for _, s in PAIRS}:
                    traces.append(trace)
    return traces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    args = ap.parse_args()
    latency: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    threads: dict[str, set[int]] = defaultdict(set)
    for r in range(args.rounds):
        order = ["eval", "launch"] if r % 2 == 0 else ["launch", "eval"]
        for path in order:
            with tempfile.TemporaryDirectory() as tmp:
                traces = via_eval(args.device) if path == "eval" else via_launch(Path(tmp))
            for t in traces:
                ev = t.evaluation
                if ev is None or ev.performance is None:
                    continue
                latency[(t.solution or "", t.workload.uuid[:8])][path].append(ev.performance.latency_ms)
                if ev.timing is not None and ev.timing.threads is not None:
                    threads[path].add(ev.timing.threads)
    print(f"{'solution':22s} {'workload':9s} {'eval ms':>9s} {'launch ms':>10s} {'launch/eval':>12s}")
    ratios = []
    for (solution, wl), by in sorted(latency.items()):
        if not by["eval"] or not by["launch"]:
            continue
        e, la = statistics.median(by["eval"]), statistics.median(by["launch"])
        ratios.append(la / e)
        print(f"{solution:22s} {wl:9s} {e:9.4f} {la:10.4f} {la / e:12.3f}")
    print(f"threads recorded: eval {sorted(threads['eval'])}, launch {sorted(threads['launch'])}")
    if ratios:
        print(f"median launch/eval ratio over {len(ratios)} tasks: {statistics.median(ratios):.3f}")


if __name__ == "__main__":
    main()
