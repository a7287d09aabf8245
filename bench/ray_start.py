"""Ray's own start, option by option: seconds to ``ray.init`` of an embedded Ray and to its
first actor's ready, for the start options a launch could set.

Each round runs every variant once, in a fresh Python process (as a user's shell runs
``sweep launch``), in an order that rotates round by round (the machine's load drifts). Each
process imports ray, starts an embedded Ray with the kwargs ``sweep.cluster.connect`` uses
plus the variant's, makes one actor shaped as a launch's worker (one GPU with ``--device
cuda``, one CPU otherwise) and waits for its first answer, then shuts Ray down. Printed per
variant: the median and best seconds to ``import ray`` done, ``ray.init`` done, the actor's
answer, and the ratio of each variant's actor time to the baseline's, paired by round.

Variants: ``base`` (today's kwargs); ``no_prestart`` (``_system_config``: no Python workers
started ahead of need); ``no_usage_stats`` (``RAY_USAGE_STATS_ENABLED=0``);
``small_store`` (a 100 MB object store); ``store_2g`` (2 GiB, where Ray's default is 30% of
the host's memory); ``lean`` (``store_2g``, ``no_prestart`` and ``no_usage_stats`` together).

Usage: ``python bench/ray_start.py [--rounds 3] [--device cpu|cuda] [--variants base,no_prestart]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from warm_workers import run_python

_ONE = """
import json, sys, time
t0 = time.monotonic()
import ray
t_import = time.monotonic() - t0
extra = json.loads(sys.argv[1])
device = sys.argv[2]
kwargs = {"include_dashboard": False, "log_to_driver": False, "logging_level": "WARNING"}
ray.init(address="local", **kwargs, **extra)
t_init = time.monotonic() - t0

@ray.remote
class Probe:
    def ping(self):
        return 1

opts = {"num_gpus": 1, "num_cpus": 0} if device == "cuda" else {"num_cpus": 1}
ray.get(Probe.options(**opts).remote().ping.remote())
t_actor = time.monotonic() - t0
ray.shutdown()
print(json.dumps({"import_s": t_import, "init_s": t_init, "actor_s": t_actor}))
"""

_NO_PRESTART: dict[str, object] = {
    "_system_config": {"enable_worker_prestart": False, "prestart_worker_first_driver": False}
}
_NO_USAGE_STATS = {"RAY_USAGE_STATS_ENABLED": "0"}
_STORE_2G: dict[str, object] = {"object_store_memory": 2 * 1024**3}

_VARIANTS: dict[str, tuple[dict[str, object], dict[str, str]]] = {
    "base": ({}, {}),
    "no_prestart": (_NO_PRESTART, {}),
    "no_usage_stats": ({}, _NO_USAGE_STATS),
    "small_store": ({"object_store_memory": 100 * 1024 * 1024}, {}),
    "store_2g": (_STORE_2G, {}),
    "lean": ({**_STORE_2G, **_NO_PRESTART}, _NO_USAGE_STATS),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    ap.add_argument("--variants", default=",".join(_VARIANTS))
    args = ap.parse_args()
    names = [n for n in args.variants.split(",") if n]
    unknown = [n for n in names if n not in _VARIANTS]
    if unknown:
        raise SystemExit(f"unknown variant(s) {', '.join(unknown)}; known: {', '.join(_VARIANTS)}")
    rows: dict[str, list[dict[str, float]]] = {n: [] for n in names}
    for r in range(args.rounds):
        order = names[r % len(names) :] + names[: r % len(names)]
        for name in order:
            extra, env = _VARIANTS[name]
            row, _ = run_python(_ONE, [json.dumps(extra), args.device], env)
            rows[name].append(row)
            print(
                f"round {r} {name:15s} import {row['import_s']:.2f} s, ray.init done {row['init_s']:.2f} s, "
                f"first actor answered {row['actor_s']:.2f} s",
                flush=True,
            )
    print(f"machine: {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f} at the end; {args.rounds} rounds")
    print(
        f"{'variant':15s} {'init_med':>8s} {'init_best':>9s} {'actor_med':>9s} {'actor_best':>10s} {'vs_base':>8s}"
    )
    base = rows.get("base")
    for name in names:
        init = [x["init_s"] for x in rows[name]]
        actor = [x["actor_s"] for x in rows[name]]
        ratio = (
            f"{statistics.median(a / b['actor_s'] for a, b in zip(actor, base, strict=True)):.3f}"
            if base is not None
            else "-"
        )
        print(
            f"{name:15s} {statistics.median(init):8.2f} {min(init):9.2f} {statistics.median(actor):9.2f} "
            f"{min(actor):10.2f} {ratio:>8s}"
        )


if __name__ == "__main__":
    main()
