"""Constraints on tensor values, checked on the inputs by a safe evaluator."""

from __future__ import annotations

import pytest
import torch

from sweep.engine.io._constraints import ConstraintError, constraint_inputs, evaluate_constraint

NAMES = {"indptr": torch.tensor([0, 2, 5], dtype=torch.int32), "x": torch.ones(3, 4), "NNZ": 5, "B": 2}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("NNZ == indptr[-1].item()", True),
        ("NNZ == indptr[-1]", True),
        ("indptr[0].item() == 0 and len(indptr) == B + 1", True),
        ("(indptr[1:] >= indptr[:-1]).all()", True),
        ("indptr[1:] - indptr[:-1] >= 3", False),
        ("x.shape[1] == 4 and x.ndim == 2 and x.numel() == 12", True),
        ("x.size(0) == 3 and x.dim() == 2", True),
        ("sum(x.shape) == 7 and max(x.shape) == 4 and min(NNZ, 2) == 2 and abs(-B) == 2", True),
        ("x[0, 1:3].sum().item() == 2.0", True),
        ("not indptr.any()", False),
        ("NNZ % B == 1 and NNZ // B == 2 and 2 ** 3 == 8", True),
        ("0 <= indptr[1] < indptr[2]", True),
    ],
)
def test_allowed_expressions(text, expected) -> None:
    assert evaluate_constraint(text, NAMES) is expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("x.__class__", "attribute .__class__ is not allowed"),
        ("open('/etc/passwd')", "call of 'open' is not allowed"),
        ("x.numpy()", "call of 'x.numpy' is not allowed"),
        ("(lambda: 1)()", "not allowed"),
        ("[i for i in range(3)]", "ListComp is not allowed"),
        ("'a' == 'a'", "Constant is not allowed"),
        ("unknown > 1", "unknown name 'unknown'"),
        ("indptr[10].item() == 1", "IndexError"),
        ("NNZ / 0", "ZeroDivisionError"),
        ("2 ** 100", "exponent too large"),
        ("NNZ in indptr", "comparison In is not allowed"),
        ("import os", "not a Python expression"),
    ],
)
def test_refused_expressions(text, message) -> None:
    with pytest.raises(
        ConstraintError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")
    ):
        evaluate_constraint(text, NAMES)


def test_constraint_inputs_names_the_tensors_read() -> None:
    assert constraint_inputs("NNZ == indptr[-1].item() + len(x)", {"indptr", "x", "y"}) == {"indptr", "x"}


def test_satisfied_value_constraints_pass_with_file_inputs(kit) -> None:
    defn = kit.definition("csr/csr_rowsum.json")
    wl = kit.workloads("csr/csr_rowsum.jsonl")[0]
    ref_like = "import torch\n\ndef run(indptr, values, scale):\n    return torch.segment_reduce(values, 'sum', offsets=indptr.long()) * scale\n"
    trace = kit.run(defn, kit.solution("csr_rowsum", ref_like), wl, root=str(kit.data))
    assert kit.status(trace) == "PASSED", kit.log(trace)


def test_random_inputs_that_cannot_satisfy_a_value_constraint_say_so(kit) -> None:
    defn = kit.definition("csr/csr_rowsum.json")
    wl = kit.workloads("csr/csr_rowsum.jsonl")[1]  # indptr random
    sol = kit.solution("csr_rowsum", "def run(a, b, c):\n    raise AssertionError('must not run')\n")
    trace = kit.run(defn, sol, wl, root=str(kit.data))
    assert kit.status(trace) == "RUNTIME_ERROR"
    text = kit.log(trace)
    assert "constraint 'indptr[0].item() == 0' does not hold on input set 0" in text
    assert "inputs indptr are random, and random values cannot satisfy a constraint on tensor values" in text
    assert "must not run" not in text


def test_an_integer_tower_is_refused_at_once() -> None:
    # Without the bound the first takes tens of seconds, then MemoryError.
    with pytest.raises(ConstraintError, match="past 512 bits"):
        evaluate_constraint("((((N**64)**64)**64)**64) > 0", {"N": 7})
    with pytest.raises(ConstraintError, match="past 512 bits"):
        evaluate_constraint("N * N * N * N * N * N * N * N * N * N > 0", {"N": 2**60})
