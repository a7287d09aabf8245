"""Reading a config's ``hardware``: one name, a list, ``H100,H200``, ``auto`` or ``all``."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.config import SweepConfig
from sweep.errors import MAX_LINE
from sweep.schema.hardware import (
    MAX_TARGETS,
    HardwareChoice,
    config_target,
    hardware_choice,
    hardware_entries,
    hardware_shape_problem,
    short_name,
)

HYPOTHESIS = settings(max_examples=200, deadline=None, derandomize=True)

#: Names people write: known types in several spellings, the three words, typos, noise.
_NAMES = st.one_of(
    st.sampled_from(
        ["H100", "h100", "NVIDIA_H100", "NVIDIA H100 80GB HBM3", "H200", "h200", "A100", "A100-80G", "B200"]
        + ["cpu", "CPU", "auto", "AUTO", "all", "All", "H10", "", " ", "  H100 ", "x" * 70]
    ),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
)


@pytest.mark.parametrize(
    ("hardware", "choice"),
    [
        ("auto", HardwareChoice("auto")),
        (" Auto ", HardwareChoice("auto")),
        ("all", HardwareChoice("all")),
        ("ALL", HardwareChoice("all")),
        ("h100", HardwareChoice("named", ("H100",))),
        ("cpu", HardwareChoice("named", ("CPU",))),
        ("H100,h200", HardwareChoice("named", ("H100", "H200"))),
        ("H100, NVIDIA_H200 ,cpu", HardwareChoice("named", ("H100", "H200", "CPU"))),
        (["NVIDIA_H200", "h100"], HardwareChoice("named", ("H200", "H100"))),
        (["h100"], HardwareChoice("named", ("H100",))),
    ],
)
def test_what_each_form_asks_for(hardware: str | list[str], choice: HardwareChoice) -> None:
    assert hardware_choice(hardware) == choice


@pytest.mark.parametrize(
    ("hardware", "problem"),
    [
        ([], "an empty list names no target"),
        ("", "must name a target: 'auto', 'all', 'cpu', a GPU type such as 'H100', or a list of them"),
        ("H100,", "entry 2 of 2 is empty (a stray comma?): 'H100,'"),
        (["H100", " "], "entry 2 of 2 is empty (a stray comma?)"),
        (["all"], "'all' stands alone ('hardware: all'), never in a list of targets"),
        ("H100,auto", "'auto' stands alone ('hardware: auto'), never in a list of targets"),
        (["H100", "NVIDIA_H100"], "names H100 twice ('H100' and 'NVIDIA_H100'); list each GPU type once"),
        (
            [f"GPU{i}" for i in range(MAX_TARGETS + 1)],
            f"lists {MAX_TARGETS + 1} targets, more than {MAX_TARGETS}",
        ),
    ],
)
def test_shapes_that_name_no_targets(hardware: str | list[str], problem: str) -> None:
    found = hardware_shape_problem(hardware)
    assert found is not None and found.startswith(problem), found
    with pytest.raises(ValueError, match="."):
        hardware_choice(hardware)


def test_config_target_is_the_one_named_target() -> None:
    assert config_target("NVIDIA_H100") == "H100"
    assert config_target("auto") is None
    assert config_target("all") is None
    assert config_target("H100,H200") is None


@HYPOTHESIS
@given(entries=st.lists(_NAMES, max_size=MAX_TARGETS + 2), as_string=st.booleans())
def test_a_choice_is_its_entries_in_normal_form_or_a_clear_refusal(
    entries: list[str], as_string: bool
) -> None:
    value: str | list[str] = ",".join(entries) if as_string else entries
    problem = hardware_shape_problem(value)
    if problem is not None:
        assert problem and len(problem) <= MAX_LINE
        with pytest.raises(ValueError, match="."):
            hardware_choice(value)
        return
    choice = hardware_choice(value)
    names = hardware_entries(value)
    if choice.mode == "named":
        # One target per entry, in order, each once, each the entry's normal form.
        assert choice.targets == tuple(short_name(n) for n in names)
        assert len(set(choice.targets)) == len(choice.targets) == len(names) <= MAX_TARGETS
        assert all(n.strip().lower() not in ("auto", "all") or len(names) == 1 for n in names)
    else:
        # auto and all only ever alone, as a plain string.
        assert isinstance(value, str) and "," not in value and value.strip().lower() == choice.mode
        assert choice.targets == ()


@HYPOTHESIS
@given(entries=st.lists(_NAMES.filter(lambda n: "," not in n), min_size=2, max_size=5))
def test_a_comma_string_is_the_list_of_its_parts(entries: list[str]) -> None:
    joined = ",".join(entries)
    parts = [n.strip() for n in entries]
    assert (hardware_shape_problem(joined) is None) == (hardware_shape_problem(parts) is None)
    if hardware_shape_problem(joined) is None:
        assert hardware_choice(joined) == hardware_choice(parts)


@HYPOTHESIS
@given(value=st.one_of(_NAMES, st.lists(_NAMES, max_size=5)))
def test_the_config_accepts_exactly_what_the_parser_reads(value: str | list[str]) -> None:
    accepted = hardware_shape_problem(value) is None
    try:
        config = SweepConfig.model_validate({"name": "x", "dataset": ["."], "hardware": value})
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        assert not accepted, e
        return
    assert accepted
    assert config.hardware_choice() == hardware_choice(value)
    # What a config holds reads back the same (its hash too): a comma string is stored split.
    again = SweepConfig.model_validate(config.model_dump(mode="json"))
    assert again.hardware == config.hardware and again.config_hash() == config.config_hash()
    assert isinstance(config.hardware, list) == (isinstance(value, list) or "," in value)
