"""Java and JavaScript argument values: from their source text to Python values.

BFCL's Java and JavaScript categories expect every argument as a *string* holding the
literal as it would be written in that language (``"800"``, ``"1.5f"``, ``"7L"``,
``"new ArrayList<>(Arrays.asList(1, 2))"``, ``"[1, 2]"``, ...). Before the ordinary
type and value checks the official checker turns that text into a Python value; text
that does not fit the declared type is returned unchanged (a ``str``), so it fails the
type check that follows. This module reproduces those conversions, quirks included
(reference/bfcl.md §4.9): the patterns below are the accepted syntax, stated as facts
of the official ``bfcl-eval`` 2026.3.23 behaviour.

Notable consequences that are kept on purpose:

- ``$`` in the numeric patterns also matches before a final newline (``"5\\n"`` is 5).
- Java ``char`` never converts (the official pattern cannot match); the text stays.
- Java ``String``/``any`` keep their quotes; JavaScript ``String`` drops one pair.
- Java ``Array`` elements go through the element-type conversion (``String`` elements
  keep their quotes), while ``ArrayList`` elements of type ``String``/``char`` lose
  their first and last character whether or not they are quotes.
- Java ``Set``/``Hashtable``/``Queue``/``Stack`` raise ``NotImplementedError``; a type
  outside the tables raises ``ValueError``.
- A JavaScript array that cannot be parsed comes back as its *stripped* text.

Only the standard library is used; nothing here does I/O.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "JAVA_COLLECTION_TYPES",
    "JAVA_TYPES",
    "JS_COLLECTION_TYPES",
    "JS_TYPES",
    "convert_java",
    "convert_js",
    "java_literal",
    "js_literal",
]

#: Declared Java type -> Python type the converted value must have.
JAVA_TYPES: dict[str, type] = {
    "byte": int, "short": int, "integer": int, "long": int,
    "float": float, "double": float,
    "boolean": bool, "char": str, "String": str, "any": str,
    "Array": list, "ArrayList": list, "Queue": list, "Stack": list,
    "Set": set, "HashMap": dict, "Hashtable": dict,
}

#: Declared JavaScript type -> Python type the converted value must have.
JS_TYPES: dict[str, type] = {
    "String": str, "integer": int, "float": float, "Bigint": int, "Boolean": bool,
    "dict": dict, "array": list, "any": str,
}

#: Declared types whose elements are converted with the ``items`` type.
JAVA_COLLECTION_TYPES = frozenset({"Array", "ArrayList"})
JS_COLLECTION_TYPES = frozenset({"array"})

_UNSUPPORTED_JAVA = frozenset({"Set", "Hashtable", "Queue", "Stack"})

# The patterns are compiled on first use: compiling them takes about 3 ms, a good part of
# the time it takes to import the checker, and most runs never convert Java or JavaScript.
_WHOLE: re.Pattern[str]
_J_FLOAT: re.Pattern[str]
_J_DOUBLE: re.Pattern[str]
_J_LONG: re.Pattern[str]
_JS_FLOAT: re.Pattern[str]
_JS_BIGINT: re.Pattern[str]
_J_ARRAY: re.Pattern[str]
_J_AS_LIST: re.Pattern[str]
_J_ADD_BLOCK: re.Pattern[str]
_J_ADD: re.Pattern[str]
_J_EMPTY_LIST: re.Pattern[str]
_J_MAP: re.Pattern[str]
_J_PUT: re.Pattern[str]
_J_EMPTY_MAP: re.Pattern[str]
_JS_GRID: re.Pattern[str]
_JS_ROW: re.Pattern[str]
_JS_LIST: re.Pattern[str]
_JS_OBJECT: re.Pattern[str]
_JS_ENTRY: re.Pattern[str]
_COMPILED = False


def _compile_patterns() -> None:
    global _WHOLE, _J_FLOAT, _J_DOUBLE, _J_LONG, _JS_FLOAT, _JS_BIGINT
    global _J_ARRAY, _J_AS_LIST, _J_ADD_BLOCK, _J_ADD, _J_EMPTY_LIST, _J_MAP, _J_PUT, _J_EMPTY_MAP
    global _JS_GRID, _JS_ROW, _JS_LIST, _JS_OBJECT, _JS_ENTRY
    global _COMPILED
    # -- numeric literals (used with .match, so anchored at the start; "$" as in Python re) --
    _WHOLE = re.compile(r"-?\d+$")
    _J_FLOAT = re.compile(r"(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)[fF]$")
    _J_DOUBLE = re.compile(r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$")
    _J_LONG = re.compile(r"(-?\d+)[lL]$")
    _JS_FLOAT = re.compile(r"-?\d+(?:\.\d+)?$")
    _JS_BIGINT = re.compile(r"-?\d+n$")

    # -- Java collections (searched anywhere in the text) --
    _J_ARRAY = re.compile(r"new\s+\w+\[\]\s*\{(.*?)\}")
    _J_AS_LIST = re.compile(r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)")
    _J_ADD_BLOCK = re.compile(r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", re.DOTALL)
    _J_ADD = re.compile(r"add\((.+?)\)")
    _J_EMPTY_LIST = re.compile(r"new\s+ArrayList<\w*>\(\)")
    _J_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", re.DOTALL)
    _J_PUT = re.compile(r"put\(\"(.*?)\",\s*(.*?)\)")
    _J_EMPTY_MAP = re.compile(r"new\s+HashMap<.*?>\s*\(\)")

    # -- JavaScript collections (matched at the start of the stripped text) --
    _JS_GRID = re.compile(
        r"\[\s*\[.*?\]\s*(?:,\s*\[.*?\]\s*)*\]|\bnew\s+Array\(\s*\[.*?\]\s*(?:,\s*\[.*?\]\s*)*\)"
    )
    _JS_ROW = re.compile(r"\[(.*?)\]")
    _JS_LIST = re.compile(r"\[(.*?)\]|\bnew\s+Array\((.*?)\)")
    _JS_OBJECT = re.compile(r"\{(.*?)\}")
    _JS_ENTRY = re.compile(r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)")
    _COMPILED = True


def _number(text: str) -> Any:
    """``int`` if Python can read it as one, else ``float``, else the text itself."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return text


# ------------------------------------------------------------------------------- Java


def java_literal(text: str) -> Any:
    """An untyped Java literal (collection elements of unknown type, HashMap values)."""
    if not _COMPILED:
        _compile_patterns()
    if text == "true":
        return True
    if text == "false":
        return False
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _J_LONG.match(text):
        return int(text[:-1])
    m = _J_FLOAT.match(text)
    if m:
        return float(m.group(1))
    return _number(text)


def _java_element(text: str, item_type: str | None) -> Any:
    """One ``ArrayList`` element: String/char lose their outer characters."""
    if item_type == "char" or item_type == "String":
        return text[1:-1]
    if item_type:
        return convert_java(text, item_type)
    return java_literal(text)


def _java_array(text: str, item_type: str | None) -> Any:
    found = _J_ARRAY.search(text)
    if found is None:
        return text
    parts = [p.strip() for p in found.group(1).split(",")]
    if item_type:
        return [convert_java(p, item_type) for p in parts if p]
    return [java_literal(p) for p in parts if p]


def _java_array_list(text: str, item_type: str | None) -> Any:
    found = _J_AS_LIST.search(text)
    if found is not None:
        return [_java_element(p.strip(), item_type) for p in found.group(1).split(",")]
    found = _J_ADD_BLOCK.search(text)
    if found is not None:
        return [_java_element(a.strip(), item_type) for a in _J_ADD.findall(found.group(1))]
    if _J_EMPTY_LIST.search(text):
        return []
    return text


def _java_map(text: str) -> Any:
    found = _J_MAP.search(text)
    if found is not None:
        body = found.group(1)
        out: dict[str, Any] = {}
        if body.strip():
            for key, raw in _J_PUT.findall(body):
                out[key] = java_literal(raw.strip())
        return out
    if _J_EMPTY_MAP.search(text):
        return {}
    return text


def convert_java(value: str, java_type: str, item_type: str | None = None) -> Any:
    """Convert the Java source text ``value`` for a parameter declared ``java_type``.

    ``item_type`` is the declared element type of ``Array``/``ArrayList`` parameters.
    Text that does not fit the type is returned unchanged. ``Set``, ``Hashtable``,
    ``Queue`` and ``Stack`` raise ``NotImplementedError``; unknown types ``ValueError``.
    """
    if java_type not in JAVA_TYPES:
        raise ValueError(f"unsupported Java type: {java_type}")
    if not _COMPILED:
        _compile_patterns()
    if java_type in ("integer", "short", "byte"):
        return int(value) if _WHOLE.match(value) else value
    if java_type == "float":
        m = _J_FLOAT.match(value)
        return float(m.group(1)) if m else value
    if java_type == "double":
        return float(value) if _J_DOUBLE.match(value) else value
    if java_type == "long":
        m = _J_LONG.match(value)
        return int(m.group(1)) if m else value
    if java_type == "boolean":
        if value == "true":
            return True
        return False if value == "false" else value
    if java_type == "Array":
        return _java_array(value, item_type)
    if java_type == "ArrayList":
        return _java_array_list(value, item_type)
    if java_type == "HashMap":
        return _java_map(value)
    if java_type in _UNSUPPORTED_JAVA:
        raise NotImplementedError(f"conversion of Java {java_type} is not implemented")
    # String, any, and char (whose official pattern never matches): the text itself.
    return value


# ------------------------------------------------------------------------- JavaScript


def js_literal(text: str) -> Any:
    """An untyped JavaScript literal (array elements of unknown type, object values)."""
    if not _COMPILED:
        _compile_patterns()
    text = text.strip()
    if text == "true":
        return True
    if text == "false":
        return False
    if (text.startswith('"') and text.endswith('"')) or (
        text.startswith("'") and text.endswith("'")
    ):
        return text[1:-1]
    return _number(text)


def _js_array(text: str, item_type: str | None) -> Any:
    code = text.strip()
    try:
        grid = _JS_GRID.match(code)
        if grid is not None:
            rows = []
            for n, row in enumerate(_JS_ROW.findall(grid.group(0))):
                row = row.strip()
                if n == 0 and row.startswith("["):
                    row = row[1:]
                rows.append([js_literal(cell.strip()) for cell in row.split(",")])
            return rows
        flat = _JS_LIST.match(code)
        if flat is None:
            return code
        body = flat.group(1) if flat.group(1) is not None else flat.group(2)
        body = (body or "").strip()
        parts = body.split(",") if body else []
        if not item_type:
            return [js_literal(p.strip()) for p in parts]
        out = []
        for p in parts:
            p = p.strip()
            if p.startswith(("'", '"')):
                out.append(convert_js(p, item_type, "String"))
            else:
                out.append(convert_js(p, item_type))
        return out
    except Exception:  # the official parser falls back to the text on any error
        return code


def _js_object(text: str) -> Any:
    code = text.strip()
    if code == "{}":
        return {}
    found = _JS_OBJECT.match(code)
    if found is None:
        return code
    try:
        out: dict[str, Any] = {}
        for key, raw in _JS_ENTRY.findall(found.group(1)):
            key = key.strip().strip("'\"")
            raw = raw.strip()
            if raw.startswith("[") and raw.endswith("]"):
                out[key] = _js_array(raw, None)
            elif raw.startswith("{") and raw.endswith("}"):
                out[key] = _js_object(raw)
            else:
                out[key] = js_literal(raw.strip("'\""))
        return out
    except Exception:  # pragma: no cover - same fallback as the official parser
        return code


def convert_js(value: str, js_type: str, item_type: str | None = None) -> Any:
    """Convert the JavaScript source text ``value`` for a parameter declared ``js_type``.

    ``item_type`` is the declared element type of ``array`` parameters. Text that does
    not fit the type is returned unchanged (arrays: stripped); unknown types raise
    ``ValueError``.
    """
    if js_type not in JS_TYPES:
        raise ValueError(f"unsupported JavaScript type: {js_type}")
    if not _COMPILED:
        _compile_patterns()
    if js_type == "String":
        if (value.startswith('"') and value.endswith('"')) or (
            value.startswith("'") and value.endswith("'")
        ):
            return value[1:-1]
        return value
    if js_type == "integer":
        return int(value) if _WHOLE.match(value) else value
    if js_type == "float":
        return float(value) if _JS_FLOAT.match(value) else value
    if js_type == "Bigint":
        return int(value[:-1]) if _JS_BIGINT.match(value) else value
    if js_type == "Boolean":
        if value == "true":
            return True
        return False if value == "false" else value
    if js_type == "array":
        return _js_array(value, item_type)
    if js_type == "dict":
        return _js_object(value)
    return value  # any
