"""The ranks' traces of one distributed task, merged into its one trace (``gang.run_gang``).

Blame: when ranks fail, the failing rank is the first, in the order their traces arrived, whose
failure is its own. A rank's failure is not its own when it was killed because another failed
(``aborted``), when it stopped because another rank failed its check, when its error is a
peer's connection lost, or when it ran out of time while waiting for its peers (the innermost
frame of its stack, dumped before it was killed, is in torch or the harness: a collective, or
on GPUs the device synchronisation after an asynchronous NCCL call). When every failure looks like that, the
first to arrive is named. The merged trace has the failing rank's status and log first, then
every other rank's status; each rank's figures stay in ``evaluation.distributed.ranks``.

Timing: the task's latency is the slowest rank's median (the straggler, named); the
reference's the slowest rank's too. For a collective (``distributed.collective``), algorithm
bandwidth is ``message_bytes / latency`` and bus bandwidth nccl-tests' ``algbw * factor``
(``sweep.schema.distributed.bus_factor``), with its fraction of the GPU's NVLink peak.
"""

from __future__ import annotations

import re

from sweep.sandbox.failure_traces import now_iso
from sweep.schema import Evaluation, Performance, Status, Trace
from sweep.schema.distributed import DistributedResult, RankFigures, bus_factor, full_axes
from sweep.schema.expr import ConstraintError, eval_number
from sweep.schema.peaks import link_peak_gbps
from sweep.schema.task import Task
from sweep.schema.trace_log import clip_log

__all__ = ["innermost_frame", "merge_ranks", "secondary"]

#: What a rank says when its peer, not itself, broke the group (gloo and NCCL messages).
_PEER_LOST = re.compile(
    r"another rank failed|Connection closed by peer|Connection reset by peer|Broken pipe|"
    r"NCCL (communicator|error).*(abort|remote)|ProcessGroup\w* .*(abort|timed out)|Socket Timeout",
    re.IGNORECASE,
)


#: A frame line of a stack that faulthandler dumped.
_FRAME = re.compile(r'^\s*File "([^"]+)", line \d+')

#: Where a rank waits for its peers: inside torch, or the harness around the call.
_WAITING_IN = ("/torch/", "/sweep/engine/", "/sweep/sandbox/", "_dist_timing.py", "_dist_eval.py")


def innermost_frame(log: str) -> str | None:
    """The file of the innermost Python frame of the running thread in a dumped stack (the
    first frame after "Current thread ...", faulthandler printing the most recent call
    first), or of the first thread dumped; ``None`` when the log holds no stack."""
    lines = log.splitlines()
    starts = [i for i, ln in enumerate(lines) if ln.startswith("Current thread")]
    starts += [i for i, ln in enumerate(lines) if ln.startswith("Thread 0x")]
    for start in starts:
        for ln in lines[start + 1 :]:
            m = _FRAME.match(ln)
            if m:
                return m.group(1)
            if ln.strip() and not ln.startswith(" "):
                break
    for ln in lines:  # a stack without a thread header
        m = _FRAME.match(ln)
        if m:
            return m.group(1)
    return None


def secondary(trace: Trace, killed: bool) -> bool:
    """Whether a failed rank's failure was caused by another rank (see the module's text).

    A rank out of time was waiting for another when the innermost frame of its stack is in
    torch or the harness (a collective, a device synchronisation after one); the rank whose
    own code was running (its innermost frame in the solution's sources) hung by itself.
    """
    ev = trace.evaluation
    if ev is None:
        return killed
    if killed:
        return True
    if ev.status is Status.TIMEOUT or "TIMEOUT" in ev.log[:40]:
        inner = innermost_frame(ev.log)
        if inner is None:
            return False
        return any(part in inner for part in _WAITING_IN)
    return bool(_PEER_LOST.search(ev.log))


def _failed(trace: Trace) -> bool:
    return trace.evaluation is None or trace.evaluation.status is not Status.PASSED


def _figures(r: int, trace: Trace, log: str | None) -> RankFigures:
    ev = trace.evaluation
    dist = ev.distributed if ev is not None else None
    if dist is not None and dist.ranks:
        fig = dist.ranks[0]
        return fig.model_copy(update={"rank": r, "log": log}) if log else fig
    pid = trace.provenance.worker_pid if trace.provenance else None
    status = ev.status.value if ev is not None else "RUNTIME_ERROR"
    return RankFigures(rank=r, status=status, pid=pid, **({"log": log} if log else {}))


def _bandwidth(task: Task, latency_ms: float, device_name: str | None) -> dict[str, float | str]:
    spec = task.definition.distributed
    if spec is None or spec.message_bytes is None or latency_ms <= 0:
        return {}
    try:
        size = eval_number(spec.message_bytes, full_axes(spec, task.workload.axes))
    except (ConstraintError, SyntaxError, ZeroDivisionError, OverflowError):
        return {}
    out: dict[str, float | str] = {"message_bytes": size, "algbw_gbps": size / (latency_ms * 1e-3) / 1e9}
    if spec.collective is not None:
        n = full_axes(spec, task.workload.axes)["world_size"]
        out["collective"] = spec.collective
        out["busbw_gbps"] = float(out["algbw_gbps"]) * bus_factor(spec.collective, n)
        link = link_peak_gbps(device_name) if device_name else None
        if link:
            out["link_gbps"] = link
            out["link_fraction"] = float(out["busbw_gbps"]) / link
    return out


def merge_ranks(
    task: Task,
    traces: list[Trace],
    order: list[int],
    aborted: set[int],
    logs: dict[int, str],
    *,
    started: str | None = None,
) -> Trace:
    """One trace for the task from its ranks' traces (``traces[r]`` is rank r's).

    Args:
        order: Ranks in the order their traces arrived.
        aborted: Ranks killed because another failed.
        logs: Where each rank's log was kept, when it was.
    """
    n = len(traces)
    ranks = [_figures(r, t, logs.get(r)) for r, t in enumerate(traces)]
    failed = [r for r in order if _failed(traces[r])]
    own = [r for r in failed if not secondary(traces[r], r in aborted)]
    culprit: int | None = (own or failed)[0] if failed else None
    base = traces[culprit if culprit is not None else 0]
    ev = base.evaluation
    assert ev is not None
    backend = next(
        (t.evaluation.distributed.backend for t in traces if t.evaluation and t.evaluation.distributed), None
    )
    extra: dict[str, object] = {"world_size": n, "backend": backend, "ranks": ranks, "aligned": True}
    update: dict[str, object] = {}
    if culprit is not None:
        extra["failed_rank"] = culprit
        killed = f" (killed: rank {culprit} failed)"
        others = [
            f"rank {r}: {ranks[r].status}{killed if r in aborted else ''}" for r in range(n) if r != culprit
        ]
        where = f" (log: {logs[culprit]})" if culprit in logs else ""
        text = (
            f"{ev.status.value}: rank {culprit} of {n} failed{where}\n{ev.log}\n--- other ranks ---\n"
            + "\n".join(others)
        )
        update["log"] = clip_log(text, task.settings.log_limit_bytes)
        flags = sorted({f for t in traces if t.evaluation for f in t.evaluation.flags or []})
        update["flags"] = [*(ev.flags or []), *[f for f in flags if f not in (ev.flags or [])]] or None
    else:
        lat = [f.latency_ms or 0.0 for f in ranks]
        straggler = max(range(n), key=lambda r: lat[r])
        ref = [f.reference_latency_ms or 0.0 for f in ranks]
        slow_ref = max(range(n), key=lambda r: ref[r])
        extra["straggler_rank"] = straggler
        extra.update(_bandwidth(task, lat[straggler], ev.environment.device_name or ev.environment.hardware))
        sev, rev = traces[straggler].evaluation, traces[slow_ref].evaluation
        assert sev is not None and rev is not None and sev.performance is not None
        update["performance"] = Performance(
            latency_ms=lat[straggler],
            reference_latency_ms=ref[slow_ref],
            speedup_factor=ref[slow_ref] / lat[straggler] if lat[straggler] > 0 else 0.0,
        )
        update["timing"] = sev.timing
        update["reference_timing"] = rev.reference_timing
        spread = ", ".join(f"rank {r} {lat[r]:.4g} ms" for r in range(n))
        update["log"] = clip_log(
            f"PASSED on {n} ranks; slowest rank {straggler} ({spread})", task.settings.log_limit_bytes
        )
    update["distributed"] = DistributedResult(**extra)
    evaluation = Evaluation(**{**{k: getattr(ev, k) for k in ev.model_fields_set}, **update})
    prov = base.provenance
    if prov is not None:
        prov = prov.model_copy(update={"started_at": started or prov.started_at, "finished_at": now_iso()})
    return base.model_copy(update={"evaluation": evaluation, "provenance": prov})
