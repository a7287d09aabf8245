"""Parameter points in the store: the solution_params column, best_params, migration 4 -> 5."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from sweep.schema import Solution, Trace
from sweep.store import SCHEMA_VERSION, Store, query

from .conftest import batch_of, make_definition, make_solution, make_trace, rows


def _tuned() -> Solution:
    base = make_solution("tuned").to_json_obj()
    return Solution.model_validate({**base, "params": {"BM": [64, 32, 128], "MODE": ["a", "b"]}})


def _point(params: dict[str, object], latency: float, uuid: str = "wl-1", status: str = "PASSED") -> Trace:
    t = make_trace("tuned", uuid, latency=latency, reference=2.0, status=status)
    return Trace.model_validate({**t.to_json_obj(), "solution_params": params})


def test_column_is_canonical_json(store: Store) -> None:
    store.add(batch_of(_point({"MODE": "a", "BM": 64}, 1.0), make_trace("plain")))
    got = rows(store, "SELECT solution, solution_params FROM traces ORDER BY solution")
    assert got == [("plain", None), ("tuned", '{"BM":64,"MODE":"a"}')]


def test_best_params_view(store: Store) -> None:
    sol = _tuned()
    traces = [
        _point({"BM": 64, "MODE": "a"}, 1.0),  # the default point
        _point({"BM": 32, "MODE": "a"}, 0.5),
        _point({"BM": 128, "MODE": "b"}, 0.25, status="INCORRECT_NUMERICAL"),  # fastest but wrong
        _point({"BM": 128, "MODE": "a"}, 0.8, uuid="wl-2"),
    ]
    store.add(batch_of(*traces, definitions=(make_definition(),), solutions=(sol,)))
    got = rows(
        store,
        "SELECT workload_uuid, best_params, latency_ms, default_params, speedup_over_default, "
        "speedup_over_reference, points_passed FROM best_params ORDER BY workload_uuid",
    )
    assert got == [
        ("wl-1", '{"BM":32,"MODE":"a"}', 0.5, '{"BM":64,"MODE":"a"}', 2.0, 4.0, 2),
        ("wl-2", '{"BM":128,"MODE":"a"}', 0.8, '{"BM":64,"MODE":"a"}', None, 2.5, 1),
    ]
    # every point is its own row of latest
    assert rows(store, "SELECT count(*) FROM latest WHERE solution = 'tuned'") == [(4,)]


def test_a_v4_store_migrates_with_params_filled(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    st = Store(path)
    st.add(batch_of(_point({"MODE": "b", "BM": 32}, 1.0), make_trace("plain")))
    st.close()
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE traces DROP COLUMN solution_params")
    con.execute("UPDATE store_meta SET value = '4' WHERE key = 'schema_version'")
    con.close()
    assert query(path, "SELECT value FROM store_meta WHERE key = 'schema_version'").rows == [
        (str(SCHEMA_VERSION),)
    ]
    assert query(path, "SELECT solution, solution_params FROM traces ORDER BY solution").rows == [
        ("plain", None),
        ("tuned", '{"BM":32,"MODE":"b"}'),
    ]


@pytest.mark.parametrize("value", [1.5, True, "x"])
def test_scalar_kinds_kept(store: Store, value: object) -> None:
    store.add(batch_of(_point({"V": value}, 1.0)))
    (text,) = rows(store, "SELECT solution_params FROM traces")[0]
    assert json.loads(str(text)) == {"V": value}


def test_the_report_shows_what_tuning_gained(tmp_path: Path) -> None:
    from sweep.store.render import build_report, render_text

    db = tmp_path / "sweep.duckdb"
    st = Store(db)
    try:
        plain = make_trace("plain")
        st.add(
            batch_of(
                _point({"BM": 64, "MODE": "a"}, 1.0),  # the default point
                _point({"BM": 32, "MODE": "a"}, 0.5),  # 2x over the default
                plain,
                definitions=(make_definition(),),
                solutions=(_tuned(), make_solution("plain")),
            )
        )
    finally:
        st.close()
    rep = build_report(db)
    (table,) = [t for t in rep.tables if t.title.startswith("Tuning gain")]
    row = dict(zip(table.columns, table.rows[0]))
    assert len(table.rows) == 1 and row["solution"] == "tuned"  # only solutions with a space
    assert row["geomean_speedup_over_default"] == pytest.approx(2.0)
    assert row["points_passed"] == 2 and row["workloads_without_default"] == 0
    assert "Tuning gain" in render_text(rep) and "2x" in render_text(rep)
