"""``sweep new workload``: a shape added to a definition's workloads file
(``workloads/<op_type>/<definition>.jsonl``), its inputs random and its scalars given."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path

from sweep.errors import DatasetError, ValidationError, did_you_mean, listing, shown
from sweep.plan._records import MAX_FILE_BYTES
from sweep.plan.dataset import validate_roots
from sweep.plan.record_files import name_part, record_path
from sweep.schema import Workload
from sweep.schema.files import write_atomic
from sweep.schema.limits import read_text

__all__ = ["NewWorkload", "add_workload", "parse_assignments"]

#: Namespace of the uuids of added workloads: one shape of one definition has one uuid, so
#: adding it again is seen.
_NAMESPACE = uuid.UUID("6f1c2a5e-0b7d-4c1e-9a43-3d5e8f0a2b71")


@dataclass(frozen=True)
class NewWorkload:
    """A workload added: the record and the file it went to."""

    workload: Workload
    path: Path


def parse_assignments(values: list[str], flag: str) -> dict[str, str]:
    """``["batch=8", "dim=128"]`` as a mapping; a value without ``=`` or a name twice is refused."""
    out: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip()
        if not sep or not name or not value:
            raise ValidationError(f"{flag} {shown(item)}: expected NAME=VALUE")
        if name in out:
            raise ValidationError(f"{flag} {shown(name)} given twice")
        out[name] = value
    return out


def _integer(text: str, what: str) -> int:
    try:
        value = int(text, 0)
    except ValueError:
        raise ValidationError(f"{what}: {shown(text)} is not an integer") from None
    if value < 1 or value > 2**62:
        raise ValidationError(f"{what}: {value} is out of range (1 to 2**62)")
    return value


def _scalar(text: str) -> bool | int | float:
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    raise ValidationError(f"--scalar value {shown(text)} is not a number or true/false")


def add_workload(
    roots: list[Path], definition_name: str, axes: dict[str, str], scalars: dict[str, str]
) -> NewWorkload:
    """Append a workload of ``definition_name`` with the variable ``axes`` given (every one
    of them), random tensors and the ``scalars`` given (every scalar input), to the workloads
    file of the root that holds the definition.

    Raises:
        DatasetError: The definition is not in the roots.
        ValidationError: An axis or scalar unknown, missing or not a number; the same shape
            already there; the file cannot be written.
    """
    ds, _errors = validate_roots(roots)
    definition = ds.definitions.get(definition_name)
    if definition is None:
        raise DatasetError(
            f"no definition {shown(definition_name)} in {listing(str(r) for r in ds.roots)}"
            f"{did_you_mean(definition_name, ds.definitions)}"
        )
    variable = [n for n, a in definition.axes.items() if a.type == "var"]
    for name in axes:
        if name not in variable:
            const = " (a constant axis: the definition fixes it)" if name in definition.axes else ""
            raise ValidationError(
                f"--axis {shown(name)}: no variable axis of {shown(definition.name)}{const}"
                f"{did_you_mean(name, variable)}; its variable axes: {listing(variable)}"
            )
    missing = [n for n in variable if n not in axes]
    if missing:
        raise ValidationError(
            f"definition {shown(definition.name)} needs a value of every variable axis: "
            f"missing {listing(missing)} (--axis NAME=VALUE)"
        )
    scalar_inputs = [n for n, spec in definition.inputs.items() if spec.shape is None]
    for name in scalars:
        if name not in scalar_inputs:
            raise ValidationError(
                f"--scalar {shown(name)}: no scalar input of {shown(definition.name)}"
                f"{did_you_mean(name, scalar_inputs)}; its scalar inputs: {listing(scalar_inputs)}"
            )
    if [n for n in scalar_inputs if n not in scalars]:
        raise ValidationError(
            f"definition {shown(definition.name)} has scalar inputs "
            f"{listing(scalar_inputs)}: give each with --scalar NAME=VALUE"
        )
    values = {n: _integer(axes[n], f"--axis {n}") for n in variable}
    inputs: dict[str, object] = {
        n: {"type": "scalar", "value": _scalar(scalars[n])} if n in scalars else {"type": "random"}
        for n in definition.inputs
    }
    key = json.dumps([definition.name, sorted(values.items()), sorted(scalars.items())])
    wl = Workload.model_validate({"uuid": str(uuid.uuid5(_NAMESPACE, key)), "axes": values, "inputs": inputs})
    for old in ds.workloads.get(definition.name, []):
        if old.axes == wl.axes and all(
            getattr(old.inputs.get(n), "value", None) == getattr(wl.inputs[n], "value", None)
            for n in scalar_inputs
        ):
            raise ValidationError(
                f"definition {shown(definition.name)} has that shape already (workload {old.uuid})"
            )
    root = ds.root_of("definition", definition.name)
    op = name_part(definition.op_type, "the definition's op_type")
    path = record_path(root, "workload", op, f"{name_part(definition.name, 'the definition name')}.jsonl")
    line = json.dumps(
        {"definition": definition.name, "solution": None, "workload": wl.to_json_obj(), "evaluation": None}
    )
    try:
        before = read_text(path, MAX_FILE_BYTES) if path.exists() else ""
        if before and not before.endswith("\n"):
            before += "\n"
        write_atomic(path, before + line + "\n", overwrite=True, inside=root)
    except (OSError, ValueError) as e:
        raise ValidationError(f"cannot write {path}: {e}") from None
    return NewWorkload(wl, path)
