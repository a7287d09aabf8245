"""The shipped example kernels exist twice: in the solution records' ``sources`` and as plain
files under examples/kernels/<solution>/; this keeps both equal, file for file."""

from __future__ import annotations

from pathlib import Path

from sweep.schema import Solution

REPO = Path(__file__).resolve().parent.parent.parent
KERNELS = REPO / "examples" / "kernels"


def _records() -> list[Solution]:
    return [Solution.model_validate_json(p.read_text()) for p in sorted((REPO / "solutions").rglob("*.json"))]


def test_every_record_source_is_a_plain_file_with_the_same_text() -> None:
    records = _records()
    assert records
    for sol in records:
        for src in sol.sources:
            plain = KERNELS / sol.name / src.path
            assert plain.is_file(), f"{plain.relative_to(REPO)} missing: write the record's source there"
            assert plain.read_text() == src.content, (
                f"{plain.relative_to(REPO)} differs from {sol.name}'s record: pack it again "
                "(sweep new solution ... --force) or copy the record's source"
            )


def test_no_plain_file_without_a_record() -> None:
    expected = {(s.name, src.path) for s in _records() for src in s.sources}
    found = {
        (p.relative_to(KERNELS).parts[0], "/".join(p.relative_to(KERNELS).parts[1:]))
        for p in KERNELS.rglob("*")
        if p.is_file() and p.parent != KERNELS
    }
    assert found == expected
