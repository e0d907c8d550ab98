"""A safe executor for BFCL multi-turn calls: the official result strings, without ``eval``.

Only a public method of an involved instance, by bare name, with literal arguments runs (on the
real bound method); results, errors and the blacklist are formatted as officially. Anything else
is refused unrun, with ``eval``'s own error text where ``eval`` fails before running anything,
else :data:`REFUSAL`. Unlike the official rewrite, method names inside string literals stay.
"""

from __future__ import annotations

import ast
import builtins
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["BLACKLIST", "REFUSAL", "execute_call", "execute_calls", "format_result"]

#: names the official executor refuses before evaluating (multi_turn_utils.py)
BLACKLIST = frozenset({"kill", "exit", "quit", "remove", "unlink", "popen", "Popen", "run"})
#: the text of a refusal where the official code has none (it would run the code)
REFUSAL = ("only a call of one of the available functions, by name, with literal arguments "
           "can be executed")
_METHOD_NAME = re.compile(r"\b([a-zA-Z_]\w*)\s*(?=\()")


def format_result(value: Any) -> str:
    """A method's return value as the official executor turns it into a string."""
    if type(value) is str:  # noqa: E721 - the official rule is on the exact type
        return value
    if type(value) is dict:  # noqa: E721
        try:
            return json.dumps(value)
        except Exception:  # noqa: BLE001 - the official fallback for any failure
            return str(value)
    return str(value)


def _error(text: Any) -> str:
    return f"Error during execution: {text}"


def _blacklisted(call: str, methods: Mapping[str, Any]) -> str | None:
    """The name the official blacklist check reads (after its method-name rewrite)."""
    rewritten = _METHOD_NAME.sub(
        lambda m: f"I.{m.group(1)}" if m.group(1) in methods else m.group(1), call)
    head = rewritten.split("(")[0] if "(" in rewritten else rewritten
    if "." in head:
        head = head.split(".")[1]
    return head if head in BLACKLIST else None


#: names the official ``eval`` resolves without an instance (builtins, ``multi_turn_utils``
#: globals, ``<model>_<id>_<Class>_instance`` entries): refused here, as using one runs code
_OFFICIAL_GLOBALS = frozenset({
    "__name__", "__doc__", "__package__", "__loader__", "__spec__", "__file__", "__cached__",
    "__builtins__", "copy", "importlib", "inspect", "json", "re", "CLASS_FILE_PATH_MAPPING",
    "STATELESS_CLASSES", "execute_multi_turn_func_call", "is_empty_execute_response",
    "_process_method_calls"})


def _resolvable(name: str) -> bool:
    """Whether the official ``eval`` would find ``name`` (a method only where ``(`` follows)."""
    return (name in _OFFICIAL_GLOBALS or name in vars(builtins)
            or name.endswith("_instance"))


class _Refused(Exception):
    """A call that is not run; the message is the result's error text."""


def _probe(node: ast.AST, methods: Mapping[str, Any]) -> None:
    """Walk ``node`` in ``eval``'s order: raise ``_Refused`` (``NameError`` text for an unknown
    name first, else :data:`REFUSAL`) before any step that would run code; return for pure ones."""
    if isinstance(node, ast.Name):
        if _resolvable(node.id):
            raise _Refused(REFUSAL)  # an object from the official namespace: code would run
        raise _Refused(f"name '{node.id}' is not defined")  # inf, nan, true, ls (no "(")
    if isinstance(node, ast.Call):
        if not (isinstance(node.func, ast.Name) and node.func.id in methods):
            _probe(node.func, methods)
        for arg in node.args:
            _probe(arg, methods)
        for kw in node.keywords:
            _probe(kw.value, methods)
        raise _Refused(REFUSAL)  # a nested call: the official code would run it
    if isinstance(node, ast.Attribute):
        _probe(node.value, methods)
        raise _Refused(REFUSAL)  # attribute access (dunders, module functions)
    if isinstance(node, ast.Dict):  # evaluated key, value, key, value, ...
        for key, value in zip(node.keys, node.values, strict=True):
            if key is not None:
                _probe(key, methods)
            _probe(value, methods)
        return
    if isinstance(node, (ast.Lambda, ast.NamedExpr, ast.ListComp, ast.SetComp, ast.DictComp,
                         ast.GeneratorExp, ast.Await, ast.Yield, ast.YieldFrom,
                         ast.JoinedStr, ast.FormattedValue)):
        raise _Refused(REFUSAL)
    for child in ast.iter_child_nodes(node):
        _probe(child, methods)


def _literal(node: ast.AST, methods: Mapping[str, Any]) -> Any:
    """An argument's value; raises ``_Refused`` for anything that is not a literal."""
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        pass
    _probe(node, methods)
    raise _Refused(REFUSAL)  # pure but not a literal (2*3, 'a'+'b'): evaluated officially


def _parse(call: str, methods: Mapping[str, Any]) -> tuple[Callable[..., Any], list[Any],
                                                           dict[str, Any]]:
    # the builtin eval() strips leading spaces and tabs of a source string; ast.parse does not
    source = call.lstrip(" \t")
    try:
        tree = ast.parse(source, filename="<string>", mode="eval")
        # the compiler's own checks (a repeated keyword, ...) without running anything
        compile(tree, "<string>", "eval", dont_inherit=True)
    except SyntaxError as e:
        raise _Refused(str(e)) from e
    except (ValueError, MemoryError, RecursionError) as e:  # NUL bytes, absurd nesting
        raise _Refused(str(e) or type(e).__name__) from e
    body = tree.body
    try:
        if not (isinstance(body, ast.Call) and isinstance(body.func, ast.Name)
                and body.func.id in methods):
            _probe(body, methods)
            raise _Refused(REFUSAL)
        method = methods[body.func.id]
        args: list[Any] = []
        for node in body.args:
            if isinstance(node, ast.Starred):
                _probe(node.value, methods)
                raise _Refused(REFUSAL)
            args.append(_literal(node, methods))
        kwargs: dict[str, Any] = {}
        for kw in body.keywords:
            if kw.arg is None:  # **mapping
                _probe(kw.value, methods)
                raise _Refused(REFUSAL)
            kwargs[kw.arg] = _literal(kw.value, methods)
    except RecursionError as e:  # an absurdly deep literal
        raise _Refused(REFUSAL) from e
    return method, args, kwargs


def execute_call(call: str, methods: Mapping[str, Any]) -> str:
    """Run one call string against ``methods`` (name -> bound method); its result string."""
    if not isinstance(call, str):
        return _error(REFUSAL)
    name = _blacklisted(call, methods)
    if name is not None:
        return _error(f"Function call {name} is not allowed.")
    try:
        method, args, kwargs = _parse(call, methods)
    except _Refused as e:
        return _error(e)
    try:
        return format_result(method(*args, **kwargs))
    except Exception as e:  # noqa: BLE001 - every failure becomes the official error text
        return _error(e)


def execute_calls(calls: list[str], methods: Mapping[str, Any]) -> list[str]:
    """Run call strings in order (each sees the state the previous ones left)."""
    return [execute_call(c, methods) for c in calls]
