"""Hostile sweep configs: every one is refused with a ConfigError naming the file and line
(or read correctly), quickly; never a traceback, a hang or a huge message."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from sweep.config import ConfigOverrides, SweepConfig, load_config, read_config_file
from sweep.config._yaml_tree import MAX_DEPTH, MAX_NODES
from sweep.errors import MAX_LINE, ConfigError

from ..conftest import QUICK_S, fuzz_settings

pytestmark = pytest.mark.hostile

HYPOTHESIS = fuzz_settings(60)


def _write(tmp_path: Path, text: str, name: str = "sweep.yaml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _error(path: Path | str, overrides: ConfigOverrides | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(path, overrides)
    return str(info.value)


def _quick_error(path: Path) -> str:
    t0 = time.monotonic()
    message = _error(path)
    assert time.monotonic() - t0 < QUICK_S, "refusing a hostile config must be quick"
    return message


# ---- tracebacks and hangs ----


def test_recursive_alias(tmp_path: Path) -> None:
    p = _write(tmp_path, "name: x\ndataset: &a [*a]\n")
    assert _quick_error(p) == f"{p}:2: an alias refers to a value that contains it (a recursive alias)"


def test_aliases_that_repeat_a_value_still_work(tmp_path: Path) -> None:
    p = _write(
        tmp_path,
        "name: x\ndataset: [&d .]\nevaluation:\n  op_type_tolerance: {gemm: &t {atol: 0.5}, ew: *t}\n"
        "  definition_tolerance: {a: *t, b: *t}\noutput: {results_dir: *d}\n",
    )
    config = load_config(p)
    assert config.evaluation.op_type_tolerance["ew"].atol == 0.5
    assert set(config.evaluation.definition_tolerance) == {"a", "b"}


def test_recursive_alias_in_a_mapping(tmp_path: Path) -> None:
    p = _write(tmp_path, "name: x\ndataset: .\nray:\n  runtime_env: &e {env: *e}\n")
    assert "recursive alias" in _quick_error(p)


@pytest.mark.parametrize("opener", ["[", "{a: ", "- "])
def test_very_deep_nesting(tmp_path: Path, opener: str) -> None:
    # As deep as fits under the size cap (a block sequence's indentation grows with depth).
    if opener == "- ":
        body = "\n" + "".join("      " + "  " * i + "- \n" for i in range(200))
    else:
        closer = "]" if opener == "[" else "}"
        n = 100_000 if opener == "[" else 20_000
        body = opener * n + "1" + closer * n
    p = _write(tmp_path, f"name: x\ndataset: .\nray:\n  runtime_env:\n    e: {body}\n")
    assert f"the config is nested more than {MAX_DEPTH} levels deep" in _quick_error(p)


def test_billion_laughs_is_refused_quickly(tmp_path: Path) -> None:
    lines = ["name: x", "dataset: .", 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for prev, cur in zip("abcdefgh", "bcdefghi"):
        lines.append(f"{cur}: &{cur} [" + ",".join([f"*{prev}"] * 9) + "]")
    p = _write(tmp_path, "\n".join(lines) + "\n")
    message = _quick_error(p)
    assert f"more than {MAX_NODES:,} values once its aliases are expanded" in message
    assert message.startswith(f"{p}:")


def test_many_plain_values_are_refused_before_parsing_them_all(tmp_path: Path) -> None:
    p = _write(tmp_path, "name: x\ndataset: .\nray: {runtime_env: {e: [" + "0," * 60_000 + "0]}}\n")
    assert f"more than {MAX_NODES:,} values" in _quick_error(p)


def test_dev_zero_is_not_read() -> None:
    assert _quick_error(Path("/dev/zero")) == (
        "config file /dev/zero is not a regular file (a device, FIFO or socket): a sweep config is a YAML file"
    )


def test_a_fifo_is_not_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    assert "is not a regular file" in _quick_error(fifo)


def test_a_folder_is_not_a_config(tmp_path: Path) -> None:
    assert (
        _quick_error(tmp_path)
        == f"config file {tmp_path} is a folder, not a file: a sweep config is a YAML file"
    )


def test_a_huge_file_is_refused_unread(tmp_path: Path) -> None:
    p = tmp_path / "big.yaml"
    with p.open("wb") as f:
        f.truncate(64 * 2**20)  # sparse: cheap to make, and reading it all would be the bug
    assert "is larger than 262,144 bytes" in _quick_error(p)


def test_nul_in_a_dataset_path(tmp_path: Path) -> None:
    p = _write(tmp_path, 'name: x\ndataset: ["ok", "a\\0b"]\n')
    assert _error(p) == f"{p}:2: dataset: a path must not contain a NUL character, got 'a\\x00b'"


def test_nul_in_the_config_path() -> None:
    assert "cannot read config file" in _error("a\0b.yaml")


def test_unknown_home_directory(tmp_path: Path) -> None:
    p = _write(tmp_path, "name: x\ndataset: .\noutput:\n  store: ~no_such_user_here/s.duckdb\n")
    assert _error(p).startswith(f"{p}:4: output.store: path '~no_such_user_here/s.duckdb' cannot be used")


@pytest.mark.parametrize(
    ("value", "fragment"),
    [
        ("2001-02-30", "cannot read the value '2001-02-30': day is out of range for month"),
        ("9" * 5000, "an integer of more than 4,300 digits"),
        ("!!python/object:os.system x", "could not determine a constructor"),
        ("!!binary A", "failed to decode base64 data"),
    ],
)
def test_values_pyyaml_cannot_build(tmp_path: Path, value: str, fragment: str) -> None:
    p = _write(tmp_path, f"name: x\ndataset: .\nevaluation:\n  seed: {value}\n")
    message = _error(p)
    assert message.startswith(f"{p}:4: "), message
    assert fragment in message, message
    assert len(message) < 400


# ---- accepted although wrong ----


def test_empty_hardware(tmp_path: Path) -> None:
    p = _write(tmp_path, "name: x\ndataset: .\nhardware: ''\n")
    assert _error(p) == (
        f"{p}:3: hardware: must name a target: 'auto', 'all', 'cpu', a GPU type such as 'H100', or a list "
        "of them"
    )


def test_typo_of_a_gpu_type(tmp_path: Path) -> None:
    p = _write(tmp_path, "name: x\ndataset: .\nhardware: H10\n")
    assert _error(p) == (
        f"{p}:3: hardware: unknown GPU type 'H10' (did you mean 'H100'? if it is a new GPU type, say so "
        "with --new-hardware)"
    )


def test_typo_of_a_gpu_type_as_a_flag(tmp_path: Path) -> None:
    p = _write(tmp_path, "name: x\ndataset: .\n")
    message = _error(p, ConfigOverrides(hardware="H10"))
    assert message == (
        "--hardware 'H10': unknown GPU type 'H10' (did you mean 'H100'? if it is a new GPU type, say so "
        "with --new-hardware)"
    )


@pytest.mark.parametrize(
    "hardware", ["H100", "h100", "NVIDIA_H100", "auto", "cpu", "T4", "RTX4090", "FOO9000"]
)
def test_good_and_unknown_gpu_types_load(tmp_path: Path, hardware: str) -> None:
    p = _write(tmp_path, f"name: x\ndataset: .\nhardware: {hardware}\n")
    assert load_config(p).hardware == hardware


@pytest.mark.parametrize(
    ("line", "where", "message"),
    [
        (
            "workloads: {limit_per_definition: true}",
            "workloads.limit_per_definition",
            "Input should be a valid integer (got True)",
        ),
        ("evaluation: {seed: true}", "evaluation.seed", "Input should be a valid integer (got True)"),
        ("evaluation: {trials: true}", "evaluation.trials", "Input should be a valid integer (got True)"),
        ("evaluation: {seed: '5'}", "evaluation.seed", "Input should be a valid integer (got '5')"),
        (
            "evaluation: {warmup_ms: .inf}",
            "evaluation.warmup_ms",
            "Input should be a finite number (got inf)",
        ),
        ("evaluation: {rep_ms: .inf}", "evaluation.rep_ms", "Input should be a finite number (got inf)"),
        ("evaluation: {max_ms: .nan}", "evaluation.max_ms", "Input should be a finite number (got nan)"),
        (
            "evaluation: {tolerance: {atol: .inf}}",
            "evaluation.tolerance.atol",
            "Input should be a finite number (got inf)",
        ),
        (
            "evaluation: {seed: 9223372036854775808}",
            "evaluation.seed",
            "Input should be less than or equal to 9223372036854775807",
        ),
        (
            "ray: {num_gpus: 99999999999999999999}",
            "ray.num_gpus",
            "Input should be less than or equal to 9223372036854775807",
        ),
    ],
)
def test_strict_finite_64_bit_values(tmp_path: Path, line: str, where: str, message: str) -> None:
    p = _write(tmp_path, f"name: x\ndataset: .\n{line}\n")
    assert _error(p).startswith(f"{p}:3: {where}: {message}")


def test_min_iterations_above_max_iterations(tmp_path: Path) -> None:
    p = _write(tmp_path, "name: x\ndataset: .\nevaluation:\n  min_iterations: 50\n  max_iterations: 10\n")
    assert _error(p) == f"{p}:3: evaluation: min_iterations (50) is more than max_iterations (10)"


def test_a_huge_token_is_not_echoed(tmp_path: Path) -> None:
    token = "k" * 10 * 2**20
    p = tmp_path / "sweep.yaml"
    # An explicit key ('? '): YAML limits implicit keys to 1024 characters.
    p.write_text(f"name: x\ndataset: .\n? {token[: 200 * 2**10]}\n: 1\n", encoding="utf-8")
    message = _error(p)
    assert "unknown key 'kkkk" in message
    assert "(204,800 characters)" in message
    assert len(message) < 500
    p.write_text(f"name: x\ndataset: .\nhardware: {token[: 200 * 2**10]}\n", encoding="utf-8")
    message = _error(p)
    assert message.startswith(f"{p}:3: hardware: longer than 64 characters, no GPU type: 'kkkk")
    assert len(message) < 500


# ---- properties ----

_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)
_KEYS = st.sampled_from(
    [
        "name",
        "dataset",
        "hardware",
        "seed",
        "trials",
        "warmup_ms",
        "rep_ms",
        "min_iterations",
        "max_iterations",
        "limit_per_definition",
        "names",
        "atol",
        "x",
        "",
    ]
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
    max_leaves=20,
)
_SECTIONS = st.fixed_dictionaries(
    {"name": _SCALARS, "dataset": st.one_of(_SCALARS, st.lists(_SCALARS, max_size=3))},
    optional={
        "hardware": _SCALARS,
        "evaluation": st.dictionaries(
            st.sampled_from(
                [
                    "seed",
                    "trials",
                    "warmup_ms",
                    "rep_ms",
                    "min_iterations",
                    "max_iterations",
                    "max_ms",
                    "target_rel_error",
                    "input_sets",
                    "tolerance",
                    "op_type_tolerance",
                    "timer",
                    "log_limit_bytes",
                ]
            ),
            _VALUES,
            max_size=5,
        ),
        "workloads": st.dictionaries(st.sampled_from(["limit_per_definition", "uuids"]), _VALUES, max_size=2),
        "ray": st.dictionaries(st.sampled_from(["address", "num_cpus", "num_gpus", "runtime_env"]), _VALUES),
        "output": st.dictionaries(st.sampled_from(["results_dir", "store"]), _VALUES, max_size=2),
        "extra_key": _VALUES,
    },
)


def _load_or_refuse(p: Path) -> SweepConfig | None:
    try:
        return load_config(p)
    except ConfigError as e:
        message = str(e)
        assert message, "an error must say something"
        assert all(len(line) <= MAX_LINE for line in message.splitlines())
        return None


@HYPOTHESIS
@given(data=_SECTIONS)
def test_any_config_structure_loads_or_is_refused_cleanly(tmp_path: Path, data: dict[str, object]) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text(yaml.safe_dump(data), encoding="utf-8")
    config = _load_or_refuse(p)
    if config is not None:
        # What loads is what was written, and keeps the invariants.
        assert config.name == data["name"]
        ev = config.evaluation
        assert ev.min_iterations <= ev.max_iterations
        assert all(type(v) is not bool for v in (ev.seed, ev.trials, ev.min_iterations, ev.max_iterations))
        assert -(2**63) <= ev.seed < 2**63


_YAML_BITS = st.sampled_from(
    [
        "name: x\n",
        "dataset: .\n",
        "&a ",
        "*a",
        "[",
        "]",
        "{",
        "}",
        ": ",
        "- ",
        "\n",
        "  ",
        "!!binary ",
        "!!int ",
        "? ",
        "'",
        '"',
        "\\",
        "\0",
        "\t",
        "#",
        "---\n",
        "...\n",
        "%YAML 1.1\n",
        "<<: ",
        "!!python/name:os.system",
        "2001-02-30",
        "9" * 50,
        ".inf",
        "true",
        "~",
        "hardware: ",
        "evaluation: ",
        "seed: ",
        "\ufeff",
        "\u2028",
    ]
)


@HYPOTHESIS
@given(bits=st.lists(_YAML_BITS, max_size=40), noise=st.text(max_size=20))
def test_any_text_loads_or_is_refused_cleanly(tmp_path: Path, bits: list[str], noise: str) -> None:
    p = tmp_path / "sweep.yaml"
    p.write_text("".join(bits) + noise, encoding="utf-8", errors="surrogatepass")
    t0 = time.monotonic()
    try:
        read_config_file(p)
    except ConfigError as e:
        # Every refusal names the file: first thing, or in the heading of several problems.
        assert re.match(
            rf"({re.escape(str(p))}|cannot read config file {re.escape(str(p))}|\d+ problems in config)",
            str(e),
        )
    assert time.monotonic() - t0 < QUICK_S
