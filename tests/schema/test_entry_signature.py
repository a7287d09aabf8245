"""The calling rule of entry points, read from source with ast: messages, and the
destination-passing style a signature asks for, over generated parameter lists."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.schema.entry_signature import (
    Params,
    dps_choice,
    entry_missing,
    fits,
    signature_problem,
    static_entry,
    top_level_functions,
)


def _params(src: str, symbol: str = "run") -> Params:
    found = static_entry(src, symbol)
    assert found is not None
    return found.params


def test_the_issue_case_names_the_setting() -> None:
    p = _params("def run(x, w):\n    return x * w\n")
    problem = signature_problem(p, ["x", "w"], ["y"], True)
    assert problem is not None
    assert (
        "called in destination-passing style (inputs, then outputs) with 3 argument(s): (x, w, y)" in problem
    )
    assert 'use "destination_passing_style": false' in problem
    assert signature_problem(p, ["x", "w"], ["y"], False) is None


def test_fits_neither_names_inputs_outputs_and_params() -> None:
    p = _params("def run(a, b, c, d):\n    pass\n")
    problem = signature_problem(p, ["x", "w"], ["y"], False)
    assert problem is not None
    assert "takes (a, b, c, d)" in problem and "inputs are (x, w) and outputs (y)" in problem
    assert '"destination_passing_style": true' in problem and '"destination_passing_style": false' in problem


def test_keyword_only_and_varargs() -> None:
    assert signature_problem(_params("def run(x, *, mode):\n    pass\n"), ["x"], ["y"], False) is not None
    assert signature_problem(_params("def run(*args):\n    pass\n"), ["x"], ["y"], True) is None
    assert signature_problem(_params("def run(x, y=None, *, k=1):\n    pass\n"), ["x"], ["y"], True) is None


@pytest.mark.parametrize(
    "src",
    [
        "from .impl import run\n",
        "def run(x):\n    pass\nrun = wrap(run)\n",
        "if FAST:\n    def run(x):\n        pass\nelse:\n    run = slow\n",
        "def run(x):\n    pass\nclass run:\n    pass\n",
        "from helpers import *\n",
    ],
)
def test_names_bound_otherwise_are_not_checked(src: str) -> None:
    assert static_entry(src, "run") is None


def test_other_bindings_do_not_hide_the_def() -> None:
    src = "def helper():\n    run = 3\n    return run\n\nclass K:\n    run = 1\n\ndef run(x, y):\n    return helper(run)\n"
    found = static_entry(src, "run")
    assert found is not None and found.params.names == ("x", "y") and found.line == 8


def test_decorated_and_syntax_error() -> None:
    found = static_entry("@torch.no_grad()\ndef run(x):\n    pass\n", "run")
    assert found is not None and found.decorated
    with pytest.raises(ValueError, match=r"main.py: not valid Python: .* \(line 1\)"):
        top_level_functions("def run(x)\n", "main.py")


@pytest.mark.parametrize(
    "src",
    [
        "def runn(x):\n    pass\n",
        "",
        "# run\nx = 'run'\n",
        "def helper():\n    run = 3\n    return run\n",  # a local, not the module's
        "class K:\n    run = 1\n",
        "import runner\n",
        "try:\n    pass\nexcept Exception as run:\n    pass\n",  # unbound again after the handler
    ],
)
def test_an_entry_point_no_statement_binds_is_missing(src: str) -> None:
    assert entry_missing(src, "run")


@pytest.mark.parametrize(
    "src",
    [
        "def run(x):\n    pass\n",
        "async def run(x):\n    pass\n",
        "from .impl import run\n",
        "import fast as run\n",
        "from helpers import *\n",
        "run = make()\n",
        "run: object = make()\n",
        "if FAST:\n    def run(x):\n        pass\n",
        "with ctx() as run:\n    pass\n",
        "for run in []:\n    pass\n",
        "(run := make())\n",
        "class run:\n    pass\n",
        "def setup():\n    global run\n    run = make()\nsetup()\n",
        "globals()['run'] = make()\n",
        "import sys\nsetattr(sys.modules[__name__], 'run', make())\n",
        "exec('def run(x): pass')\n",
        "vars()['r' + 'un'] = make()\n",
        "def __getattr__(name):\n    return make()\n",
        "match make():\n    case run:\n        pass\n",
        "match make():\n    case {**run}:\n        pass\n",
    ],
)
def test_what_may_bind_the_entry_point_is_never_called_missing(src: str) -> None:
    assert not entry_missing(src, "run")


def test_entry_missing_of_source_that_does_not_parse() -> None:
    with pytest.raises(ValueError, match=r"main.py: not valid Python: .* \(line 2\)"):
        entry_missing("x = 1\ndef run(x)\n", "run", "main.py")


#: Top-level statements that never bind ``run`` in the module.
_OTHER_STATEMENTS = [
    "x = 1",
    "import os",
    "def helper(a):\n    return a",
    "class K:\n    run = 2",
    "if x:\n    y = 2",
    "try:\n    import numpy\nexcept ImportError:\n    numpy = None",
    "print('run')",
]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(_OTHER_STATEMENTS), max_size=6), st.integers(min_value=0, max_value=6))
def test_a_def_anywhere_in_the_module_is_never_missing(statements: list[str], at: int) -> None:
    """Property: whatever surrounds it, a module with a top-level ``def run`` has its entry
    point; without one (and no dynamic binding among the statements) it is missing."""
    body = list(statements)
    assert entry_missing("\n".join(body) + "\n", "run")
    body.insert(min(at, len(body)), "def run(x):\n    return x")
    assert not entry_missing("\n".join(body) + "\n", "run")


# ---- generated signatures -----------------------------------------------------------------

_names = st.lists(st.sampled_from(["x", "w", "y", "z", "a", "b", "out"]), max_size=6, unique=True)


@st.composite
def _signature(draw: st.DrawFn) -> tuple[str, Params]:
    names = draw(_names)
    n_defaults = draw(st.integers(0, len(names)))
    star = draw(st.booleans())
    kw_req = draw(st.booleans()) and draw(st.booleans())
    parts = [n if i < len(names) - n_defaults else f"{n}=None" for i, n in enumerate(names)]
    if star:
        parts.append("*args")
    if kw_req:
        parts.append("kmode" if star else "*, kmode")
    src = f"def run({', '.join(parts)}):\n    pass\n"
    return src, _params(src)


@st.composite
def _definition(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    names = draw(
        st.lists(st.sampled_from(["x", "w", "y", "z", "a", "b", "out", "c"]), max_size=6, unique=True)
    )
    k = draw(st.integers(0, len(names)))
    return names[:k], names[k:]


@settings(max_examples=400, deadline=None)
@given(_signature(), _definition())
def test_dps_choice_is_a_style_that_fits(sig: tuple[str, Params], defn: tuple[list[str], list[str]]) -> None:
    _, p = sig
    inputs, outputs = defn
    choice = dps_choice(p, inputs, outputs)
    fits_dps = signature_problem(p, inputs, outputs, True) is None
    fits_val = signature_problem(p, inputs, outputs, False) is None
    if choice is not None:
        assert signature_problem(p, inputs, outputs, choice) is None
    elif outputs:
        # None only when neither fits, or both fit and the names do not decide
        assert fits_dps == fits_val
    else:
        assert not fits_dps
    if list(p.names) == inputs + outputs and fits_dps:
        assert choice is True
    if outputs and list(p.names) == inputs and fits_val:
        assert choice is False


@settings(max_examples=400, deadline=None)
@given(_signature(), _definition(), st.booleans())
def test_problem_messages_name_the_fix(
    sig: tuple[str, Params], defn: tuple[list[str], list[str]], dps: bool
) -> None:
    _, p = sig
    inputs, outputs = defn
    problem = signature_problem(p, inputs, outputs, dps)
    assert (problem is None) == fits(p, len(inputs) + (len(outputs) if dps else 0))
    if problem is None or p.kw_required:
        return
    assert f"({', '.join(inputs + (outputs if dps else []))})" in problem
    other_fits = bool(outputs) and signature_problem(p, inputs, outputs, not dps) is None
    if other_fits:
        assert f'"destination_passing_style": {"false" if dps else "true"}' in problem
    else:
        assert "fits neither style" in problem
