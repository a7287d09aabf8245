"""The importer's written-argument tags (from the shipped table, no torch import) agree with
the schemas of the installed torch for every operator of the real sample trace."""

from __future__ import annotations

from pathlib import Path

from sweep.backendbench import parse_trace
from sweep.backendbench._ops import mutation_tags
from sweep.engine import schema_mutations


def test_the_importers_tags_are_the_schemas_for_every_operator_of_the_sample(shared_data: Path) -> None:
    rows = parse_trace((shared_data / "backendbench" / "sample.trace.txt").read_text())
    ops = {row.op for row in rows}
    assert len(ops) >= 80
    for name in sorted(ops):
        tags, warning = mutation_tags(name)
        try:
            expected = [m.tag for m in schema_mutations(name)]
        except Exception:  # noqa: BLE001 - torch lacks it: the importer warns instead
            assert warning is not None and "does not exist in torch" in warning, name
            continue
        assert warning is None and tags == expected, name
