"""Per-evaluation overhead of ``sweep launch`` against a plain loop over ``engine.evaluate``.

Builds a throw-away dataset of N short evaluations (one definition ``y = x + 1``, one PyTorch
solution, N workloads of different sizes; one trial, shortest timing settings) and runs, each
in a fresh Python process:

- ``loop``: plan the config, then ``engine.evaluate`` on every task in that one process, with
  one ``EngineCache`` (the ideal: no isolation, no scheduling, no storage); torch and the
  engine are imported before its clock starts, as the launch's sandboxes have them preloaded;
  on CPU it runs with ``OMP_NUM_THREADS=1``, as Ray runs a one-CPU worker;
- ``scheduler``: the same worker, sandbox and driver loop, traces dropped instead of stored
  (what the scheduling machinery alone costs);
- ``launch``: ``sweep.launch.driver`` on an embedded local Ray with ONE worker slot (the
  analogue of one GPU): Ray start, one long-lived worker actor, its zygote and sandbox
  process, two tasks in flight, every trace appended (fsync) to the JSONL log and batched
  into DuckDB as it arrives.

The three run ``--rounds`` times (results folder cleared in between), in alternating order
(loop first in odd rounds, launch first in even ones), so a drift of the machine (clocks,
other load) does not favour one path. Each path's time is compared with the loop of the
same round: the table gives the median and the worst of those paired ratios, and the
fastest round of each path over the fastest loop. It does so twice: for the evaluations
alone (from the first worker ready to the last trace, against the loop) and for the whole
command (process start to exit, Ray start included, against the whole loop process).

The launch's evaluation phase is split with its traces' provenance (``started_at`` and
``finished_at``, taken in the sandbox around ``evaluate``): time inside ``evaluate``, and
the gaps between one evaluation's end and the next one's start (the sandbox idle: sending
the trace, receiving and unpickling the next task, call boundaries). Then it times sandbox
replacement after a crash (fork from the zygote) against the first start.

With ``--device cuda`` (on a GPU host) the loop evaluates on ``cuda`` and the launch targets
the machine's GPU type (``hardware: auto``) with one GPU visible (``CUDA_VISIBLE_DEVICES``
is set to the first one): the "one GPU" comparison of the issue.

``--attached`` adds a fourth path, ``attached``: the same ``sweep launch`` against a Ray
that is already running on this machine (``ray start --head`` once, before the rounds, with
the same one worker slot), as a user who runs many sweeps keeps one: the command connects
instead of starting and stopping Ray, and ships ``sweep`` to the workers (runtime_env). Its
workers end with each launch (``keep_workers`` off), as before warm workers existed, so its
figures stay comparable with the earlier logs; ``bench/warm_workers.py`` measures reuse.

``--concurrent`` (cuda, two GPUs of one model) runs the loop and the launch at the same time,
each on a GPU of its own, swapping the GPUs every round: each pair then shares the host's
state at that moment (the clock and load drift that sequential rounds see), which matters
for evaluations of realistic length, whose rounds last minutes. The scheduler path is
skipped.

Usage: ``.venv/bin/python bench/launch_overhead.py [--tasks 1000] [--rounds 5] [--crashes 10]
[--device cpu|cuda] [--rep-ms 1 | --default-settings] [--no-scheduler] [--attached]
[--concurrent]``
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sweep.schema.hardware import short_name

REPO = Path(__file__).resolve().parents[1]

_LOOP = """
import json, os, sys, time
t0 = time.monotonic()
from sweep.engine import EngineCache, evaluate, prepare_process
device = os.environ["BENCH_DEVICE"]
prepare_process(device)
from sweep.config import ConfigOverrides
from sweep.plan import plan_config
plan = plan_config(sys.argv[1], ConfigOverrides(hardware=os.environ["BENCH_TARGET"]))
import torch, sweep.engine._evaluate  # what the launch's zygote preloads before its timing
cache = EngineCache()
t1 = time.monotonic()
statuses = {}
for task in plan.tasks:
    s = evaluate(task, device=device, cache=cache).evaluation.status.value
    statuses[s] = statuses.get(s, 0) + 1
t2 = time.monotonic()
print(json.dumps({"setup_s": t1 - t0, "evals_s": t2 - t1, "statuses": statuses}))
"""

_SCHED = """
import json, os, sys, time
import ray
from sweep.cluster.connect import ClusterInfo, _nodes, pools_for
from sweep.sandbox.supervisor import SandboxSpec
from sweep.cluster.scheduler import run_tasks
from sweep.config import ConfigOverrides
from sweep.plan import plan_config
plan = plan_config(sys.argv[1], ConfigOverrides(hardware=os.environ["BENCH_TARGET"]))
ray.init(address="local", num_cpus=1, include_dashboard=False, log_to_driver=False)
pools = pools_for(plan.hardware, ClusterInfo(None, True, _nodes()))
spec = SandboxSpec(backend="sweep.engine", device_kind="auto", preload=("torch", "sweep.engine._evaluate"))
s = run_tasks(plan.tasks, pools, spec, run_id="bench", on_traces=lambda ts: None)
print(json.dumps({"steady_s": s.steady_s, "calls": s.calls}))
"""

_LAUNCH = """
import json, os, sys, time
t0 = time.monotonic()
from sweep.config import ConfigOverrides
from sweep.launch.driver import LaunchOptions, launch
# The attached path keeps its meaning: each launch starts and ends its own worker
# (bench/warm_workers.py measures launches that reuse warm workers).
keep = None if os.environ.get("BENCH_NO_KEEP") != "1" else False
r = launch(sys.argv[1], LaunchOptions(quiet=True, overrides=ConfigOverrides(keep_workers=keep)))
t1 = time.monotonic()
s = r.stats
print(json.dumps({"total_s": t1 - t0, "loop_s": s.loop_s, "first_ready_s": s.first_ready_s,
                  "steady_s": s.steady_s, "workers": len(s.workers), "statuses": dict(r.statuses),
                  "results_dir": r.results_dir}))
"""


def write_dataset(root: Path, n: int) -> None:
    """Definition ``bench_add``, one torch solution, ``n`` workloads."""
    (root / "definitions" / "bench").mkdir(parents=True)
    (root / "definitions" / "bench" / "bench_add.json").write_text(
        json.dumps(
            {
                "name": "bench_add",
                "op_type": "bench",
                "axes": {"n": {"type": "var"}},
                "inputs": {"x": {"shape": ["n"], "dtype": "float32"}},
                "outputs": {"y": {"shape": ["n"], "dtype": "float32"}},
                "reference": "import torch\n\n\n@torch.no_grad()\ndef run(x):\n    return x + 1\n",
            }
        )
    )
    (root / "workloads" / "bench").mkdir(parents=True)
    with open(root / "workloads" / "bench" / "bench_add.jsonl", "w") as f:
        for i in range(n):
            wl = {"uuid": f"bench-{i:05d}", "axes": {"n": 256 + i}, "inputs": {"x": {"type": "random"}}}
            f.write(json.dumps({"definition": "bench_add", "solution": None, "workload": wl}) + "\n")
    sol_dir = root / "solutions" / "bench" / "bench" / "bench_add"
    sol_dir.mkdir(parents=True)
    (sol_dir / "bench_add_torch.json").write_text(
        json.dumps(
            {
                "name": "bench_add_torch",
                "definition": "bench_add",
                "author": "bench",
                "spec": {
                    "language": "python",
                    "target_hardware": ["*"],
                    "entry_point": "main.py::run",
                    "destination_passing_style": False,
                },
                "sources": [
                    {"path": "main.py", "content": "import torch\n\n\ndef run(x):\n    return x + 1\n"}
                ],
            }
        )
    )


def write_config(path: Path, data: Path, results: Path, hardware: str, rep_ms: float | None = 1.0) -> None:
    """The bench's sweep config; ``rep_ms=None`` keeps the default evaluation settings."""
    evaluation = (
        ""
        if rep_ms is None
        else f"evaluation: {{trials: 1, warmup_ms: 0, rep_ms: {rep_ms}, min_iterations: 1,"
        f" max_iterations: {5 if rep_ms <= 1 else 100000}, input_sets: 1}}\n"
    )
    path.write_text(
        f"name: bench\ndataset: [{data}]\nhardware: {hardware}\n{evaluation}"
        f"ray: {{num_cpus: 1}}\noutput: {{results_dir: {results}}}\n"
    )


def run_snippet(code: str, cfg: Path, extra_env: dict[str, str]) -> tuple[dict[str, object], float]:
    return run_together([(code, cfg, extra_env)])[0]


def run_together(
    steps: list[tuple[str, Path, dict[str, str]]],
) -> list[tuple[dict[str, object], float]]:
    """Run each ``(code, config, env)`` in a fresh Python process, all at the same time; each
    one's JSON result and its wall time from its own start to its own exit."""
    import threading

    results: list[tuple[int, str, str, float]] = [(0, "", "", 0.0)] * len(steps)

    def one(k: int, code: str, cfg: Path, extra_env: dict[str, str]) -> None:
        env = {**os.environ, "RAY_ADDRESS": "", **extra_env}
        t0 = time.monotonic()
        proc = subprocess.run(
            [sys.executable, "-c", code, str(cfg)],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        results[k] = (proc.returncode, proc.stdout, proc.stderr, time.monotonic() - t0)

    threads = [threading.Thread(target=one, args=(k, *step)) for k, step in enumerate(steps)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out = []
    for code, stdout, stderr, wall in results:
        if code != 0:
            sys.exit(f"benchmark step failed:\n{stdout[-3000:]}\n{stderr[-3000:]}")
        out.append((json.loads(stdout.strip().splitlines()[-1]), wall))
    return out


class RunningRay:
    """A Ray head started once with ``ray start --head`` (one worker slot: one GPU, or one
    CPU), for the ``attached`` path; stopped, with its whole process group, on exit."""

    def __init__(self, home: Path, env: dict[str, str], device: str) -> None:
        self.address = f"127.0.0.1:{_free_port()}"
        cmd = [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "start",
            "--head",
            "--block",
            f"--port={self.address.rsplit(':', 1)[1]}",
            "--num-cpus=1",
            f"--num-gpus={1 if device == 'cuda' else 0}",
            "--include-dashboard=false",
            "--disable-usage-stats",
            # Ports of their own: a second head on this machine (another bench, a test's) would
            # otherwise fight over the fixed defaults (the job agent's 52365, the client's 10001).
            f"--dashboard-port={_free_port()}",
            f"--dashboard-agent-listen-port={_free_port()}",
            f"--ray-client-server-port={_free_port()}",
        ]
        home.mkdir(parents=True, exist_ok=True)
        self._log = home / "ray-start.log"
        # Started outside the checkout: its workers put their current directory first on
        # sys.path, and the launch ships `sweep` to them as a user's would.
        with open(self._log, "w") as log:
            self._proc = subprocess.Popen(
                cmd,
                cwd=home,
                stdout=log,
                stderr=subprocess.STDOUT,
                env={**os.environ, "RAY_ADDRESS": "", "RAY_USAGE_STATS_ENABLED": "0", **env},
                start_new_session=True,
            )
        # `ray start` prints this once the head's processes are all up.
        deadline = time.monotonic() + 120
        while "Ray runtime started" not in self._log.read_text():
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                sys.exit(f"ray start --head did not come up:\n{self._log.read_text()[-3000:]}")
            time.sleep(0.2)

    def close(self) -> None:
        import signal

        # `ray start --block` outlives SIGTERM for many seconds; nothing of it is kept.
        try:
            os.killpg(self._proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self._proc.wait()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def replacement_times(crashes: int, tmp: Path, device_kind: str, target: str) -> tuple[float, list[float]]:
    """First sandbox start, then each restart after a segfault (seconds)."""
    from sweep.config import EvalSettings
    from sweep.plan.dataset import load_dataset
    from sweep.sandbox import Sandbox, SandboxSpec
    from sweep.schema.task import Task

    root = REPO / "tests" / "data" / "cluster" / "faults"
    ds = load_dataset([str(root)])
    settings = EvalSettings(trials=1, warmup_ms=0, rep_ms=1, min_iterations=1, max_iterations=2, input_sets=1)
    task = Task.make(
        ds.definitions["fault_add"],
        ds.solutions["fault_add_segfault"],
        ds.workloads["fault_add"][0],
        settings,
        target,
        dataset_root=str(root),
    )
    spec = SandboxSpec(
        backend="sweep.engine",
        device_kind=device_kind,
        preload=("torch", "sweep.engine._evaluate"),
        workdir=str(tmp),
    )
    with Sandbox(spec) as sb:
        for _ in range(crashes):
            sb.run(task)
        sb.start()
        starts = list(sb.stats.start_seconds)
    return starts[0], starts[1:]


def sandbox_timeline(results_dir: Path) -> dict[str, float]:
    """Split a launch's evaluation phase using its traces' provenance: the seconds spent
    inside ``evaluate`` in the sandbox (``started_at`` -> ``finished_at``) and the gaps
    between one evaluation's end and the next one's start in the same sandbox (receiving,
    stamping, pickling, batch boundaries)."""
    from datetime import datetime

    marks = []
    for log in sorted((results_dir / "traces").rglob("*.jsonl")):
        for line in log.read_text().splitlines():
            prov = json.loads(line).get("provenance") or {}
            if prov.get("started_at") and prov.get("finished_at"):
                marks.append(
                    (
                        datetime.fromisoformat(prov["started_at"]).timestamp(),
                        datetime.fromisoformat(prov["finished_at"]).timestamp(),
                    )
                )
    marks.sort()
    gaps = sorted(b[0] - a[1] for a, b in itertools.pairwise(marks))
    return {
        "inside_s": sum(b - a for a, b in marks),
        "gaps_s": sum(gaps),
        "gap_median_ms": gaps[len(gaps) // 2] * 1000 if gaps else 0.0,
        "gap_p99_ms": gaps[int(0.99 * (len(gaps) - 1))] * 1000 if gaps else 0.0,
        "span_s": marks[-1][1] - marks[0][0] if marks else 0.0,
    }


def _median(xs: list[float]) -> float:
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def _round(
    i: int,
    args: argparse.Namespace,
    cfg: Path,
    tmp: Path,
    env: dict[str, str],
    gpus: list[str],
    head: RunningRay | None,
) -> dict[str, Any]:
    """One round of every path; the launches' timelines read from their traces."""
    row: dict[str, Any] = {}
    if args.concurrent:
        # Swap the GPUs every round, so neither path keeps the faster one.
        a, b = (gpus[0], gpus[1]) if i % 2 == 0 else (gpus[1], gpus[0])
        (row["loop"], row["loop_wall"]), (row["launch"], row["launch_wall"]) = run_together(
            [
                (_LOOP, cfg, {**env, "CUDA_VISIBLE_DEVICES": a}),
                (_LAUNCH, cfg, {**env, "CUDA_VISIBLE_DEVICES": b}),
            ]
        )
        row["gpus"] = f"loop on GPU {a}, launch on GPU {b}"
        row["timeline"] = sandbox_timeline(Path(str(row["launch"]["results_dir"])))
        shutil.rmtree(tmp / "results", ignore_errors=True)
    else:
        # Alternate which path goes first, so a drift of the machine (clocks, load)
        # does not always favour the same one.
        order = ["loop", "sched", "launch", "attached"]
        if i % 2:
            order.reverse()
        for path in order:
            if (path == "sched" and args.no_scheduler) or (path == "attached" and head is None):
                continue
            code = {"loop": _LOOP, "sched": _SCHED, "launch": _LAUNCH, "attached": _LAUNCH}[path]
            extra = (
                {"RAY_ADDRESS": head.address, "BENCH_NO_KEEP": "1"}
                if path == "attached" and head is not None
                else {}
            )
            row[path], row[path + "_wall"] = run_snippet(code, cfg, {**env, **extra})
            if path == "launch":
                row["timeline"] = sandbox_timeline(Path(str(row[path]["results_dir"])))
            if path in ("launch", "attached"):  # the next launch must find nothing stored
                shutil.rmtree(tmp / "results", ignore_errors=True)
    loop_s = float(row["loop"]["evals_s"])
    line = (
        f"round {i + 1}: loop {loop_s:.2f} s (whole {row['loop_wall']:.2f} s), launch "
        f"{float(row['launch']['steady_s']):.2f} s (ratio {float(row['launch']['steady_s']) / loop_s:.3f}; "
        f"whole {row['launch_wall']:.2f} s), inside evaluate {row['timeline']['inside_s']:.2f} s, "
        f"gaps {row['timeline']['gaps_s']:.2f} s"
    )
    if "attached" in row:
        line += f"; attached whole {row['attached_wall']:.2f} s"
    if "gpus" in row:
        line += f" [{row['gpus']}]"
    print(line, file=sys.stderr, flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tasks", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--crashes", type=int, default=10)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--rep-ms", type=float, default=1.0, help="evaluation.rep_ms: longer evaluations")
    ap.add_argument("--no-scheduler", action="store_true", help="skip the scheduler-only path")
    ap.add_argument(
        "--default-settings",
        action="store_true",
        help="the default evaluation settings (3 trials, 25 ms warm-up, 100 ms timed per side) "
        "instead of the shortest ones: evaluations of realistic length",
    )
    ap.add_argument(
        "--attached",
        action="store_true",
        help="also launch against a Ray already running on this machine (ray start --head)",
    )
    ap.add_argument(
        "--concurrent",
        action="store_true",
        help="cuda, two GPUs: run the loop and the launch at the same time, one GPU each",
    )
    ap.add_argument(
        "--round-offset",
        type=int,
        default=0,
        help="number the rounds from this one (which goes first, or which GPU is whose, "
        "alternates with the round): to split rounds over several runs",
    )
    args = ap.parse_args()
    gpus = ["0", "0"]
    if args.device == "cuda":
        import torch

        target = short_name(torch.cuda.get_device_name(0))
        if args.concurrent:
            if torch.cuda.device_count() < 2:
                sys.exit("--concurrent needs two GPUs")
            if short_name(torch.cuda.get_device_name(1)) != target:
                sys.exit("--concurrent needs two GPUs of one model")
            gpus = ["0", "1"]
        env = {"BENCH_DEVICE": "cuda", "BENCH_TARGET": target, "CUDA_VISIBLE_DEVICES": "0"}
    else:
        if args.concurrent:
            sys.exit("--concurrent is for --device cuda")
        target = "cpu"
        # Ray gives a one-CPU worker OMP_NUM_THREADS=1; the loop gets the same one core.
        env = {"BENCH_DEVICE": "cpu", "BENCH_TARGET": "cpu", "OMP_NUM_THREADS": "1"}
    if args.concurrent and args.attached:
        sys.exit("--concurrent and --attached do not go together")

    rounds: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="sweep-bench-") as tmp_name:
        tmp = Path(tmp_name)
        write_dataset(tmp / "data", args.tasks)
        cfg = tmp / "bench.yaml"
        write_config(
            cfg, tmp / "data", tmp / "results", target, None if args.default_settings else args.rep_ms
        )
        head = RunningRay(tmp / "head", env, args.device) if args.attached else None
        try:
            for i in range(args.rounds):
                rounds.append(_round(i + args.round_offset, args, cfg, tmp, env, gpus, head))
        finally:
            if head is not None:
                head.close()
        first, restarts = 0.0, list[float]()
        if args.crashes:
            first, restarts = replacement_times(args.crashes, tmp, args.device, target)

    import ray
    import torch

    n = args.tasks
    loops = [float(r["loop"]["evals_s"]) for r in rounds]
    steadies = [float(r["launch"]["steady_s"]) for r in rounds]
    scheds = [float(r["sched"]["steady_s"]) for r in rounds if "sched" in r]
    loop_walls = [float(r["loop_wall"]) for r in rounds]
    launch_walls = [float(r["launch_wall"]) for r in rounds]
    attached_walls = [float(r["attached_wall"]) for r in rounds if "attached_wall" in r]
    attached_steadies = [float(r["attached"]["steady_s"]) for r in rounds if "attached" in r]
    inside = [r["timeline"]["inside_s"] for r in rounds]
    gaps = [r["timeline"]["gaps_s"] for r in rounds]
    best_loop = min(loops)

    def ratios(xs: list[float], base: list[float]) -> str:
        paired = [x / b for x, b in zip(xs, base)]
        return f"{min(xs) / min(base):.3f}  {_median(paired):.3f}  {max(paired):.3f}"

    rows: list[tuple[str, list[float], str]] = [
        ("loop: evaluations (one process)", loops, "1.000  1.000  1.000"),
    ]
    if scheds:
        rows.append(("scheduler: evaluations, traces dropped", scheds, ratios(scheds, loops)))
    rows += [
        ("launch: evaluations (first worker ready -> last trace)", steadies, ratios(steadies, loops)),
        ("  of which inside evaluate(), in the sandbox", inside, ratios(inside, loops)),
        ("  of which between evaluations (sandbox idle)", gaps, "-"),
        ("loop: whole process (imports, plan, evaluations)", loop_walls, "1.000  1.000  1.000"),
        (
            "launch: whole command (Ray start, workers, evaluations, store)",
            launch_walls,
            ratios(launch_walls, loop_walls),
        ),
    ]
    if attached_walls:
        rows += [
            (
                "attached: evaluations (first worker ready -> last trace)",
                attached_steadies,
                ratios(attached_steadies, loops),
            ),
            (
                "attached: whole command (connect, workers, evaluations, store)",
                attached_walls,
                ratios(attached_walls, loop_walls),
            ),
        ]
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    last = rounds[-1]
    print(
        f"machine: {cpu}, {os.cpu_count()} cores; python {platform.python_version()}, "
        f"torch {torch.__version__}, ray {ray.__version__}"
        + (f"; GPU {torch.cuda.get_device_name(0)}" if args.device == "cuda" else "")
    )
    print(
        f"{n} evaluations of bench_add (torch solution, "
        + ("default evaluation settings" if args.default_settings else f"1 trial, rep_ms={args.rep_ms:g}")
        + f") on {args.device}; "
        f"launch used {last['launch']['workers']} worker slot(s); {args.rounds} rounds, "
        + (
            "loop and launch at the same time on two GPUs, swapped every round"
            if args.concurrent
            else "alternating order"
        )
        + ("; attached = launch against a Ray started before the rounds (ray start --head)" if head else "")
    )
    print(f"statuses: loop {last['loop']['statuses']}, launch {last['launch']['statuses']}")
    print(
        "ratio columns: best/best = fastest round of the path over the fastest loop; "
        "median and max of the per-round ratios (each path against the loop of its round)"
    )
    print()
    width = max(len(r[0]) for r in rows)
    print(f"{'path':<{width}}  {'best_s':>7}  {'median_s':>8}  {'ms/eval':>7}  best/best  median    max")
    print(f"{'-' * width}  {'-' * 7}  {'-' * 8}  {'-' * 7}  {'-' * 9}  {'-' * 6}  {'-' * 5}")
    for name, xs, r in rows:
        b, m = min(xs), _median(xs)
        parts = r.split()
        cols = (
            f"{parts[0]:>9}  {parts[1]:>6}  {parts[2]:>5}"
            if len(parts) == 3
            else f"{'-':>9}  {'-':>6}  {'-':>5}"
        )
        print(f"{name:<{width}}  {b:7.2f}  {m:8.2f}  {m / n * 1000:7.2f}  {cols}")
    print()
    if len(loops) > 1:
        mid = _median(loops)
        print(
            f"noise floor: the same loop's rounds took {min(loops):.2f}-{max(loops):.2f} s "
            f"({(min(loops) / mid - 1) * 100:+.0f}% to {(max(loops) / mid - 1) * 100:+.0f}% around their "
            "median); the work the launch adds to the loop is the sandbox idle time between evaluations, below"
        )
    tl = [r["timeline"] for r in rounds]
    print(
        f"between evaluations in the sandbox: median gap {_median([t['gap_median_ms'] for t in tl]):.2f} ms, "
        f"p99 {_median([t['gap_p99_ms'] for t in tl]):.2f} ms (median over rounds); the launch's evaluation "
        f"phase minus evaluations and gaps (start of the first, delivery of the last): "
        f"{_median([s - t['span_s'] for s, t in zip(steadies, tl)]):.2f} s"
    )
    print(
        f"launch start-up: {float(last['launch']['first_ready_s']):.2f} s from the scheduler's start to the "
        f"first worker ready; whole command minus its evaluations: "
        f"{_median([w - s for w, s in zip(launch_walls, steadies)]):.2f} s (median)"
        + (
            f"; attached: {_median([w - s for w, s in zip(attached_walls, attached_steadies)]):.2f} s"
            if attached_walls
            else ""
        )
        + f"; the loop's whole process minus its evaluations: {_median([w - x for w, x in zip(loop_walls, loops)]):.2f} s"
    )
    if best_loop and restarts:
        restarts.sort()
        print(
            f"sandbox start: first {first:.2f} s (zygote imports torch); replacement after a crash "
            f"(fork from the zygote{', CUDA init' if args.device == 'cuda' else ''}): "
            f"median {restarts[len(restarts) // 2] * 1000:.0f} ms over "
            f"{len(restarts)} crashes"
        )


if __name__ == "__main__":
    main()
