"""``sweep export-tuning``: the best point per shape as a JSON table that sweep.tuning reads."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sweep.cli import app
from sweep.errors import StoreError
from sweep.store import Store, tuning_table
from sweep.tuning import lookup

from .conftest import batch_of, make_definition, make_trace, tuned_point, tuned_solution


@pytest.fixture
def tuned_store(tmp_path: Path) -> Path:
    path = tmp_path / "results" / "sweep.duckdb"
    st = Store(path)
    st.add(
        batch_of(
            tuned_point({"B": 64}, 1.0),
            tuned_point({"B": 32}, 0.5),
            tuned_point({"B": 64}, 0.4, "wl-2", 4096),
            tuned_point({"B": 32}, 0.9, "wl-2", 4096),
            definitions=(make_definition(),),
            solutions=(tuned_solution(),),
        )
    )
    st.close()
    return path


def test_table_and_lookup(tuned_store: Path) -> None:
    table = tuning_table(tuned_store)
    entries = table["tables"]["vec_add"]["tuned"]["NVIDIA_H100"]
    assert [(e["axes"], e["params"], e["speedup_over_default"]) for e in entries] == [
        ({"batch": 16}, {"B": 32}, 2.0),
        ({"batch": 4096}, {"B": 64}, 1.0),
    ]
    assert lookup(table, "vec_add", "tuned", "NVIDIA_H100", {"batch": 16}) == {"B": 32}
    assert lookup(table, "vec_add", "tuned", "NVIDIA_H100", {"batch": 2000}) == {"B": 64}  # nearest
    assert lookup(table, "vec_add", "tuned", "NVIDIA_H100", {"batch": 40}) == {"B": 32}
    assert lookup(table, "vec_add", "tuned", "NVIDIA_B200", {"batch": 16}) == {}


def test_cli_writes_the_table(tuned_store: Path, tmp_path: Path) -> None:
    out = tmp_path / "tuning.json"
    res = CliRunner().invoke(app, ["export-tuning", "--store", str(tuned_store), "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "wrote" in res.output and "2 shapes of 1 definitions" in res.output
    assert lookup(out, "vec_add", "tuned", "NVIDIA_H100", {"batch": 16}) == {"B": 32}
    assert json.loads(out.read_text())["format"] == "kernel-sweep-tuning"


def test_no_points_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "s.duckdb"
    st = Store(path)
    st.add(batch_of(make_trace()))
    st.close()
    with pytest.raises(StoreError, match="no PASSED trace of a parameter point"):
        tuning_table(path)
    res = CliRunner().invoke(app, ["export-tuning", "--store", str(path), "--out", str(tmp_path / "t.json")])
    assert res.exit_code == 1 and "error:" in res.output and "no PASSED trace" in res.output
    assert not (tmp_path / "t.json").exists()
