"""Reading sweep configs: file:line errors, did-you-mean, path resolution, overrides."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sweep.config import ConfigOverrides, SweepConfig, apply_overrides
from sweep.errors import ConfigError
from sweep.plan import load_config

REPO = Path(__file__).resolve().parents[2]
CONFIGS = REPO / "tests" / "data" / "dataset" / "configs"


def _error(path: str | Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


def _write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "sweep.yaml"
    p.write_text(text)
    return p


def test_good_config_resolves_paths_against_its_folder() -> None:
    cfg = load_config(CONFIGS / "good.yaml")
    assert cfg.name == "fixture"
    assert cfg.dataset == [str(CONFIGS.parent / "good"), str(CONFIGS.parent / "other_root")]
    assert cfg.output.results_dir == str(CONFIGS / "out")
    assert cfg.output.store_path() == str(CONFIGS / "out" / "sweep.duckdb")
    assert cfg.hardware == "cpu"


def test_relative_path_of_the_config_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(CONFIGS.parent)
    cfg = load_config("configs/good.yaml")
    assert cfg.dataset[0] == str(CONFIGS.parent / "good")


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        pytest.param(
            "unknown_key.yaml",
            "{p}:6: unknown key 'tolerence' in evaluation (did you mean 'tolerance'?)",
            id="unknown-nested-key-has-line-and-suggestion",
        ),
        pytest.param(
            "top_unknown_key.yaml",
            "2 problems in config {p}:\n"
            "  {p}:1: dataset: required key is missing\n"
            "  {p}:2: unknown key 'datasets' (did you mean 'dataset'?)",
            id="unknown-top-level-key",
        ),
        pytest.param(
            "bad_yaml.yaml",
            "{p}:3: YAML syntax error: expected ',' or ']', but got ':'",
            id="yaml-syntax-error",
        ),
        pytest.param(
            "bad_value.yaml",
            "2 problems in config {p}:\n"
            "  {p}:4: evaluation.trials: Input should be greater than or equal to 1 (got 0)\n"
            # Strict: a string is never read as a number, so pydantic does not try to parse it.
            "  {p}:6: workloads.limit_per_definition: Input should be a valid integer (got 'many')",
            id="bad-values-have-lines-and-paths",
        ),
    ],
)
def test_a_bad_config_file_is_named_with_its_line(name: str, expected: str) -> None:
    path = CONFIGS / name
    assert _error(path) == expected.format(p=path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            "name: x\ndataset: .\noutput:\n  zzz: 1\n",
            "{p}:4: unknown key 'zzz' in output; allowed: results_dir, store",
            id="unknown-key-with-nothing-close-lists-allowed-keys",
        ),
        pytest.param(
            "name: x\ndataset: .\nevaluation:\n  op_type_tolerance:\n    gemm:\n      atoll: 0.1\n",
            "{p}:6: unknown key 'atoll' in evaluation.op_type_tolerance.gemm (did you mean 'atol'?)",
            id="unknown-key-inside-a-dict-of-models",
        ),
        pytest.param("name: x\ndataset: .\nname: y\n", "{p}:3: duplicate key 'name'", id="duplicate-key"),
    ],
)
def test_a_bad_config_text_is_named_with_its_line(tmp_path: Path, text: str, expected: str) -> None:
    p = _write(tmp_path, text)
    assert _error(p) == expected.format(p=p)


def test_language_must_be_known(tmp_path: Path) -> None:
    p = _write(tmp_path, "name: x\ndataset: .\nsolutions:\n  languages: [rust]\n")
    text = _error(p)
    assert text.startswith(f"{p}:4: solutions.languages[0]: Input should be 'python', 'triton'")
    assert text.endswith("(got 'rust')")


def test_empty_and_non_mapping_files(tmp_path: Path) -> None:
    p = _write(tmp_path, "# nothing\n")
    assert _error(p) == f"{p}: the config is empty; it needs at least 'name' and 'dataset'"
    p = _write(tmp_path, "- a\n- b\n")
    assert _error(p) == f"{p}:1: the config must be a mapping of keys to values"


def test_missing_file(tmp_path: Path) -> None:
    assert _error(tmp_path / "nope.yaml") == f"config file not found: {tmp_path / 'nope.yaml'}"


def test_absolute_paths_are_kept(tmp_path: Path) -> None:
    p = _write(tmp_path, f"name: x\ndataset: [{REPO}]\noutput:\n  results_dir: /abs/results\n  store: s.db\n")
    cfg = load_config(p)
    assert cfg.dataset == [str(REPO)]
    assert cfg.output.results_dir == "/abs/results"
    assert cfg.output.store == str(tmp_path / "s.db")


def test_overrides_win_over_yaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    cfg = load_config(
        CONFIGS / "good.yaml",
        ConfigOverrides(
            hardware="H100",
            address="ray://head:10001",
            results_dir="elsewhere",
            seed=9,
            limit_per_definition=2,
            name="renamed",
        ),
    )
    assert cfg.hardware == "H100"
    assert cfg.ray.address == "ray://head:10001"
    assert cfg.output.results_dir == str(tmp_path / "elsewhere")  # flags: relative to the cwd
    assert cfg.evaluation.seed == 9
    assert cfg.workloads.limit_per_definition == 2
    assert cfg.name == "renamed"
    assert cfg.dataset == [str(CONFIGS.parent / "good"), str(CONFIGS.parent / "other_root")]


def test_unset_overrides_keep_yaml_and_defaults() -> None:
    base = load_config(CONFIGS / "good.yaml")
    same = load_config(CONFIGS / "good.yaml", ConfigOverrides())
    assert same == base
    assert base.evaluation.seed == 0  # the model default
    assert apply_overrides(base, None) is base


def test_override_values_are_validated() -> None:
    cfg = SweepConfig(name="x", dataset=["."])
    with pytest.raises(Exception, match="greater than or equal to 1"):
        ConfigOverrides(limit_per_definition=0)
    assert apply_overrides(cfg, ConfigOverrides(store="a.db")).output.store == "a.db"


def test_shipped_configs_load() -> None:
    local = load_config(REPO / "configs" / "local.yaml")
    assert local.hardware == "auto"
    assert local.dataset == [str(REPO)]
    assert local.output.results_dir == str(REPO / "results")
    h100 = load_config(REPO / "configs" / "h100.yaml")
    assert h100.hardware == "H100"
    assert os.path.isabs(h100.output.results_dir)
