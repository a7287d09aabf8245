"""``sweep compare`` and clocks: the warning when the sides ran at SM clocks more than 10% apart,
and the clock-normalised comparison (SM cycles)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.schema import Clocks, Trace
from sweep.store import compare
from sweep.store.comparison._compare_clocks import clock_gap_note

from .test_compare import timed, write_store

OLD, NEW = "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"


def clocked(t: Trace, mhz: float | None, *, before_after: int | None = None) -> Trace:
    """``t`` timed at ``mhz`` (the mean), or, as older traces, only before and after."""
    if mhz is not None:
        clocks = Clocks(sm_clock_mhz_mean=mhz, sm_clock_mhz_before=int(mhz), sm_clock_mhz_after=int(mhz))
    elif before_after is not None:
        clocks = Clocks(sm_clock_mhz_before=before_after, sm_clock_mhz_after=before_after)
    else:
        return t
    assert t.evaluation is not None
    return t.model_copy(update={"evaluation": t.evaluation.model_copy(update={"clocks": clocks})})


def _store(tmp_path: Path, clock_b: float | None) -> Path:
    # B is 1.5x slower in time, at 2/3 of A's clock: the same number of cycles.
    return write_store(
        tmp_path,
        [
            clocked(timed("s1", "wl-1", 1.0, run="r1", ts=OLD), 1980.0),
            clocked(timed("s1", "wl-1", 1.5, run="r2", ts=NEW), clock_b),
            clocked(timed("s1", "wl-2", 2.0, run="r1", ts=OLD), None, before_after=1980),
            clocked(timed("s1", "wl-2", 3.0, run="r2", ts=NEW), clock_b),
        ],
    )


def test_sides_at_clocks_far_apart_draw_the_warning_and_cycles_agree(tmp_path: Path) -> None:
    db = _store(tmp_path, 1320.0)
    plain = compare("run:r1", "run:r2", store=db)
    assert {t.verdict for t in plain.tasks} == {"slower"}
    assert [(t.sm_clock_mhz_a, t.sm_clock_mhz_b) for t in plain.tasks] == [(1980.0, 1320.0)] * 2
    assert any("2 of 2 tasks ran at SM clocks more than 10% apart" in n for n in plain.notes)
    cyc = compare("run:r1", "run:r2", store=db, cycles=True)
    assert {t.verdict for t in cyc.tasks} == {"same"}
    assert cyc.summary.geomean_ratio == pytest.approx(1.0, rel=1e-3)
    by = {t.workload_uuid: t for t in cyc.tasks}
    # In thousands of cycles; wl-2's A side from its clock before and after (an older trace).
    assert by["wl-1"].latency_ms_a == pytest.approx(1980.0, rel=0.01)
    assert by["wl-2"].latency_ms_a == pytest.approx(3960.0, rel=0.01)
    assert not any("apart" in n for n in cyc.notes) and any("thousands of SM cycles" in n for n in cyc.notes)


def test_close_clocks_no_warning(tmp_path: Path) -> None:
    db = _store(tmp_path, 1900.0)
    assert not any("apart" in n for n in compare("run:r1", "run:r2", store=db).notes)


def test_cycles_leave_out_traces_without_a_clock(tmp_path: Path) -> None:
    db = write_store(
        tmp_path,
        [
            clocked(timed("s1", "wl-1", 1.0, run="r1", ts=OLD), 1980.0),
            clocked(timed("s1", "wl-1", 1.0, run="r2", ts=NEW), 1980.0),
            timed("s1", "wl-2", 1.0, run="r1", ts=OLD),  # a CPU trace: no clock
            timed("s1", "wl-2", 1.0, run="r2", ts=NEW),
        ],
    )
    cyc = compare("run:r1", "run:r2", store=db, cycles=True)
    assert [t.workload_uuid for t in cyc.tasks] == ["wl-1"]
    assert any("1 traces of A and 1 of B carry no SM clock" in n for n in cyc.notes)


def test_cycles_with_no_clock_anywhere_is_a_clean_refusal(tmp_path: Path) -> None:
    db = write_store(
        tmp_path, [timed("s1", "wl-1", 1.0, run="r1", ts=OLD), timed("s1", "wl-1", 1.0, run="r2", ts=NEW)]
    )
    res = CliRunner().invoke(app, ["compare", "run:r1", "run:r2", "--store", str(db), "--cycles"])
    assert res.exit_code == 1 and res.stderr.startswith("error: ") and "Traceback" not in res.output


def test_cli_warns_and_prints_the_clocks(tmp_path: Path) -> None:
    db = _store(tmp_path, 1320.0)
    res = CliRunner().invoke(app, ["compare", "run:r1", "run:r2", "--store", str(db), "--json"])
    assert res.exit_code == 0 and "more than 10% apart" in res.stderr
    assert '"sm_clock_mhz_b": 1320.0' in res.stdout


def test_clock_gap_note_bounds() -> None:
    assert clock_gap_note([("t", 1000.0, 1100.0)]) is None  # 9.1% of the higher
    assert clock_gap_note([("t", 1000.0, 1120.0)]) is not None
    assert clock_gap_note([("t", None, 1000.0), ("u", 0.0, 0.0)]) is None
