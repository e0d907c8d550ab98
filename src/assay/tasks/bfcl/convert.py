"""Java and JavaScript argument values: from their source text to Python values.

As the official checker converts them before type and value checks (``bfcl-eval`` 2026.3.23,
reference/bfcl.md §4.9), quirks kept on purpose: ``$`` matches before a final newline, Java
``char`` never converts, Java ``String`` keeps quotes, ``ArrayList`` string elements lose their
first and last character, ``Set``/``Hashtable``/``Queue``/``Stack`` raise ``NotImplementedError``,
an unparsable JavaScript array comes back as its stripped text.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = ["JAVA_COLLECTION_TYPES", "JAVA_TYPES", "JS_COLLECTION_TYPES", "JS_TYPES",
           "convert_java", "convert_js", "java_literal", "js_literal"]

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

# Compiled on first use (all of them take ~3 ms, a good part of importing the checker, and
# most runs never convert Java or JavaScript): numeric literals (used with .match, "$" as in
# Python re), Java collections (searched anywhere), JavaScript collections (matched at the
# start of the stripped text).
_SOURCES: dict[str, tuple[str, int]] = {
    "WHOLE": (r"-?\d+$", 0),
    "J_FLOAT": (r"(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)[fF]$", 0),
    "J_DOUBLE": (r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?$", 0),
    "J_LONG": (r"(-?\d+)[lL]$", 0),
    "JS_FLOAT": (r"-?\d+(?:\.\d+)?$", 0),
    "JS_BIGINT": (r"-?\d+n$", 0),
    "J_ARRAY": (r"new\s+\w+\[\]\s*\{(.*?)\}", 0),
    "J_AS_LIST": (r"new\s+ArrayList<\w*>\(Arrays\.asList\((.+?)\)\)", 0),
    "J_ADD_BLOCK": (r"new\s+ArrayList<\w*>\(\)\s*\{\{\s*(.+?)\s*\}\}", re.DOTALL),
    "J_ADD": (r"add\((.+?)\)", 0),
    "J_EMPTY_LIST": (r"new\s+ArrayList<\w*>\(\)", 0),
    "J_MAP": (r"new\s+HashMap<.*?>\s*\(\)\s*\{\s*\{?\s*(.*?)\s*\}?\s*\}", re.DOTALL),
    "J_PUT": (r"put\(\"(.*?)\",\s*(.*?)\)", 0),
    "J_EMPTY_MAP": (r"new\s+HashMap<.*?>\s*\(\)", 0),
    "JS_GRID": (r"\[\s*\[.*?\]\s*(?:,\s*\[.*?\]\s*)*\]"
                r"|\bnew\s+Array\(\s*\[.*?\]\s*(?:,\s*\[.*?\]\s*)*\)", 0),
    "JS_ROW": (r"\[(.*?)\]", 0),
    "JS_LIST": (r"\[(.*?)\]|\bnew\s+Array\((.*?)\)", 0),
    "JS_OBJECT": (r"\{(.*?)\}", 0),
    "JS_ENTRY": (r"([^:]+):\s*(.*?)(?:,\s*(?=[^,]+:)|$)", 0),
}


class _Patterns:
    def __getattr__(self, name: str) -> re.Pattern[str]:
        if name not in _SOURCES:
            raise AttributeError(name)
        compiled = re.compile(*_SOURCES[name])
        setattr(self, name, compiled)
        return compiled


_P = _Patterns()


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


def java_literal(text: str) -> Any:
    """An untyped Java literal (collection elements of unknown type, HashMap values)."""
    if text in ("true", "false"):
        return text == "true"
    if text.startswith('"') and text.endswith('"'):
        return text[1:-1]
    if _P.J_LONG.match(text):
        return int(text[:-1])
    m = _P.J_FLOAT.match(text)
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
    found = _P.J_ARRAY.search(text)
    if found is None:
        return text
    parts = [p.strip() for p in found.group(1).split(",")]
    if item_type:
        return [convert_java(p, item_type) for p in parts if p]
    return [java_literal(p) for p in parts if p]


def _java_array_list(text: str, item_type: str | None) -> Any:
    found = _P.J_AS_LIST.search(text)
    if found is not None:
        return [_java_element(p.strip(), item_type) for p in found.group(1).split(",")]
    found = _P.J_ADD_BLOCK.search(text)
    if found is not None:
        return [_java_element(a.strip(), item_type) for a in _P.J_ADD.findall(found.group(1))]
    if _P.J_EMPTY_LIST.search(text):
        return []
    return text


def _java_map(text: str) -> Any:
    found = _P.J_MAP.search(text)
    if found is not None:
        body = found.group(1)
        out: dict[str, Any] = {}
        if body.strip():
            for key, raw in _P.J_PUT.findall(body):
                out[key] = java_literal(raw.strip())
        return out
    if _P.J_EMPTY_MAP.search(text):
        return {}
    return text


def convert_java(value: str, java_type: str, item_type: str | None = None) -> Any:
    """Convert the Java source text ``value`` for a parameter declared ``java_type``
    (``item_type``: the element type of ``Array``/``ArrayList``); text that does not fit stays."""
    if java_type not in JAVA_TYPES:
        raise ValueError(f"unsupported Java type: {java_type}")
    if java_type in ("integer", "short", "byte"):
        return int(value) if _P.WHOLE.match(value) else value
    if java_type == "float":
        m = _P.J_FLOAT.match(value)
        return float(m.group(1)) if m else value
    if java_type == "double":
        return float(value) if _P.J_DOUBLE.match(value) else value
    if java_type == "long":
        m = _P.J_LONG.match(value)
        return int(m.group(1)) if m else value
    if java_type == "boolean":
        return {"true": True, "false": False}.get(value, value)
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


def _js_quoted(text: str) -> bool:
    return text[:1] in ("'", '"') and text.endswith(text[:1])


def js_literal(text: str) -> Any:
    """An untyped JavaScript literal (array elements of unknown type, object values)."""
    text = text.strip()
    if text in ("true", "false"):
        return text == "true"
    if _js_quoted(text):
        return text[1:-1]
    return _number(text)


def _js_array(text: str, item_type: str | None) -> Any:
    code = text.strip()
    try:
        grid = _P.JS_GRID.match(code)
        if grid is not None:
            rows = []
            for n, row in enumerate(_P.JS_ROW.findall(grid.group(0))):
                row = row.strip()
                if n == 0 and row.startswith("["):
                    row = row[1:]
                rows.append([js_literal(cell.strip()) for cell in row.split(",")])
            return rows
        flat = _P.JS_LIST.match(code)
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
    found = _P.JS_OBJECT.match(code)
    if found is None:
        return code
    try:
        out: dict[str, Any] = {}
        for key, raw in _P.JS_ENTRY.findall(found.group(1)):
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
    """Convert the JavaScript source text ``value`` for a parameter declared ``js_type``
    (``item_type``: the element type of ``array``); text that does not fit stays."""
    if js_type not in JS_TYPES:
        raise ValueError(f"unsupported JavaScript type: {js_type}")
    if js_type == "String":
        return value[1:-1] if _js_quoted(value) else value
    if js_type == "integer":
        return int(value) if _P.WHOLE.match(value) else value
    if js_type == "float":
        return float(value) if _P.JS_FLOAT.match(value) else value
    if js_type == "Bigint":
        return int(value[:-1]) if _P.JS_BIGINT.match(value) else value
    if js_type == "Boolean":
        return {"true": True, "false": False}.get(value, value)
    if js_type == "array":
        return _js_array(value, item_type)
    if js_type == "dict":
        return _js_object(value)
    return value  # any
