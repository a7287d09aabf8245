"""``ray.cuda_max_connections``: a strict whole number from 1 to 32, out of the config hash
while unset (configs written before it keep theirs), in it when set (it can change results)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sweep.config import SweepConfig, load_config
from sweep.config.models import RaySettings
from sweep.errors import ConfigError

# The hash of the default config before ray.cuda_max_connections existed (as in test_hostile_energy_setting).
DEFAULT_CONFIG_HASH = "ed9712c360d0289b"


def _load(tmp_path: Path, value: str) -> SweepConfig:
    p = tmp_path / "sweep.yaml"
    p.write_text(f"name: x\ndataset: [.]\nray:\n  cuda_max_connections: {value}\n", encoding="utf-8")
    return load_config(p)


def test_unset_leaves_the_hash_as_it_was_and_a_value_changes_it() -> None:
    assert SweepConfig(name="x", dataset=["."]).config_hash() == DEFAULT_CONFIG_HASH
    hashes = {
        SweepConfig(name="x", dataset=["."], ray=RaySettings(cuda_max_connections=n)).config_hash()
        for n in (1, 4, 8)
    }
    assert len(hashes) == 3 and DEFAULT_CONFIG_HASH not in hashes


def test_a_value_reads_from_yaml(tmp_path: Path) -> None:
    assert _load(tmp_path, "1").ray.cuda_max_connections == 1
    assert _load(tmp_path, "null").ray.cuda_max_connections is None


@pytest.mark.parametrize("value", ['"1"', "true", "1.0", "0", "33", "-1", "[1]", "auto"])
def test_anything_but_a_whole_number_from_1_to_32_is_refused(tmp_path: Path, value: str) -> None:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, value)
    assert "cuda_max_connections" in str(info.value) and "sweep.yaml" in str(info.value)


@given(st.integers(min_value=-(2**70), max_value=2**70))
def test_the_bounds_hold_for_every_integer(n: int) -> None:
    if 1 <= n <= 32:
        assert RaySettings(cuda_max_connections=n).cuda_max_connections == n
    else:
        with pytest.raises(ValueError, match="cuda_max_connections"):
            RaySettings(cuda_max_connections=n)
