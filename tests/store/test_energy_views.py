"""The energy views: energy per call and its speedup per trace, and the latency-energy Pareto
front per definition and hardware."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sweep.schema import Trace
from sweep.store import Store
from sweep.store.db._energy_views import PARETO_TIE

from .conftest import batch_of, make_trace, rows


def _energy(sol_j: float | None, ref_j: float | None = 0.02) -> dict[str, object]:
    return {
        "energy": {
            "source": "nvml_total_energy",
            "reference": {"joules_per_call": ref_j, "mean_power_w": 350.0, "mean_sm_clock_mhz": 1980.0},
            "solution": {"joules_per_call": sol_j, "mean_power_w": 420.0, "mean_sm_clock_mhz": 1755.0},
        }
    }


def _trace(solution: str, uuid: str, latency: float, sol_j: float | None, **kw: object) -> Trace:
    return make_trace(solution, uuid, latency=latency, reference=2.0, extra_eval=_energy(sol_j), **kw)  # type: ignore[arg-type]


def test_energy_per_call_and_energy_speedup(store: Store) -> None:
    store.add(
        batch_of(
            _trace("fast", "wl-1", 0.5, 0.025),
            _trace("lean", "wl-1", 1.0, 0.01),
            _trace("nomeasure", "wl-1", 0.8, None),  # no figure: not in the view
            make_trace("old", "wl-1", latency=0.9),  # written before energy existed
            _trace("failed", "wl-1", 0.1, 0.001, status="RUNTIME_ERROR"),
        )
    )
    got = rows(
        store, "SELECT solution, energy_j, ref_energy_j, energy_speedup, power_w FROM energy ORDER BY 1"
    )
    assert got == [
        ("fast", 0.025, 0.02, pytest.approx(0.8), 420.0),
        ("lean", 0.01, 0.02, pytest.approx(2.0), 420.0),
    ]


def test_the_pareto_front_per_definition_and_hardware(store: Store) -> None:
    traces = [
        _trace("fast", "wl-1", 0.5, 0.025),  # fastest, costs the most energy: on the front
        _trace("lean", "wl-1", 1.0, 0.01),  # least energy, slower: on the front
        _trace("worse", "wl-1", 1.2, 0.03),  # beaten by both on both
        _trace("tie", "wl-1", 1.0, 0.012),  # as fast as lean, more energy: beaten by lean
        _trace("other_hw", "wl-1", 3.0, 0.05, hardware="NVIDIA_H200"),  # alone on its hardware
    ]
    store.add(batch_of(*traces))
    got = rows(store, "SELECT solution, hardware, on_front, dominated_by FROM energy_pareto ORDER BY 1")
    assert got == [
        ("fast", "NVIDIA_H100", True, None),
        ("lean", "NVIDIA_H100", True, None),
        ("other_hw", "NVIDIA_H200", True, None),
        ("tie", "NVIDIA_H100", False, "lean"),
        ("worse", "NVIDIA_H100", False, "lean"),  # the one beating it by the most on both
    ]


POINTS = st.lists(st.tuples(st.floats(0.1, 10.0), st.floats(0.001, 1.0)), min_size=1, max_size=7)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(points=POINTS)
@example(points=[(1.0, 0.001), (1.0, 0.0010000000000000002)])  # a tie the geomean's rounding hid
def test_the_front_is_exactly_the_undominated_solutions(points: list[tuple[float, float]]) -> None:
    st_ = Store.memory()
    try:
        st_.add(batch_of(*[_trace(f"s{i}", "wl-1", lat, j) for i, (lat, j) in enumerate(points)]))
        got = {str(r[0]): bool(r[1]) for r in rows(st_, "SELECT solution, on_front FROM energy_pareto")}
    finally:
        st_.close()
    speed = {f"s{i}": (2.0 / lat, 0.02 / j) for i, (lat, j) in enumerate(points)}

    def dominated(a: str) -> bool:  # equal within PARETO_TIE: the view's geomean moves the last bits
        sa, ea = speed[a]
        lo, hi = 1 - PARETO_TIE, 1 + PARETO_TIE
        return any(
            sb >= sa * lo and eb >= ea * lo and (sb > sa * hi or eb > ea * hi)
            for b, (sb, eb) in speed.items()
            if b != a
        )

    assert got == {s: not dominated(s) for s in speed}


def test_the_report_shows_energy_only_when_measured(tmp_path) -> None:
    from sweep.store.render import build_report, render_text

    path = tmp_path / "sweep.duckdb"
    st_ = Store(path)
    try:
        st_.add(batch_of(make_trace("plain", "wl-1", latency=0.9)))
    finally:
        st_.close()
    assert "Energy per call" not in render_text(build_report(path))
    st_ = Store(path)
    try:
        st_.add(batch_of(_trace("fast", "wl-1", 0.5, 0.025), _trace("lean", "wl-2", 1.0, 0.01)))
    finally:
        st_.close()
    text = render_text(build_report(path))
    assert "Energy per call" in text and "Latency-energy Pareto front" in text
