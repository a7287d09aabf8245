"""Fixtures of the CLI tests."""

from __future__ import annotations

from pathlib import Path

import pytest

#: The small valid dataset root.
GOOD = (Path(__file__).resolve().parents[1] / "data" / "dataset" / "good").resolve()


@pytest.fixture
def config(tmp_path: Path) -> Path:
    """A good config over the good fixture root, with its results folder in ``tmp_path``."""
    p = tmp_path / "sweep.yaml"
    p.write_text(
        f"name: fixture\ndataset: [{GOOD}]\nhardware: cpu\noutput: {{results_dir: {tmp_path / 'out'}}}\n"
    )
    return p
