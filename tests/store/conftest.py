"""Fixtures of the store tests: hand-made records whose right answers are known, and a store
fixture run twice, in memory and on disk (the contract suite)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sweep.schema import Definition, Solution, Trace
from sweep.store import RowBatch, Store

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "store"


def make_definition(
    name: str = "vec_add", op_type: str = "elementwise", tags: tuple[str, ...] = ("demo",)
) -> Definition:
    return Definition.model_validate(
        {
            "name": name,
            "op_type": op_type,
            "tags": list(tags),
            "axes": {"batch": {"type": "var"}, "n": {"type": "const", "value": 256}},
            "inputs": {"x": {"shape": ["batch", "n"], "dtype": "float32"}},
            "outputs": {"out": {"shape": ["batch", "n"], "dtype": "float32"}},
            "reference": "def run(x):\n    return x * 2\n",
        }
    )


def make_solution(
    name: str,
    definition: str = "vec_add",
    author: str = "alice",
    language: str = "triton",
    body: str = "out.copy_(x * 2)",
) -> Solution:
    return Solution.model_validate(
        {
            "name": name,
            "definition": definition,
            "author": author,
            "spec": {"language": language, "target_hardware": ["gpu"], "entry_point": "main.py::run"},
            "sources": [{"path": "main.py", "content": f"def run(x, out):\n    {body}\n"}],
        }
    )


def make_trace(
    solution: str | None = "s1",
    uuid: str = "wl-1",
    hardware: str = "NVIDIA_H100",
    *,
    definition: str = "vec_add",
    status: str = "PASSED",
    latency: float = 1.0,
    reference: float = 2.0,
    ts: str = "2026-01-01T00:00:00+00:00",
    batch: int = 1,
    evaluated: bool = True,
    provenance: dict[str, object] | None = None,
    extra_eval: dict[str, object] | None = None,
    log: str = "",
) -> Trace:
    """A trace; ``status`` decides which of correctness and performance it carries."""
    obj: dict[str, object] = {
        "definition": definition,
        "workload": {"uuid": uuid, "axes": {"batch": batch}, "inputs": {"x": {"type": "random"}}},
        "solution": solution if evaluated else None,
        "evaluation": None,
    }
    if evaluated:
        ev: dict[str, object] = {
            "status": status,
            "environment": {"hardware": hardware, "libs": {"torch": "2.9.0"}},
            "timestamp": ts,
            "log": log,
        }
        if status in ("PASSED", "INCORRECT_NUMERICAL"):
            ev["correctness"] = {"max_relative_error": 1e-3, "max_absolute_error": 2e-3}
        if status == "PASSED":
            ev["performance"] = {
                "latency_ms": latency,
                "reference_latency_ms": reference,
                "speedup_factor": reference / latency,
            }
        ev.update(extra_eval or {})
        obj["evaluation"] = ev
    if provenance is not None:
        obj["provenance"] = provenance
    return Trace.model_validate(obj)


def batch_of(
    *traces: Trace, definitions: tuple[Definition, ...] = (), solutions: tuple[Solution, ...] = ()
) -> RowBatch:
    b = RowBatch()
    for d in definitions:
        b.add_definition(d)
    for s in solutions:
        b.add_solution(s)
    for t in traces:
        b.add_trace(t, source="test")
    return b


def rows(store: Store, sql: str) -> list[tuple[object, ...]]:
    with store.session() as s:
        s.require(sql)
        return [tuple(r) for r in s.con.execute(sql).fetchall()]


@pytest.fixture(params=["memory", "disk"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The same contract, on an in-memory store and on a store file."""
    st = Store.memory() if request.param == "memory" else Store(tmp_path / "results" / "sweep.duckdb")
    try:
        yield st
    finally:
        st.close()
