"""Reading a sweep config from YAML, with errors that point at the file and line.

The YAML is composed into a node tree first (``yaml.compose``), so each key and value keeps
its line; pydantic's errors are then mapped back onto those lines. Unknown keys get a
"did you mean" from the fields allowed at that place.

:func:`load_config` is where the precedence of ``sweep.config.models`` is applied: flags >
YAML > model defaults (the Ray address: :func:`sweep.config.models.resolve_address`).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn, Union

import pydantic
import yaml

from sweep.config._yaml_tree import BoundsError, compose, line_of, to_python
from sweep.config.models import ConfigOverrides, SweepConfig, apply_overrides
from sweep.errors import ConfigError, clip, did_you_mean, field_errors, loc_path, reason, shown
from sweep.schema.hardware import hardware_entries, hardware_problem, hardware_shape_problem
from sweep.schema.limits import FileRefused, read_text

__all__ = ["key_lines", "load_config", "read_config_file", "resolve_paths"]

_Loc = Sequence[str | int]
#: The largest config file read: a sweep config is a page; this bounds reading and parsing.
MAX_CONFIG_BYTES = 256 * 2**10


def _mark(node: yaml.Node) -> int:
    return line_of(node)


def _node_at(root: yaml.Node, loc: _Loc) -> tuple[yaml.Node, bool]:
    """The deepest node along ``loc``; the flag says whether ``loc`` was found in full.

    For a mapping entry the key node is returned (its line is where the user wrote the key).
    """
    node = root
    for i, part in enumerate(loc):
        if isinstance(node, yaml.MappingNode):
            for knode, vnode in node.value:
                if knode.value == str(part):
                    if i == len(loc) - 1:
                        return knode, True
                    node = vnode
                    break
            else:
                return node, False
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
        else:
            return node, False
    return node, True


def _unwrap(annotation: object) -> object:
    """Strip ``X | None`` and ``Optional[X]`` down to ``X``."""
    origin = typing.get_origin(annotation)
    if origin in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return _unwrap(args[0])
    return annotation


def _allowed_keys(model: type[pydantic.BaseModel], loc: _Loc) -> list[str]:
    """The field names accepted at ``loc`` (the parent of an unknown key)."""
    current: object = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, pydantic.BaseModel):
            info = current.model_fields.get(str(part))
            if info is None:
                return []
            current = info.annotation
        elif typing.get_origin(current) in (dict, list):
            current = typing.get_args(current)[-1]
        else:
            return []
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, pydantic.BaseModel):
        return list(current.model_fields)
    return []


def _raise(lines: list[str], path: str) -> NoReturn:
    """One problem: one line. Several: a heading, then each, sorted by line."""
    if len(lines) == 1:
        raise ConfigError(lines[0])

    def line_of(text: str) -> int:
        head = text[len(path) + 1 :].split(":", 1)[0]
        return int(head) if head.isdigit() else 0

    ordered = sorted(lines, key=line_of)
    raise ConfigError(f"{len(lines)} problems in config {path}:\n" + "\n".join(f"  {x}" for x in ordered))


def _format_errors(err: pydantic.ValidationError, data: object, root: yaml.Node, path: str) -> list[str]:
    """The config's problems with the line each is on; unknown keys get a "did you mean"."""
    lines: list[str] = []
    for f in field_errors(err, data):
        node, _found = _node_at(root, f.loc)
        where = f"{path}:{_mark(node)}"
        if f.kind == "extra_forbidden":
            key = str(f.loc[-1])
            parent = f.loc[:-1]
            allowed = _allowed_keys(SweepConfig, parent)
            inside = f" in {loc_path(parent, data)}" if parent else ""
            hint = did_you_mean(key, allowed)
            listing = f"; allowed: {', '.join(allowed)}" if allowed and not hint else ""
            lines.append(f"{where}: unknown key {shown(key)}{inside}{hint}{listing}")
        elif f.kind == "missing":
            lines.append(f"{where}: {f.path}: required key is missing")
        else:
            lines.append(f"{where}: {f.path or '(top level)'}: {f.message}{f.got}")
    return lines


def read_config_file(path: str | Path, *, new_hardware: bool = False) -> SweepConfig:
    """Parse and validate a sweep config file, paths left as written.

    Raises:
        ConfigError: The file is missing, not a regular file or over :data:`MAX_CONFIG_BYTES`,
            is not YAML or over the bounds of :mod:`sweep.config._yaml_tree`, breaks the config
            schema, names a GPU type one typo away from a known one, or has a path that cannot
            be made absolute; the message has ``file:line`` for every problem.
    """
    p = Path(path)
    name = clip(str(path), 200)
    try:
        text = read_text(p, MAX_CONFIG_BYTES)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {name}") from None
    except FileRefused as e:
        raise ConfigError(f"config file {name} {e}: a sweep config is a YAML file") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path, UnicodeDecodeError
        raise ConfigError(f"cannot read config file {name}: {reason(e)}") from None
    try:
        root = compose(text)
    except BoundsError as e:
        line = f":{e.problem_mark.line + 1}" if e.problem_mark is not None else ""
        raise ConfigError(f"{name}{line}: {e.problem}") from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = e.problem or e.context or "invalid YAML"
        raise ConfigError(f"{name}{line}: YAML syntax error: {problem}") from None
    except yaml.YAMLError as e:
        raise ConfigError(f"{name}: YAML syntax error: {e}") from None
    if root is None:
        raise ConfigError(f"{name}: the config is empty; it needs at least 'name' and 'dataset'")
    if not isinstance(root, yaml.MappingNode):
        raise ConfigError(f"{name}:{_mark(root)}: the config must be a mapping of keys to values")
    errors: list[str] = []
    data = to_python(root, name, errors)
    if errors:
        _raise(errors, name)
    try:
        config = SweepConfig.model_validate(data)
    except pydantic.ValidationError as e:
        _raise(_format_errors(e, data, root, name), name)
    wrong = _wrong_hardware(config.hardware, new_hardware)
    if wrong is not None:
        index, problem = wrong
        # The line of the entry in a YAML list; of the key for one name or 'H100,H200'.
        loc: _Loc = ("hardware", index) if isinstance(config.hardware, list) else ("hardware",)
        raise ConfigError(f"{name}:{_mark(_node_at(root, loc)[0])}: hardware: {problem}")
    for loc, value in _path_fields(config):
        try:
            _resolve(Path(), value, loc)
        except ConfigError as e:
            raise ConfigError(f"{name}:{_mark(_node_at(root, loc)[0])}: {e}") from None
    return config


def _wrong_hardware(hardware: str | list[str], new: bool) -> tuple[int, str] | None:
    """The first name of ``hardware`` that names no target (a typo of a known GPU type):
    its index among the names and why; ``None`` when every name is fine."""
    for i, entry in enumerate(hardware_entries(hardware)):
        problem = hardware_problem(entry, new=new)[0]
        if problem:
            return i, problem
    return None


def _flag_hardware_problem(hardware: str, new: bool) -> str | None:
    """What is wrong with ``--hardware``: its shape (``auto,H100``), then its names."""
    shape = hardware_shape_problem(hardware)
    if shape is not None:
        return shape
    wrong = _wrong_hardware(hardware, new)
    return wrong[1] if wrong is not None else None


def _path_fields(config: SweepConfig) -> list[tuple[tuple[str | int, ...], str]]:
    """The paths of a config, each with its place (``("dataset", 0)``, ``("output", "store")``)."""
    out: list[tuple[tuple[str | int, ...], str]] = [(("dataset", i), d) for i, d in enumerate(config.dataset)]
    out.append((("output", "results_dir"), config.output.results_dir))
    if config.output.store is not None:
        out.append((("output", "store"), config.output.store))
    return out


def _resolve(base: Path, value: str, loc: tuple[str | int, ...]) -> str:
    try:
        p = Path(value).expanduser()
        return str(p if p.is_absolute() else (base / p).resolve())
    except (RuntimeError, OSError, ValueError) as e:
        # RuntimeError: '~user' for a user this machine does not have.
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
        raise ConfigError(f"{where}: path {shown(value)} cannot be used: {reason(e)}") from None


def resolve_paths(config: SweepConfig, base: Path) -> SweepConfig:
    """The config with relative ``dataset`` and ``output`` paths made absolute against ``base``.

    Raises:
        ConfigError: A path cannot be made absolute (``~user`` of an unknown user).
    """
    data = config.model_dump(mode="json", exclude_unset=True)
    resolved = {loc: _resolve(base, value, loc) for loc, value in _path_fields(config)}
    data["dataset"] = [resolved[("dataset", i)] for i in range(len(config.dataset))]
    out = data.setdefault("output", {})
    out["results_dir"] = resolved[("output", "results_dir")]
    if config.output.store is not None:
        out["store"] = resolved[("output", "store")]
    return SweepConfig.model_validate(data)


def key_lines(path: str | Path, locs: Sequence[_Loc]) -> list[int | None]:
    """The line of each place (``("definitions", "names", 0)``) in a config file, for
    messages about a config that loaded; ``None`` where it is not found (or the file no
    longer reads)."""
    try:
        root = compose(read_text(path, MAX_CONFIG_BYTES))
    except (OSError, ValueError, yaml.YAMLError):
        return [None] * len(locs)
    if root is None:
        return [None] * len(locs)
    out: list[int | None] = []
    for loc in locs:
        node, found = _node_at(root, loc)
        out.append(_mark(node) if found else None)
    return out


def load_config(path: str | Path, overrides: ConfigOverrides | None = None) -> SweepConfig:
    """Read a sweep config, resolve its paths, apply the command-line overrides.

    Precedence, highest first: flags (``overrides``; their relative paths are made absolute
    against the current directory), then the file (its relative ``dataset`` and ``output``
    paths against the file's folder), then the defaults on the models. ``RAY_ADDRESS``, between
    the address flag and the YAML, is applied when connecting
    (:func:`~sweep.config.models.resolve_address`).

    Raises:
        ConfigError: The file is missing or malformed (messages carry ``file:line``).
    """
    p = Path(path)
    new = bool(overrides is not None and overrides.new_hardware)
    config = read_config_file(p, new_hardware=new)
    config = resolve_paths(config, p.resolve().parent)
    if overrides is not None and not overrides.is_empty():
        if overrides.hardware is not None:
            problem = _flag_hardware_problem(overrides.hardware, new)
            if problem is not None:
                raise ConfigError(f"--hardware {shown(overrides.hardware)}: {problem}")
        config = resolve_paths(apply_overrides(config, overrides), Path.cwd())
    return config
