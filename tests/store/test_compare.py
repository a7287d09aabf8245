"""``sweep.store.comparison``: side specs, matching, the statistics and verdicts, the summary,
each kind of side, the messages for bad sides, and the ``compare`` view."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.errors import StoreError
from sweep.schema import TimingStats, Trace
from sweep.store import Store, compare, export_parquet, ingest
from sweep.store.comparison._compare_spec import parse_side
from sweep.store.db._compare_stats import (
    Estimate,
    estimate_from_runs,
    estimate_from_samples,
    estimate_single,
    ratio_interval,
    verdict,
)

from .conftest import make_trace, rows

HYPOTHESIS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
HASH_OLD = "aa11" + "0" * 60
HASH_NEW = "bb22" + "0" * 60


def timed(
    solution: str,
    uuid: str,
    latency: float,
    *,
    run: str,
    hardware: str = "NVIDIA_H100",
    spread: float = 0.01,
    n: int = 50,
    sweep: str = "nightly",
    solution_hash: str | None = None,
    ts: str = "2026-01-01T00:00:00+00:00",
    samples: bool = True,
    status: str = "PASSED",
) -> Trace:
    """A trace of ``n`` samples evenly spread over ``latency * (1 -+ spread)``."""
    values = [latency * (1 - spread + 2 * spread * i / (n - 1)) for i in range(n)]
    timing = {
        "clock": "cuda_event",
        "iterations": n,
        "p10_ms": values[n // 10],
        "p50_ms": latency,
        "p90_ms": values[9 * n // 10],
        "mean_ms": latency,
        "cv": spread / 2,
        "rel_error": spread / 10,
        **({"samples": TimingStats.encode_samples(values)} if samples else {}),
    }
    prov: dict[str, object] = {"run_id": run, "sweep": sweep, "task_id": f"{solution}-{uuid}"}
    if solution_hash:
        prov["solution_hash"] = solution_hash
    return make_trace(
        solution,
        uuid,
        hardware,
        latency=latency,
        status=status,
        ts=ts,
        provenance=prov,
        extra_eval={"timing": timing} if status == "PASSED" else None,
    )


def write_store(tmp_path: Path, traces: list[Trace], name: str = "sweep.duckdb") -> Path:
    log = tmp_path / f"{name}.jsonl"
    log.write_text("".join(t.to_json() + "\n" for t in traces))
    path = tmp_path / name
    ingest([log], path)
    return path


#: When run r1 and run r2 of :func:`faster_and_slower` ran.
OLD, NEW = "2026-01-01T00:00:00+00:00", "2026-01-02T00:00:00+00:00"


def faster_and_slower() -> list[Trace]:
    """Run r1 then r2 of sweep 'nightly' (at :data:`OLD`, :data:`NEW`): wl-1 gets 20% faster,
    wl-2 20% slower."""
    return [
        timed("s1", "wl-1", 1.0, run="r1", ts=OLD),
        timed("s1", "wl-1", 0.8, run="r2", ts=NEW),
        timed("s1", "wl-2", 1.0, run="r1", ts=OLD),
        timed("s1", "wl-2", 1.2, run="r2", ts=NEW),
    ]


@pytest.fixture
def two_runs(tmp_path: Path) -> Path:
    """:func:`faster_and_slower`, and wl-3 stays, wl-4 changes by 8% inside a 30% noise, wl-5
    only in r2."""
    old, new = OLD, NEW
    return write_store(
        tmp_path,
        [
            *faster_and_slower(),
            timed("s1", "wl-3", 1.0, run="r1", ts=old),
            timed("s1", "wl-3", 1.01, run="r2", ts=new),
            timed("s1", "wl-4", 1.0, run="r1", ts=old, spread=0.3),
            timed("s1", "wl-4", 1.08, run="r2", ts=new, spread=0.3),
            timed("s1", "wl-5", 1.0, run="r2", ts=new),
        ],
    )


# ---- statistics ----


def test_order_statistic_interval_of_the_median() -> None:
    est = estimate_from_samples([float(x) for x in range(1, 101)])
    assert est is not None and est.basis == "samples" and est.n == 100
    assert est.latency_ms == 50.5
    # ranks 40 and 61 (n/2 -+ 1.96*sqrt(n)/2, the second one up): ln(50.5/40) is the larger side
    assert est.noise == pytest.approx(math.log(50.5 / 40))
    assert estimate_from_samples([1.0]) is None
    assert estimate_from_samples([0.0, -1.0, math.nan]) is None


def test_runs_spread_and_single_number_noise() -> None:
    runs = estimate_from_runs([1.0, 1.1, 0.9])
    assert runs is not None and runs.basis == "runs" and runs.latency_ms == 1.0
    assert runs.noise == pytest.approx(math.log(1 / 0.9))  # three runs: their whole range
    assert estimate_single(1.0, rel_error=0.01).noise == pytest.approx(1.959963984540054 * 0.01)
    cv = estimate_single(1.0, cv=0.1, iterations=100)
    assert cv.basis == "cv" and cv.noise == pytest.approx(1.96 * 1.2533 * 0.01, rel=1e-3)
    assert estimate_single(1.0).basis == "none" and estimate_single(1.0).noise is None


def test_verdict_rule() -> None:
    quiet, loud = Estimate(1.0, 0.01, "samples", 50), Estimate(1.0, 0.5, "samples", 50)

    def at(x: float, e: Estimate) -> Estimate:
        return Estimate(x, e.noise, e.basis, e.n)

    assert verdict(quiet, at(1.04, quiet), 0.05) == "same"
    assert verdict(quiet, at(1.2, quiet), 0.05) == "slower"
    assert verdict(quiet, at(0.8, quiet), 0.05) == "faster"
    assert verdict(loud, at(1.2, loud), 0.05) == "noisy"
    bare = Estimate(1.0, None, "none", 1)
    assert verdict(bare, at(1.2, bare), 0.05) == "slower"  # unknown noise: the threshold decides
    assert verdict(bare, at(1.04, bare), 0.05) == "same"
    ratio, lo, hi = ratio_interval(bare, at(1.2, bare))
    assert ratio == pytest.approx(1.2) and lo is None and hi is None


positive = st.floats(min_value=1e-4, max_value=1e4, allow_nan=False, allow_infinity=False)
noise = st.one_of(st.none(), st.floats(min_value=0, max_value=2))


@HYPOTHESIS
@given(positive, positive, noise, noise, st.floats(min_value=0, max_value=1))
def test_verdict_properties(la: float, lb: float, na: float | None, nb: float | None, t: float) -> None:
    a, b = Estimate(la, na, "samples", 10), Estimate(lb, nb, "samples", 10)
    v, back = verdict(a, b, t), verdict(b, a, t)
    # Swapping the sides swaps faster and slower, and keeps same and noisy.
    assert back == {"faster": "slower", "slower": "faster"}.get(v, v)
    ratio, lo, hi = ratio_interval(a, b)
    if lo is not None and hi is not None:
        assert lo <= ratio * (1 + 1e-12) and ratio <= hi * (1 + 1e-12)
        if v in ("faster", "slower"):  # a verdict that counts: its interval leaves out 1
            assert not lo <= 1 <= hi
    if abs(math.log(ratio)) <= math.log1p(t):
        assert v == "same"
    else:
        assert v != "same"


@HYPOTHESIS
@given(st.lists(positive, min_size=2, max_size=200))
def test_the_interval_holds_the_median(values: list[float]) -> None:
    est = estimate_from_samples(values)
    assert est is not None and est.noise is not None and est.noise >= 0
    assert min(values) <= est.latency_ms <= max(values)
    assert math.exp(est.noise) <= max(values) / min(values) * (1 + 1e-9)


# ---- side specs ----


def test_parse_each_kind(tmp_path: Path) -> None:
    assert parse_side("run:r1").kind == "run"
    assert parse_side("sweep:nightly").value == "nightly"
    assert parse_side("hw:h100").value == "NVIDIA_H100"
    assert parse_side("hash:AA11").value == "aa11"
    sol = parse_side("s1@bb22")
    assert (sol.kind, sol.solution, sol.value) == ("solution", "s1", "bb22")
    weird = tmp_path / "run:x"
    weird.mkdir()
    assert parse_side(str(weird)).kind == "path"  # an existing path wins


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("rn:r1", "unknown side kind 'rn:' (did you mean 'run'?) in 'rn:r1'"),
        ("hw:", "side 'hw:' names no hw; write e.g. hw:H100"),
        ("hash:xyz", "side 'hash:xyz': a solution hash is hexadecimal, got 'xyz'"),
        ("", "empty side"),
        ("no/such/file.duckdb", "no such file or folder: 'no/such/file.duckdb'"),
    ],
)
def test_parse_refusals(text: str, message: str) -> None:
    with pytest.raises(StoreError) as e:
        parse_side(text)
    assert str(e.value).startswith(message)


@HYPOTHESIS
@given(st.text(max_size=60))
def test_parse_never_crashes(text: str) -> None:
    try:
        spec = parse_side(text)
    except StoreError as e:
        assert str(e)
    else:
        assert spec.text == text and spec.value


@HYPOTHESIS
@given(
    st.sampled_from(["run", "sweep"]),
    st.text(alphabet=st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=40),
)
def test_parse_round_trip(kind: str, value: str) -> None:
    spec = parse_side(f"{kind}:{value}")
    assert (spec.kind, spec.value) == (kind, value)


# ---- comparisons ----


def test_runs_task_by_task(two_runs: Path) -> None:
    c = compare("run:r1", "run:r2", store=two_runs)
    got = {t.workload_uuid: t.verdict for t in c.tasks}
    assert got == {"wl-1": "faster", "wl-2": "slower", "wl-3": "same", "wl-4": "noisy"}
    assert c.tasks[0].workload_uuid == "wl-2"  # most slowed down first
    assert c.summary.counts == {"faster": 1, "slower": 1, "same": 1, "noisy": 1, "failed": 0}
    assert (c.summary.only_a, c.summary.only_b) == (0, 1)
    assert c.summary.geomean_ratio == pytest.approx((0.8 * 1.2 * 1.01 * 1.08) ** 0.25, rel=1e-3)
    slow = next(t for t in c.tasks if t.workload_uuid == "wl-2")
    assert slow.basis_a == slow.basis_b == "samples"
    assert slow.ci_low is not None and slow.ci_high is not None and 1 < slow.ci_low < 1.2 < slow.ci_high
    assert [t.workload_uuid for t in c.regressions(10)] == ["wl-2"]
    assert c.regressions(25) == []


def test_threshold_turns_small_changes_into_same(two_runs: Path) -> None:
    c = compare("run:r1", "run:r2", store=two_runs, threshold=0.25)
    assert {t.verdict for t in c.tasks} == {"same"}


def test_sweep_side_uses_the_spread_of_runs(tmp_path: Path) -> None:
    store = write_store(
        tmp_path,
        [
            timed(
                "s1",
                "wl-1",
                x,
                run=f"r{i}",
                sweep="old",
                samples=False,
                ts=f"2026-01-0{i + 1}T00:00:00+00:00",
            )
            for i, x in enumerate([1.0, 1.3, 0.8])
        ]
        + [timed("s1", "wl-1", 1.5, run="n1", sweep="new", samples=False)],
    )
    t = compare("sweep:old", "sweep:new", store=store).tasks[0]
    assert (t.basis_a, t.basis_b) == ("runs", "rel_error")
    assert t.latency_ms_a == pytest.approx(1.0) and t.verdict == "slower"


def test_hardware_sides_match_across_hardware(tmp_path: Path) -> None:
    store = write_store(
        tmp_path,
        [timed("s1", "wl-1", 1.0, run="r1"), timed("s1", "wl-1", 0.5, run="r2", hardware="NVIDIA_H200")],
    )
    c = compare("hw:H100", "hw:nvidia h200", store=store)
    assert c.across_hardware
    (t,) = c.tasks
    assert (t.hardware_a, t.hardware_b, t.verdict) == ("NVIDIA_H100", "NVIDIA_H200", "faster")
    # Two sides on one hardware each are matched across it, with a note.
    assert compare("run:r1", "run:r2", store=store).notes == [
        "matched across hardware: A ran on NVIDIA_H100, B on NVIDIA_H200"
    ]


def test_no_shared_task(tmp_path: Path) -> None:
    store = write_store(
        tmp_path,
        [
            timed("s1", "wl-1", 1.0, run="r1"),
            timed("s1", "wl-1", 0.5, run="r2", hardware="NVIDIA_H200"),
            timed("s1", "wl-2", 0.5, run="r2"),
        ],
    )
    with pytest.raises(StoreError) as e:
        compare("run:r1", "run:r2", store=store)
    assert str(e.value) == (
        "sides 'run:r1' (1 traces) and 'run:r2' (2 traces) share no task (same definition, solution "
        "name and workload, on the same hardware; compare hardware with hw:NAME)"
    )


def test_solution_versions(tmp_path: Path) -> None:
    store = write_store(
        tmp_path,
        [
            timed("s1", "wl-1", 1.0, run="r1", solution_hash=HASH_OLD),
            timed("s1", "wl-1", 1.5, run="r2", solution_hash=HASH_NEW),
        ],
    )
    assert compare("hash:aa11", "hash:bb22", store=store).tasks[0].verdict == "slower"
    assert compare("s1@aa11", "s1@bb", store=store).tasks[0].ratio == pytest.approx(1.5)
    with pytest.raises(StoreError) as e:
        compare("s1@cc", "s1@bb", store=store)
    assert "no trace of solution 's1' with a hash starting 'cc'" in str(e.value)
    assert "its hashes: aa1100000000, bb2200000000" in str(e.value)


def test_store_file_against_export_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    a = write_store(tmp_path / "a", [timed("s1", "wl-1", 1.0, run="r1")])
    b = write_store(tmp_path / "b", [timed("s1", "wl-1", 0.7, run="r2")])
    export_parquet(b, tmp_path / "export")
    c = compare(str(a), str(tmp_path / "export"), store=tmp_path / "unused.duckdb")
    assert [t.verdict for t in c.tasks] == ["faster"] and not c.across_hardware
    # A results folder means its store.
    assert compare(str(tmp_path / "a"), str(b), store=a).tasks[0].ratio == pytest.approx(0.7)


def test_failed_side(tmp_path: Path) -> None:
    store = write_store(
        tmp_path,
        [timed("s1", "wl-1", 1.0, run="r1"), timed("s1", "wl-1", 1.0, run="r2", status="RUNTIME_ERROR")],
    )
    c = compare("run:r1", "run:r2", store=store)
    (t,) = c.tasks
    assert (t.verdict, t.status_a, t.status_b, t.ratio) == ("failed", "PASSED", "RUNTIME_ERROR", None)
    assert c.summary.geomean_ratio is None and c.regressions(5) == [t]


def test_unknown_values_say_what_exists(two_runs: Path) -> None:
    with pytest.raises(StoreError) as e:
        compare("run:r22", "run:r2", store=two_runs)
    assert str(e.value) == "no run 'r22' in the store (did you mean 'r2'?); runs there: r1, r2"
    with pytest.raises(StoreError) as e:
        compare("sweep:nightlly", "run:r2", store=two_runs)
    assert "(did you mean 'nightly'?)" in str(e.value)
    with pytest.raises(StoreError) as e:
        compare("r1", "run:r2", store=two_runs)
    assert str(e.value).endswith("(did you mean 'run:r1'?)")
    with pytest.raises(StoreError, match="threshold must be"):
        compare("run:r1", "run:r2", store=two_runs, threshold=-1)


# ---- the compare view ----


def test_compare_view_latest_run_against_the_previous(two_runs: Path) -> None:
    got = rows(
        Store(two_runs),
        "SELECT workload_uuid, run_id_a, run_id_b, round(ratio, 3), verdict FROM compare ORDER BY 1",
    )
    # The view's noise is the timers' rel_error: 1.96 * sqrt(2) * 3% = 8.3% for wl-4.
    assert got == [
        ("wl-1", "r1", "r2", 0.8, "faster"),
        ("wl-2", "r1", "r2", 1.2, "slower"),
        ("wl-3", "r1", "r2", 1.01, "same"),
        ("wl-4", "r1", "r2", 1.08, "noisy"),
    ]
