"""Parse speed of BackendBench trace files: our whitelist parser against a naive safe baseline.

The full BackendBench trace has 19,171 rows; the shared sample has 1,554. This script builds a
file of about 19k rows by repeating the sample's rows (real rows, real mix of operators) and
times, in the same run:

- ``sweep``: :func:`sweep.backendbench.parse_trace` (regex tokens + recursive descent);
- ``ast-walk``: the obvious safe alternative, one ``ast.parse`` per row plus a walk over the
  tree that accepts the same whitelist and builds the same kind of lazy values;
- ``ast-only``: ``ast.parse`` per row and nothing else (a floor for any ``ast``-based design).

It prints a table of best-of-N wall times and the ratio to ``ast-walk``, and checks that ours
and the baseline agree on every row's tensors.

Usage: ``.venv/bin/python bench/backendbench_parse.py [--repeat 5] [--rows 19171] [FILE]``
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sweep.backendbench import parse_trace
from sweep.schema.call_args import ABBREV_TO_DTYPE, iter_tensors

DEFAULT_FILE = (
    Path(__file__).resolve().parents[1] / "tests" / "data" / "real" / "backendbench" / "sample.trace.txt"
)


def synthesize(sample: str, rows: int, *, unique: bool = False) -> str:
    """A trace of ``rows`` rows: the sample's operator blocks repeated, then cut.

    With ``unique``, copy ``k`` of the sample adds ``k`` to the first size of every tensor, so
    no tensor text repeats across copies (a worst case for the parser's tensor cache; the real
    file repeats shapes much more than that).
    """
    out: list[str] = []
    n = 0
    copy = 0
    lines = sample.splitlines()
    while n < rows:
        for line in lines:
            if line.startswith("cnt:"):
                if n >= rows:
                    break
                n += 1
                if unique and copy:
                    line = _FIRST_SIZE.sub(lambda m, k=copy: f"T([{int(m.group(1)) + k}", line)
            out.append(line)
        copy += 1
    return "\n".join(out) + "\n"


_FIRST_SIZE = re.compile(r"T\(\[(\d+)")


_OK_NAMES = {"True", "False", "None", "inf", "nan", "T", *ABBREV_TO_DTYPE}


def _walk(node: ast.AST) -> Any:
    """The naive safe baseline: a whitelist walk over one row's AST."""
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Tuple):
        return tuple(_walk(e) for e in node.elts)
    if isinstance(node, ast.List):
        return [_walk(e) for e in node.elts]
    if isinstance(node, ast.Dict):
        return {_walk(k): _walk(v) for k, v in zip(node.keys, node.values) if k is not None}
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return -_walk(node.operand)
    if isinstance(node, ast.Name):
        if node.id not in _OK_NAMES:
            raise ValueError(f"name {node.id!r} not allowed")
        consts = {"True": True, "False": False, "None": None, "inf": float("inf"), "nan": float("nan")}
        return consts.get(node.id, node.id)
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
        return f"torch.{node.attr}"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "T":
        args = [_walk(a) for a in node.args]
        kw = {k.arg: _walk(k.value) for k in node.keywords}
        stride = kw.get("stride", args[2] if len(args) > 2 else None)
        return ("T", tuple(args[0]), args[1], None if stride is None else tuple(stride))
    raise ValueError(f"{type(node).__name__} not allowed")


def baseline_ast_walk(text: str) -> list[tuple[str, int, Any]]:
    rows = []
    op = ""
    for line in text.splitlines():
        if line.startswith("Operator:"):
            op = line.split(":", 1)[1].strip()
        elif line.startswith("cnt:"):
            head, body = line.split(",", 1)
            tree = ast.parse(body.strip(), mode="eval")
            rows.append((op, int(head[4:]), _walk(tree.body)))
    return rows


def baseline_ast_only(text: str) -> int:
    n = 0
    for line in text.splitlines():
        if line.startswith("cnt:"):
            ast.parse(line.split(",", 1)[1].strip(), mode="eval")
            n += 1
    return n


def best_of(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def _tensor_shapes(value: Any, out: list[tuple[int, ...]]) -> None:
    if isinstance(value, tuple) and value and value[0] == "T":
        out.append(value[1])
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensor_shapes(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _tensor_shapes(v, out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", nargs="?", type=Path, default=DEFAULT_FILE)
    ap.add_argument("--rows", type=int, default=19_171)
    ap.add_argument("--repeat", type=int, default=5)
    ns = ap.parse_args(argv)

    for unique in (False, True):
        _run(synthesize(ns.file.read_text(), ns.rows, unique=unique), ns, unique)
    return 0


def _run(text: str, ns: argparse.Namespace, unique: bool) -> None:
    from sweep.backendbench import clear_tensor_cache

    ours = parse_trace(text)
    base = baseline_ast_walk(text)
    assert len(ours) == len(base) == ns.rows, (len(ours), len(base))
    for r, (op, cnt, value) in zip(ours, base):
        shapes: list[tuple[int, ...]] = []
        _tensor_shapes(value, shapes)
        mine = [t.shape for v in (*r.args, *r.kwargs.values()) for t in iter_tensors(v)]
        assert (r.op, r.cnt, mine) == (op, cnt, shapes), f"disagree on line {r.line}"

    def cold() -> object:
        clear_tensor_cache()  # each timed run starts with an empty tensor cache
        return parse_trace(text)

    cases: list[tuple[str, Callable[[], object]]] = [
        ("sweep parse_trace", cold),
        ("ast-walk (baseline)", lambda: baseline_ast_walk(text)),
        ("ast-only (floor)", lambda: baseline_ast_only(text)),
    ]
    results = [(name, best_of(fn, ns.repeat)) for name, fn in cases]
    ref = results[1][1]
    kind = "unique tensor shapes per copy" if unique else "sample rows repeated verbatim"
    print(f"\n{ns.rows} rows ({len(text) / 1e6:.2f} MB) from {ns.file.name}, {kind}; best of {ns.repeat}")
    print(f"{'parser':<22} {'seconds':>8} {'us/row':>8} {'vs baseline':>12}")
    for name, secs in results:
        print(f"{name:<22} {secs:8.3f} {secs / ns.rows * 1e6:8.1f} {ref / secs:11.2f}x")


if __name__ == "__main__":
    sys.exit(main())
