"""The CUPTI timer: the device time of the work each timed call launched, read from CUPTI's
activity records through ``cupti-python`` (the module ``cupti``; ``kernel-sweep[cupti]``).

What a sample is. The GPU time of the kernels, memory copies and memory sets that one timed
call launched, from the start and end timestamps the device wrote for each of them: the
length of the union of their intervals (the sum of their durations when they run one after
the other, as on one stream; work that overlaps on several streams is counted once). Host
time is not in it: neither the launch overhead nor the gaps between two kernels of a call,
nor anything the call computes on the CPU. Copies and sets count because a call's work can be
one (a solution that answers with ``copy_`` from a buffer is timed at the copy's cost).

How calls are delimited. CUPTI gives every CUDA runtime and driver API call a correlation
id, and writes that id into the record of each kernel, copy or set the API call launched
(graph launches included: every kernel of a replayed graph carries the id of its
``cudaGraphLaunch``). The timer reads CUPTI's clock (``cupti.get_timestamp``) right before
and right after each call; the API calls whose records start inside that window are the
call's, and so is the device work that carries their ids. The step that gives the inputs
fresh values, the L2 flush and the copies taken for rechecks are API calls made before the
window opens or after it closes, so their kernels are never counted, however the device
overlaps or queues them. The window is of the process, not of one thread: a call that
launches from a thread of its own is counted too, as long as it launches before it returns.
External correlation ids (``activity_push_external_correlation_id``) would tie records to
the calling thread only, so a call could hide its work on another thread; CUDA events as
markers would need the device's event records and see only one stream.

Each batch of samples runs its calls back to back, as the events timer does (no
synchronization between calls: device timestamps do not depend on queueing), then waits for
the device, forces CUPTI to deliver its buffers (``activity_flush_all(1)``) and matches the
records to the windows. A batch in which CUPTI delivered no device record at all (not even
the flush's) means CUPTI is not recording: :class:`CuptiUnavailable`.

One session (:class:`CuptiSession`) per timing loop: register the buffer callbacks, enable
the activity kinds (runtime and driver API, concurrent kernels, memcpy, memset), time; then
disable them, flush and ``cupti.finalize()``, so the process is left as it was (another
profiler can attach, and later evaluations pay no tracing cost).

Without CUPTI (``cupti`` cannot be imported, or CUPTI cannot be initialised: a profiler such
as Nsight Systems holds it, or its library does not match the driver) the timing phase times
the reference and the solution with CUDA events instead and says why in the log
(:func:`cupti_problem`, :class:`CuptiUnavailable`).
"""

from __future__ import annotations

import bisect
import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any

from typing_extensions import Self

__all__ = [
    "API_KINDS",
    "DEVICE_KINDS",
    "CuptiSession",
    "CuptiUnavailable",
    "busy_ns",
    "cupti_problem",
    "durations_ms",
    "load_cupti",
]

#: API records: they carry the correlation ids of the calls made in a window.
API_KINDS = ("RUNTIME", "DRIVER")
#: Device records counted: kernels (without serializing them, unlike ``KERNEL``), copies, sets.
DEVICE_KINDS = ("CONCURRENT_KERNEL", "MEMCPY", "MEMSET")
#: Bytes of each activity buffer handed to CUPTI (it asks for more as they fill).
BUFFER_BYTES = 8 << 20
#: What the timer calls in ``cupti.cupti``; a build without one of them is not used.
_NEEDED = (
    "ActivityKind",
    "activity_register_callbacks",
    "activity_enable",
    "activity_disable",
    "activity_flush_all",
    "get_timestamp",
    "finalize",
)


class CuptiUnavailable(Exception):
    """CUPTI cannot time this evaluation; the message says why (it goes into the log)."""


def _reason(e: BaseException, mod: Any = None) -> str:
    """``Type: first line`` of an exception, with CUPTI's name of its status when it has one."""
    status = getattr(e, "status", None)
    if status is not None and mod is not None:
        with contextlib.suppress(Exception):
            return f"{type(e).__name__}: CUPTI_{mod.Result(status).name}"
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")


def load_cupti() -> Any:
    """The module ``cupti.cupti`` of cupti-python; :class:`CuptiUnavailable` when it cannot be
    imported (not installed, or its libraries fail to load) or lacks what the timer calls."""
    try:
        from cupti import cupti
    except Exception as e:  # noqa: BLE001 - ImportError, or a native library that fails to load
        raise CuptiUnavailable(
            f"the module cupti cannot be imported ({_reason(e)}); install cupti-python "
            "(pip install 'kernel-sweep[cupti]', its major version that of the CUDA of torch)"
        ) from None
    missing = [name for name in _NEEDED if not hasattr(cupti, name)]
    if missing:
        raise CuptiUnavailable(f"this cupti-python has no {', '.join(missing)}")
    return cupti


def cupti_problem() -> str | None:
    """Why the CUPTI timer cannot run in this process (``None`` when ``cupti`` imports).
    Initialising CUPTI can still fail later, when a session opens."""
    try:
        load_cupti()
    except CuptiUnavailable as e:
        return str(e)
    return None


def busy_ns(spans: Iterable[tuple[int, int]]) -> int:
    """The length of the union of the intervals ``[start, end)``."""
    total = 0
    cur_start = cur_end = -1
    for start, end in sorted(spans):
        if start > cur_end:
            total += max(0, cur_end - cur_start)
            cur_start, cur_end = start, end
        else:
            cur_end = max(cur_end, end)
    return total + max(0, cur_end - cur_start)


def durations_ms(
    windows: Sequence[tuple[int, int]],
    api: Sequence[tuple[int, int]],
    device: Sequence[tuple[int, int, int]],
) -> list[float]:
    """Milliseconds of device work per window.

    Args:
        windows: ``(start, end)`` CUPTI timestamps around each call.
        api: ``(start, correlation_id)`` of the API records.
        device: ``(correlation_id, start, end)`` of the kernel, copy and set records.
    """
    calls = sorted(api)
    starts = [s for s, _ in calls]
    work: dict[int, list[tuple[int, int]]] = {}
    for cid, start, end in device:
        if cid and 0 < start < end:  # 0: no API call launched it; 0 timestamps: not collected
            work.setdefault(cid, []).append((start, end))
    out: list[float] = []
    for t0, t1 in windows:
        lo, hi = bisect.bisect_left(starts, t0), bisect.bisect_right(starts, t1)
        ids = {calls[i][1] for i in range(lo, hi)}
        out.append(busy_ns(span for cid in ids for span in work.get(cid, ())) / 1e6)
    return out


def _cuda_sync() -> None:
    import torch

    torch.cuda.synchronize()


class CuptiSession:
    """CUPTI activity collection around one timing loop (a context manager; see the module's
    docstring). ``now()`` reads CUPTI's clock; ``collect(windows)`` waits for the device and
    returns the milliseconds of device work launched in each window since the last collect.
    Raises :class:`CuptiUnavailable` when CUPTI cannot be initialised or records nothing."""

    def __init__(self, sync: Callable[[], None] = _cuda_sync) -> None:
        self._sync = sync
        self._lock = threading.Lock()
        self._api: list[tuple[int, int]] = []
        self._device: list[tuple[int, int, int]] = []
        self._error: str | None = None
        self._mod: Any = None
        self._enabled: list[Any] = []
        self._api_kinds: frozenset[int] = frozenset()
        self._device_kinds: frozenset[int] = frozenset()
        self.batches = 0

    def __enter__(self) -> Self:
        mod = load_cupti()
        self._mod = mod
        try:
            kinds = {name: getattr(mod.ActivityKind, name) for name in (*API_KINDS, *DEVICE_KINDS)}
            self._api_kinds = frozenset(int(kinds[n]) for n in API_KINDS)
            self._device_kinds = frozenset(int(kinds[n]) for n in DEVICE_KINDS)
            mod.activity_register_callbacks(self._requested, self._completed)
            for kind in kinds.values():
                mod.activity_enable(kind)
                self._enabled.append(kind)
        except Exception as e:  # noqa: BLE001 - any failure of CUPTI means no CUPTI timing
            self._close()
            raise CuptiUnavailable(
                f"CUPTI cannot be initialised ({_reason(e, mod)}; a profiler such as Nsight Systems "
                "may hold it)"
            ) from None
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._close()

    def _close(self) -> None:
        """Disable what was enabled, deliver what is left, and detach CUPTI from the process."""
        mod, self._mod = self._mod, None
        if mod is None:
            return
        for kind in reversed(self._enabled):
            with contextlib.suppress(Exception):
                mod.activity_disable(kind)
        self._enabled.clear()
        with contextlib.suppress(Exception):
            mod.activity_flush_all(1)
        with contextlib.suppress(Exception):
            mod.finalize()
        with self._lock:
            self._api, self._device = [], []

    # ---- CUPTI's callbacks (possibly on a thread of CUPTI's own) ---------------------------

    def _requested(self) -> tuple[int, int]:
        return BUFFER_BYTES, 0  # 0: as many records as fit

    def _completed(self, activities: Iterable[Any]) -> None:
        api: list[tuple[int, int]] = []
        device: list[tuple[int, int, int]] = []
        try:
            for a in activities:  # the records live in CUPTI's buffer: copy the fields now
                kind = int(a.kind)
                if kind in self._device_kinds:
                    device.append((int(a.correlation_id), int(a.start), int(a.end)))
                elif kind in self._api_kinds:
                    api.append((int(a.start), int(a.correlation_id)))
        except Exception as e:  # noqa: BLE001 - never raise into CUPTI; collect() reports it
            self._error = f"reading CUPTI's records failed ({_reason(e)})"
        with self._lock:
            self._api.extend(api)
            self._device.extend(device)

    # ---- timing ----------------------------------------------------------------------------

    def now(self) -> int:
        """CUPTI's clock (nanoseconds), the one its records are stamped with."""
        return int(self._mod.get_timestamp())

    def collect(self, windows: Sequence[tuple[int, int]]) -> list[float]:
        """Wait for the device, have CUPTI deliver every record, and return the milliseconds of
        device work launched in each of ``windows`` (the records are then dropped)."""
        self._sync()
        try:
            self._mod.activity_flush_all(1)  # forced: every buffer, the device is done
        except Exception as e:  # noqa: BLE001
            raise CuptiUnavailable(f"CUPTI failed to deliver its records ({_reason(e, self._mod)})") from None
        with self._lock:
            api, device = self._api, self._device
            self._api, self._device = [], []
        self.batches += 1
        if self._error is not None:
            raise CuptiUnavailable(self._error)
        if windows and not device:
            raise CuptiUnavailable(
                f"CUPTI recorded no work on the device during batch {self.batches} of timed calls "
                "(another profiler may have taken its activity records)"
            )
        return durations_ms(windows, api, device)
