"""How long earlier evaluations took, read from the store and the logs (``earlier_durations``)."""

from __future__ import annotations

import json
from pathlib import Path

from sweep.store import EarlierRun, ResultsWriter, StoreContext, earlier_durations, log_path

from .conftest import make_definition, make_solution, make_trace


def _timed(
    solution: str, uuid: str, start: str, end: str | None, *, batch: int = 1, definition: str = "vec_add"
):  # type: ignore[no-untyped-def]
    prov: dict[str, object] = {"task_id": f"{definition}-{solution}-{uuid}", "started_at": start}
    if end is not None:
        prov["finished_at"] = end
    return make_trace(solution, uuid, definition=definition, batch=batch, provenance=prov)


def test_latest_duration_per_workload_from_store_and_log_tail(tmp_path: Path) -> None:
    results = tmp_path / "results"
    ctx = StoreContext.of([make_definition(), make_definition("other")], [make_solution("s1")])
    t0 = "2026-01-01T00:00:00+00:00"
    with ResultsWriter(results, results / "sweep.duckdb", sweep="x", run_id="r1", context=ctx) as w:
        w.write_many(
            [
                _timed("s1", "wl-1", t0, "2026-01-01T00:00:02+00:00"),  # 2 s, then re-run below
                _timed("s1", "wl-2", t0, "2026-01-01T00:00:00.500000+00:00", batch=8),  # 0.5 s
                _timed("s1", "wl-3", t0, None),  # no end: says nothing
                _timed("s1", "wl-1", t0, "2026-01-01T00:00:09+00:00", definition="other"),  # not asked
            ]
        )
    # A later run's line that only the log has (its writer was killed before storing it).
    late = _timed("s1", "wl-1", "2026-01-02T00:00:00+00:00", "2026-01-02T00:00:03.250000+00:00")
    log = log_path(results, late, ctx)
    with log.open("a") as f:
        f.write(json.dumps(json.loads(late.to_json())) + "\n")
    runs = sorted(
        earlier_durations(results, results / "sweep.duckdb", {"vec_add"}), key=lambda r: r.workload_uuid
    )
    assert runs == [
        EarlierRun("vec_add", "s1", "wl-1", None, 1.0, 3.25),
        EarlierRun("vec_add", "s1", "wl-2", None, 8.0, 0.5),
    ]


def test_nothing_stored_yet_means_no_durations(tmp_path: Path) -> None:
    assert earlier_durations(tmp_path / "results", tmp_path / "results" / "sweep.duckdb", {"vec_add"}) == []
    (tmp_path / "results" / "traces").mkdir(parents=True)
    assert earlier_durations(tmp_path / "results", tmp_path / "results" / "sweep.duckdb", {"vec_add"}) == []
