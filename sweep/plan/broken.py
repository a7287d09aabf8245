"""Solutions that cannot be evaluated as they are, kept so a sweep still reports them.

A solution file whose JSON is not a Solution record (bad JSON, a schema error), or a record
that the checks of ``sweep validate`` find wrong (its entry file does not parse, it lacks its
entry point, the signature does not fit: :mod:`sweep.schema.solution_checks`), is a
:class:`BrokenSolution`. ``sweep validate`` reports its problems as errors; a launch, ``sweep
eval`` and ``sweep plan`` warn, and plan its tasks like any solution's, each carrying the
problems (``Task.broken``), so each gives a COMPILE_ERROR trace and the rest of the sweep runs.

A file that is not a record has no Solution to put in a task: :func:`broken_file` keeps what
its JSON says that is usable (name, definition, author, language, target hardware) and
builds a stand-in record whose one source is the digest of the file's text, so an edited file
gets new task ids and a fixed one becomes the real record, with ids of its own.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

import pydantic

from sweep.errors import shown
from sweep.schema import Solution
from sweep.schema.solution import BuildSpec, Language, SourceFile

__all__ = ["BrokenSolution", "broken_file", "broken_record"]

#: What every broken solution's COMPILE_ERROR says after its problems.
NOT_RUN = "nothing of the solution was built or run: fix its file ('sweep validate' lists the same problems)"


@dataclass(frozen=True)
class BrokenSolution:
    """A solution that cannot be evaluated as it is.

    Attributes:
        name: The record's ``name``; for a file without a usable one, the file's stem.
        definition: The definition it names (``None``: the file names none usable).
        path: The file.
        messages: Its problems, as ``sweep validate`` reports them (each naming the file).
        record: The Solution record when the file is one (the static checks failed); ``None``
            when the file is not a record.
        stand_in: For a file that is not a record but names a definition: the record its
            tasks carry (see the module); ``None`` otherwise.
    """

    name: str
    definition: str | None
    path: str
    messages: tuple[str, ...]
    record: Solution | None = None
    stand_in: Solution | None = None

    @property
    def solution(self) -> Solution | None:
        """The record its tasks carry (the real one, or the stand-in); ``None``: it gets no task
        (the file names no definition)."""
        return self.record if self.record is not None else self.stand_in

    @property
    def reason(self) -> str:
        """Why its tasks are COMPILE_ERRORs: every problem (each naming the file), then that
        nothing was run. How each of its traces' logs begins, so it is valid UTF-8 (a file name
        that is not is written with escapes)."""
        return _utf8("\n".join((*self.messages, f"solution {shown(self.name)}: {NOT_RUN}")))


def broken_record(solution: Solution, path: Path | str, messages: list[str]) -> BrokenSolution:
    """A Solution record the static checks found wrong (``messages``: their errors)."""
    return BrokenSolution(
        name=solution.name,
        definition=solution.definition,
        path=str(path),
        messages=tuple(messages),
        record=solution,
    )


def _utf8(text: str) -> str:
    """``text`` as it can be written in a JSON record: a lone surrogate (a file name's byte
    that is not UTF-8, a ``"\\ud800"`` escape in JSON) becomes its escape."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _text(data: dict[object, object], key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value.strip() else None


def broken_file(path: Path, text: str | None, data: object, messages: list[str]) -> BrokenSolution:
    """A solution file that is not a Solution record, from what could be read of it.

    Args:
        path: The file.
        text: Its text (``None``: it could not be read).
        data: Its JSON when it parsed (anything: the keys of an object are used when usable).
        messages: Why it is not a record, as ``sweep validate`` reports them.
    """
    fields: dict[object, object] = data if isinstance(data, dict) else {}
    spec = fields.get("spec")
    spec_fields: dict[object, object] = spec if isinstance(spec, dict) else {}
    name = _utf8(_text(fields, "name") or path.stem)  # it names traces, written as JSON
    definition = _text(fields, "definition")
    stand_in = None
    if definition is not None:
        digest = hashlib.sha256((text or "").encode("utf-8", "surrogatepass")).hexdigest()
        language = _text(spec_fields, "language")
        targets = spec_fields.get("target_hardware")
        try:
            stand_in = Solution(
                name=name,
                definition=definition,
                author=_text(fields, "author") or "unknown",
                spec=BuildSpec(
                    language=Language(language) if language in Language.__members__ else Language.python,
                    target_hardware=targets
                    if isinstance(targets, list) and targets and all(isinstance(t, str) for t in targets)
                    else ["*"],
                    entry_point="record.json::-",
                ),
                sources=[SourceFile(path="record.json", content=f"sha256 {digest}\n")],
            )
        except pydantic.ValidationError:  # pragma: no cover - every field above is valid
            stand_in = None
    return BrokenSolution(
        name=name, definition=definition, path=str(path), messages=tuple(messages), stand_in=stand_in
    )
