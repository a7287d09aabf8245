"""What ``sweep workers`` prints, from descriptions (no cluster)."""

from __future__ import annotations

from dataclasses import replace

from sweep._cli.workers import render_stop, render_workers
from sweep.cluster.warm import WarmState
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
        WarmWorker("sweep-worker-aaaa", STATE, same_code=True),
        WarmWorker("sweep-worker-bbbb", replace(STATE, owner="run-9", idle_s=None, busy_s=200.0), True),
        WarmWorker("sweep-worker-cccc", replace(STATE, code="beef"), same_code=False),
        WarmWorker("sweep-worker-dddd", replace(STATE, changed=("torch 2.4.0 -> 2.5.0",)), True),
        WarmWorker("sweep-worker-eeee", None, same_code=False),
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
    assert "no answer (starting, or hung)" in lines["sweep-worker-eeee"]
    assert text.endswith("5 warm worker(s): 1 leased, 2 stale for this checkout, 1 not answering")
    assert render_workers([]) == "no warm workers on this cluster"


def test_stop_result_in_words() -> None:
    result = StopResult(
        stopped=[WarmWorker("sweep-worker-aaaa", STATE, True), WarmWorker("sweep-worker-ffff", None, False)],
        left=[(WarmWorker("sweep-worker-bbbb", STATE, True), "leased by run run-9")],
    )
    assert render_stop(result).splitlines() == [
        "stopped sweep-worker-aaaa (gpu-7, GPU 3)",
        "stopped sweep-worker-ffff",
        "left sweep-worker-bbbb running: leased by run run-9 (--force stops it too)",
        "2 stopped, 1 left running",
    ]
