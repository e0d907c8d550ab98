"""assay's tolerant extraction of BFCL calls (fences, calls in prose, JSON forms), each
candidate decoded officially: labelled, never used for the headline score."""

from __future__ import annotations

import json
import re
from typing import Any

from assay.tasks.bfcl.checker import is_call_list
from assay.tasks.bfcl.decode import DecodeError, decode_prompt

__all__ = ["decode_tolerant", "source_text"]

_FENCE = re.compile(r"```[ \t]*(?:[\w+#.-]+[ \t]*\n|\n)?(.*?)(?:```|\Z)", re.DOTALL)
_MAX_CANDIDATES = 64


def _official_ok(text: str, language: str, allow_empty: bool) -> list[dict] | None:
    try:
        decoded = decode_prompt(text, language)
    except DecodeError:
        return None
    if not is_call_list(decoded) or (not allow_empty and not decoded):
        return None
    return decoded


def _bracket_spans(text: str) -> list[tuple[int, int]]:
    """Balanced ``[...]`` spans (quote-aware), latest end first, outermost first."""
    spans: list[tuple[int, int]] = []
    stack: list[int] = []
    quote = ""
    escaped = False
    for i, ch in enumerate(text):
        if quote:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == quote:
                quote = ""
            continue
        if ch in "\"'" and stack:
            quote = ch
        elif ch == "[":
            stack.append(i)
        elif ch == "]" and stack:
            spans.append((stack.pop(), i + 1))
    spans.sort(key=lambda s: (-s[1], s[0]))
    return spans[:_MAX_CANDIDATES]


def _json_values(text: str) -> list[Any]:
    """JSON values found in ``text``: the whole text, then every parseable ``{``/``[`` start."""
    try:
        return [json.loads(text.strip())]
    except ValueError:
        pass
    values: list[Any] = []
    decoder = json.JSONDecoder()
    i = 0
    tried = 0
    while i < len(text) and tried < _MAX_CANDIDATES:
        if text[i] in "[{":
            tried += 1
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            values.append(value)
            i = end
        else:
            i += 1
    return values


def _json_arguments(raw: Any) -> dict | None:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return raw if isinstance(raw, dict) else None


def _json_call(obj: Any) -> dict[str, dict] | None:
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("function"), dict):  # OpenAI tool_calls item
        return _json_call(obj["function"])
    if isinstance(obj.get("name"), str):
        for key in ("arguments", "parameters", "args"):
            if key in obj:
                args = _json_arguments(obj[key])
                return None if args is None else {obj["name"]: args}
        return {obj["name"]: {}}
    if isinstance(obj.get("function"), str) and "parameters" in obj:  # official JSON format
        args = _json_arguments(obj["parameters"])
        return None if args is None else {obj["function"]: args}
    return None


def _json_calls(value: Any) -> list[dict] | None:
    if isinstance(value, dict) and isinstance(value.get("tool_calls"), list):
        value = value["tool_calls"]
    items = value if isinstance(value, list) else [value]
    calls = [_json_call(item) for item in items]
    if not calls or any(call is None for call in calls):
        return None
    return calls  # type: ignore[return-value]


def source_text(value: Any) -> str:
    """A JSON value as Java / JavaScript source text: strings as they are, ``true`` /
    ``false`` / ``null``, numbers by ``repr``, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value)


def decode_tolerant(text: str, language: str) -> tuple[list[dict] | None, str]:
    """Tolerant extraction, in order: ``"official"``, ``"code_fence"``, ``"embedded"`` (last call
    list in prose), ``"json"`` (common JSON call forms); ``(None, "none")`` when nothing decodes."""
    if not isinstance(text, str):
        return None, "none"
    decoded = _official_ok(text, language, allow_empty=True)
    if decoded is not None:
        return decoded, "official"
    fences = [m.group(1) for m in _FENCE.finditer(text)]
    for block in fences:
        decoded = _official_ok(block, language, allow_empty=False)
        if decoded is not None:
            return decoded, "code_fence"
    for start, end in _bracket_spans(text):
        decoded = _official_ok(text[start:end], language, allow_empty=False)
        if decoded is not None:
            return decoded, "embedded"
    for source in [*fences, text]:
        for value in _json_values(source):
            calls = _json_calls(value)
            if calls:
                if language != "python":
                    calls = [{n: {k: source_text(v) for k, v in a.items()}}
                             for call in calls for n, a in call.items()]
                return calls, "json"
    return None, "none"
