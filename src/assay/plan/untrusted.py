"""A plan file is someone else's data: every path goes through the path policy with the plan's
folder as base, and no task may be a file nor a model a Python agent (either imports code)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.core.paths import file_value
from assay.errors import ConfigError
from assay.tasks.registry import looks_like_file

PYTHON_SPEC = "python/"


def _walk(value: Any, base: Path, what: str) -> Any:
    if isinstance(value, str):
        if value.startswith(PYTHON_SPEC):
            raise ConfigError(f"{what}: a plan file may not name a Python agent ({value[:80]!r} "
                              "would import and run code); give it on the command line")
        return file_value(value, base, what=what)
    if isinstance(value, list):
        return [_walk(v, base, f"{what}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, dict):
        return {k: _walk(v, base, f"{what}.{k}") for k, v in value.items()}
    return value


def task_options(options: dict[str, Any], base: Path, where: str) -> dict[str, Any]:
    """A plan task's options with every file it names checked and made absolute."""
    return {k: _walk(v, base, f"{where}: option {k}") for k, v in options.items()}


def check_task_ref(task: str, where: str) -> None:
    """Refuse a task that names a file (a ``FILE.py`` task would be imported)."""
    if looks_like_file(task):
        raise ConfigError(f"{where}: task {task[:120]!r} names a file; a plan names registered "
                          "tasks and gallery entries only (run a task file with "
                          "'assay run FILE')")


def check_models(models: Any, *, model_given: bool, where: str) -> None:
    """Refuse a Python agent named by the plan itself (the command line may give one)."""
    for role in ("model", "judge", "planner"):
        spec = getattr(models, role, None)
        if role == "model" and model_given:
            continue
        if isinstance(spec, str) and spec.startswith(PYTHON_SPEC):
            raise ConfigError(f"{where}: models.{role}: a plan file may not name a Python "
                              f"agent ({spec[:80]!r} would import and run code); give it on "
                              "the command line with --model")
