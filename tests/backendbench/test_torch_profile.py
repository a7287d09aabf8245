"""A torch.profiler chrome trace of a tiny model (tests/data/torch_profile, made by its
make_sample.py on the CPU) imported as BackendBench workloads weighted by call counts."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from sweep.backendbench import import_torch_profile, parse_torch_profile
from sweep.cli import app
from sweep.plan.dataset import validate_roots
from sweep.schema import Workload

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "torch_profile" / "tiny_mlp.trace.json"


def test_outermost_calls_counted_by_shape() -> None:
    s = parse_torch_profile(SAMPLE.read_text(), filename=SAMPLE.name)
    got = sorted((c.packet, c.count) for c in s.calls)
    # Two forward passes: two Linear layers (two shapes), ReLU, LayerNorm, softmax, twice each;
    # addmm, t, clamp_min... inside them are not calls of the model.
    assert got == [("layer_norm", 2), ("linear", 2), ("linear", 2), ("relu", 2), ("softmax", 2)]
    assert s.nested > 0 and s.aten_events == s.nested + 10


def test_import_writes_weighted_workloads_that_validate(tmp_path: Path) -> None:
    rep = import_torch_profile(SAMPLE, tmp_path / "data")
    assert sorted(rep.operators) == [
        "aten.layer_norm.default",
        "aten.linear.default",
        "aten.relu.default",
        "aten.softmax.int",
    ]
    lines = (
        (tmp_path / "data" / "workloads" / "backendbench" / "linear__default.jsonl").read_text().splitlines()
    )
    wls = [Workload.model_validate(json.loads(line)["workload"]) for line in lines]
    assert [w.weight for w in wls] == [2, 2]
    raw = [json.loads(line)["workload"]["inputs"]["call"]["args"][1] for line in lines]
    shapes = sorted(tuple(a["shape"]) for a in raw)
    assert shapes == [(8, 32), (32, 16)]  # the two weight matrices
    _, problems = validate_roots([tmp_path / "data"])
    assert not problems, problems
    again = import_torch_profile(SAMPLE, tmp_path / "data")
    assert again.workloads_added == 0 and again.workloads_present == 5  # idempotent


def test_cli_import_torch_profile(tmp_path: Path) -> None:
    res = CliRunner().invoke(app, ["import-torch-profile", str(SAMPLE), "--out", str(tmp_path / "d")])
    assert res.exit_code == 0, res.output
    assert "wrote 4 definitions and 5 new workloads" in res.output
