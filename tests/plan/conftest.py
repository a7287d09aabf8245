"""Paths to the dataset fixtures and the repository root."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.plan.dataset import Dataset, load_dataset

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


@pytest.fixture(scope="module")
def dataset() -> Dataset:
    """The good dataset root together with a second root (``other_root``), loaded once a module."""
    return load_dataset([FIXTURES / "good", FIXTURES / "other_root"])
