"""The static rule (ast, before anything is built) and the engine's check of the built
function agree on every generated signature: one rule, two readers."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sweep.engine.builds._build import check_signature, runtime_params
from sweep.schema import Definition
from sweep.schema.entry_signature import signature_problem, static_entry

_NAMES = ["x", "w", "y", "z", "a", "b"]


def _definition(n_in: int, n_out: int) -> Definition:
    names = _NAMES[: n_in + n_out]
    spec = {"shape": None, "dtype": "float32"}
    return Definition.model_validate(
        {
            "name": "d",
            "op_type": "t",
            "axes": {},
            "inputs": {n: spec for n in names[:n_in]},
            "outputs": {n: spec for n in names[n_in:]},
            "reference": "def run():\n    pass\n",
        }
    )


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 5),
    st.data(),
    st.booleans(),
    st.booleans(),
    st.booleans(),
    st.integers(0, 3),
    st.integers(0, 3),
    st.booleans(),
)
def test_static_and_runtime_checks_agree(
    n: int, data: st.DataObject, star: bool, kw: bool, posonly: bool, n_in: int, n_out: int, dps: bool
) -> None:
    n_defaults = data.draw(st.integers(0, n))
    parts = [f"p{i}" if i < n - n_defaults else f"p{i}=None" for i in range(n)]
    if posonly and parts:
        parts.append("/")
    if star:
        parts.append("*args")
    if kw:
        parts.append("kreq" if star else "*, kreq")
    src = f"def run({', '.join(parts)}):\n    pass\n"
    namespace: dict[str, object] = {}
    exec(src, namespace)  # noqa: S102 - a generated signature, nothing else
    fn = namespace["run"]
    assert callable(fn)
    defn = _definition(n_in, n_out)
    found = static_entry(src, "run")
    assert found is not None
    static = signature_problem(found.params, list(defn.inputs), list(defn.outputs), dps)
    runtime = check_signature(fn, defn, dps)
    assert (static is None) == (runtime is None), (src, static, runtime)
    rp = runtime_params(fn)
    assert rp is not None and rp.names == found.params.names and rp.required == found.params.required
