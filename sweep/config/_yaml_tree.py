"""YAML text to a node tree and plain values, with bounds a hostile file cannot get past.

PyYAML's composer recurses once per level of nesting (a file of ``[[[[...`` raises
RecursionError from deep inside it), and anchors and aliases make a small file stand for an
enormous value ("billion laughs": ten aliases of ten aliases of ... nine levels down) or a
value that contains itself (``&a [*a]``). So:

- composing counts nodes and depth, and stops at :data:`MAX_NODES` or :data:`MAX_DEPTH`
  (pure-Python PyYAML needs some 30 microseconds a node: the count also bounds the time);
- building values follows aliases but refuses one inside itself, and stops when the values
  built, aliases expanded, pass :data:`MAX_NODES` or nest past :data:`MAX_DEPTH`;
- scalars are built by PyYAML's safe constructor, whose own errors (``2001-02-30`` is not a
  date, an integer of 5,000 digits) become messages with the line, like any other problem.

A sweep config is a few dozen values; the bounds are far above any real one.
"""

from __future__ import annotations

import yaml

from sweep.errors import shown

__all__ = ["MAX_DEPTH", "MAX_NODES", "BoundsError", "compose", "line_of", "to_python"]

#: The most values a config may hold, aliases expanded.
MAX_NODES = 10_000
#: The deepest a config may nest, aliases expanded.
MAX_DEPTH = 50


class BoundsError(yaml.MarkedYAMLError):
    """The YAML is well formed but holds too many values or nests too deeply."""


def line_of(node: yaml.Node) -> int:
    """The 1-based line a node starts on."""
    return int(node.start_mark.line) + 1


class _BoundedLoader(yaml.SafeLoader):
    """PyYAML's safe loader whose composer refuses too many or too deeply nested nodes."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._nodes = 0

    def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
        # Checked before composing, so neither the recursion nor the work goes further.
        self._depth += 1
        self._nodes += 1
        try:
            if self._depth > MAX_DEPTH or self._nodes > MAX_NODES:
                what = (
                    f"nested more than {MAX_DEPTH} levels deep"
                    if self._depth > MAX_DEPTH
                    else f"more than {MAX_NODES:,} values"
                )
                mark = self.peek_event().start_mark  # type: ignore[no-untyped-call]
                raise BoundsError(None, None, f"the config is {what}", mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def compose(text: str) -> yaml.Node | None:
    """The node tree of one YAML document (``None`` when empty).

    Raises:
        BoundsError: Over :data:`MAX_NODES` or :data:`MAX_DEPTH` (with the line).
        yaml.YAMLError: Not YAML, or several documents (a :class:`yaml.MarkedYAMLError`
            with the line where there is one).
    """
    loader = _BoundedLoader(text)
    try:
        node: yaml.Node | None = loader.get_single_node()
        return node
    finally:
        loader.dispose()


class _Builder:
    """Plain Python values from a node tree, reporting problems with their lines."""

    def __init__(self, path: str, errors: list[str]) -> None:
        self.path = path
        self.errors = errors
        self.count = 0
        self.over = False
        self._open: set[int] = set()  # ids of the collections being built: a cycle's mark
        self._scalars = yaml.SafeLoader("")

    def close(self) -> None:
        self._scalars.dispose()

    def _fail(self, node: yaml.Node, message: str) -> None:
        self.errors.append(f"{self.path}:{line_of(node)}: {message}")

    def build(self, node: yaml.Node, depth: int) -> object:
        self.count += 1
        if self.over:
            return None
        if self.count > MAX_NODES or depth > MAX_DEPTH:
            what = (
                f"more than {MAX_NODES:,} values"
                if self.count > MAX_NODES
                else f"nested more than {MAX_DEPTH} levels deep"
            )
            self._fail(node, f"the config is {what} once its aliases are expanded; write it out plainly")
            self.over = True
            return None
        if isinstance(node, (yaml.MappingNode, yaml.SequenceNode)):
            if id(node) in self._open:
                self._fail(node, "an alias refers to a value that contains it (a recursive alias)")
                self.over = True
                return None
            self._open.add(id(node))
            try:
                return (
                    self._mapping(node, depth)
                    if isinstance(node, yaml.MappingNode)
                    else self._sequence(node, depth)
                )
            finally:
                self._open.discard(id(node))
        return self._scalar(node)

    def _mapping(self, node: yaml.MappingNode, depth: int) -> dict[object, object]:
        out: dict[object, object] = {}
        for knode, vnode in node.value:
            key = self.build(knode, depth + 1)
            if self.over:
                break
            if not isinstance(key, (str, int, float, bool)):
                self._fail(knode, f"a key must be a plain word, got {shown(key)}")
                continue
            if key in out:
                self._fail(knode, f"duplicate key {shown(key)}")
            out[key] = self.build(vnode, depth + 1)
        return out

    def _sequence(self, node: yaml.SequenceNode, depth: int) -> list[object]:
        return [self.build(n, depth + 1) for n in node.value]

    def _scalar(self, node: yaml.Node) -> object:
        # Let the safe constructor decide ints, floats, bools, nulls, strings.
        try:
            return self._scalars.construct_object(node, deep=True)
        except yaml.YAMLError as e:
            self._fail(node, str(getattr(e, "problem", None) or e))
        except (ValueError, OverflowError, TypeError) as e:
            # PyYAML's constructors let these through: a date that does not exist, an
            # integer past Python's 4,300-digit limit (whose message names a Python call).
            why = "an integer of more than 4,300 digits" if "4300" in str(e) else str(e)
            self._fail(node, f"cannot read the value {shown(getattr(node, 'value', ''))}: {why}")
        return None


def to_python(root: yaml.Node, path: str, errors: list[str]) -> object:
    """Plain values (dicts, lists, scalars) from ``root``; problems go to ``errors`` as
    ``path:line: message``, and the value is then not to be used."""
    builder = _Builder(path, errors)
    try:
        return builder.build(root, 1)
    finally:
        builder.close()
