"""The CUDA-graph timer: replays of captured graphs, the flush and the rotation kept in them.

Launching a kernel costs the host microseconds; a short call timed with events around it
shows that cost (and the gaps between its kernels) as much as its own work. A graph replays
the same kernels with almost no launch cost. ``triton.testing.do_bench_cudagraph`` replays
a graph of the bare call; this timer keeps what the events timer does between calls:

1. warm up: one call per input set on the capture stream (lazy initialisations such as
   cuBLAS's workspace happen per stream, and must not happen during capture);
2. capture ``calls`` (a multiple of the input sets) iterations of [give the inputs fresh
   values and restore those the call writes, zero the L2 flush buffer, call on input set
   ``i % sets``] into one graph, and the same iterations without the call into a second
   graph; one iteration, picked at random, also copies its inputs and results aside (in
   both graphs), and after a random sample of batches of replays those copies are checked
   against the reference (``_fresh.py``);
3. replay both once (the first launch uploads the graph);
4. each sample: record an event, replay the graph without the call, record, replay the graph
   with it, record: the sample is ``(with - without) / calls``, the time of one call with
   what is not the call (flush, restores, the replay's launch) subtracted. Samples are means
   over ``calls`` calls, so their spread is narrower than one call's.

The outputs the call returned during capture are the graph's static outputs: replays write
into them (and into the output buffers of a destination-passing solution), so the results
checked after timing are those of the last replay.

A call that cannot be captured (it synchronizes, copies to the host, allocates in a way
capture forbids, raises) raises :class:`CaptureFailed`, before any sample is taken. So does a
kernel launched on the legacy default stream (``kernel<<<grid, block>>>`` in an extension
that ignores torch's current stream): capture happens on a stream that synchronizes with the
legacy one, so such a launch invalidates the capture instead of running outside the graph,
unseen (torch's own streams do not synchronize with it, and the graph would time nothing).
"""

from __future__ import annotations

import contextlib
import ctypes
import math
from collections.abc import Callable

import torch

from sweep.engine.timing._clocks import elapsed, record, wait
from sweep.engine.timing._fresh import Freshener, Rechecks
from sweep.schema.trace_log import sticky_cuda_error

__all__ = [
    "GRAPH_MAX_CALLS",
    "GRAPH_REPLAY_MS",
    "UNJOINED",
    "CaptureFailed",
    "GraphTimer",
    "calls_per_replay",
    "capture_graph",
    "capture_stream",
    "drain_pending_error",
    "stray_streams",
]

#: About how long one replay of the graph with the call lasts (calls and flushes).
GRAPH_REPLAY_MS = 1.0
#: The most calls captured in one graph (capture time and graph size stay small).
GRAPH_MAX_CALLS = 128
#: GPU cycles spun before each batch of replays (about 50 us at 2 GHz; see ``batch``).
_SPIN_CYCLES = 100_000


class CaptureFailed(Exception):
    """The call could not be timed with CUDA graphs; the message says why."""


def calls_per_replay(sets: int, iteration_ms: float) -> int:
    """Calls in one graph: a multiple of ``sets`` lasting about :data:`GRAPH_REPLAY_MS`, given
    the time of one iteration (call and flush); at least ``sets``, at most about
    :data:`GRAPH_MAX_CALLS`."""
    rounds = GRAPH_REPLAY_MS / (sets * max(iteration_ms, 1e-6))
    return sets * max(1, min(GRAPH_MAX_CALLS // sets, math.floor(rounds)))


def _event() -> torch.cuda.Event:
    return torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]


def _reason(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:300] if text else ''}".rstrip(": ")


#: One capture stream per device, kept for the process's life: the caching allocator ties
#: freed blocks to their stream, so blocks of a destroyed stream would never be reused.
_CAPTURE_STREAMS: dict[int, torch.cuda.Stream] = {}


def capture_stream() -> torch.cuda.Stream:
    """The capture stream of the current device: created with ``CU_STREAM_DEFAULT`` through the
    driver, so that it synchronizes with the legacy default stream (see the module's
    docstring); a torch stream (which does not) when the driver cannot make one."""
    device = torch.cuda.current_device()
    stream = _CAPTURE_STREAMS.get(device)
    if stream is None:
        stream = torch.cuda.Stream()  # type: ignore[no-untyped-call]
        try:
            handle = ctypes.c_void_p()
            made = ctypes.CDLL("libcuda.so.1").cuStreamCreate(ctypes.byref(handle), ctypes.c_uint(0))
            if made == 0 and handle.value:
                stream = torch.cuda.ExternalStream(int(handle.value))  # type: ignore[no-untyped-call]
        except (OSError, AttributeError):
            pass
        _CAPTURE_STREAMS[device] = stream
    return stream


def capture_graph(
    body: Callable[[], None], stream: torch.cuda.Stream, fresh: Freshener | None
) -> torch.cuda.CUDAGraph:
    graph = torch.cuda.CUDAGraph()
    if fresh is not None:
        fresh.register(graph)
    with torch.cuda.stream(stream):
        # thread_local: this thread's unsafe calls (synchronize, cudaMalloc outside torch's
        # allocator, synchronous copies) break the capture; other threads are left alone.
        graph.capture_begin(capture_error_mode="thread_local")
        try:
            body()
        except BaseException:
            _end_capture(graph, quiet=True)  # the body's error says more than the capture's
            raise
        _end_capture(graph, quiet=False)
    return graph


def _end_capture(graph: torch.cuda.CUDAGraph, *, quiet: bool) -> None:
    """End the capture, so the stream leaves capture mode even when the driver rejects it."""
    try:
        graph.capture_end()
    except Exception:
        # When the driver rejects the capture, torch raises before it stops sending the
        # allocations of this stream to the graph's pool, and the caching allocator would
        # defer freeing cross-stream blocks for the life of the process: stop it here.
        end = getattr(torch._C, "_cuda_endAllocateToPool", None)
        if end is not None:
            with contextlib.suppress(Exception):  # already stopped in this torch version
                end(torch.cuda.current_device(), graph.pool())
        if not quiet:
            raise


def drain_pending_error() -> None:
    """Surface and clear an error the failed capture left pending (an invalidated capture can
    be reported by the next CUDA call), so the events timer that follows starts clean."""
    for _ in range(2):
        try:
            torch.cuda.synchronize()
            return
        except RuntimeError:
            continue


#: What the driver says when a capture ends with work on another stream not joined back.
UNJOINED = "unjoined work"


def _discard(_value: object) -> None:
    pass


def stray_streams(call: Callable[[], object]) -> str | None:
    """Capture one ``call`` (already warmed up) and throw the graph away: the driver's words
    when it left work running on a stream it did not join back to the calling one (the
    capture ends with "unjoined work"), else ``None`` (captured, or refused for another
    reason, which says nothing of streams)."""
    torch.cuda.synchronize()
    stream = capture_stream()
    stream.wait_stream(torch.cuda.current_stream())
    try:
        capture_graph(lambda: _discard(call()), stream, None)
    except Exception as e:  # noqa: BLE001 - any refusal; only one kind is a verdict
        drain_pending_error()
        reason = _reason(e)
        return reason if UNJOINED in reason else None
    finally:
        torch.cuda.current_stream().wait_stream(stream)
    return None


class GraphTimer:
    """The two captured graphs of one call (see the module's docstring); :meth:`batch` takes
    samples. Raises :class:`CaptureFailed` when capture fails."""

    def __init__(
        self,
        call: Callable[[int], object],
        sets: int,
        flush: torch.Tensor | None,
        prep: Callable[[int], None],
        last: list[object],
        iteration_ms: float,
        rechecks: Rechecks | None = None,
        fresh: Freshener | None = None,
    ) -> None:
        self.calls = calls_per_replay(sets, iteration_ms)
        self.rechecks = rechecks
        self.replays = 0
        self.batches = 0
        #: The copies of the checked iteration (``rechecks``), refreshed by every replay.
        self.snap: tuple[int, object] | None = None
        self.checked = checked = rechecks.schedule.pick(self.calls) if rechecks is not None else -1
        torch.cuda.synchronize()  # also makes this device's context current for the driver
        stream = capture_stream()
        stage = "warming up on the capture stream"
        try:
            stream.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(stream):
                for k in range(sets):
                    prep(k)
                    last[k] = call(k)
            stream.synchronize()

            def iterations(with_call: bool) -> None:
                for i in range(self.calls):
                    k = i % sets
                    prep(k)
                    if flush is not None:
                        flush.zero_()
                    if with_call:
                        last[k] = call(k)
                    if i == checked and rechecks is not None:
                        # In both graphs, so that the copies' time is subtracted too.
                        snap = rechecks.snapshot(k, last[k])
                        if with_call:
                            self.snap = (k, snap)

            stage = "capturing"
            self.with_call = capture_graph(lambda: iterations(True), stream, fresh)
            self.without = capture_graph(lambda: iterations(False), stream, fresh)
            stage = "replaying"
            self.without.replay()
            self.with_call.replay()
            torch.cuda.synchronize()
        except Exception as e:
            if sticky_cuda_error(str(e)) is not None:
                raise  # the call broke the CUDA context while it ran: its failure, not capture's
            drain_pending_error()
            if fresh is not None:
                fresh.renew()
            raise CaptureFailed(f"{stage}: {_reason(e)}") from e
        finally:
            torch.cuda.current_stream().wait_stream(stream)

    def batch(self, n: int) -> list[float]:
        """``n`` samples (milliseconds per call), each from one replay of both graphs; the
        graph with the call replays last, so its outputs are the last results. After a
        random sample of batches (``rechecks``), the copies of the checked iteration, from
        the batch's last replay, are checked."""
        # The batch starts on an idle device (the last one ended with a synchronization):
        # without something to run, the first replay's interval would include the host's
        # launch of it. A short spin keeps the device busy while the replays are queued.
        torch.cuda._sleep(_SPIN_CYCLES)  # type: ignore[no-untyped-call]
        marks = [_event() for _ in range(2 * n + 1)]
        record(marks[0])
        for j in range(n):
            self.without.replay()
            record(marks[2 * j + 1])
            self.with_call.replay()
            record(marks[2 * j + 2])
        wait(marks[-1])
        self.replays += n
        self.batches += 1
        if self.rechecks is not None and self.snap is not None and self.rechecks.schedule.due(self.batches):
            slot, snap = self.snap
            call_n = (self.replays - 1) * self.calls + self.checked + 1
            where = f"timed call {call_n} (CUDA-graph replay {self.replays}), on input set"
            self.rechecks.verify(snap, f"{where} {self.rechecks.first + slot}")
        samples: list[float] = []
        for j in range(n):
            bare = elapsed(marks[2 * j], marks[2 * j + 1])
            full = elapsed(marks[2 * j + 1], marks[2 * j + 2])
            # A call cannot take negative time: a negative difference is the noise of a call
            # shorter than the events resolve.
            samples.append(max(0.0, (full - bare) / self.calls))
        return samples
