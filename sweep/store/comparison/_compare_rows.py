"""The traces one side of ``sweep compare`` selects, read from a session, and the messages
when it selects none (what the store holds instead, with "did you mean")."""

from __future__ import annotations

import base64
import binascii
import struct
from dataclasses import dataclass

from sweep.errors import StoreError, did_you_mean, listing, shown
from sweep.store.comparison._compare_spec import SideSpec
from sweep.store.db import RANK_TIME
from sweep.store.read import Session

__all__ = ["TraceRow", "load_rows"]

# Evaluated traces only; the samples live in the record alone (no column holds them).
_SELECT = f"""SELECT definition, solution, workload_uuid, hardware, status, latency_ms,
       timing_rel_error, timing_cv, timing_iterations, run_id, epoch_us({RANK_TIME}), trace_key,
       json_extract_string(record, '$.evaluation.timing.samples') AS samples,
       coalesce(TRY_CAST(json_extract(record, '$.evaluation.clocks.sm_clock_mhz_mean') AS DOUBLE),
                (sm_clock_mhz_before + sm_clock_mhz_after) / 2.0) AS sm_clock_mhz
FROM traces WHERE solution IS NOT NULL"""

# (filter, the column to list when nothing matches, what it is called).
_FILTERS: dict[str, tuple[str, str, str]] = {
    "path": ("true", "definition", "definition"),
    "run": ("run_id = ?", "run_id", "run"),
    "sweep": ("sweep = ?", "sweep", "sweep"),
    "hw": ("hardware = ?", "hardware", "hardware"),
    "hash": ("starts_with(solution_hash, ?)", "solution_hash", "solution hash"),
    "solution": ("solution = ? AND starts_with(solution_hash, ?)", "solution", "solution"),
}


@dataclass(frozen=True)
class TraceRow:
    """What a comparison needs of one trace."""

    definition: str
    solution: str
    workload_uuid: str
    hardware: str
    status: str
    latency_ms: float | None
    rel_error: float | None
    cv: float | None
    iterations: int | None
    run_id: str | None
    timestamp_us: int | None  # epoch microseconds: TIMESTAMPTZ values would need pytz
    trace_key: str
    samples: str | None
    #: The SM clock (MHz) the trace was timed at (``_compare_clocks``), ``None`` when unknown.
    sm_clock_mhz: float | None = None
    #: What :meth:`sample_values` multiplies the samples by (the clock, in cycles).
    scale: float = 1.0

    def sample_values(self) -> list[float]:
        """The timed samples (the format of :meth:`sweep.schema.TimingStats.encode_samples`:
        base64 of little-endian float32, times :attr:`scale`); empty when absent or unreadable."""
        if not self.samples:
            return []
        try:
            raw = base64.b64decode(self.samples, validate=True)
        except (binascii.Error, ValueError):
            return []
        return [v * self.scale for v in struct.unpack(f"<{len(raw) // 4}f", raw[: len(raw) // 4 * 4])]

    @property
    def order(self) -> tuple[int, str]:
        """Newest last: the time it ranks by (claimed, never after it was stored), then its
        trace key (the ``latest`` view's order)."""
        return (self.timestamp_us if self.timestamp_us is not None else -1, self.trace_key)


def _params(spec: SideSpec) -> list[str]:
    if spec.kind == "path":
        return []
    if spec.kind == "solution":
        assert spec.solution is not None
        return [spec.solution, spec.value]
    return [spec.value]


def _nothing(session: Session, spec: SideSpec) -> StoreError:
    _, column, what = _FILTERS[spec.kind]
    have = [
        str(r[0])
        for r in session.con.execute(
            f"SELECT DISTINCT {column} FROM traces WHERE {column} IS NOT NULL AND solution IS NOT NULL "
            f"ORDER BY 1 LIMIT 200"
        ).fetchall()
    ]
    if spec.kind == "path":
        return StoreError(
            f"side {shown(spec.text)} holds no evaluated trace; ingest or launch something first"
        )
    word = spec.solution if spec.kind == "solution" else spec.value
    assert word is not None
    if spec.kind == "solution" and word in have:
        hashes = [
            str(r[0])[:12]
            for r in session.con.execute(
                "SELECT DISTINCT solution_hash FROM traces WHERE solution = ? AND solution_hash IS NOT NULL "
                "ORDER BY 1",
                [word],
            ).fetchall()
        ]
        return StoreError(
            f"no trace of solution {shown(word)} with a hash starting {shown(spec.value)} in side "
            f"{shown(spec.text)}; its hashes: {listing(hashes) or 'none recorded'}"
        )
    if spec.kind == "hash":
        hint = did_you_mean(spec.value, [h[: len(spec.value)] for h in have])
    elif spec.kind == "hw":
        hint = ""  # H100 for H200 is no typo: another GPU simply has no traces here
    else:
        hint = did_you_mean(word, have)
    known = listing(have) if have else "none"
    plural = what if what == "hardware" else f"{what}s"
    return StoreError(f"no {what} {shown(word)} in the store{hint}; {plural} there: {known}")


def load_rows(session: Session, spec: SideSpec) -> list[TraceRow]:
    """The evaluated traces ``spec`` selects in ``session``.

    Raises:
        StoreError: It selects none (the message lists what the store holds), or a hash
            prefix names more than one solution version.
    """
    where = _FILTERS[spec.kind][0]
    raw = session.con.execute(f"{_SELECT} AND {where}", _params(spec)).fetchall()
    if not raw:
        raise _nothing(session, spec)
    rows = [TraceRow(*r) for r in raw]
    if spec.kind in ("hash", "solution"):
        found = session.con.execute(
            f"SELECT DISTINCT solution, solution_hash FROM traces WHERE solution IS NOT NULL AND {where} "
            "ORDER BY 2",
            _params(spec),
        ).fetchall()
        if len({h for _, h in found}) > 1:
            shown_found = ", ".join(f"{s}@{str(h)[:12]}" for s, h in found[:6])
            raise StoreError(
                f"hash prefix {shown(spec.value)} of side {shown(spec.text)} matches {len(found)} "
                f"solution versions ({shown_found}); write more of the hash"
            )
    return rows
