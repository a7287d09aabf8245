"""``sweep.tuning.lookup``: exact shapes win, else the nearest by log-distance; plain JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.tuning import axes_distance, lookup


def _table(entries: list[dict[str, object]]) -> dict[str, object]:
    return {"format": "kernel-sweep-tuning", "version": 1, "tables": {"d": {"s": {"H100": entries}}}}


sizes = st.integers(1, 2**20)
shapes = st.fixed_dictionaries({"M": sizes, "N": sizes})


@settings(max_examples=80, deadline=None)
@given(entries=st.lists(shapes, min_size=1, max_size=8), query=shapes)
def test_lookup_picks_an_exact_match_or_a_nearest_entry(
    entries: list[dict[str, int]], query: dict[str, int]
) -> None:
    table = _table([{"axes": a, "params": {"i": i}} for i, a in enumerate(entries)])
    got = lookup(table, "d", "s", "H100", query)["i"]
    distances = [axes_distance(query, a) for a in entries]
    assert distances[got] == min(distances)
    assert got == distances.index(min(distances))  # ties: the earlier entry
    if query in entries:
        assert entries[got] == query


@given(a=shapes, b=shapes)
def test_distance_is_a_symmetric_premetric(a: dict[str, int], b: dict[str, int]) -> None:
    assert axes_distance(a, b) == axes_distance(b, a) >= 0
    assert axes_distance(a, a) == 0


def test_missing_axis_is_far_and_file_or_dict(tmp_path: Path) -> None:
    table = _table([{"axes": {"M": 8}, "params": {"B": 1}}, {"axes": {"M": 8, "K": 8}, "params": {"B": 2}}])
    assert lookup(table, "d", "s", "H100", {"M": 8, "K": 4096}) == {"B": 2}
    assert lookup(table, "d", "s", "H100", {"M": 9}) == {"B": 1}
    path = tmp_path / "t.json"
    path.write_text(json.dumps(table))
    assert lookup(path, "d", "s", "H100", {"M": 8}) == {"B": 1}
    assert lookup(str(path), "other", "s", "H100", {"M": 8}) == {}
    with pytest.raises(ValueError, match="not a kernel-sweep-tuning table"):
        lookup({"format": "x"}, "d", "s", "H100", {})
