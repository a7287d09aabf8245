"""Checks of a solution against its definition that need no build: what ``sweep validate``
adds to loading a record.

- A Python entry file (python, triton, tilelang, or a ``.py`` entry of a cuda/cpp solution),
  read with :mod:`ast`: it must parse, and bind its entry point (a file that certainly
  defines no such name is an error; one that may bind it at run time is left to the engine);
  then the entry point's signature against how the engine will call it
  (:mod:`sweep.schema.entry_signature`, the rule the engine applies to the built function).
  C++/CUDA entry points are not checked here: their signature is known only once compiled.
- Keys the record does not know that are close to one it does (``entrypoint``,
  ``destination_passing_styl``). Records keep unknown keys (a newer FlashInfer-Bench may add
  some), so a key close to nothing known is left alone.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from sweep.errors import clip, did_you_mean, listing, shown
from sweep.schema.definition import Definition
from sweep.schema.entry_signature import (
    StaticEntry,
    entry_missing,
    signature_problem,
    static_entry,
    top_level_functions,
)
from sweep.schema.hardware import ANY_GPU_WORDS, ANY_WORDS, CPU, KNOWN_MODELS, short_name
from sweep.schema.params import constraint_name_problems
from sweep.schema.solution import BuildSpec, Solution, close_key

__all__ = ["SolutionProblem", "solution_problems"]

#: Keys of a solution file that upstream FlashInfer-Bench writes and kernel-sweep reads.
_TOP_KEYS = tuple(Solution.model_fields)
_SPEC_KEYS = tuple(BuildSpec.model_fields)


@dataclass(frozen=True)
class SolutionProblem:
    """One finding: ``error`` true for what will fail (or silently change) an evaluation."""

    error: bool
    message: str


def _unknown_keys(solution: Solution) -> list[SolutionProblem]:
    out: list[SolutionProblem] = []
    for key in solution.spec.model_extra or {}:
        near = close_key(key, _SPEC_KEYS)
        if near is None:
            continue
        if near in solution.spec.model_fields_set:
            out.append(
                SolutionProblem(False, f"spec.{clip(key)}: unknown key beside {near!r}; it is ignored")
            )
        else:
            out.append(
                SolutionProblem(
                    True,
                    f"spec.{clip(key)}: unknown key (did you mean {near!r}?); "
                    f"{near!r} is not set, so its default applies",
                )
            )
    for key in solution.model_extra or {}:
        near = close_key(key, _TOP_KEYS)
        if near is not None:
            out.append(SolutionProblem(False, f"{clip(key)}: unknown key, kept (did you mean {near!r}?)"))
    return out


def _python_entry(solution: Solution) -> bool:
    spec = solution.spec
    return spec.entry_file.endswith(".py") or spec.language.value in ("python", "triton", "tilelang")


def _entry(solution: Solution, definition: Definition | None) -> list[SolutionProblem]:
    """A Python entry file that does not parse or certainly lacks its entry point (whatever the
    definition), then the entry point's signature against ``definition``."""
    spec = solution.spec
    if not _python_entry(solution):
        return []
    entry = posixpath.normpath(spec.entry_file)
    source = next(s for s in solution.sources if posixpath.normpath(s.path.replace("\\", "/")) == entry)
    try:
        found = static_entry(source.content, spec.entry_symbol, spec.entry_file)
        missing = found is None and entry_missing(source.content, spec.entry_symbol, spec.entry_file)
    except ValueError as e:
        return [SolutionProblem(True, f"sources: {e}")]
    if missing:
        defined = top_level_functions(source.content, spec.entry_file)
        hint = did_you_mean(spec.entry_symbol, defined)
        return [
            SolutionProblem(
                True,
                f"spec.entry_point: {shown(spec.entry_point)}: {clip(spec.entry_file)} defines no "
                f"{shown(spec.entry_symbol)}{hint} (top-level functions: {listing(defined)})",
            )
        ]
    if definition is not None and "backendbench" in definition.tags:
        if spec.destination_passing_style:
            return [
                SolutionProblem(
                    True,
                    "spec.destination_passing_style: true, but a BackendBench operator is called like "
                    "the ATen operator (arguments in, result returned): set it to false",
                )
            ]
        return []
    if found is None or definition is None:
        return []  # imported or assigned: the engine checks the built function
    return _signature(solution, definition, found)


def _signature(solution: Solution, definition: Definition, found: StaticEntry) -> list[SolutionProblem]:
    spec = solution.spec
    problem = signature_problem(
        found.params, list(definition.inputs), list(definition.outputs), spec.destination_passing_style
    )
    takes = found.params
    missing = [n for n in solution.param_space if n not in takes.keywords and not takes.var_keyword]
    if problem is None and missing:
        problem = f"takes no keyword argument {shown(missing[0])} (a name of its params)"
    if problem is None:
        return []
    where = f"spec.entry_point: {shown(spec.entry_point)} (line {found.line})"
    if found.decorated:
        return [SolutionProblem(False, f"{where}: as written, before its decorators: {problem}")]
    return [SolutionProblem(True, f"{where}: {problem}")]


def _params(solution: Solution, definition: Definition) -> list[SolutionProblem]:
    """Constraints of the parameter space naming neither a parameter nor an axis."""
    problems = constraint_name_problems(
        solution.param_space, solution.params_constraints or [], definition.axes
    )
    return [SolutionProblem(True, p) for p in problems]


def _targets(solution: Solution) -> list[SolutionProblem]:
    """Targets that no GPU type kernel-sweep knows (a typo runs nowhere; a new GPU is fine)."""
    out = []
    for i, entry in enumerate(solution.spec.target_hardware):
        word, short = entry.strip().lower(), short_name(entry)
        if word in ANY_WORDS or word in ANY_GPU_WORDS or short == CPU or short in KNOWN_MODELS:
            continue
        out.append(
            SolutionProblem(
                False,
                f"spec.target_hardware[{i}]: {shown(entry)} is no GPU type kernel-sweep knows"
                f"{did_you_mean(short, KNOWN_MODELS)}; the solution runs only where the target is {short}",
            )
        )
    return out


def solution_problems(solution: Solution, definition: Definition | None) -> list[SolutionProblem]:
    """What is wrong with ``solution`` short of building it (``definition``: the one it names,
    ``None`` when not loaded: its keys, targets and entry file are checked, not its signature)."""
    out = _unknown_keys(solution) + _targets(solution)
    out.extend(_entry(solution, definition))
    if definition is not None:
        out.extend(_params(solution, definition))
    return out
