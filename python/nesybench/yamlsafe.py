"""YAML from users, read with a safe loader whose aliases cannot blow up.

``yaml.safe_load`` runs no code, but an alias is a reference: a 700-byte "billion laughs"
document (``a: &a [x, x, ...]``, ``b: &b [*a, *a, ...]`` ...) is a small graph that every
consumer walking it as a tree (validation, JSON, a grid expansion) sees as 10⁹ nodes. The
loader here composes the document as usual, then counts its nodes **with aliases expanded**
(shared nodes counted once per use, in linear time) and refuses a document over
:data:`MAX_YAML_NODES`, and any recursive alias, with a ``yaml.YAMLError`` that the callers
word as ``FILE:LINE:COLUMN: YAML does not parse: ...``.

A mapping that names a key twice is refused the same way (``found duplicate key 'x'``):
PyYAML keeps the last value, so an appended key would silently replace the first. Keys merged
in with ``<<: *base`` may be overridden, as YAML intends.
"""
from __future__ import annotations

import yaml

#: the most nodes a YAML document may expand to (aliases counted at every use)
MAX_YAML_NODES = 1_000_000


class BoundedLoaderError(yaml.composer.ComposerError):
    """A document that expands too far (or refers to itself) through aliases."""


def expanded_size(node: yaml.Node, limit: int = MAX_YAML_NODES) -> int:
    """Nodes of ``node`` with aliases expanded (computed in time linear in the distinct
    nodes); raises :class:`BoundedLoaderError` over ``limit`` or on a cycle."""
    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(node, False)]
    while stack:
        n, done = stack.pop()
        key = id(n)
        if done:
            on_path.discard(key)
            total = 1 + sum(sizes[id(c)] for c in _children(n))
            if total > limit:
                raise BoundedLoaderError(
                    None, None, f"the document expands to more than {limit:,} nodes through "
                    "its aliases (an alias bomb); write the values out instead", n.start_mark)
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise BoundedLoaderError(None, None, "an alias refers to a node that contains it "
                                     "(a recursive structure)", n.start_mark)
        on_path.add(key)
        stack.append((n, True))
        for c in _children(n):
            if id(c) in on_path:
                raise BoundedLoaderError(None, None, "an alias refers to a node that contains "
                                         "it (a recursive structure)", c.start_mark)
            if id(c) not in sizes:
                stack.append((c, False))
    return sizes[id(node)]


def _children(n: yaml.Node):
    if isinstance(n, yaml.SequenceNode):
        return n.value
    if isinstance(n, yaml.MappingNode):
        return [x for pair in n.value for x in pair]
    return ()


class SafeLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` refusing documents that expand past :data:`MAX_YAML_NODES` and
    mappings that name a key twice."""

    max_nodes = MAX_YAML_NODES

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge" or \
                        not isinstance(key_node, yaml.ScalarNode):
                    continue
                key = self.construct_object(key_node, deep=False)
                try:
                    first = seen.setdefault(key, key_node)
                except TypeError:           # an unhashable key: PyYAML words that error
                    continue
                if first is not key_node:
                    raise yaml.constructor.ConstructorError(
                        "while constructing a mapping", node.start_mark,
                        f"found duplicate key {str(key)[:80]!r} (each key once: a repeated "
                        "key would silently replace the first)", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)

    def compose_document(self):
        node = super().compose_document()
        if node is not None:
            expanded_size(node, self.max_nodes)
        return node


def safe_load(stream):
    """``yaml.safe_load`` with the alias bound of :class:`SafeLoader`."""
    return yaml.load(stream, Loader=SafeLoader)  # noqa: S506 - a SafeLoader subclass


def load_yaml(text: str, source: str | None = None):
    """:func:`safe_load` with every problem one :class:`~nesybench.errors.NesyError`."""
    from .errors import yaml_error  # noqa: PLC0415

    try:
        return safe_load(text)
    except (yaml.YAMLError, RecursionError) as exc:
        raise yaml_error(exc, source) from None


__all__ = ["SafeLoader", "safe_load", "load_yaml", "expanded_size", "MAX_YAML_NODES"]
