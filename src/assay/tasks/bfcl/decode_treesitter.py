"""BFCL prompt mode, Java and JavaScript: calls read from tree-sitter parse trees, as
officially (quirks: :mod:`assay.tasks.bfcl.decode`); tree-sitter is imported on first use."""

from __future__ import annotations

import threading
from typing import Any

from assay.tasks.bfcl.decode_error import DecodeError

__all__ = ["decode_java", "decode_javascript"]

_TS_LOCAL = threading.local()


def _new_parser(language: str) -> Any:
    """A tree-sitter parser; works with the 0.21 API and the >= 0.22 API."""
    import tree_sitter  # heavy

    if language == "java":
        import tree_sitter_java as grammar  # heavy
    else:
        import tree_sitter_javascript as grammar  # heavy
    handle = grammar.language()
    try:
        lang = tree_sitter.Language(handle)  # tree_sitter >= 0.22
    except TypeError:
        lang = tree_sitter.Language(handle, language)  # tree_sitter 0.21
    if hasattr(tree_sitter.Parser(), "set_language"):
        parser = tree_sitter.Parser()
        parser.set_language(lang)
    else:
        parser = tree_sitter.Parser(lang)
    return parser


def _parse_tree(language: str, source: str) -> Any:
    """Parse ``source``; fail like the official parsers when the tree holds an ERROR node."""
    parsers = getattr(_TS_LOCAL, "parsers", None)
    if parsers is None:
        parsers = _TS_LOCAL.parsers = {}
    if language not in parsers:
        parsers[language] = _new_parser(language)
    try:
        data = source.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise DecodeError(f"text cannot be encoded: {exc}") from exc
    root = parsers[language].parse(data).root_node
    if root.has_error:  # ERROR or MISSING somewhere; only ERROR makes the official fail
        stack = [root]
        while stack:
            node = stack.pop()
            if node.type == "ERROR":
                raise DecodeError(f"{language} syntax error in the call text")
            stack.extend(node.children)
    return root


def _no_duplicates(params: dict[Any, list[str]]) -> dict[Any, str]:
    for name, values in params.items():
        if len(values) > 1:
            raise DecodeError(f"argument {name!r} given more than once")
    return {name: values[0] for name, values in params.items()}


def decode_java(source: str) -> Any:
    """The first call in Java call text (outer brackets cut off), as the official decoder
    gives it: ``[{name: {param: source_text}}]``, or ``{}`` when there is none."""
    root = _parse_tree("java", source)

    def text(node: Any) -> str:
        # Official quirk: byte offsets used to slice the *str*.
        return source[node.start_byte:node.end_byte]

    def render(node: Any, nested: bool) -> str:
        kind = node.type
        if kind in ("string_literal", "character_literal"):
            return text(node) if nested else text(node)[1:-1]
        if kind in ("identifier", "class_literal", "type_identifier", "method_invocation"):
            return text(node)
        if kind == "array_creation_expression":
            elem_type = node.child_by_field_name("type")
            init = node.child_by_field_name("value")
            if elem_type is None or init is None:
                raise DecodeError("array creation without an initializer")
            return f"new {render(elem_type, True)}[]{render(init, True)}"
        if kind == "object_creation_expression":
            obj_type = node.child_by_field_name("type")
            if obj_type is None:
                raise DecodeError("object creation without a type")
            args = node.child_by_field_name("arguments")
            inner = "" if args is None else ", ".join(
                render(c, True) for c in args.children if c.type not in (",", "(", ")"))
            return f"new {render(obj_type, True)}({inner})"
        if kind == "set":
            items = (render(c, True) for c in node.children if c.type not in (",", "set"))
            return "{" + ", ".join(items) + "}"
        if node.child_count:
            return "".join(render(c, True) for c in node.children)
        return text(node)

    def first_call(node: Any) -> list[dict[str, dict[Any, str]]] | None:
        if node.type == "method_invocation":
            name = text(node.child_by_field_name("name"))
            owner = node.child_by_field_name("object")
            if owner is not None:
                name = f"{text(owner)}.{name}"
            args = node.child_by_field_name("arguments")
            if args is None:
                return None
            params: dict[Any, list[str]] = {}
            for child in args.children:
                if child.type == "assignment_expression":
                    key: Any = text(child.children[0])
                    params.setdefault(key, []).append(render(child.children[2], False))
                elif child.type in ("identifier", "class_literal", "set"):
                    params.setdefault(None, []).append(render(child, False))
            return [{name: _no_duplicates(params)}]
        for child in node.children:
            found = first_call(child)
            if found:
                return found
        return None

    found = first_call(root)
    return found if found else {}


def decode_javascript(source: str) -> Any:
    """The first call in JavaScript call text (outer brackets cut off), as the official
    decoder gives it: ``[{name: {param: source_text}}]``, or ``None``."""
    root = _parse_tree("javascript", source)
    if root.type != "program":  # pragma: no cover - the grammar's root is always program
        return None
    for statement in root.children:
        if statement.type != "expression_statement":
            continue
        for expr in statement.children:
            if expr.type != "call_expression":
                continue
            name = expr.children[0].text.decode("utf-8")
            params: dict[Any, list[str]] = {}
            for child in expr.children[1].children:
                if child.type == "assignment_expression":
                    key = child.children[0].text.decode("utf-8")
                    value = child.children[2].text.decode("utf-8")
                    if len(value) >= 1 and value[0] == value[-1] and value[0] in "\"'":
                        value = value[1:-1]
                    params.setdefault(key, []).append(value)
                elif child.type in ("identifier", "true"):
                    params.setdefault(None, []).append(child.text.decode("utf-8"))
            return [{name: _no_duplicates(params)}]
    return None
