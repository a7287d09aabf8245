"""The head start: an embedded launch evaluates its first tasks itself while Ray starts.

An embedded launch's driver starts its workers' zygotes before Ray (:mod:`zygote_offers`),
and Ray then takes seconds more to start. With the head start the driver borrows those
zygotes first: on each local device a lane of this process takes one
(:meth:`~sweep.sandbox.handover.OfferedZygote.lend`), starts a sandbox on that device, and
evaluates tasks from the end of the queue (the shortest, so the longest-first order of the
rest is kept) until Ray is up (:meth:`HeadStart.close`; it waits a moment for a lane not yet
ready, :data:`HEAD_START_HOLD_S`: a worker would need longer).

Each lane then ends the task it holds. Once every lane has, the zygotes are given back
together, and each worker adopts one as before. A worker that asks for its zygote earlier
waits for it (an offer serves its owners one after the other): no device ever runs a lane's
task and a worker's at once, whichever device the worker was given.

A lane is a worker in all but Ray: the same sandbox, deadlines and traces, stamped with its
device (and the node, once Ray says it). The launch's loop stores the traces
(:meth:`HeadStart.traces`). A lane takes a task only once its next sandbox is ready, so a
sandbox that cannot start ends the lane with no task taken.
"""

from __future__ import annotations

import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from sweep.cluster._order import longest_first
from sweep.sandbox.failure_traces import lost_worker_trace, short_error
from sweep.sandbox.handover import Lent
from sweep.sandbox.packing import Done, Envelope
from sweep.sandbox.supervisor import Sandbox, SandboxSpec, SandboxStartError
from sweep.schema import Provenance, Trace
from sweep.schema.hardware import CPU, short_name
from sweep.schema.task import Task

__all__ = ["HEAD_START_HOLD_S", "HeadStart", "Lane"]

#: Seconds a launch that has Ray up waits at most for every lane to take its first task: a
#: worker needs about as long to start and make its device ready (a second or so on a GPU
#: host), so a lane a moment late still gives the first trace.
HEAD_START_HOLD_S = 2.0


@dataclass(frozen=True)
class Lane:
    """One device of this machine and the zygote lent for it: ``gpu`` is the device's id as a
    worker's ``CUDA_VISIBLE_DEVICES`` names it (``None``: a CPU lane)."""

    lent: Lent
    device_kind: str
    gpu: str | None


def _key(task: Task) -> tuple[str, str]:
    """A task as the lanes count it: its id and its solution's name."""
    return task.task_id, task.solution.name


@dataclass
class _LaneState:
    lane: Lane
    sandbox: Sandbox | None = None
    thread: threading.Thread | None = None
    evaluated: int = 0
    #: It took a task, or ended: :meth:`HeadStart.close` need not hold for it.
    settled: bool = False


class HeadStart:
    """Lanes that evaluate ``tasks`` before Ray is up (see the module's docstring).

    Args:
        tasks: The launch's tasks for a target (asked once per target a lane's device is, when
            that lane is ready: the plan of ``hardware: auto`` waits for the device's name).
        spec: How the launch's workers start sandboxes.
        run_id: Stamped on every trace.
        lanes: The devices and their lent zygotes.
        estimates: Seconds each task should take, by task id, as far as known when the first
            lane is ready (the store's durations; ``{}``: by input size).
    """

    def __init__(
        self,
        tasks: Callable[[str], Sequence[Task]],
        spec: SandboxSpec,
        run_id: str,
        lanes: Sequence[Lane],
        estimates: Callable[[], Mapping[str, float]],
    ) -> None:
        self._tasks = tasks
        self._spec = spec
        self._run_id = run_id
        self._estimates = estimates
        self._lock = threading.Lock()
        self._settled = threading.Condition(self._lock)  # a lane took its first task, or ended
        self._queues: dict[str, list[Task]] = {}  # by target, once a lane of it is ready
        self._closed = False
        self._claimed: Counter[tuple[str, str]] = Counter()
        self._done: list[tuple[Task, Done | Trace]] = []
        self._lanes = [_LaneState(lane) for lane in lanes]
        self._all_idle = threading.Barrier(len(self._lanes)) if self._lanes else None
        self.node_id: str | None = None
        #: Wall time (``time.time()``) the first lane's sandbox was ready.
        self.first_ready_at: float | None = None
        for state in self._lanes:
            state.thread = threading.Thread(
                target=self._run_lane,
                args=(state,),
                name=f"sweep-head-start-{state.lane.gpu or 'cpu'}",
                daemon=True,
            )
            state.thread.start()

    # -- the driver's side ---------------------------------------------------------------

    def close(self, node_id: str | None = None, *, hold_s: float = 0.0) -> Counter[tuple[str, str]]:
        """Take no more tasks (Ray is up; ``node_id``: the node this machine is, stamped on the
        traces); return the tasks the lanes took, done or running, by id and solution (two
        solutions of the same code make tasks of one id, whose traces still differ). The
        lanes end their tasks and then give their zygotes back, all together.

        ``hold_s``: first wait, at most this long, until every lane has taken a task or ended.
        A lane whose device is ready a moment after Ray then still gives the first trace: its
        worker would need as long again to start and make its own device ready."""
        with self._settled:
            self._settled.wait_for(lambda: all(s.settled for s in self._lanes), timeout=hold_s)
            self._closed = True
            self.node_id = node_id
            return Counter(self._claimed)

    def traces(self) -> list[Trace]:
        """The traces finished since the last call (the launch's loop stores them)."""
        with self._lock:
            done, self._done = self._done, []
            node = self.node_id
        out: list[Trace] = []
        for task, got in done:
            if isinstance(got, Trace):
                out.append(got)
                continue
            stamp = got.stamp if node is None else got.stamp.model_copy(update={"node_id": node})
            out.append(Done(got.trace_json, stamp).trace(task))
        return out

    def left(self, tasks: Sequence[Task], taken: Counter[tuple[str, str]]) -> list[Task]:
        """``tasks`` less those ``taken`` (:meth:`close`'s count), in their order."""
        count = Counter(taken)
        out: list[Task] = []
        for task in tasks:
            if count[_key(task)] > 0:
                count[_key(task)] -= 1
            else:
                out.append(task)
        return out

    def finish(self, timeout_s: float | None = None) -> list[Trace]:
        """Wait for the lanes to end (after :meth:`close`) and their zygotes to be given back;
        the traces not yet taken."""
        self.close(self.node_id)
        for state in self._lanes:
            if state.thread is not None:
                state.thread.join(timeout_s)
        return self.traces()

    def abort(self) -> None:
        """End now (the launch failed): every lane's sandbox killed, its task dropped."""
        with self._lock:
            self._closed = True
        if self._all_idle is not None:
            self._all_idle.abort()  # no lane waits for another
        for state in self._lanes:
            if state.sandbox is not None:
                state.sandbox.close()
        for state in self._lanes:
            if state.thread is not None:
                state.thread.join(10.0)

    @property
    def evaluated(self) -> int:
        """Tasks the lanes finished so far."""
        return sum(s.evaluated for s in self._lanes)

    # -- a lane --------------------------------------------------------------------------

    def _claim(self, state: _LaneState, hardware: str) -> Task | None:
        """The next task for a lane of ``hardware`` (from the end of its queue), or ``None``."""
        with self._lock:
            state.settled = True
            self._settled.notify_all()
            if self._closed:
                return None
            queue = self._queues.get(hardware)
            if queue is None:
                try:
                    tasks = self._tasks(hardware)
                except Exception:  # noqa: BLE001 - the plan's error is the launch's to report, after Ray
                    tasks = []
                queue = self._queues[hardware] = longest_first(tasks, self._estimates())
            if not queue:
                return None
            task = queue.pop()
            self._claimed[_key(task)] += 1
            return task

    @property
    def targets(self) -> set[str]:
        """The targets the lanes' devices are (those they took tasks of)."""
        with self._lock:
            return set(self._queues)

    def _run_lane(self, state: _LaneState) -> None:
        lane = state.lane
        spec = replace(self._spec, device_kind=lane.device_kind)
        stamp = Provenance(run_id=self._run_id, gpu_id=lane.gpu)
        # Never a zygote of its own: that one's parent would be the driver (see handover).
        sandbox = state.sandbox = Sandbox(spec, stamp, lent=lane.lent, own_zygote=False)
        try:
            info = sandbox.start()
            hardware = CPU if lane.gpu is None else short_name(info.device_name or "")
            with self._lock:
                self.first_ready_at = self.first_ready_at or time.time()
            while not self._closed:
                sandbox.start()  # the next sandbox ready before a task is taken (at once the first time)
                task = self._claim(state, hardware)
                if task is None:
                    return
                got: Done | Trace
                try:
                    got = sandbox.run_batch([Envelope.of(task, 0)])[0]
                except Exception as e:  # noqa: BLE001 - the task still gets its one trace
                    why = f"the launch's head start could not evaluate it: {short_error(e)}"
                    got = lost_worker_trace(task, why, self._run_id, 0, None, lane.gpu, os.getpid())
                with self._lock:
                    self._done.append((task, got))
                    state.evaluated += 1
                if isinstance(got, Trace):
                    return
        except SandboxStartError:
            return  # no task taken since the last one ended: the workers run the rest
        finally:
            with self._lock:
                state.settled = True
                self._settled.notify_all()
            self._give_back(state)

    def _give_back(self, state: _LaneState) -> None:
        """Once every lane is idle, close this lane's sandbox: its zygote goes to its worker."""
        if self._all_idle is not None:
            try:
                self._all_idle.wait()
            except threading.BrokenBarrierError:
                pass  # aborted: closed all the same
        if state.sandbox is not None:
            state.sandbox.close()
