"""``evaluation.energy``: a strict boolean, left out of both hashes at its default."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep.config import SweepConfig, load_config
from sweep.errors import ConfigError
from sweep.schema import EvalSettings

pytestmark = pytest.mark.hostile

# The hashes of the default settings and config before evaluation.energy existed (main at d85ee6d).
DEFAULT_SETTINGS_HASH = "a1da28066e644312"
DEFAULT_CONFIG_HASH = "ed9712c360d0289b"


def test_the_default_leaves_both_hashes_as_they_were() -> None:
    assert EvalSettings().settings_hash() == DEFAULT_SETTINGS_HASH
    assert EvalSettings(energy=False).settings_hash() == DEFAULT_SETTINGS_HASH
    assert SweepConfig(name="x", dataset=["."]).config_hash() == DEFAULT_CONFIG_HASH
    # cpu_threads was in every config hash since it existed: it stays there.
    assert SweepConfig(name="x", dataset=["."], evaluation=EvalSettings(cpu_threads=2)).config_hash() != (
        DEFAULT_CONFIG_HASH
    )


def test_energy_on_changes_both_hashes() -> None:
    on = EvalSettings(energy=True)
    assert on.settings_hash() != DEFAULT_SETTINGS_HASH
    assert SweepConfig(name="x", dataset=["."], evaluation=on).config_hash() != DEFAULT_CONFIG_HASH


@pytest.mark.parametrize("value", ["1", "0.5", '"true"', "on_gpu", "[true]"])
def test_energy_must_be_a_boolean(tmp_path: Path, value: str) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text(f"name: x\ndataset: [.]\nevaluation:\n  energy: {value}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(p)
    assert "energy" in str(info.value) and str(p) in str(info.value)


def test_a_typo_of_energy_gets_a_did_you_mean(tmp_path: Path) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text("name: x\ndataset: [.]\nevaluation:\n  enrgy: true\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(p)
    assert "energy" in str(info.value)


def test_energy_true_reads(tmp_path: Path) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text("name: x\ndataset: [.]\nevaluation:\n  energy: true\n", encoding="utf-8")
    assert load_config(p).evaluation.energy is True
