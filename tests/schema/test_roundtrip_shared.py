"""Every real FlashInfer-Bench file under tests/data/real reads and writes back to the same JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sweep.schema import Definition, Solution, Trace

_REPO = Path(__file__).resolve().parents[2]
# The suite's ``shared_data`` folder (checked below).
_ROOT = _REPO / "tests" / "data" / "real" / "flashinfer-trace"
_FILES = sorted(p.relative_to(_ROOT).as_posix() for p in _ROOT.rglob("*") if p.suffix in (".json", ".jsonl"))


def test_files_were_found(shared_data: Path) -> None:
    assert (shared_data / "flashinfer-trace").resolve() == _ROOT
    assert len(_FILES) >= 5
    assert {f.split("/")[0] for f in _FILES} == {"definitions", "workloads", "traces"}


@pytest.mark.parametrize("rel", _FILES)
def test_round_trip(rel: str) -> None:
    path = _ROOT / rel
    if path.suffix == ".json":
        original = json.loads(path.read_text())
        model = Solution if rel.startswith("solutions/") else Definition
        assert model.model_validate(original).to_json_obj() == original
        return
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    assert lines
    for i, line in enumerate(lines, start=1):
        original = json.loads(line)
        record = Trace.model_validate(original)
        assert record.to_json_obj() == original, f"{rel}:{i} changed on a round trip"
        assert Trace.model_validate_json(record.to_json()) == record
