"""``evaluation.cuda_max_connections``: a strict whole number from 1 to 32; out of the settings
hash and the config hash while unset (results and configs from before it keep theirs), in both
when set (it can change what a measurement means, so its tasks are tasks of their own)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweep.config import SweepConfig, load_config
from sweep.errors import ConfigError
from sweep.schema import EvalSettings

# The hashes of the default settings and config before cuda_max_connections existed (main at 640fecd).
DEFAULT_SETTINGS_HASH = "a1da28066e644312"
DEFAULT_CONFIG_HASH = "ed9712c360d0289b"


def _load(tmp_path: Path, value: str) -> SweepConfig:
    p = tmp_path / "sweep.yaml"
    p.write_text(f"name: x\ndataset: [.]\nevaluation:\n  cuda_max_connections: {value}\n", encoding="utf-8")
    return load_config(p)


def test_unset_leaves_both_hashes_as_they_were() -> None:
    assert EvalSettings().settings_hash() == DEFAULT_SETTINGS_HASH
    assert EvalSettings(cuda_max_connections=None).settings_hash() == DEFAULT_SETTINGS_HASH
    assert SweepConfig(name="x", dataset=["."]).config_hash() == DEFAULT_CONFIG_HASH
    assert EvalSettings().process_env() == ()


def test_a_value_changes_both_hashes_and_the_process_env() -> None:
    settings = {n: EvalSettings(cuda_max_connections=n) for n in (1, 4, 8)}
    assert len({s.settings_hash() for s in settings.values()} | {DEFAULT_SETTINGS_HASH}) == 4
    configs = {SweepConfig(name="x", dataset=["."], evaluation=s).config_hash() for s in settings.values()}
    assert len(configs | {DEFAULT_CONFIG_HASH}) == 4
    assert settings[1].process_env() == (("CUDA_DEVICE_MAX_CONNECTIONS", "1"),)


def test_a_value_reads_from_yaml(tmp_path: Path) -> None:
    assert _load(tmp_path, "1").evaluation.cuda_max_connections == 1
    assert _load(tmp_path, "null").evaluation.cuda_max_connections is None


@pytest.mark.parametrize("value", ['"1"', "true", "1.0", "0", "33", "-1", "[1]", "auto"])
def test_anything_but_a_whole_number_from_1_to_32_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, value)
    assert "cuda_max_connections" in str(info.value) and "sweep.yaml" in str(info.value)


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_the_bounds_hold_for_every_integer(n: int) -> None:
    if 1 <= n <= 32:
        assert EvalSettings(cuda_max_connections=n).cuda_max_connections == n
    else:
        with pytest.raises(ValueError, match="cuda_max_connections"):
            EvalSettings(cuda_max_connections=n)
