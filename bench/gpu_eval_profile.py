"""Where one evaluation's time goes on a GPU (cProfile of ``sweep.engine.evaluate``).

Plans points of the shipped Triton GEMM on one shape (as ``bench/gpu_autotune.py`` does),
evaluates the first ``--warm`` to warm the process, compiles the next ``--n`` ahead
(``sweep.engine.compile_ahead``, as a compile pool would), then profiles their evaluations
and prints the wall time of each and cProfile's top functions by cumulative time.

Usage (GPU host): python3 bench/gpu_eval_profile.py [--m 8192] [--warm 4] [--n 8]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import gpu_autotune


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--m", type=int, default=8192)
    ap.add_argument("--warm", type=int, default=4)
    ap.add_argument("--n", type=int, default=8)
    ap.add_argument("--top", type=int, default=45)
    args = ap.parse_args()
    from sweep.config import ConfigOverrides
    from sweep.engine import EngineCache, evaluate
    from sweep.engine.compile_ahead import evaluate as compile_ahead
    from sweep.plan import plan_config

    work = Path(tempfile.mkdtemp(prefix="eval-profile-"))
    uuid = gpu_autotune._dataset(work / "data", args.m)
    cfg = gpu_autotune._config(work / "c.yaml", work / "data", uuid, work / "r", "full", "0")
    tasks = plan_config(cfg, ConfigOverrides(hardware="H100")).tasks
    cache = EngineCache()
    for t in tasks[: args.warm]:
        t0 = time.monotonic()
        tr = evaluate(t, device="cuda", cache=cache)
        assert tr.evaluation is not None
        print(f"warm {t.params} {tr.evaluation.status.value} {time.monotonic() - t0:.3f} s")
    chosen = tasks[args.warm : args.warm + args.n]
    for t in chosen:
        t0 = time.monotonic()
        compile_ahead(t, device="cuda", cache=EngineCache())
        print(f"compiled ahead {t.params} {time.monotonic() - t0:.3f} s")
    prof = cProfile.Profile()
    for t in chosen:
        t0 = time.monotonic()
        prof.enable()
        tr = evaluate(t, device="cuda", cache=cache)
        prof.disable()
        assert tr.evaluation is not None
        tm = tr.evaluation.timing
        print(
            f"eval {t.params} {tr.evaluation.status.value} {time.monotonic() - t0:.3f} s; "
            f"timer {getattr(tm, 'timer', None)} iterations {getattr(tm, 'iterations', None)}"
        )
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(args.top)
    print(out.getvalue())
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(25)
    print(out.getvalue())


if __name__ == "__main__":
    main()
