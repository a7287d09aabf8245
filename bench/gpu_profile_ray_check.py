"""Checks of ``bench/gpu_profile_ray.sh``'s store: what `sweep profile` stored through Ray.

Prints, per profiled task, the ncu kernels' summed duration per call against the sweep's own
latency, and each sanitizer tool's findings; fails (exit 1) when a chosen correct task has no
ncu rows or a sanitizer error, or when memcheck did not report the planted out-of-bounds read.
"""

from __future__ import annotations

import sys

import duckdb

PLANTED = "rmsnorm_h1024_cuda_oob"


def main(store: str) -> int:
    con = duckdb.connect(store, read_only=True)
    failures: list[str] = []
    # One row per profiled launch: a call's duration is the sum over the solution's kernels of
    # each kernel's median launch.
    rows = con.execute(
        "WITH k AS (SELECT task_id, kernel, count(*) AS n, median(duration_ms) AS ms "
        "FROM profiles GROUP BY ALL), "
        "t AS (SELECT task_id, any_value(solution) AS solution, median(latency_ms) AS latency "
        "FROM traces GROUP BY task_id) "
        "SELECT k.task_id, t.solution, t.latency, sum(k.n), sum(k.ms) FROM k JOIN t USING (task_id) "
        "GROUP BY k.task_id, t.solution, t.latency ORDER BY 2"
    ).fetchall()
    cols = [d[0] for d in con.execute("SELECT * FROM profiles LIMIT 0").description]
    print("profiles columns:", ", ".join(cols))
    print(f"{'solution':<32} {'launches':>8} {'ncu ms':>10} {'sweep ms':>10} {'ratio':>6}")
    for task_id, solution, latency, n, dur in rows:
        ratio = dur / latency if latency and dur else float("nan")
        print(f"{solution:<32} {n:>8} {dur or 0:>10.4f} {latency or 0:>10.4f} {ratio:>6.3f}  {task_id}")
    profiled = {r[1] for r in rows}
    if not profiled:
        failures.append("no profiles rows at all")
    findings = con.execute(
        "SELECT DISTINCT t.solution, f.tool, f.kind, f.kernel, f.count, f.first_message "
        "FROM sanitizer_findings f JOIN traces t USING (task_id) ORDER BY 1, 2"
    ).fetchall()
    for f in findings:
        print("finding:", " | ".join(str(x)[:100] for x in f))
    bad = [f for f in findings if f[0] != PLANTED]
    if bad:
        failures.append(f"sanitizer findings on correct kernels: {bad}")
    if not any(f[0] == PLANTED and f[1] == "memcheck" for f in findings):
        failures.append("memcheck did not report the planted out-of-bounds read")
    print("FAIL:\n  " + "\n  ".join(failures) if failures else "OK")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
