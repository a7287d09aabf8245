"""``hardware`` as a list, ``H100,H200`` or ``all``, in a config file and as ``--hardware``:
read correctly, or refused with the file and line (or the flag), a "did you mean" for a typo."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sweep.config import ConfigOverrides, load_config
from sweep.errors import MAX_LINE, ConfigError

from ..conftest import fuzz_settings

pytestmark = pytest.mark.hostile

HYPOTHESIS = fuzz_settings(80)


def _write(tmp_path: Path, hardware: str) -> Path:
    p = tmp_path / "sweep.yaml"
    p.write_text(f"name: x\ndataset: .\nhardware: {hardware}\n", encoding="utf-8")
    return p


def _error(path: Path, overrides: ConfigOverrides | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    return str(info.value)


@pytest.mark.parametrize(
    ("written", "loaded", "targets"),
    [
        ("[H100, H200]", ["H100", "H200"], ("H100", "H200")),
        ("[nvidia_h200, h100, cpu]", ["nvidia_h200", "h100", "cpu"], ("H200", "H100", "CPU")),
        ("H100, H200", ["H100", "H200"], ("H100", "H200")),
        ("\n  - H100\n  - H200", ["H100", "H200"], ("H100", "H200")),
        ("all", "all", ()),
        ("[FOO9000, H100]", ["FOO9000", "H100"], ("FOO9000", "H100")),
    ],
)
def test_lists_and_all_load(tmp_path: Path, written: str, loaded: object, targets: tuple[str, ...]) -> None:
    config = load_config(_write(tmp_path, written))
    assert config.hardware == loaded
    assert config.hardware_choice().targets == targets


@pytest.mark.parametrize(
    ("written", "line", "message"),
    [
        (
            "[H100, H10]",
            3,
            "unknown GPU type 'H10' (did you mean 'H100'? if it is a new GPU type, say so with --new-hardware)",
        ),
        ("\n  - H200\n  - H10", 5, "unknown GPU type 'H10' (did you mean 'H100'?"),
        ("H200,B20", 3, "unknown GPU type 'B20' (did you mean 'B200'?"),
        ("al", 3, "unknown GPU type 'al' (did you mean 'all'?"),
        (
            "[]",
            3,
            "an empty list names no target: list GPU types ([H100, H200]), or write 'all' for every GPU type",
        ),
        ("[H100, all]", 3, "'all' stands alone ('hardware: all'), never in a list of targets"),
        ("[auto]", 3, "'auto' stands alone ('hardware: auto'), never in a list of targets"),
        ("[H100, NVIDIA_H100]", 3, "names H100 twice ('H100' and 'NVIDIA_H100'); list each GPU type once"),
        ("'H100,,H200'", 3, "entry 2 of 3 is empty (a stray comma?)"),
        (
            "[H100, 'H200,B200']",
            3,
            "entry 2 of the list, 'H200,B200', holds a comma: give each name its own entry",
        ),
        ("[H100, nvidia_]", 3, "'nvidia_' names no GPU type (write one such as 'H100')"),
        ("[H100, 5]", 3, "entry 2 of the list must be a name such as 'H100', got 5"),
        ("[H100, [H200]]", 3, "entry 2 of the list must be a name such as 'H100', got ['H200']"),
        ("{H100: 1}", 3, "must be a name ('H100') or a list of names ([H100, H200]), got {'H100': 1}"),
    ],
)
def test_bad_hardware_is_refused_at_its_line(tmp_path: Path, written: str, line: int, message: str) -> None:
    p = _write(tmp_path, written)
    got = _error(p)
    assert got.startswith(f"{p}:{line}: hardware: {message}"), got


def test_a_new_gpu_type_in_a_list_is_allowed_when_declared(tmp_path: Path) -> None:
    p = _write(tmp_path, "[H100, H10]")
    config = load_config(p, ConfigOverrides(new_hardware=True))
    assert config.hardware_choice().targets == ("H100", "H10")


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("H100,H10", "unknown GPU type 'H10' (did you mean 'H100'?"),
        ("H100,", "entry 2 of 2 is empty (a stray comma?)"),
        ("all,H100", "'all' stands alone ('hardware: all'), never in a list of targets"),
        ("h200,H200", "names H200 twice ('h200' and 'H200')"),
    ],
)
def test_bad_hardware_flags(tmp_path: Path, flag: str, message: str) -> None:
    p = _write(tmp_path, "auto")
    got = _error(p, ConfigOverrides(hardware=flag))
    assert got.startswith(f"--hardware {flag!r}: {message}"), got


def test_the_flag_lists_targets_over_the_yaml(tmp_path: Path) -> None:
    p = _write(tmp_path, "H100")
    assert load_config(p, ConfigOverrides(hardware="H200,h100")).hardware == ["H200", "h100"]
    assert load_config(p, ConfigOverrides(hardware="all")).hardware == "all"


_ENTRY = st.one_of(
    st.sampled_from(["H100", "h200", "NVIDIA_A100", "cpu", "auto", "all", "H10", "", "x" * 80, "a,b"]),
    st.text(max_size=10),
    st.integers(),
    st.none(),
    st.booleans(),
)


@HYPOTHESIS
@given(
    value=st.one_of(
        _ENTRY, st.lists(_ENTRY, max_size=6), st.dictionaries(st.text(max_size=3), _ENTRY, max_size=2)
    )
)
def test_any_hardware_value_loads_or_is_refused_at_its_line(tmp_path: Path, value: object) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump({"name": "x", "dataset": ".", "hardware": value}), encoding="utf-8")
    try:
        config = load_config(p)
    except ConfigError as e:
        message = str(e)
        assert message.startswith(f"{p}:"), message
        assert "hardware" in message
        assert all(len(line) <= MAX_LINE for line in message.splitlines())
        return
    # What loads reads as targets: each entry once, in normal form; or auto / all alone.
    choice = config.hardware_choice()
    if choice.mode == "named":
        assert 1 <= len(choice.targets) == len(set(choice.targets))
    else:
        assert isinstance(value, str) and value.strip().lower() == choice.mode
