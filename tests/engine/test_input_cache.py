"""Input sets are made once per (definition, workload, seed, set, device) and shared by the
evaluations of one process (every point of a parameter sweep reads the same sets); a solution
that writes into its inputs cannot change what the next evaluation gets."""

from __future__ import annotations

from sweep.engine import EngineCache
from sweep.schema import Definition, Workload
from tests.engine.conftest import Kit

_WRITES_ITS_INPUTS = "def run(x, y):\n    z = x + y\n    x.zero_()\n    y.fill_(7.0)\n    return z\n"
_HONEST = "def run(x, y):\n    return x + y\n"


def test_a_second_evaluation_reuses_the_input_sets(kit: Kit, vadd: Definition, vadd_wl: Workload) -> None:
    cache = EngineCache()
    first = kit.run(vadd, kit.solution("vadd_f32", _HONEST, name="a"), vadd_wl, cache=cache)
    made = len(cache.input_sets.items)
    assert kit.status(first) == "PASSED" and made == kit.fast.trials + kit.fast.input_sets
    second = kit.run(vadd, kit.solution("vadd_f32", _HONEST + "\n", name="b"), vadd_wl, cache=cache)
    assert kit.status(second) == "PASSED"
    assert cache.hits["input_set"] >= made and len(cache.input_sets.items) == made


def test_a_solution_writing_its_inputs_leaves_the_cached_sets_alone(
    kit: Kit, vadd: Definition, vadd_wl: Workload
) -> None:
    cache = EngineCache()
    honest = kit.run(vadd, kit.solution("vadd_f32", _HONEST, name="a"), vadd_wl, cache=cache)
    before = {k: [t.clone() for t in v.values.values()] for k, (v, _) in cache.input_sets.items.items()}  # type: ignore[attr-defined]
    writer = kit.run(vadd, kit.solution("vadd_f32", _WRITES_ITS_INPUTS, name="w"), vadd_wl, cache=cache)
    assert kit.status(honest) == "PASSED" and kit.status(writer) == "PASSED"
    after = {k: list(v.values.values()) for k, (v, _) in cache.input_sets.items.items()}  # type: ignore[attr-defined]
    assert before.keys() == after.keys()
    for key, tensors in before.items():
        assert all(a.equal(b) for a, b in zip(tensors, after[key], strict=True)), key
    again = kit.run(vadd, kit.solution("vadd_f32", _HONEST + "# again\n", name="c"), vadd_wl, cache=cache)
    assert kit.status(again) == "PASSED"


def test_a_limit_of_zero_bytes_caches_nothing(kit: Kit, vadd: Definition, vadd_wl: Workload) -> None:
    cache = EngineCache(max_input_bytes=0)
    assert kit.status(kit.run(vadd, kit.solution("vadd_f32", _HONEST), vadd_wl, cache=cache)) == "PASSED"
    assert not cache.input_sets.items
