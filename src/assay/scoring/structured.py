"""Answers that are structures: JSON found in an output, and sets of items (labels, list
answers) read from an output or a target, normalized for comparison."""

from __future__ import annotations

import json
import re
from typing import Any

from assay.core.checks import require_module as _require
from assay.errors import ConfigError
from assay.scoring.extraction import extract_answer, strip_reasoning
from assay.scoring.normalize import normalize_text

__all__ = ["json_value", "label_set", "schema_validator", "set_counts"]

_SPLIT = re.compile(r"[,;\n]")
_FENCED = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", re.S)


def json_value(text: str) -> tuple[Any, str | None, str]:
    """``(value, where, error)``: the whole text as JSON (``"whole"``), else its first ```json
    block (``"fenced"``), else ``where`` is ``None`` and ``error`` says why."""
    try:
        return json.loads(text.strip()), "whole", ""
    except (ValueError, RecursionError) as e:
        error = str(e)
    m = _FENCED.search(text)
    if m:
        try:
            return json.loads(m.group(1)), "fenced", ""
        except (ValueError, RecursionError) as e:
            error = f"{error}; the ```json block: {e}"
    return None, None, error


def _item_text(x: Any) -> str:
    return x if isinstance(x, str) else json.dumps(x, sort_keys=True)


def label_set(value: Any, *, from_output: bool = False) -> set[str]:
    """The non-empty items of ``value``, normalized: a collection's items; a string's JSON
    list (whole or fenced), else its items split on ``,``/``;``/newlines (for an output:
    reasoning removed, the extracted answer split)."""
    if value is None:
        raise ConfigError("a label set is missing (None); give a list or a comma-separated "
                          "string, [] for no labels")
    if isinstance(value, (list, tuple, set, frozenset)):
        raw = list(value)
    elif isinstance(value, str):
        text = strip_reasoning(value) if from_output else value
        parsed, _, _ = json_value(text)
        if isinstance(parsed, list):
            raw = parsed
        else:
            if from_output:
                text = extract_answer(text)[0] or ""
            raw = _SPLIT.split(text)
    else:
        raw = [value]
    return {normalize_text(_item_text(x)) for x in raw} - {""}


def set_counts(pred: set[str], gold: set[str]) -> tuple[int, int, int]:
    return len(pred & gold), len(pred), len(gold)


_VALIDATORS: dict[str, Any] = {}


def schema_validator(schema: Any) -> Any:
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError as e:
            raise ConfigError(f"json_validity: the schema is not valid JSON ({e})") from e
    if not isinstance(schema, (dict, bool)):
        raise ConfigError("json_validity: schema must be a JSON Schema object, "
                          f"got {type(schema).__name__}")
    key = json.dumps(schema, sort_keys=True)
    if key not in _VALIDATORS:
        jsonschema = _require("jsonschema", "json_validity with a schema", "jsonschema")
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError as e:
            raise ConfigError(f"json_validity: the schema is not a valid JSON Schema: "
                              f"{e.message}") from e
        _VALIDATORS[key] = cls(schema)
    return _VALIDATORS[key]
