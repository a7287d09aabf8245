"""How a solution's entry point is called, and whether its signature fits: the one rule.

The engine calls a solution's entry point positionally: the definition's inputs, in order,
then, in destination-passing style (``spec.destination_passing_style``, default true), its
outputs, which the function writes into; otherwise inputs only, and the function returns the
outputs. This module holds that rule over a :class:`Params` (what a signature accepts), so
the engine (reading a built function with ``inspect``) and ``sweep validate`` / ``sweep new
solution`` (reading Python source with :mod:`ast`, nothing imported) decide alike.

Only Python entry points are read statically (python, triton, tilelang, and any solution
whose entry file is a ``.py``); a C++/CUDA entry point's signature is known only once built.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sweep.errors import clip, listing

__all__ = [
    "Params",
    "StaticEntry",
    "call_names",
    "dps_choice",
    "entry_missing",
    "fits",
    "signature_problem",
    "static_entry",
    "top_level_functions",
]


@dataclass(frozen=True)
class Params:
    """What a function accepts when called positionally.

    Attributes:
        names: The positional parameters (positional-only and positional-or-keyword), in order.
        required: How many of them have no default.
        var_positional: Whether it takes ``*args`` (then any number past ``required`` fits).
        kw_required: Keyword-only parameters without a default (never passed: it cannot be
            called this way).
        text: The signature as written, for messages (``(x, w, y=None)``).
        keywords: The parameters a keyword argument may name (a parameter sweep's point).
        var_keyword: Whether it takes ``**kwargs`` (then any keyword fits).
    """

    names: tuple[str, ...]
    required: int
    var_positional: bool = False
    kw_required: tuple[str, ...] = ()
    text: str = ""
    keywords: tuple[str, ...] = ()
    var_keyword: bool = False

    @property
    def shown(self) -> str:
        """The signature for a message."""
        return clip(self.text or f"({', '.join(self.names)})", 160)


def call_names(inputs: Sequence[str], outputs: Sequence[str], dps: bool) -> list[str]:
    """The arguments the engine passes, in order."""
    return list(inputs) + (list(outputs) if dps else [])


def fits(params: Params, n: int) -> bool:
    """Whether ``params`` accepts ``n`` positional arguments."""
    if params.kw_required:
        return False
    return params.required <= n and (params.var_positional or n <= len(params.names))


def _style(dps: bool) -> str:
    if dps:
        return "destination-passing style (inputs, then outputs)"
    return "value-returning style (inputs)"


def _spec_setting(dps: bool) -> str:
    return f'"destination_passing_style": {"true" if dps else "false"}'


def signature_problem(
    params: Params,
    inputs: Sequence[str],
    outputs: Sequence[str],
    dps: bool,
    setting: Callable[[bool], str] = _spec_setting,
) -> str | None:
    """Why a function of ``params`` cannot be called as the engine will call it, or ``None``.

    The message names the arguments it is called with, and the setting of
    ``destination_passing_style`` that would fit when the other style fits (``setting``
    words it: the spec's key by default, a command-line flag for ``sweep new solution``).
    """
    names = call_names(inputs, outputs, dps)
    if fits(params, len(names)):
        return None
    if params.kw_required:
        return (
            f"the entry point {params.shown} has required keyword-only parameter(s) "
            f"({listing(params.kw_required)}); it is called with {len(names)} positional argument(s)"
        )
    head = (
        f"the entry point takes {params.shown} but is called in {_style(dps)} with "
        f"{len(names)} argument(s): ({', '.join(names)}), as destination_passing_style is "
        f"{'true' if dps else 'false'}"
    )
    other = call_names(inputs, outputs, not dps)
    if outputs and fits(params, len(other)):
        return f"{head}; it fits {_style(not dps)}: use {setting(not dps)}"
    return (
        f"{head}; it fits neither style: the definition's inputs are ({', '.join(inputs)}) and outputs "
        f"({', '.join(outputs)}), so take ({', '.join(call_names(inputs, outputs, True))}) and write the "
        f"outputs, with {setting(True)}, or take ({', '.join(inputs)}) and return the outputs, with "
        f"{setting(False)}"
    )


def dps_choice(params: Params, inputs: Sequence[str], outputs: Sequence[str]) -> bool | None:
    """The destination-passing style a signature asks for: ``True``, ``False``, or ``None``
    when it fits neither or both equally.

    Names decide first (parameters named exactly inputs + outputs, or exactly inputs); else the
    one style whose argument count fits. With no outputs both styles call alike: ``True``.
    """
    if not outputs:
        return True if fits(params, len(inputs)) else None
    with_out, without = call_names(inputs, outputs, True), list(inputs)
    if list(params.names) == with_out and fits(params, len(with_out)):
        return True
    if list(params.names) == without and fits(params, len(without)):
        return False
    a, b = fits(params, len(with_out)), fits(params, len(without))
    return a if a != b else None


# ---- reading Python source --------------------------------------------------------------


@dataclass(frozen=True)
class StaticEntry:
    """A top-level function of a Python source, read without importing it.

    Attributes:
        params: Its parameters.
        line: The line of its ``def``.
        decorated: Whether a decorator may change what it accepts (a mismatch is then a guess).
    """

    params: Params
    line: int
    decorated: bool


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Params:
    a = fn.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    kw_required = tuple(p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is None)
    try:
        text = f"({ast.unparse(a)})"
    except (ValueError, RecursionError):  # pragma: no cover - unparse of a parsed tree
        text = ""
    return Params(
        names=tuple(positional),
        required=len(positional) - len(a.defaults),
        var_positional=a.vararg is not None,
        kw_required=kw_required,
        text=text,
        keywords=(*(p.arg for p in a.args), *(p.arg for p in a.kwonlyargs)),
        var_keyword=a.kwarg is not None,
    )


def _parse(source: str, path: str) -> ast.Module:
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as e:
        raise ValueError(f"{clip(path)}: not valid Python: {e.msg} (line {e.lineno})") from None
    except (RecursionError, MemoryError):
        raise ValueError(f"{clip(path)}: not valid Python: nested too deeply for Python's parser") from None


def top_level_functions(source: str, path: str = "<source>") -> dict[str, StaticEntry]:
    """Every top-level ``def`` of ``source``, in order (a name defined twice: the last).

    Raises:
        ValueError: The source does not parse.
    """
    out: dict[str, StaticEntry] = {}
    for node in _parse(source, path).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.pop(node.name, None)
            out[node.name] = StaticEntry(_params(node), node.lineno, bool(node.decorator_list))
    return out


def static_entry(source: str, symbol: str, path: str = "<source>") -> StaticEntry | None:
    """The top-level function ``symbol`` of ``source``; ``None`` when the name is bound some
    other way (imported, assigned) or the last binding is not a ``def``: not checkable statically.

    Raises:
        ValueError: The source does not parse.
    """
    found: StaticEntry | None = None
    module = _parse(source, path)
    try:
        for node in module.body:
            found = _last_binding(node, symbol, found)
    except RecursionError:
        raise ValueError(f"{clip(path)}: nested too deeply to read") from None
    return found


def _last_binding(node: ast.stmt, symbol: str, found: StaticEntry | None) -> StaticEntry | None:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == symbol:
        return StaticEntry(_params(node), node.lineno, bool(node.decorator_list))
    if _binds(node, symbol):  # a def of another name binds nothing here
        return None
    return found


#: Names through which code can give a module any attribute at run time (``globals()[n] = f``,
#: ``setattr(sys.modules[__name__], n, f)``, ``exec``): a source that uses one may define its
#: entry point without a statement that names it.
_DYNAMIC_NAMES = frozenset(
    {"globals", "locals", "vars", "setattr", "exec", "eval", "compile", "__dict__", "modules", "__getattr__"}
)


def entry_missing(source: str, symbol: str, path: str = "<source>") -> bool:
    """Whether ``source`` certainly defines no module attribute ``symbol``: no statement at
    module level binds it (a ``def``, a class, an assignment, an import, a ``*`` import, also
    inside ``if``/``try``/``with``), no function declares it ``global``, and nothing in it uses
    a way of binding names at run time (``globals()``, ``setattr``, ``exec``, ``sys.modules``,
    a module ``__getattr__``). ``False`` whenever in doubt: importing it would then tell.

    Raises:
        ValueError: The source does not parse.
    """
    module = _parse(source, path)
    try:
        if any(_binds(node, symbol) for node in module.body):
            return False
    except RecursionError:
        return False
    for node in ast.walk(module):
        if isinstance(node, ast.Global) and symbol in node.names:
            return False
        name = (
            node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        )
        if name in _DYNAMIC_NAMES:
            return False
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == "__getattr__":
            return False
        if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name == symbol:
            return False  # a capture pattern binds a plain string name, not an ast.Name
        if isinstance(node, ast.MatchMapping) and node.rest == symbol:
            return False
    return True


def _binds(node: ast.AST, symbol: str) -> bool:
    """Whether a top-level statement other than a plain ``def`` binds ``symbol`` at module
    level: an import, an assignment, a class, or a ``def`` inside an ``if``/``try``."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == symbol  # their bodies bind nothing at module level
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) in (symbol, "*") for a in node.names)
    if isinstance(node, ast.Name):
        return node.id == symbol and isinstance(node.ctx, ast.Store)
    if isinstance(node, ast.Lambda):
        return False
    return any(_binds(child, symbol) for child in ast.iter_child_nodes(node))
