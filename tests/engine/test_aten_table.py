"""The table of written arguments the BackendBench importer ships is torch's own schemas."""

from __future__ import annotations

import json
from importlib import resources

from sweep.engine.aten._aten_ops import write_table

REGENERATE = "regenerate it: python -m sweep.engine.aten._aten_ops > sweep/backendbench/aten_writes.json"


def _shipped() -> dict[str, object]:
    text = resources.files("sweep.backendbench").joinpath("aten_writes.json").read_text()
    table: dict[str, object] = json.loads(text)
    return table


def test_the_shipped_table_is_the_installed_torchs_schemas() -> None:
    version, writes, names = write_table()
    table = _shipped()
    assert table["torch"] == version, f"the table is of torch {table['torch']}, not {version}: {REGENERATE}"
    assert table["writes"] == {n: [[a.name, a.index] for a in args] for n, args in writes.items()}, REGENERATE
    assert table["names"] == names, REGENERATE
