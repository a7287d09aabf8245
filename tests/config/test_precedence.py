"""Precedence, in one place: flags > environment (RAY_ADDRESS) > YAML > model defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from sweep._cli.options import make_overrides
from sweep.config import (
    DEFAULT_RESULTS_DIR,
    DEFAULT_STORE_PATH,
    STORE_FILE_NAME,
    ConfigOverrides,
    EvalSettings,
    OutputSettings,
    SweepConfig,
    apply_overrides,
    apply_settings_overrides,
    default_store_path,
    load_config,
    resolve_address,
)
from sweep.errors import ConfigError


def _write(tmp_path: Path, address: str | None) -> Path:
    p = tmp_path / "sweep.yaml"
    ray = "" if address is None else f"ray: {{address: {address!r}}}\n"
    p.write_text(f"name: x\ndataset: .\n{ray}")
    return p


@pytest.fixture
def no_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    return monkeypatch


def test_address_flag_beats_env_beats_yaml(tmp_path: Path, no_env: pytest.MonkeyPatch) -> None:
    cfg = load_config(_write(tmp_path, "yaml:1"))
    assert resolve_address(None, cfg) == "yaml:1"
    no_env.setenv("RAY_ADDRESS", "env:2")
    assert resolve_address(None, cfg) == "env:2"
    assert resolve_address(ConfigOverrides(address="flag:3").address, cfg) == "flag:3"
    no_env.delenv("RAY_ADDRESS")
    assert resolve_address(make_overrides(address="flag:3").address, cfg) == "flag:3"


def test_empty_env_and_yaml_address_mean_embedded_ray(tmp_path: Path, no_env: pytest.MonkeyPatch) -> None:
    assert resolve_address(None, load_config(_write(tmp_path, None))) is None  # the model default
    no_env.setenv("RAY_ADDRESS", "")  # set but empty: ignored
    assert resolve_address(None, load_config(_write(tmp_path, "yaml:1"))) == "yaml:1"
    assert resolve_address(None, load_config(_write(tmp_path, ""))) is None
    no_env.setenv("RAY_ADDRESS", "env:2")
    assert resolve_address(None, load_config(_write(tmp_path, ""))) == "env:2"


def test_the_environment_never_changes_the_config(tmp_path: Path, no_env: pytest.MonkeyPatch) -> None:
    """RAY_ADDRESS is read when connecting: a loaded config and its hash do not depend on it
    (``ray job submit`` sets it); a flag is part of the config, like every flag."""
    path = _write(tmp_path, "yaml:1")
    base = load_config(path)
    no_env.setenv("RAY_ADDRESS", "env:2")
    assert load_config(path) == base and load_config(path).config_hash() == base.config_hash()
    flagged = load_config(path, make_overrides(address="flag:3"))
    assert flagged.ray.address == "flag:3" and resolve_address("flag:3", flagged) == "flag:3"
    assert load_config(_write(tmp_path, "other:1")).config_hash() != base.config_hash()


def test_trials_and_seed_flags_override_evaluation(tmp_path: Path, no_env: pytest.MonkeyPatch) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text("name: x\ndataset: .\nevaluation: {seed: 1, trials: 5, rep_ms: 7}\n")
    assert (load_config(p).evaluation.seed, load_config(p).evaluation.trials) == (1, 5)
    cfg = load_config(p, ConfigOverrides(trials=2))
    assert (cfg.evaluation.seed, cfg.evaluation.trials, cfg.evaluation.rep_ms) == (1, 2, 7)
    cfg = load_config(p, ConfigOverrides(seed=9, trials=4))
    assert (cfg.evaluation.seed, cfg.evaluation.trials, cfg.evaluation.rep_ms) == (9, 4, 7)


def test_eval_settings_take_the_same_flags_over_the_defaults() -> None:
    assert apply_settings_overrides(EvalSettings(), None) == EvalSettings()
    assert apply_settings_overrides(EvalSettings(), ConfigOverrides()) == EvalSettings()
    got = apply_settings_overrides(EvalSettings(), make_overrides(seed=7, trials=2))
    assert got == EvalSettings(seed=7, trials=2)
    assert got.settings_hash() == EvalSettings(seed=7, trials=2).settings_hash()
    assert apply_settings_overrides(EvalSettings(), make_overrides(trials=1)) == EvalSettings(trials=1)
    # the same rule as a config's evaluation section
    cfg = SweepConfig(name="x", dataset=["."], evaluation=EvalSettings(rep_ms=7, seed=3))
    flags = ConfigOverrides(trials=6)
    assert apply_overrides(cfg, flags).evaluation == apply_settings_overrides(cfg.evaluation, flags)


def test_trials_flag_is_validated() -> None:
    with pytest.raises(ConfigError, match="--trials: Input should be greater than or equal to 1"):
        make_overrides(trials=0)


def test_store_default_has_one_home() -> None:
    assert (DEFAULT_RESULTS_DIR, STORE_FILE_NAME) == ("results", "sweep.duckdb")
    assert DEFAULT_STORE_PATH == Path("results") / "sweep.duckdb" == default_store_path()
    assert OutputSettings().store_path() == str(DEFAULT_STORE_PATH)
    assert OutputSettings(results_dir="/r").store_path() == str(default_store_path("/r"))


def test_keep_workers_flag_beats_yaml_and_neither_changes_the_hash(tmp_path: Path) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text("name: x\ndataset: .\nray: {keep_workers: false, idle_timeout_s: 30}\n")
    cfg = load_config(p)
    assert (cfg.ray.keep_workers, cfg.ray.idle_timeout_s) == (False, 30.0)
    assert load_config(p, make_overrides(keep_workers=True)).ray.keep_workers is True
    assert load_config(p, make_overrides()).ray.keep_workers is False  # no flag: the YAML's
    # whether workers outlive the launch changes no result: the hash is the default config's
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: x\ndataset: .\n")  # the same config but for its ray section
    assert cfg.config_hash() == load_config(plain).config_hash()
    assert SweepConfig(name="x", dataset=["."]).ray.keep_workers is True


@pytest.mark.parametrize("bad", ["0", "-5", "nope", "1e9", "[1]"])
def test_a_bad_idle_timeout_is_refused_with_its_place(tmp_path: Path, bad: str) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text(f"name: x\ndataset: .\nray:\n  idle_timeout_s: {bad}\n")
    with pytest.raises(ConfigError, match=r"sweep\.yaml:4.*idle_timeout_s"):
        load_config(p)
