"""Conversation case files: TaskWeaver's YAML schema, validated, with file:line errors.

assay adds ``id``, ``tags`` and ``workspace``; ``pre_command`` is refused (a shell command from a
data file).
"""

from __future__ import annotations

import hashlib
import math
import os
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any

from packaging.requirements import InvalidRequirement, Requirement
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator

from assay.core.paths import inside, refuse_links_out
from assay.core.yamlsafe import key_lines, parse_yaml, read_yaml_text
from assay.errors import ConfigError
from assay.tasks.converse.evalcode import check_syntax
from assay.tasks.options import line_of, validation_line

DEFAULT_MAX_ROUNDS = 15
MAX_ROUNDS_LIMIT = 1000


def _requirement(spec: str) -> str:
    try:
        Requirement(spec)
    except InvalidRequirement as e:
        raise ValueError(f"{spec!r} is not a requirement (e.g. 'pandas>=1.5'): "
                         f"{str(e).splitlines()[0]}") from None
    return spec


class ScoringPoint(BaseModel):
    """One weighted statement about the conversation, judged true or false."""

    model_config = ConfigDict(extra="forbid")

    score_point: str = Field(min_length=1)
    weight: float = 1.0
    eval_code: str | None = None

    @field_validator("weight")
    @classmethod
    def _weight(cls, v: float) -> float:
        if not math.isfinite(v) or v <= 0:
            raise ValueError("weight must be a positive finite number")
        return v


class Case(BaseModel):
    """A conversation case (TaskWeaver's fields plus ``id``, ``tags`` and ``workspace``)."""

    model_config = ConfigDict(extra="forbid")

    version: str | float | int | None = None
    id: str | None = Field(None, pattern=r"^[A-Za-z0-9_.\-/]+$")
    task_description: str = Field(min_length=1)
    scoring_points: list[ScoringPoint] = Field(min_length=1)
    max_rounds: int = Field(DEFAULT_MAX_ROUNDS, ge=1, le=MAX_ROUNDS_LIMIT)
    data_files: list[str] = Field(default_factory=list)
    dependencies: list[Annotated[str, AfterValidator(_requirement)]] = Field(default_factory=list)
    config_var: dict[str, Any] | None = None
    app_dir: str | None = None
    verbose: bool = False
    tags: list[str] = Field(default_factory=list)
    workspace: bool | None = None

    @property
    def has_workspace(self) -> bool:
        """Whether a model agent gets file tools in its working folder."""
        return bool(self.data_files) if self.workspace is None else self.workspace


def unmet_dependencies(case: Case) -> list[str]:
    """The case's requirements the installed packages do not satisfy, each with why."""
    out = []
    for spec in case.dependencies:
        req = Requirement(spec)
        try:
            installed = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            out.append(f"{spec} (not installed)")
            continue
        if req.specifier and not req.specifier.contains(installed, prereleases=True):
            out.append(f"{spec} (installed {installed})")
    return out


def _line(lines: dict[tuple[Any, ...], int], loc: tuple[Any, ...]) -> int:
    return line_of(lines, loc) or 1


def _default_id(path: Path, root: Path | None) -> str:
    if path.stem == path.parent.name:  # TaskWeaver's layout: cases/<name>/<name>.yaml
        rel = path.parent
    else:
        rel = path.with_suffix("")
    if root is not None:
        try:
            return rel.relative_to(root).as_posix() or path.stem
        except ValueError:
            pass
    return rel.name


def load_case(path: Path, root: Path | None = None) -> tuple[Case, str]:
    """The validated case in ``path`` and its id; any problem is a one-line ``file:line``."""
    # the one safe loader: alias bombs, unhashable keys and oversized files are one line
    raw, node = parse_yaml(read_yaml_text(path, "case file"), path)
    if not isinstance(raw, dict) or node is None:
        raise ConfigError(f"{path}:1: a case file is a mapping with task_description and "
                          "scoring_points")
    lines = key_lines(node)
    if "pre_command" in raw:
        raise ConfigError(
            f"{path}:{lines.get(('pre_command',), 1)}: pre_command is refused: it would run a "
            "shell command from a data file; prepare the data beforehand and list it in "
            "data_files")
    try:
        case = Case.model_validate(raw)
    except ValidationError as e:
        raise ConfigError(validation_line(e, Case, where=str(path), lines=lines,
                                          default="case")) from None
    for i, point in enumerate(case.scoring_points):
        problem = check_syntax(point.eval_code) if point.eval_code else None
        if problem:
            line = _line(lines, ("scoring_points", i, "eval_code"))
            raise ConfigError(f"{path}:{line}: scoring_points.{i}.eval_code does not compile "
                              f"({problem} of the snippet)")
    seen: dict[str, str] = {}
    for i, name in enumerate(case.data_files):
        where = f"{path}:{_line(lines, ('data_files', i))}: data_files"
        file = data_file(path, name, where=where)
        if not file.exists():
            raise ConfigError(f"{where}: {name} does not exist (paths are relative to the "
                              "case file)")
        if file.is_dir():
            refuse_links_out(path.parent, file, what=where)
        elif not file.is_file():
            raise ConfigError(f"{where}: {name} is not a regular file or folder")
        base = Path(name).name
        if base in seen:  # both would be copied to the same name in the agent's folder
            raise ConfigError(f"{where}: {name} and {seen[base]} have the same file name "
                              f"{base!r}; data files are copied into the agent's folder by name")
        seen[base] = name
    if case.app_dir is not None:  # a folder the agent is told to read: the case's, like its data
        case.app_dir = str(inside(path.parent, case.app_dir,
                                  what=f"{path}:{_line(lines, ('app_dir',))}: app_dir"))
    return case, case.id or _default_id(path, root)


def data_file(case_file: Path, name: str, *, where: str | None = None) -> Path:
    """A case's data file, resolved inside the case file's folder (links included)."""
    return inside(case_file.parent, name, what=where or f"{case_file}: data_files")


def find_case_files(target: Path) -> tuple[list[Path], Path | None]:
    """The case files at ``target`` (a YAML file, or a folder searched recursively)."""
    if target.is_file():
        return [target], None
    if not target.is_dir():
        raise ConfigError(f"--cases {target}: no such file or folder")
    files = sorted(p for p in target.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())
    if not files:
        raise ConfigError(f"--cases {target}: the folder holds no .yaml case files")
    return files, target


def load_cases(target: Path) -> list[tuple[Case, str, Path]]:
    """Every case at ``target`` with its id and file; duplicate ids are refused."""
    files, root = find_case_files(target)
    loaded: list[tuple[Case, str, Path]] = []
    failed: list[tuple[Path, ConfigError]] = []
    for f in files:
        try:
            case, cid = load_case(f, root)
        except ConfigError as e:
            failed.append((f, e))
            continue
        loaded.append((case, cid, f))
    # a YAML file that a case lists among its data files is data, not a case
    data = {data_file(f, name) for case, _, f in loaded for name in case.data_files}
    data_dirs = [d for d in data if d.is_dir()]
    for f, error in failed:
        resolved = f.resolve()
        if resolved not in data and not any(d in resolved.parents for d in data_dirs):
            raise error
    out: list[tuple[Case, str, Path]] = []
    seen: dict[str, Path] = {}
    for case, cid, f in loaded:
        if cid in seen:
            raise ConfigError(f"{f}:1: case id {cid!r} is also used by {seen[cid]}; give one "
                              "of them another id")
        seen[cid] = f
        out.append((case, cid, f))
    if not out:
        raise ConfigError(f"--cases {target}: no case files found (a case has "
                          "task_description and scoring_points)")
    return out


def case_hash(case: Case, path: Path) -> str:
    """A hash over the case and the bytes of its data files (changes mean a new dataset)."""
    h = hashlib.sha256(case.model_dump_json().encode())
    root = path.parent.resolve()
    for name in case.data_files:
        f = data_file(path, name)
        for file in sorted(f.rglob("*")) if f.is_dir() else [f]:
            if file.is_file():
                h.update(os.path.relpath(file, root).encode())
                h.update(file.read_bytes())
    return h.hexdigest()
