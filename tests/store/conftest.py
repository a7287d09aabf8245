"""Fixtures of the store tests: hand-made records whose right answers are known, and a store
fixture run twice, in memory and on disk (the contract suite)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from sweep.schema import Definition, Solution, Trace
from sweep.store import RowBatch, Store, StoreContext

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "store"

#: The select list of the cross-hardware view, unchanged since schema 5 (the references of the
#: view's tests are older views, verbatim but for their names, around it).
CROSS_HARDWARE_SELECT = """SELECT a.definition, a.op_type, a.solution, coalesce(a.solution_hash, b.solution_hash) AS solution_hash,
       a.workload_uuid, a.axes,
       a.hardware AS hardware_a, b.hardware AS hardware_b,
       a.status AS status_a, b.status AS status_b,
       a.latency_ms AS latency_ms_a, b.latency_ms AS latency_ms_b,
       b.latency_ms / nullif(a.latency_ms, 0) AS latency_ratio,
       a.speedup_factor AS speedup_a, b.speedup_factor AS speedup_b,
       b.speedup_factor / nullif(a.speedup_factor, 0) AS speedup_ratio,
       a.settings_hash AS settings_hash_a, b.settings_hash AS settings_hash_b,
       a.trace_key AS trace_key_a, b.trace_key AS trace_key_b
FROM per_hw a"""


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


def store_with(tmp_path: Path, context: StoreContext, traces: list[Trace]) -> Path:
    """``tmp_path/sweep.duckdb`` holding ``context``'s records and ``traces`` (their columns
    filled from the context)."""
    b = RowBatch()
    b.add_context(context)
    for t in traces:
        b.add_trace(t, context=context)
    path = tmp_path / "sweep.duckdb"
    Store(path).add(b)
    return path


def export_of(folder: Path, traces: list[tuple[Trace, str]]) -> Path:
    """``folder/exp``: the Parquet export of a store holding ``vec_add``, its solution ``s1``
    and ``traces`` (each with the source it was read from)."""
    from sweep.store import export_parquet

    ctx = StoreContext.of([make_definition()], [make_solution("s1")])
    b = RowBatch()
    b.add_context(ctx)
    for t, source in traces:
        b.add_trace(t, context=ctx, source=source)
    Store(folder / "src.duckdb").add(b)
    export_parquet(folder / "src.duckdb", folder / "exp")
    return folder / "exp"


def tuned_point(params: dict[str, object], latency: float, uuid: str = "wl-1", batch: int = 16) -> Trace:
    """A trace of the tuned solution (:func:`tuned_solution`) at the parameter point ``params``."""
    t = make_trace("tuned", uuid, latency=latency, batch=batch)
    return Trace.model_validate({**t.to_json_obj(), "solution_params": params})


def tuned_solution() -> Solution:
    """``tuned``, a solution of ``vec_add`` with one parameter ``B`` (64 or 32)."""
    return Solution.model_validate({**make_solution("tuned").to_json_obj(), "params": {"B": [64, 32]}})


def old_store(tmp_path: Path, version: int) -> Path:
    """A copy of the store file of schema ``version`` kept under ``tests/data/store``
    (``v1.duckdb``, ``v2.duckdb``), checked to be of that version."""
    import duckdb

    path = tmp_path / "old.duckdb"
    shutil.copy(DATA / f"v{version}.duckdb", path)
    con = duckdb.connect(str(path), read_only=True)
    try:
        got = con.execute("SELECT value FROM store_meta WHERE key = 'schema_version'").fetchall()
    finally:
        con.close()
    assert got == [(str(version),)], f"{path.name} holds schema {got}, not {version}"
    return path


def counts(db: Path, *tables: str) -> tuple[int, ...]:
    """Rows of each of ``tables`` (default: traces, definitions, solutions, workloads; any FROM
    clause) in the store file ``db``, read-only; all 0 when there is no file yet."""
    import duckdb

    tables = tables or ("traces", "definitions", "solutions", "workloads")
    if not db.exists():
        return (0,) * len(tables)
    con = duckdb.connect(str(db), read_only=True)
    try:
        row = con.execute("SELECT " + ", ".join(f"(SELECT count(*) FROM {t})" for t in tables)).fetchone()
        assert row is not None
        return tuple(int(v) for v in row)
    finally:
        con.close()


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


@pytest.fixture
def v1_store(tmp_path: Path) -> Path:
    """A store file of schema version 1 (:func:`old_store`)."""
    return old_store(tmp_path, 1)


@pytest.fixture
def v2_store(tmp_path: Path) -> Path:
    """A store file of schema version 2 (:func:`old_store`)."""
    return old_store(tmp_path, 2)
