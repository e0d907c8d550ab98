"""Typed task options: one pydantic model per task, validating every front end's options,
making flags and ``--help``, and stored with the run so ``--resume`` and ``assay score`` rebuild it.
"""

from __future__ import annotations

import difflib
import inspect
import json
import types
import typing
from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from assay.errors import ConfigError

__all__ = ["Field", "PathField", "TaskOptions", "did_you_mean", "options_from_signature",
           "json_or_text", "line_of", "parse_assignments", "path_options",
           "validate_options", "validation_line"]


class TaskOptions(BaseModel):
    """Base of every task's options: unknown names are refused, values are coerced. A field's
    ``description`` is its ``--help`` line; ``json_schema_extra={"flags": ["-d"]}`` adds short
    flags. Fields need defaults (a task checks itself which are required)."""

    # numbers given as -T text stay text where a string is wanted ("-T split=2024")
    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)


def PathField(default: Any = None, *, description: str, **extra: Any) -> Any:  # noqa: N802
    """A task option naming a file or folder: stored absolute (a resume works from any folder)
    and, in a plan, read only inside the plan's folder; a value naming no file (an HF id,
    ``math500``) is kept as given."""
    schema = dict(extra.pop("json_schema_extra", None) or {})
    schema["path"] = True
    return Field(default, description=description, json_schema_extra=schema, **extra)


def path_options(model: type[BaseModel]) -> frozenset[str]:
    """The options of ``model`` declared with :func:`PathField`."""
    return frozenset(name for name, f in model.model_fields.items()
                     if isinstance(f.json_schema_extra, dict) and f.json_schema_extra.get("path"))


def options_from_signature(fn: Callable[..., Any], name: str) -> type[TaskOptions]:
    """The options model of a ``@task`` factory: one field per parameter (with a default; an
    unannotated one takes its default's type, ``Any`` for ``None``)."""
    fields: dict[str, Any] = {}
    hints = typing.get_type_hints(fn, include_extras=True)
    for p in inspect.signature(fn).parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.default is inspect.Parameter.empty:
            raise ConfigError(f"task {name}: parameter {p.name!r} needs a default value "
                              "(task options are optional; check required ones in the task)")
        fields[p.name] = (hints.get(p.name, Any if p.default is None else type(p.default)),
                          p.default)
    model_name = "".join(part.title() for part in name.replace("-", "_").split("_")) + "Options"
    return create_model(model_name, __base__=TaskOptions, **fields)


def _one_line(e: ValidationError, task: str) -> str:
    parts = []
    for err in e.errors():
        where = ".".join(str(x) for x in err["loc"]) or "options"
        value = err.get("input")
        shown = f" (got {value!r})" if isinstance(value, (str, int, float, bool)) else ""
        parts.append(f"{where}: {err['msg']}{shown}")
    return f"invalid option for task {task}: " + "; ".join(parts)


def did_you_mean(unknown: list[str], valid: Iterable[str]) -> str:
    """`` (did you mean data?)`` for the valid names nearest to the unknown ones, else ``""``."""
    names = list(valid)
    close = [c for name in unknown for c in difflib.get_close_matches(name, names, n=2, cutoff=0.6)]
    near: list[str] = list(dict.fromkeys(close))
    return f" (did you mean {' or '.join(near)}?)" if near else ""


def line_of(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int | None:
    """The line of ``loc``, or of the nearest key above it; ``None`` when nothing is known."""
    for n in range(len(loc), -1, -1):
        if loc[:n] in lines:
            return lines[loc[:n]]
    return None


def _model_at(model: Any, loc: tuple[Any, ...]) -> Any:
    """The pydantic model whose fields hold the last key of ``loc`` (list indexes and union
    branches passed over); ``None`` when the path leaves the models."""
    for part in loc:
        fields = getattr(model, "model_fields", None)
        if fields is None or part not in fields:
            continue  # an index, a union branch or a dict key: the same model goes on
        inner = [a for a in _flat_args(fields[part].annotation)
                 if isinstance(a, type) and issubclass(a, BaseModel)]
        if not inner:
            return None
        model = inner[0]
    return model


def _flat_args(annotation: Any) -> list[Any]:
    args = typing.get_args(annotation)
    return [annotation] if not args else [x for a in args for x in _flat_args(a)]


def validation_line(e: ValidationError, model: Any, *, where: str = "",
                    lines: dict[tuple[Any, ...], int] | None = None,
                    default: str = "task") -> str:
    """The first error of ``e`` as one line: ``WHERE:LINE: key.path: problem``; an unknown
    key is named, with the nearest known key and the keys known at its level."""
    errors = e.errors()
    first = errors[0]
    if len(errors) > 1 and first["type"].endswith("_type"):
        # a union (``data: str | WheelData``): the branch the value was meant for says what
        # is wrong, not "Input should be a valid string"
        first = next((x for x in errors if not x["type"].endswith("_type")), first)
    loc = tuple(first["loc"])
    keys = [x for x in loc if not _union_branch(x)]
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        *keys, unknown = keys
        known = list(getattr(_model_at(model, tuple(keys)), "model_fields", {}))
        msg = f"unknown key {unknown!r}"
        if known:
            near = difflib.get_close_matches(str(unknown), known, n=1, cutoff=0.6)
            msg += (f" ({f'did you mean {near[0]!r}? ' if near else ''}known keys: "
                    f"{', '.join(known)})")
    if first["type"] == "missing":  # no line of its own: its mapping's, unless the file's
        line = (line_of(lines, loc[:-1]) if lines and loc[:-1] else None)
    else:
        line = line_of(lines, loc) if lines else None
    head = f"{where}:{line}" if where and line else where
    path = ".".join(str(x) for x in keys) or (default if first["type"] != "extra_forbidden"
                                                else "")
    msg = f"{path}: {msg}" if path else msg
    return f"{head}: {msg}" if head else msg


def _union_branch(part: Any) -> bool:
    """Whether a pydantic error location part names a union's branch (``str``), not a key."""
    return isinstance(part, str) and (part in ("str", "int", "float", "bool", "list", "dict")
                                      or part[:1].isupper() or "[" in part)


def validate_options(model: type[TaskOptions], values: dict[str, Any], task: str) -> TaskOptions:
    """``values`` checked against ``model``: one-line errors that name what is valid."""
    unknown = sorted(set(values) - set(model.model_fields))
    if unknown:
        valid = ", ".join(sorted(model.model_fields)) or "none"
        hint = did_you_mean(unknown, model.model_fields)
        raise ConfigError(f"unknown option{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(unknown)} for task {task}{hint}; valid options: {valid}")
    try:
        return model.model_validate(values)
    except ValidationError as e:
        raise ConfigError(_one_line(e, task)) from None


def json_or_text(text: str) -> Any:
    """A ``-T`` value: JSON where it parses, else the text (commas never split a value)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


def parse_assignments(items: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """``-T key=value`` items into a dict (``-`` in keys read as ``_``)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key:
            raise ConfigError(f"-T expects KEY=VALUE, got {item!r}")
        out[key] = json_or_text(value)
    return out


def field_kind(annotation: Any) -> tuple[str, Any]:
    """How a field is given on the command line: ``("flag", None)`` for bools, ``("multiple",
    item type)`` for lists, ``("json", None)`` for dicts and models, else ``("scalar", type)``."""
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    origin = typing.get_origin(annotation)
    if ((origin in (typing.Union, types.UnionType) and len(args) == 1)
            or origin is typing.Annotated):
        return field_kind(args[0])
    if annotation is bool:
        return "flag", None
    if origin in (list, tuple, set) or annotation in (list, tuple, set):
        item = args[0] if args else str
        return "multiple", item if item in (int, float, str) else str
    if origin is dict or annotation is dict or (isinstance(annotation, type)
                                                and issubclass(annotation, BaseModel)):
        return "json", None
    if annotation in (int, float, str):
        return "scalar", annotation
    return "scalar", str
