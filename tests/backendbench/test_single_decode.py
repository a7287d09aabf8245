"""Import decodes each row once: the records it builds from the parser's rows, unchecked a
second time, are exactly those the full check of the records gives, byte for byte; rows made
by hand are checked in full; and the import command never loads torch."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest

from sweep.backendbench import (
    TensorArg,
    TraceRow,
    build_records,
    export_backendbench,
    import_backendbench,
    parse_trace_file,
)
from sweep.errors import TraceParseError
from sweep.schema import Trace
from sweep.schema.trace import workload_line


def test_records_from_parsed_rows_are_those_the_full_check_gives(bb_files: list[Path]) -> None:
    for path in bb_files:
        rows = parse_trace_file(path)
        assert all(r.checked for r in rows)
        fast = build_records(rows, source_file=path.name, include_synthetic=True)
        by_hand = [dataclasses.replace(r, checked=False) for r in rows]
        slow = build_records(by_hand, source_file=path.name, include_synthetic=True)
        assert [item.records for item in fast] == [item.records for item in slow]
        for item in fast:
            name = item.definition.name
            for record, w in zip(item.records, item.workloads, strict=True):
                line = workload_line(name, record)
                # The bytes written are the record's own serialization, and read back whole.
                assert (
                    line.decode()
                    == Trace(definition=name, workload=w, solution=None, evaluation=None).to_json()
                )
                assert Trace.model_validate_json(line).to_json().encode() == line


def test_a_row_made_by_hand_is_checked_in_full() -> None:
    row = TraceRow("aten.add.Tensor", 1, (TensorArg((2,), "float17"),), {}, 7)
    assert not row.checked
    with pytest.raises(TraceParseError, match=r"^t\.txt:7.*args\[0\]\.dtype: must be one of"):
        build_records([row], source_file="t.txt")


def test_rows_differing_only_in_dict_order_are_two_workloads(tmp_path: Path) -> None:
    text = (
        "Operator: aten.sum.dim_IntList\n"
        "cnt: 1, ((T([2, 3], f32), [1]), {'keepdim': True, 'dtype': f32})\n"
        "cnt: 2, ((T([2, 3], f32), [1]), {'dtype': f32, 'keepdim': True})\n"
    )
    trace = tmp_path / "order.trace.txt"
    trace.write_text(text)
    report = import_backendbench(trace, tmp_path / "ds")
    assert report.workloads_added == 2 and report.workloads_present == 0
    lines = (tmp_path / "ds/workloads/backendbench/sum__dim_IntList.jsonl").read_text().splitlines()
    assert len({json.loads(line)["workload"]["uuid"] for line in lines}) == 2
    export_backendbench(tmp_path / "ds", tmp_path / "back.txt")
    assert (tmp_path / "back.txt").read_text() == text


def test_the_import_command_never_loads_torch(edge_file: Path, tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from sweep.cli import app\n"
        "try:\n"
        "    app(['import-backendbench', sys.argv[1], '--out', sys.argv[2], '--include-synthetic'])\n"
        "except SystemExit as e:\n"
        "    assert not e.code, e.code\n"
        "print('HEAVY:' + ','.join(m for m in ('torch', 'ray', 'triton', 'duckdb') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(edge_file), str(tmp_path / "ds")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "read 50 rows; wrote" in out.stdout
    assert out.stdout.splitlines()[-1] == "HEAVY:"
