"""The launch's start clock (``StartClock``): the driver's steps and the first worker's,
reported by the worker in wall time, on one time line in order."""

from __future__ import annotations

from sweep.cluster import WorkerInfo
from sweep.launch._run import StartClock


def _info(**walls: float | None) -> WorkerInfo:
    return WorkerInfo("node", "0", 1, "host", "cpu", None, 0.1, **walls)  # type: ignore[arg-type]


def test_the_first_workers_steps_join_the_drivers_in_time_order() -> None:
    clock = StartClock()
    t0 = clock.t0_wall
    clock.mark("plan")
    clock.mark_at("ray", t0 + 5.0)
    clock.mark_worker(
        _info(
            process_started_at=t0 + 6.0,
            actor_started_at=t0 + 6.5,
            zygote_ready_at=t0 + 5.5,
            sandbox_ready_at=t0 + 7.0,
            ready_at=t0 + 8.0,
        )
    )
    steps = [s for s, _ in clock.phases]
    assert steps == ["plan", "ray", "zygote", "worker_process", "worker_actor", "sandbox", "worker_ready"]
    assert (dict(clock.phases)["sandbox"], dict(clock.phases)["worker_ready"]) == (7.0, 8.0)


def test_a_worker_started_before_the_launch_and_unknown_steps_are_left_out() -> None:
    clock = StartClock()
    t0 = clock.t0_wall
    # A warm worker reused: it started long before this launch.
    clock.mark_worker(
        _info(process_started_at=t0 - 60, actor_started_at=t0 - 59, zygote_ready_at=None, ready_at=t0 + 1)
    )
    assert [s for s, _ in clock.phases] == ["worker_ready"]
    clock.mark_at("nothing", None)
    assert len(clock.phases) == 1


def test_a_handed_over_zygote_says_when_it_had_preloaded_and_when_it_was_adopted() -> None:
    clock = StartClock()
    t0 = clock.t0_wall
    clock.mark("plan")
    clock.mark("zygotes_offered")
    clock.mark_at("ray", t0 + 4.0)
    clock.mark_worker(
        _info(
            process_started_at=t0 + 3.5,
            actor_started_at=t0 + 4.3,
            zygote_ready_at=t0 + 4.35,
            zygote_preloaded_at=t0 + 3.0,
            zygote_adopted=True,
            sandbox_ready_at=t0 + 4.7,
            ready_at=t0 + 4.8,
        )
    )
    steps = [s for s, _ in clock.phases]
    assert steps == [
        "plan",
        "zygotes_offered",
        "zygote_preloaded",
        "worker_process",
        "ray",
        "worker_actor",
        "zygote_adopted",
        "sandbox",
        "worker_ready",
    ]
