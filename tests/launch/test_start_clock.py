"""The launch's start clock (``StartClock``): the driver's steps and the first worker's,
reported by the worker in wall time, on one time line in order."""

from __future__ import annotations

import pytest

from sweep.cluster import WorkerInfo
from sweep.launch._run import StartClock


def _info(**walls: float | bool | None) -> WorkerInfo:
    return WorkerInfo("node", "0", 1, "host", "cpu", None, 0.1, **walls)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("marks", "ray_s", "walls_s", "adopted", "steps"),
    [
        pytest.param(
            ["plan"],
            5.0,
            {
                "process_started_at": 6.0,
                "actor_started_at": 6.5,
                "zygote_ready_at": 5.5,
                "sandbox_ready_at": 7.0,
                "ready_at": 8.0,
            },
            False,
            ["plan", "ray", "zygote", "worker_process", "worker_actor", "sandbox", "worker_ready"],
            id="own-zygote",
        ),
        # A handed-over zygote says when it had preloaded and when it was adopted.
        pytest.param(
            ["plan", "zygotes_offered"],
            4.0,
            {
                "process_started_at": 3.5,
                "actor_started_at": 4.3,
                "zygote_ready_at": 4.35,
                "zygote_preloaded_at": 3.0,
                "sandbox_ready_at": 4.7,
                "ready_at": 4.8,
            },
            True,
            [
                "plan",
                "zygotes_offered",
                "zygote_preloaded",
                "worker_process",
                "ray",
                "worker_actor",
                "zygote_adopted",
                "sandbox",
                "worker_ready",
            ],
            id="handed-over-zygote",
        ),
    ],
)
def test_the_first_workers_steps_join_the_drivers_in_time_order(
    marks: list[str], ray_s: float, walls_s: dict[str, float], adopted: bool, steps: list[str]
) -> None:
    clock = StartClock()
    t0 = clock.t0_wall
    for step in marks:
        clock.mark(step)
    clock.mark_at("ray", t0 + ray_s)
    clock.mark_worker(_info(zygote_adopted=adopted, **{k: t0 + s for k, s in walls_s.items()}))
    assert [s for s, _ in clock.phases] == steps
    phases = dict(clock.phases)
    assert phases["sandbox"] == pytest.approx(walls_s["sandbox_ready_at"])
    assert phases["worker_ready"] == pytest.approx(walls_s["ready_at"])


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
