"""Warm workers on the session's two-node Ray cluster (logical GPUs; the fake backend, or the
real engine's CPU path): reuse by a later run, leases, stale workers replaced, idle exit,
faults, and ``sweep workers`` in this process.

Every test starts and ends with no warm worker left (they hold GPUs of the shared cluster).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.cluster.connect import ClusterInfo, Pool, live_nodes, pools_for
from sweep.cluster.scheduler import SchedulerStats, run_tasks
from sweep.cluster.warm import NAMESPACE, WarmState, WarmWorkers, survey
from sweep.cluster.warm_admin import stop_warm_workers
from sweep.config import ConfigOverrides
from sweep.launch.driver import LaunchOptions, launch
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema import Trace
from sweep.schema.task import Task

from ..conftest import wait_until
from .conftest import FAKE_BACKEND, toy_tasks, write_config, write_dataset

runner = CliRunner()
SPEC = SandboxSpec(backend=FAKE_BACKEND, preload=())


def _names() -> set[str]:
    import ray

    return {a["name"] for a in ray.util.list_named_actors(all_namespaces=True) if a["namespace"] == NAMESPACE}


@pytest.fixture(autouse=True)
def no_warm_workers(two_nodes: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """None before and none after: stop them all and wait until Ray has them dead. A healthy
    worker answers here however loaded the host (a run beside two others has taken over the
    10 s a launch gives, and the launch started a new worker instead of reusing one); the test
    of a worker that does not answer sets its own bound."""
    import sweep.cluster.warm

    monkeypatch.setattr(sweep.cluster.warm, "ANSWER_S", 60.0)

    def clear() -> None:
        stop_warm_workers(stale_only=False, force=True)
        assert wait_until(lambda: not _names(), 120, every_s=0.2), "warm workers did not stop"

    clear()
    yield
    clear()


def _states() -> list[WarmState]:
    """Every warm worker's description (each must answer)."""
    found = survey()
    assert all(f.state is not None for f in found), found
    return [f.state for f in found if f.state is not None]


def _pools(target: str, n: int) -> list[Pool]:
    return pools_for(target, ClusterInfo(None, False, live_nodes()), max_workers=n)


def _run(
    tasks: Sequence[Task], pools: list[Pool], run_id: str, source: WarmWorkers, spec: SandboxSpec = SPEC
) -> tuple[SchedulerStats, list[Trace]]:
    got: list[Trace] = []
    stats = run_tasks(tasks, pools, spec, run_id=run_id, on_traces=got.extend, workers=source)
    return stats, got


def _zygote_pids(traces: list[Trace]) -> set[str]:
    """The zygotes that forked the tasks' processes (the fake backend says, in its libs)."""
    return {t.evaluation.environment.libs["zygote"] for t in traces if t.evaluation is not None}


def test_a_second_run_reuses_the_workers_their_zygotes_and_stamps_its_run_id() -> None:
    tasks = toy_tasks(["sleep"], n_workloads=8)  # 50 ms each: both workers get some
    pools = _pools("H100", 2)
    first, traces1 = _run(tasks, pools, "run-1", WarmWorkers("run-1", idle_timeout_s=600))
    assert (first.workers_started, first.workers_reused, len(traces1)) == (2, 0, 8)
    states = _states()
    assert len(states) == 2
    assert all(s.owner is None and s.idle_s is not None and s.launches == 1 for s in states), states
    second, traces2 = _run(tasks, pools, "run-2", WarmWorkers("run-2", idle_timeout_s=600))
    assert (second.workers_started, second.workers_reused, len(traces2)) == (2, 2, 8)
    assert {t.evaluation.status.value for t in traces2} == {"PASSED"}
    after = _states()
    assert sorted(s.pid for s in after) == sorted(s.pid for s in states)  # the same actors
    assert [s.launches for s in after] == [2, 2]
    # the zygotes of the first run forked the second's tasks (each task a process of its own),
    # its traces stamped with its run id
    assert _zygote_pids(traces2) & _zygote_pids(traces1)
    pids = [t.provenance.worker_pid for t in traces1 + traces2 if t.provenance]
    assert len(set(pids)) == len(pids) == 16
    assert {t.provenance.run_id for t in traces2 if t.provenance} == {"run-2"}


def test_a_leased_worker_serves_one_run_and_a_dead_drivers_lease_expires() -> None:
    import ray

    (pool,) = _pools("H200", 1)
    # run a holds a worker and renews its lease while b starts (however long a loaded host
    # takes for that), then its driver "dies": no more renewals, no release
    a = WarmWorkers("run-a", idle_timeout_s=600, lease_s=4.0, renew_s=0.5)
    held = a.start(pool, SPEC).handle
    ray.get(held.ready.remote(), timeout=120)
    b = WarmWorkers("run-b", idle_timeout_s=600)
    other = b.start(pool, SPEC)
    assert not other.reused, "run b got the worker run a holds"
    ray.get(other.handle.ready.remote(), timeout=120)
    b.finish([(other.handle, True)])
    a_name = ray.get(held.actor.describe.remote()).name
    a._done.set()  # its driver dies: the renewing thread stops, the worker stays leased
    # its lease expires 4 s after the last renewal that reached the worker
    assert wait_until(lambda: ray.get(held.actor.describe.remote()).owner is None, 120, every_s=0.5)
    state = ray.get(held.actor.describe.remote())
    assert state.idle_s is not None
    c = WarmWorkers("run-c", idle_timeout_s=600)
    got = [c.start(pool, SPEC), c.start(pool, SPEC)]
    assert all(s.reused for s in got), "both idle workers (one of them freed by expiry) are reused"
    names = {ray.get(s.handle.actor.describe.remote()).name for s in got}
    assert a_name in names
    with pytest.raises(Exception, match="not leased to run run-a"):
        ray.get(held.evaluate_batch.remote([]), timeout=60)  # refused before it looks at the tasks
    c.finish([(s.handle, True) for s in got])
    a.finish([])  # its renewing thread ends


def test_stale_idle_workers_of_the_pool_are_stopped_and_replaced() -> None:
    tasks = toy_tasks(["ok"], n_workloads=2, hardware="H200")
    pools = _pools("H200", 2)
    _run(tasks, pools, "run-1", WarmWorkers("run-1", idle_timeout_s=600))
    old = {s.name for s in _states()}
    assert len(old) == 2
    other_spec = SandboxSpec(backend=FAKE_BACKEND, preload=("json",))  # another sandbox spec
    source = WarmWorkers("run-2", idle_timeout_s=600)
    stats, traces = _run(tasks, pools, "run-2", source, other_spec)
    assert (stats.workers_started, stats.workers_reused, len(traces)) == (2, 0, 2)
    assert len(source.replaced) == 2
    assert all("another sandbox spec or runtime environment" in r for r in source.replaced), source.replaced
    new = {s.name for s in _states()}
    assert len(new) == 2 and not new & old


def test_an_unused_worker_stops_itself_after_its_idle_timeout() -> None:
    tasks = toy_tasks(["ok"], n_workloads=1, hardware="H200")
    _run(tasks, _pools("H200", 1), "run-1", WarmWorkers("run-1", idle_timeout_s=1.0))
    assert wait_until(lambda: not _names(), 120, every_s=0.5), "the idle worker is still running"


def test_a_worker_killed_mid_run_is_replaced_and_never_kept() -> None:
    tasks = toy_tasks(["kill_worker"], n_workloads=1) + toy_tasks(["ok"], n_workloads=4)
    source = WarmWorkers("run-1", idle_timeout_s=600)
    # Unconfined: the task stands for a lost node, and a confined one may not signal its worker.
    stats, traces = _run(tasks, _pools("H100", 2), "run-1", source, replace(SPEC, confine=False))
    assert len(traces) == 5 and stats.workers_died == 3  # the task killed its worker on each try
    lost = [t for t in traces if t.solution == "kill_worker"]
    assert lost[0].evaluation.status.value == "RUNTIME_ERROR" and "was lost 3 time(s)" in (
        lost[0].evaluation.log or ""
    )
    kept = _states()
    assert len(kept) == stats.workers_started - stats.workers_died  # the survivors only
    assert all(s.owner is None for s in kept)


def test_sweep_workers_lists_and_stops_them() -> None:
    pools = _pools("H100", 2)
    _run(toy_tasks(["ok"], n_workloads=2), pools, "run-1", WarmWorkers("run-1", idle_timeout_s=600))
    listed = runner.invoke(app, ["workers"])
    assert listed.exit_code == 0, listed.output
    rows = [ln for ln in listed.stdout.splitlines() if ln.startswith("sweep-worker-")]
    assert len(rows) == 2 and all(ln.endswith("this checkout") for ln in rows), listed.stdout
    assert "2 warm worker(s): 0 leased, 0 stale for this checkout" in listed.stdout
    holder = WarmWorkers("run-held", idle_timeout_s=600)
    held = holder.start(pools[0], SPEC)
    assert held.reused
    assert "leased by run run-held" in runner.invoke(app, ["workers"]).stdout

    neither = runner.invoke(app, ["workers", "stop"])
    assert neither.exit_code == 1 and "error: say which workers to stop: --all or --stale" in neither.stderr
    both = runner.invoke(app, ["workers", "stop", "--all", "--stale"])
    assert both.exit_code == 1 and "error: say which workers to stop" in both.stderr
    stale = runner.invoke(app, ["workers", "stop", "--stale"])
    assert stale.exit_code == 0 and "0 stopped, 0 left running" in stale.stdout
    idle = runner.invoke(app, ["workers", "stop", "--all"])
    assert idle.exit_code == 0, idle.output
    assert "1 stopped, 1 left running" in idle.stdout
    assert "running: leased by run run-held (--force stops it too)" in idle.stdout
    forced = runner.invoke(app, ["workers", "stop", "--all", "--force"])
    assert forced.exit_code == 0 and "1 stopped, 0 left running" in forced.stdout
    wait_until(lambda: not _names(), 60, every_s=0.2)
    assert runner.invoke(app, ["workers"]).stdout.strip() == "no warm workers on this cluster"
    holder.finish([])  # its renewing thread ends


def test_launch_with_an_address_keeps_its_workers_unless_told_not_to(tmp_path: Path) -> None:
    import ray

    address = ray.get_runtime_context().gcs_address
    data = write_dataset(tmp_path / "data", {"ok": "def run(x):\n    return x + 1\n"}, 2)
    cfg = write_config(tmp_path / "h200.yaml", [data], tmp_path / "results", hardware="H200")
    warm = LaunchOptions(overrides=ConfigOverrides(address=address), quiet=True, force=True)
    first = launch(cfg, warm)
    assert first.kept_workers and first.stats.workers_reused == 0 and first.ran == 2
    assert len(_names()) == 2
    second = launch(cfg, warm)
    assert second.kept_workers and second.stats.workers_reused == 2 and second.statuses == {"PASSED": 2}
    text = runner.invoke(app, ["launch", str(cfg), "--address", address, "--force", "--quiet"]).stdout
    assert "warm workers: 2 reused, 0 started; left running for the next launch" in text, text
    before = _names()
    fresh = LaunchOptions(
        overrides=ConfigOverrides(address=address, keep_workers=False), quiet=True, force=True
    )
    # the H200 GPUs are held by the warm workers: free them, so the unkept launch can place its own
    stop_warm_workers(stale_only=False)
    third = launch(cfg, fresh)
    assert not third.kept_workers and third.stats.workers_reused == 0 and third.ran == 2
    assert not _names() & before and not _names(), "a launch with keep_workers off left workers"


def test_a_worker_that_does_not_answer_is_listed_and_stopped_only_by_force(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import ray

    import sweep.cluster.warm

    monkeypatch.setattr(sweep.cluster.warm, "ANSWER_S", 2.0)

    @ray.remote(num_cpus=0)
    class Mute:  # a worker whose control methods hang
        def describe(self) -> None:
            time.sleep(3600)

    mute = Mute.options(name="sweep-worker-mute", namespace=NAMESPACE, lifetime="detached").remote()
    assert mute is not None
    listed = runner.invoke(app, ["workers"])
    assert listed.exit_code == 0, listed.output
    assert "sweep-worker-mute" in listed.stdout and "no answer (starting, or hung)" in listed.stdout
    assert "1 not answering" in listed.stdout
    left = runner.invoke(app, ["workers", "stop", "--all"])
    assert (
        "left sweep-worker-mute running: no answer within 2 s" in left.stdout  # the bound in force
        and "0 stopped, 1 left" in left.stdout
    )
    assert runner.invoke(app, ["workers", "stop", "--stale"]).stdout.strip() == "0 stopped, 0 left running"
    forced = runner.invoke(app, ["workers", "stop", "--all", "--force"])
    assert "stopped sweep-worker-mute" in forced.stdout and "1 stopped, 0 left running" in forced.stdout
