"""Calls made by several ranks in the store (schema 9): world size and per-rank figures as
columns, ``cross_hardware`` pairing only equal world sizes, the report's bandwidth table."""

from __future__ import annotations

from pathlib import Path

from sweep.schema import Trace
from sweep.store import RowBatch, Store, query

from .conftest import make_trace


def _dist(world: int, busbw: float = 100.0, size: float = 4096.0) -> dict[str, object]:
    ranks = [{"rank": r, "status": "PASSED", "latency_ms": 1.0 + r} for r in reversed(range(world))]
    return {
        "distributed": {
            "world_size": world,
            "backend": "nccl",
            "ranks": ranks,
            "straggler_rank": world - 1,
            "collective": "all_reduce",
            "message_bytes": size,
            "algbw_gbps": busbw / 2,
            "busbw_gbps": busbw,
            "link_fraction": busbw / 450,
        }
    }


def _store(tmp_path: Path, traces: list[Trace]) -> Path:
    db = tmp_path / "s.duckdb"
    b = RowBatch()
    for t in traces:
        b.add_trace(t, source="t")
    Store(db).add(b)
    return db


def test_world_size_and_per_rank_figures_are_columns(tmp_path: Path) -> None:
    db = _store(
        tmp_path,
        [make_trace("s1", extra_eval=_dist(4)), make_trace("s1", uuid="wl-2", hardware="NVIDIA_H200")],
    )
    rows = query(
        db,
        "SELECT workload_uuid, world_size, collective, message_bytes, busbw_gbps, straggler_rank, "
        "rank_status, rank_latency_ms FROM traces ORDER BY workload_uuid",
    ).rows
    assert rows[0] == (
        "wl-1",
        4,
        "all_reduce",
        4096.0,
        100.0,
        3,
        ["PASSED"] * 4,
        [1.0, 2.0, 3.0, 4.0],
    )  # in rank order
    assert rows[1] == ("wl-2", 1, None, None, None, None, None, None)  # an ordinary trace


def test_cross_hardware_pairs_only_equal_world_sizes(tmp_path: Path) -> None:
    # The same definition, solution and workload on two GPU types, once with 2 ranks on both,
    # once with 2 ranks on one and 4 on the other (a fixed world size changed between runs).
    same = _store(
        tmp_path / "a",
        [
            make_trace("s1", extra_eval=_dist(2)),
            make_trace("s1", hardware="NVIDIA_H200", extra_eval=_dist(2), latency=0.5),
        ],
    )
    assert query(same, "SELECT count(*) FROM cross_hardware").rows == [(1,)]
    other = _store(
        tmp_path / "b",
        [
            make_trace("s1", extra_eval=_dist(2)),
            make_trace("s1", hardware="NVIDIA_H200", extra_eval=_dist(4), latency=0.5),
        ],
    )
    assert query(other, "SELECT count(*) FROM cross_hardware").rows == [(0,)]
    # Single-GPU traces pair as before.
    single = _store(tmp_path / "c", [make_trace("s1"), make_trace("s1", hardware="NVIDIA_H200", latency=0.5)])
    assert query(single, "SELECT count(*) FROM cross_hardware").rows == [(1,)]


def test_the_report_shows_bandwidth_per_world_size(tmp_path: Path) -> None:
    from sweep.store.render import build_report, render_text

    db = _store(
        tmp_path,
        [
            make_trace("s1", extra_eval=_dist(2, 80.0)),
            make_trace("s1", uuid="wl-2", extra_eval=_dist(4, 120.0)),
        ],
    )
    text = render_text(build_report(db))
    assert "Bandwidth vs message size, per world size" in text
    section = text[text.index("Bandwidth vs message size") :]
    assert "80" in section and "120" in section
    plain = _store(tmp_path / "p", [make_trace("s1")])
    assert "Bandwidth vs message size" not in render_text(build_report(plain))


def test_the_html_report_draws_bandwidth_against_size_one_line_per_series(tmp_path: Path) -> None:
    import re

    from sweep.store.render import build_report, render_html, render_text

    sizes = [4096.0, 65536.0, 1048576.0]
    traces = []
    # (solution, world size, hardware): four series of three sizes, plus one failing trace.
    for sol, world, hw, base in [
        ("s1", 2, "NVIDIA_H100", 10.0),
        ("s1", 4, "NVIDIA_H100", 20.0),
        ("s2", 2, "NVIDIA_H100", 30.0),
        ("s1", 2, "NVIDIA_H200", 40.0),
    ]:
        for i, size in enumerate(reversed(sizes)):  # stored out of size order
            traces.append(
                make_trace(
                    sol, uuid=f"wl-{world}-{i}", hardware=hw, extra_eval=_dist(world, base * (3 - i), size)
                )
            )
    db = _store(tmp_path, traces)
    report = build_report(db)
    page = render_html(report)
    assert "<script" not in page and "http" not in page.split("<body>")[1].replace("http://www.w3.org", "")
    [svg] = re.findall(r'<svg class="chart bandwidth".*?</svg>', page, flags=re.DOTALL)
    paths = re.findall(r'<path class="series" d="([^"]*)"', svg)
    assert len(paths) == 4  # one per solution, world size and hardware
    for d in paths:
        xs = [float(x) for x in re.findall(r"[ML]([\d.]+),", d)]
        assert len(xs) == 3 and xs == sorted(xs)  # every size, left to right
    assert "message size (bytes per rank, log)" in svg and "bus bandwidth (GB/s, log)" in svg
    for label in [
        "s1, 2 ranks, NVIDIA_H100",
        "s1, 4 ranks, NVIDIA_H100",
        "s2, 2 ranks, NVIDIA_H100",
        "s1, 2 ranks, NVIDIA_H200",
    ]:
        assert label in svg
    assert page.index("Bandwidth vs message size") < page.index('class="chart bandwidth"')  # under its table
    text = render_text(report)
    assert "Bandwidth vs message size" in text and "<svg" not in text  # the text report: the table


def test_no_calls_by_several_ranks_no_bandwidth_section(tmp_path: Path) -> None:
    from sweep.store.render import build_report, render_html

    report = build_report(_store(tmp_path, [make_trace("s1"), make_trace("s2", uuid="wl-2")]))
    assert report.bandwidth == []
    page = render_html(report)
    assert "chart bandwidth" not in page and "Bandwidth vs message size" not in page
    assert 'class="series"' not in page


def test_a_schema_8_store_migrates_its_distributed_traces(tmp_path: Path) -> None:
    import duckdb

    from sweep.store import SCHEMA_VERSION
    from sweep.store.db import V9_TRACE_COLUMNS

    db = _store(
        tmp_path,
        [
            make_trace("s1", extra_eval=_dist(2)),
            make_trace("s1", hardware="NVIDIA_H200", extra_eval=_dist(4), latency=0.5),
            make_trace("s1", uuid="wl-2"),
        ],
    )
    # Made back into a store of schema 8: no columns of 9, pair keys of four elements, pairs.
    con = duckdb.connect(str(db))
    for column, _ in V9_TRACE_COLUMNS:
        con.execute(f'ALTER TABLE traces DROP COLUMN "{column}"')
    con.execute(
        "UPDATE traces SET pair_key = md5_number(json_array(definition, coalesce(solution_hash, "
        "'name:' || solution), coalesce(solution_params, ''), workload_uuid)::VARCHAR)"
    )
    con.execute("DELETE FROM store_meta WHERE key = 'schema_version'")
    con.execute("INSERT INTO store_meta VALUES ('schema_version', '8')")
    con.close()
    rows = query(
        db,
        "SELECT workload_uuid, hardware, world_size, busbw_gbps, rank_latency_ms FROM traces ORDER BY 1, 2",
    ).rows
    assert rows == [
        ("wl-1", "NVIDIA_H100", 2, 100.0, [1.0, 2.0]),
        ("wl-1", "NVIDIA_H200", 4, 100.0, [1.0, 2.0, 3.0, 4.0]),
        ("wl-2", "NVIDIA_H100", 1, None, None),
    ]
    assert query(db, "SELECT value FROM store_meta WHERE key = 'schema_version'").rows == [
        (str(SCHEMA_VERSION),)
    ]
    assert query(db, "SELECT count(*) FROM cross_hardware").rows == [(0,)]  # 2 ranks vs 4: no pair
