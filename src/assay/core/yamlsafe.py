"""The one YAML loader for every file assay reads: safe loader, duplicate keys refused, at most
:data:`MAX_BYTES`, aliases expanded to at most :data:`ALIAS_BUDGET` extra nodes (alias bombs),
never recursive; every failure one :class:`ConfigError` line: ``FILE:LINE: invalid YAML: ...``."""

from __future__ import annotations

import collections.abc
from pathlib import Path
from typing import Any

import yaml

from assay.errors import ConfigError

MAX_BYTES = 8 * 1024 * 1024
#: nodes that aliases may add when expanded, beyond the nodes written in the file
ALIAS_BUDGET = 100_000


class YamlError(ConfigError):
    """``where:line: invalid YAML: problem``; ``line`` (1-based) and ``problem`` are kept
    apart for a reader that words its errors its own way."""

    def __init__(self, where: str | Path, problem: str, line: int | None = None) -> None:
        self.where, self.problem, self.line = str(where), problem, line
        super().__init__(f"{where}{f':{line}' if line else ''}: invalid YAML: {problem}")


class SafeYamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader that refuses a key given twice or a key that is not hashable."""

    #: where the node being built starts (for the line of a value Python refuses)
    last_mark: Any = None

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        self.last_mark = node.start_mark
        return super().construct_object(node, deep=deep)


def _mapping(loader: SafeYamlLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    # the keys written here must be unique; ``<<: *base`` merges may be overridden by them
    own = {id(k) for k, _ in node.value if k.tag != "tag:yaml.org,2002:merge"}
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if not isinstance(key, collections.abc.Hashable):
            raise yaml.constructor.ConstructorError(
                None, None, f"a key must be a scalar, not a {type(key).__name__}",
                key_node.start_mark)
        if id(key_node) not in own:
            continue
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


SafeYamlLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def yaml_error(where: str | Path, e: yaml.YAMLError) -> YamlError:
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = getattr(e, "problem", None) or (str(e).splitlines() or ["unreadable"])[0]
    return YamlError(where, problem, mark.line + 1 if mark is not None else None)


def _expanded_size(root: yaml.Node, where: str | Path) -> tuple[int, int]:
    """(nodes written, nodes once aliases are expanded); a node holding itself is refused.
    Each node is visited once: this costs the file's size, never its expansion's."""
    size: dict[int, int] = {}
    state: dict[int, int] = {}  # 1: being visited, 2: done
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, leaving = stack.pop()
        key = id(node)
        children: list[yaml.Node] = []
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [n for pair in node.value for n in pair]
        if leaving:
            size[key] = 1 + sum(size[id(c)] for c in children)
            state[key] = 2
            continue
        if state.get(key) == 2:
            continue
        if state.get(key) == 1:  # reached again while its own children are being walked
            raise YamlError(where, "an alias refers to a node that contains it",
                            node.start_mark.line + 1)
        state[key] = 1
        stack.append((node, True))
        for c in children:
            if state.get(id(c)) == 1:
                raise YamlError(where, "an alias refers to a node that contains it",
                                c.start_mark.line + 1)
            if state.get(id(c)) != 2:
                stack.append((c, False))
    return len(size), size[id(root)]


def parse_yaml(text: str, where: str | Path) -> tuple[Any, yaml.Node | None]:
    """The document in ``text`` and its node tree (for line numbers); ``where`` names the file."""
    if len(text) > MAX_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_BYTES:
        raise YamlError(where, f"the file is over {MAX_BYTES // (1024 * 1024)} MiB; a YAML "
                        "file assay reads is smaller")
    try:
        loader = SafeYamlLoader(text)
    except yaml.YAMLError as e:  # a character YAML does not allow (NUL, ...)
        raise yaml_error(where, e) from None
    try:
        node = loader.get_single_node()
        if node is None:
            return None, None
        written, expanded = _expanded_size(node, where)
        if expanded - written > ALIAS_BUDGET:
            raise YamlError(where, f"its aliases expand to {expanded:,} nodes ({written:,} "
                            f"written); at most {ALIAS_BUDGET:,} more than written are read")
        return loader.construct_document(node), node
    except yaml.YAMLError as e:
        raise yaml_error(where, e) from None
    except RecursionError:
        raise YamlError(where, "nested too deeply to read") from None
    except (TypeError, ValueError, OverflowError) as e:
        # e.g. "Exceeds the limit (4300 digits) for integer string", "month must be in 1..12"
        mark = loader.last_mark
        raise YamlError(where, " ".join(str(e).split())[:160],
                        mark.line + 1 if mark is not None else None) from None
    finally:
        loader.dispose()


def key_lines(node: yaml.Node | None) -> dict[tuple[Any, ...], int]:
    """The 1-based line of every key and item under ``node``, by its path of keys and
    indexes (a validator's error location)."""
    out: dict[tuple[Any, ...], int] = {}
    stack: list[tuple[yaml.Node, tuple[Any, ...]]] = [(node, ())] if node is not None else []
    while stack:
        node, path = stack.pop()
        out.setdefault(path, node.start_mark.line + 1)
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                out[(*path, key_node.value)] = key_node.start_mark.line + 1
                stack.append((value_node, (*path, key_node.value)))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, (*path, i)) for i, item in enumerate(node.value))
    return out


def load_yaml(text: str, where: str | Path) -> Any:
    return parse_yaml(text, where)[0]


def read_yaml_text(path: Path, what: str) -> str:
    """A YAML file's text, size-checked before it is read; one-line errors naming it."""
    try:
        size = path.stat().st_size
    except OSError as e:
        raise ConfigError(f"cannot read {what} {path}: {e.strerror or e}") from None
    if size > MAX_BYTES:
        raise ConfigError(f"{path}: the {what} is over {MAX_BYTES // (1024 * 1024)} MiB; a "
                          "YAML file assay reads is smaller")
    try:
        with open(path, encoding="utf-8") as f:
            return f.read(MAX_BYTES + 1)
    except UnicodeDecodeError as e:
        raise ConfigError(f"{path}: the {what} is not UTF-8 text ({e.reason} at byte "
                          f"{e.start})") from None
    except OSError as e:
        raise ConfigError(f"cannot read {what} {path}: {e.strerror or e}") from None
