"""Solution: one implementation of a definition, with its sources."""

from __future__ import annotations

import difflib
import hashlib
import json
import posixpath
from enum import Enum
from functools import cached_property
from typing import Any

from pydantic import Field, StrictBool, field_validator, model_validator

from sweep.errors import listing, shown
from sweep.schema._base import Record
from sweep.schema.hardware import solution_target_problem
from sweep.schema.limits import relative_path
from sweep.schema.params import ParamValue, space_problems

__all__ = ["Binding", "BuildSpec", "Language", "Solution", "SourceFile", "close_key"]


def close_key(key: str, known: tuple[str, ...]) -> str | None:
    """The known key that an unknown ``key`` most likely misspells, or ``None`` when none is
    close (records keep unknown keys: only a near miss is worth a word)."""
    if len(key) > 200:
        return None
    canon = key.replace("-", "_").lower()
    if canon in known:
        return canon
    found = difflib.get_close_matches(canon, known, n=1, cutoff=0.75)
    return found[0] if found else None


def _missing_typos(data: Any, required: tuple[str, ...], known: tuple[str, ...]) -> Any:
    """Before validation: a required key that is missing while a near miss of it is present
    (``entrypoint``) is named with its near miss, not only as "Field required"."""
    if not isinstance(data, dict):
        return data
    hints = []
    for key in data:
        if isinstance(key, str) and key not in known:
            near = close_key(key, known)
            if near in required and near not in data:
                hints.append(f"missing {near!r}; found the unknown key {shown(key)} (did you mean {near!r}?)")
    if hints:
        raise ValueError("; ".join(hints))
    return data


class Language(str, Enum):
    """Source language of a solution (``tilelang`` needs the optional tilelang package to run)."""

    python = "python"
    triton = "triton"
    cuda = "cuda"
    cpp = "cpp"
    tilelang = "tilelang"


class Binding(str, Enum):
    """How a C++/CUDA solution is bound to Python; a spec without one means ``tvm-ffi``, as in
    FlashInfer-Bench (the field stays unset, so the record is written back as it was read)."""

    torch = "torch"
    tvm_ffi = "tvm-ffi"


class BuildSpec(Record):
    """How to build and call a solution."""

    language: Language
    target_hardware: list[str] = Field(min_length=1)
    entry_point: str
    dependencies: list[str] = Field(default_factory=list)
    destination_passing_style: StrictBool = True
    binding: Binding | None = None

    @model_validator(mode="before")
    @classmethod
    def _typos(cls, data: Any) -> Any:
        return _missing_typos(data, ("language", "target_hardware", "entry_point"), tuple(cls.model_fields))

    @field_validator("target_hardware")
    @classmethod
    def _targets(cls, v: list[str]) -> list[str]:
        # An entry that matches no target would make a solution that never runs, silently.
        for i, entry in enumerate(v):
            problem = solution_target_problem(entry)
            if problem:
                raise ValueError(f"entry {i}: {problem}")
        return v

    @field_validator("entry_point")
    @classmethod
    def _entry(cls, v: str) -> str:
        file, sep, symbol = v.partition("::")
        if not sep or not file or not symbol:
            raise ValueError(f"must be '<file>::<symbol>', got {shown(v)}")
        return v

    @property
    def entry_file(self) -> str:
        """The source path named by ``entry_point``."""
        return self.entry_point.partition("::")[0]

    @property
    def entry_symbol(self) -> str:
        """The function name named by ``entry_point``."""
        return self.entry_point.partition("::")[2]


class SourceFile(Record):
    """One source file of a solution, inline."""

    path: str = Field(min_length=1)
    content: str

    @field_validator("path")
    @classmethod
    def _relative(cls, v: str) -> str:
        return relative_path(v)


class Solution(Record):
    """FlashInfer-Bench's ``Solution`` record."""

    name: str = Field(min_length=1)
    definition: str = Field(min_length=1)
    author: str = Field(min_length=1)
    spec: BuildSpec
    sources: list[SourceFile] = Field(min_length=1)
    description: str | None = None
    #: Extension: a parameter space, name -> values (see :mod:`sweep.schema.params`); the
    #: entry point receives one point as keyword arguments. Unset: written back unset.
    params: dict[str, list[ParamValue]] | None = None
    #: Extension: expressions over parameter names and the workload's axes a point must satisfy.
    params_constraints: list[str] | None = None

    @model_validator(mode="before")
    @classmethod
    def _typos(cls, data: Any) -> Any:
        return _missing_typos(
            data, ("name", "definition", "author", "spec", "sources"), tuple(cls.model_fields)
        )

    @property
    def param_space(self) -> dict[str, list[bool | int | float | str]]:
        """The declared parameter space (empty: no parameters)."""
        return dict(self.params or {})

    @model_validator(mode="after")
    def _check(self) -> Solution:
        seen: set[str] = set()
        for i, s in enumerate(self.sources):
            norm = posixpath.normpath(s.path.replace("\\", "/"))
            if norm in seen:
                raise ValueError(f"sources[{i}].path: duplicate path {shown(s.path)}")
            seen.add(norm)
        entry = posixpath.normpath(self.spec.entry_file)
        if entry not in seen:
            raise ValueError(
                f"spec.entry_point: file {shown(self.spec.entry_file)} is not among the sources "
                f"({listing(s.path for s in self.sources)})"
            )
        if self.params_constraints and not self.params:
            raise ValueError("params_constraints: given without params")
        problems = space_problems(self.params or {}, self.params_constraints or [])
        if problems:
            raise ValueError("; ".join(problems))
        return self

    @cached_property
    def content_hash(self) -> str:
        """A stable hash of what determines behaviour: definition, spec and sources.

        Name, author and description are left out: renaming a solution does not change
        what it computes, so its cached builds and results stay valid. A parameter space
        (``params``, ``params_constraints``) is covered when declared; a solution without one
        hashes as it always did.
        """
        payload: dict[str, Any] = {
            "definition": self.definition,
            "spec": self.spec.model_dump(mode="json", exclude={"__pydantic_extra__"}),
            "sources": sorted((s.path, s.content) for s in self.sources),
        }
        if self.params is not None:
            payload["params"] = self.params
        if self.params_constraints is not None:
            payload["params_constraints"] = self.params_constraints
        text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()[:16]
