"""A solution packed by ``sweep new solution`` (its library function) evaluates on the CPU,
in both calling styles, the style inferred from the signature."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.plan.new_records import pack_solution


@pytest.mark.parametrize(
    ("text", "dps"),
    [
        ("import torch\n\ndef run(x, y):\n    return x + y\n", False),
        ("import torch\n\ndef run(x, y, z):\n    torch.add(x, y, out=z)\n", True),
    ],
)
def test_packed_solution_passes(kit, vadd, vadd_wl, tmp_path: Path, text: str, dps: bool) -> None:
    src = tmp_path / "my_add.py"
    src.write_text(text)
    packed = pack_solution([kit.data], "vadd_f32", [src], author="tests")
    assert packed.solution.spec.destination_passing_style is dps
    assert packed.path == kit.data / "solutions/tests/vadd/vadd_f32/my_add.json"
    assert kit.status(kit.run(vadd, packed.solution, vadd_wl)) == "PASSED"
