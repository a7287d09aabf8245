"""Paths to the dataset fixtures and the repository root."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "data" / "dataset"


@pytest.fixture
def fixtures() -> Path:
    """``tests/data/dataset``: small dataset roots, good and malformed, and configs."""
    return FIXTURES


@pytest.fixture
def repo_root() -> Path:
    """The repository root, itself a dataset root (shipped definitions, solutions, workloads)."""
    return REPO
