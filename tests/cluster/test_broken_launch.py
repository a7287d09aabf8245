"""``sweep launch`` of a dataset with broken solutions, on the two-node Ray cluster with the real
engine (on the 2-GPU node): every good task runs, each broken solution's tasks are COMPILE_ERROR traces carrying
its problem, the problems are warned about once, and a second launch stores nothing twice."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from sweep.cli import app

from .conftest import read_traces, write_config, write_dataset

runner = CliRunner()


def test_a_launch_runs_the_good_and_records_the_broken_as_compile_errors(
    two_nodes: dict[str, str], tmp_path: Path
) -> None:
    good = {f"good_{i}": "def run(x):\n    return x + 1\n" for i in range(3)}
    data = write_dataset(
        tmp_path / "data", {**good, "syntax": "def run(x):\n    return x +\n"}, n_workloads=2
    )
    folder = data / "solutions" / "tests" / "toy" / "toy_add"
    # A file that is no record but names its definition, and one that is no JSON at all.
    (folder / "no_spec.json").write_text(
        json.dumps({"name": "no_spec", "definition": "toy_add", "author": "a"})
    )
    (folder / "zzz.json").write_text("{")
    results = tmp_path / "results"
    # H200: the node with 2 GPUs, so 2 workers start, not 4 (the GPU type is not the subject).
    cfg = write_config(tmp_path / "c.yaml", [data], results, hardware="H200")

    out = runner.invoke(app, ["launch", str(cfg), "--quiet"])
    assert out.exit_code == 0, out.output
    assert (
        "sweep 'c' on H200: 10 planned, 0 already stored (skipped), 10 ran (COMPILE_ERROR 4, PASSED 6)"
        in (out.stdout)
    )
    syntax_file, spec_file, zzz_file = (folder / f"{n}.json" for n in ("syntax", "no_spec", "zzz"))
    warnings = [x for x in out.stdout.splitlines() if x.startswith("warning: ")]
    assert warnings == [
        f"warning: {spec_file}: spec: required field is missing",
        f"warning: {spec_file}: sources: required field is missing",
        f"warning: {zzz_file}:1: not valid JSON: Expecting property name enclosed in double quotes (column 2)",
        f"warning: {syntax_file}: sources: main.py: not valid Python: invalid syntax (line 2)",
    ]
    assert "1 solution: its file is not a valid record and names no definition" in out.stdout

    traces = read_traces(results)
    assert len(traces) == 10
    for t in traces:
        ev = t["evaluation"]
        assert isinstance(ev, dict)
        name = t["solution"]
        if name in good:
            assert ev["status"] == "PASSED", (name, ev["log"])
        else:
            assert ev["status"] == "COMPILE_ERROR", (name, ev["log"])
            problem = {"syntax": syntax_file, "no_spec": spec_file}[str(name)]
            assert str(ev["log"]).startswith(f"COMPILE_ERROR: {problem}: "), ev["log"]
            assert "nothing of the solution was built or run" in str(ev["log"])

    again = runner.invoke(app, ["launch", str(cfg), "--quiet"])
    assert again.exit_code == 0, again.output
    assert "10 planned, 10 already stored (skipped), 0 ran" in again.stdout
    assert len(read_traces(results)) == 10
