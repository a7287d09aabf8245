"""Running a launch's tasks: the results store opened while Ray starts, then the scheduler.

Before the first evaluation a launch does two slow things that do not need each other:
connecting to Ray (importing it, starting or joining the cluster: a second or more), and
opening the results store (reading earlier durations for longest-first, storing the sweep's
definitions and solutions, catching up with lines an earlier run logged but never stored: a
few tenths of a second, more with a large store). :class:`StoreOpening` does the second in a
thread while the launch does the first; DuckDB lets go of the GIL while it works, and Ray's
start mostly waits on other processes. :class:`StartClock` records where the time went, so
``sweep launch`` can say how long it took to start evaluating.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from sweep.cluster import WorkerInfo
from sweep.cluster.connect import Pool
from sweep.cluster.head_start import HeadStart
from sweep.cluster.scheduler import SchedulerOptions, SchedulerStats, run_tasks
from sweep.cluster.warm import WarmWorkers
from sweep.cluster.workers import FreshWorkers
from sweep.cluster.zygote_offers import ZygoteOffers
from sweep.config import SweepConfig
from sweep.launch._estimates import estimated_for
from sweep.launch._storing import Storing
from sweep.launch.progress import Progress, Tally
from sweep.plan import Plan
from sweep.plan.dataset import Dataset
from sweep.sandbox.supervisor import SandboxSpec
from sweep.schema.task import Task

if TYPE_CHECKING:
    from sweep.store import ResultsWriter

__all__ = [
    "STORE_FLUSH_S",
    "StartClock",
    "StoreOpening",
    "head_tasks",
    "lend_kinds",
    "run_sweep",
    "start_head",
]

#: Seconds between batched inserts into the DuckDB store during a launch (by the writer's
#: follower process, off the driver's CPU: short, so readers have little log tail to merge).
STORE_FLUSH_S = 0.5


class StartClock:
    """Seconds since a launch began, at each named step of its start."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.t0_wall = time.time()
        self._marks: list[tuple[str, float]] = []

    def mark(self, step: str) -> None:
        """Record that ``step`` has just ended."""
        self._marks.append((step, time.monotonic() - self.t0))

    def mark_at(self, step: str, wall: float | None) -> None:
        """Record that ``step`` ended at wall time ``wall`` (``time.time()``, another
        process's: a worker's), kept in time order; nothing when ``wall`` is ``None``."""
        if wall is not None:
            self._marks.append((step, wall - self.t0_wall))
            self._marks.sort(key=lambda m: m[1])

    def mark_worker(self, info: WorkerInfo) -> None:
        """The steps of the first worker's start, from what it reported once ready:
        ``worker_process`` (Ray started its process), ``worker_actor`` (its actor began:
        the worker's imports done), ``zygote`` (its zygote imported torch and the engine),
        ``sandbox`` (its first sandbox process ready on the device), ``worker_ready`` (it
        answered ready; its compile pool starts after); ``zygote_preloaded`` and
        ``zygote_adopted`` in place of ``zygote`` for a zygote the driver handed over
        (``sweep.cluster.zygote_offers``). A reused warm worker
        started before the launch: its steps are left out."""
        zygote = [("zygote", info.zygote_ready_at)]
        if info.zygote_adopted:  # handed over: when it had preloaded, when the worker had it
            zygote = [
                ("zygote_preloaded", info.zygote_preloaded_at),
                ("zygote_adopted", info.zygote_ready_at),
            ]
        for step, wall in (
            ("worker_process", info.process_started_at),
            ("worker_actor", info.actor_started_at),
            *zygote,
            ("sandbox", info.sandbox_ready_at),
            ("worker_ready", info.ready_at),
        ):
            if wall is not None and wall >= self.t0_wall:
                self.mark_at(step, wall)

    def elapsed(self) -> float:
        """Seconds since the launch began."""
        return time.monotonic() - self.t0

    @property
    def phases(self) -> tuple[tuple[str, float], ...]:
        """Each step with the seconds since the launch began when it ended, in order."""
        return tuple(self._marks)


class StoreOpening:
    """Opens the launch's :class:`~sweep.store.ResultsWriter` (and reads earlier durations for
    ``todo``, when given) in a thread, from the moment it is made.

    :meth:`take` waits and hands the writer over (or raises what opening it raised);
    :meth:`discard` closes a writer that was never taken. Use ``discard`` in a ``finally``: a
    launch that fails before it runs anything must not hold the results folder.
    """

    def __init__(
        self, config: SweepConfig, dataset: Dataset, run_id: str, todo: Sequence[Task] | None = None
    ) -> None:
        self._config = config
        self._dataset = dataset
        self._run_id = run_id
        self._todo = todo
        self._writer: ResultsWriter | None = None
        self._error: BaseException | None = None
        #: Seconds each task of ``todo`` should take (see :func:`estimated_for`), or ``None``
        #: when ``todo`` was not given.
        self.estimated: dict[str, float] | None = None
        #: What reading the durations has to say (the launch prints it).
        self.notes: list[str] = []
        #: Seconds after it began that the writer was open.
        self.open_s: float | None = None
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._open, name="sweep-store-open", daemon=True)
        self._thread.start()

    def _open(self) -> None:
        from sweep.store import ResultsWriter, StoreContext

        out = self._config.output
        try:
            if self._todo is not None:
                self.estimated = estimated_for(
                    self._todo, Path(out.results_dir), Path(out.store_path()), self.notes.append
                )
            self._writer = ResultsWriter(
                Path(out.results_dir),
                Path(out.store_path()),
                sweep=self._config.name,
                run_id=self._run_id,
                context=StoreContext.from_dataset(self._dataset),
                flush_interval_s=STORE_FLUSH_S,
            )
            self.open_s = time.monotonic() - self._t0
        except BaseException as e:  # noqa: BLE001 - raised in the launch's thread by take()
            self._error = e

    def estimates_now(self) -> Mapping[str, float]:
        """The durations read so far, without waiting: ``{}`` until they are (the head start
        orders its first tasks by them when it can)."""
        return self.estimated or {}

    def take(self) -> ResultsWriter:
        """The open writer, now the caller's to close.

        Raises:
            StoreError: The store or the results folder could not be opened (another sweep
                writes there, say); whatever else opening it raised.
        """
        self._thread.join()
        if self._error is not None:
            raise self._error
        writer, self._writer = self._writer, None
        if writer is None:
            raise RuntimeError("the results writer was taken already")
        return writer

    def discard(self) -> None:
        """Close the writer if it was opened and never taken; forget an error."""
        self._thread.join()
        writer, self._writer = self._writer, None
        if writer is not None:
            writer.close()


def run_sweep(
    run_id: str,
    plans: Sequence[Plan],
    todo: list[Task],
    opening: StoreOpening,
    pools: list[Pool],
    options: tuple[SandboxSpec, SchedulerOptions, Progress | None],
    warm: WarmWorkers | None,
    clock: StartClock,
    handed: tuple[ZygoteOffers | None, HeadStart | None] = (None, None),
) -> tuple[Tally, SchedulerStats]:
    """Run ``todo`` on ``pools``, each trace written to the store as it comes (``handed``:
    zygotes started for the new workers of an embedded launch, and the head start that
    evaluated tasks of ``todo`` on them while Ray started: closed, its tasks not run again).

    Returns what ran (per status and target) and the scheduler's figures.
    """
    spec, scheduler, progress = options
    offers, head = handed
    config = plans[0].config
    tally = Tally()
    stats = SchedulerStats()
    # Each target's tasks carry the ceilings calibrated on that hardware, if any.
    results = Path(config.output.results_dir)
    todo = [
        task
        for p in plans
        for task in _with_ceilings(
            [t for t in todo if t.hardware == p.hardware], results, p.hardware, progress
        )
    ]
    target_of = {t.task_id: t.hardware for t in todo}
    from sweep.sandbox.gang import world_size

    # The loop only appends each delivery to the logs; the writer's thread syncs them, and a
    # trace counts (tally, progress) once synced (``_storing``). DuckDB gets the synced lines
    # from the writer's follower process every STORE_FLUSH_S (readers merge the log tail
    # meanwhile): rows and inserts cost the driver's process nothing.
    storing = Storing(None, tally, progress, target_of)
    estimated: dict[str, float] = {}
    with contextlib.ExitStack() as stack:

        def store_ready() -> Mapping[str, float]:
            # Taken once the workers are asked for (a warm worker's claim is a round trip or
            # two, the store's opening a few tenths of a second), and before any task is
            # sent: a store that cannot be opened still fails the launch before anything runs.
            if storing.writer is None:
                storing.writer = stack.enter_context(opening.take())
                clock.mark("store")
                for note in opening.notes:
                    if progress is not None:
                        progress.note(note)
                estimated.update(
                    opening.estimated  # the plan waited for the cluster: read them now
                    if opening.estimated is not None
                    else estimated_for(todo, results, Path(config.output.store_path()))
                )
            return estimated

        clock.mark("scheduler")
        on_tick = storing.on_tick
        pending = list(todo)
        if head is not None:
            pending = head.left(todo, head.close(head.node_id))
            store_ready()  # the lanes' traces are stored as they come
            clock.mark_at("head_start", head.first_ready_at)

            def on_tick() -> None:
                if traces := head.traces():
                    storing.on_traces(traces)
                storing.on_tick()

        try:
            if any(world_size(t) > 1 for t in todo):
                store_ready()  # the gangs' traces are stored as they come
            singles = _run_gangs(pending, pools, spec, run_id, storing)
            if len(singles) < len(pending):
                clock.mark("gangs")  # the distributed tasks ran first, before any single worker
            stats = run_tasks(
                singles,
                pools,
                spec,
                run_id=run_id,
                on_traces=storing.on_traces,
                options=scheduler,
                on_tick=on_tick,
                workers=warm if warm is not None or not offers else FreshWorkers(run_id, offers=offers),
                estimated_s=store_ready,
            )
            store_ready()  # nothing was left to run: the writer is taken and closed all the same
            if head is not None and (last := head.finish()):
                storing.on_traces(last)
            storing.drain()
            if stats.workers:  # the first one ready
                clock.mark_worker(stats.workers[0])
        finally:
            if progress is not None:
                progress.finish()
    return tally, stats


def lend_kinds(config: SweepConfig) -> tuple[bool, bool]:
    """Whether the zygotes offered to GPU workers, and to CPU ones, are lent to a head start
    first (``ray.head_start``: ``auto`` lends GPU ones only)."""
    mode = config.ray.head_start
    return mode is not False, mode is True


def start_head(
    tasks: Callable[[str], list[Task]],
    offers: ZygoteOffers,
    spec: SandboxSpec,
    run_id: str,
    estimates: Callable[[], Mapping[str, float]],
) -> HeadStart | None:
    """A head start on the zygotes ``offers`` lends (``None`` when it lends none), of the
    single-device tasks ``tasks`` gives for a target."""
    from sweep.sandbox.gang import world_size

    lanes = offers.lanes()
    if not lanes:
        return None
    return HeadStart(lambda hw: [t for t in tasks(hw) if world_size(t) <= 1], spec, run_id, lanes, estimates)


def head_tasks(plans: Sequence[Plan], todo: Sequence[Task]) -> Callable[[str], list[Task]]:
    """The head start's tasks of a target: those of ``todo`` for it, with its ceilings."""

    def tasks(hardware: str) -> list[Task]:
        mine = [t for t in todo if t.hardware == hardware]
        return _with_ceilings(mine, Path(plans[0].config.output.results_dir), hardware, None) if mine else []

    return tasks


def _with_ceilings(todo: list[Task], results: Path, hardware: str, progress: Progress | None) -> list[Task]:
    """The tasks, carrying the newest ceilings calibrated on ``hardware`` (``sweep calibrate``)
    when there are some: the engine then gives fractions of what the nodes reach."""
    from sweep.store import calibration_for

    if not todo:
        return todo
    ceilings = calibration_for(results, hardware)
    if ceilings is None:
        return todo
    if progress is not None:
        progress.note(f"{hardware}: fractions of peak against the ceilings {ceilings.source}")
    return [t.model_copy(update={"ceilings": ceilings}) for t in todo]


def _run_gangs(
    todo: list[Task],
    pools: list[Pool],
    spec: SandboxSpec,
    run_id: str,
    storing: Storing,
) -> list[Task]:
    """The gang phase: every distributed task on its placement group (``gang_sched``), before
    the single-GPU workers take the GPUs (what no node can hold was taken out before:
    ``_placing``). Returns the single-GPU tasks."""
    from sweep.cluster.gang_sched import run_gang_tasks
    from sweep.sandbox.gang import world_size

    gangs = [t for t in todo if world_size(t) > 1]
    if not gangs:
        return todo
    kinds = {p.target: p.device_kind for p in pools}
    run_gang_tasks(
        gangs,
        spec,
        run_id=run_id,
        on_traces=storing.on_traces,
        device_kinds=kinds,
        on_tick=storing.on_tick,
    )
    return [t for t in todo if world_size(t) <= 1]
