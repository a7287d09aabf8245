"""What ``sweep workers`` prints, from descriptions (no cluster)."""

from __future__ import annotations

from dataclasses import replace

from sweep._cli.workers import render_stop, render_workers
from sweep.cluster._lease import WarmState
from sweep.cluster.warm_admin import StopResult, WarmWorker

STATE = WarmState(
    name="sweep-worker-aaaa",
    node_id="0123456789abcdef",
    gpu_id="3",
    pid=4242,
    hostname="gpu-7",
    started_at=1_800_000_000.0,
    backend="sweep.engine",
    pool='H100 {"num_gpus": 1}',
    key="k",
    code="c0de",
    owner=None,
    lease_left_s=None,
    idle_s=5.0,
    busy_s=None,
    idle_timeout_s=600.0,
    launches=3,
    tasks=120,
    changed=(),
)


def test_each_state_in_words() -> None:
    rows = [
        WarmWorker(STATE, same_code=True),
        WarmWorker(replace(STATE, name="sweep-worker-bbbb", owner="run-9", idle_s=None, busy_s=200.0), True),
        WarmWorker(replace(STATE, name="sweep-worker-cccc", code="beef"), same_code=False),
        WarmWorker(replace(STATE, name="sweep-worker-dddd", changed=("torch 2.4.0 -> 2.5.0",)), True),
    ]
    text = render_workers(rows)
    lines = {ln.split()[0]: ln for ln in text.splitlines() if ln.startswith("sweep-worker-")}
    assert "idle 5 s of 10 min" in lines["sweep-worker-aaaa"] and lines["sweep-worker-aaaa"].endswith(
        "this checkout"
    )
    assert "gpu-7 (01234567)" in lines["sweep-worker-aaaa"] and " 3 " in lines["sweep-worker-aaaa"]
    assert "leased by run run-9, busy 3 min" in lines["sweep-worker-bbbb"]
    assert lines["sweep-worker-cccc"].endswith("other code (beef)")
    assert lines["sweep-worker-dddd"].endswith("stale: torch 2.4.0 -> 2.5.0")
    assert text.endswith("4 warm worker(s): 1 leased, 2 stale for this checkout")
    assert render_workers([]) == "no warm workers on this cluster"


def test_stop_result_in_words() -> None:
    result = StopResult(
        stopped=[STATE], left=[(replace(STATE, name="sweep-worker-bbbb"), "leased by run run-9")]
    )
    assert render_stop(result).splitlines() == [
        "stopped sweep-worker-aaaa (gpu-7, GPU 3)",
        "left sweep-worker-bbbb running: leased by run run-9 (--force stops it too)",
        "1 stopped, 1 left running",
    ]
