"""The metric registry. ``level``: ``sample`` (``fn(prediction, target, **opts) -> Score``, mean
with interval), ``corpus`` (``fn(predictions, targets, **opts) -> float``), ``group``
(``fn(groups, **opts)``, pass@k), or ``judge``/``task`` (computed by a task, named by plans)."""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any

from assay.errors import ConfigError

DIMENSIONS: tuple[str, ...] = ("correctness", "similarity", "format", "fluency", "validity",
                               "diagnostic")
LEVELS: tuple[str, ...] = ("sample", "corpus", "group", "judge", "task")

MODULES: tuple[str, ...] = ("assay.metrics.library", "assay.metrics.likelihood")
#: what a task's metrics report beside its scores (counts, usage, errors): never metric names
RUN_FIELDS = frozenset({
    "n_samples", "n_scored", "n_errors", "error_rate", "score_errors_as_wrong", "epochs",
    "mean_latency_s", "mean_model_time_s", "mean_wait_s", "input_tokens", "output_tokens",
    "mean_tokens_per_sample", "top_errors"})
#: entry points whose value is a module that registers metrics (tasks' own and plugins')
GROUP = "assay.metrics"


@dataclass(frozen=True)
class MetricInfo:
    name: str
    fn: Callable[..., Any] = field(repr=False)
    category: str
    dimension: str
    description: str
    usage: str
    level: str = "sample"
    aliases: tuple[str, ...] = ()
    higher_is_better: bool = True
    reference: str | None = None  # an implementation it is checked against

    def to_dict(self) -> dict[str, Any]:
        """What the planner and ``assay list metrics --json`` see."""
        return {"name": self.name, "aliases": list(self.aliases), "category": self.category,
                "dimension": self.dimension, "level": self.level,
                "description": self.description, "usage": self.usage,
                "higher_is_better": self.higher_is_better, "reference": self.reference}


_REGISTRY: dict[str, MetricInfo] = {}
_ALIASES: dict[str, str] = {}


def metric(name: str, *, category: str, dimension: str, description: str, usage: str,
           level: str = "sample", aliases: tuple[str, ...] | list[str] = (),
           higher_is_better: bool = True,
           reference: str | None = None) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    if dimension not in DIMENSIONS:
        raise ValueError(f"metric {name}: dimension must be one of {DIMENSIONS}")
    if level not in LEVELS:
        raise ValueError(f"metric {name}: level must be one of {LEVELS}")
    if not description.strip() or not usage.strip():
        raise ValueError(f"metric {name}: a description and a usage are required")
    if RUN_FIELDS.intersection((name, *aliases)):
        raise ValueError(f"metric {name}: {sorted(RUN_FIELDS.intersection((name, *aliases)))} "
                         "name what every run reports, not a metric; choose another name")

    def register(fn: Callable[..., Any]) -> Callable[..., Any]:
        info = MetricInfo(name=name, fn=fn, category=category, dimension=dimension,
                          description=" ".join(description.split()), usage=usage.strip(),
                          level=level, aliases=tuple(aliases),
                          higher_is_better=higher_is_better, reference=reference)
        for key in (name, *info.aliases):
            owner = _ALIASES.get(key)
            if owner is not None and owner != name:
                raise ValueError(f"metric name {key!r} is taken by {owner!r}")
        _REGISTRY[name] = info
        for key in (name, *info.aliases):
            _ALIASES[key] = name
        return fn

    return register


@functools.lru_cache(maxsize=1)
def _modules() -> tuple[str, ...]:
    return (*MODULES, *sorted({ep.value for ep in entry_points(group=GROUP)}))


def _import_modules(first: str | None = None) -> None:
    """Import the modules that register metrics; with ``first``, stop as soon as a metric
    of that name (or alias) is registered (a run asks for its own metrics only)."""
    for module in _modules():
        if first is not None and first in _ALIASES:
            return
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            # a module of the list that is not there (yet); any other import error is real
            if e.name != module and not module.startswith(f"{e.name}."):
                raise


def all_metrics() -> list[MetricInfo]:
    _import_modules()
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def get_metric(name: str) -> MetricInfo:
    if name in RUN_FIELDS:
        raise ConfigError(f"{name!r} is what every run reports, not a metric; "
                          "see 'assay list metrics'")
    _import_modules(first=name)
    key = _ALIASES.get(name)
    if key is None:
        close = difflib.get_close_matches(name, list(_ALIASES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown metric {name!r}{hint}; see 'assay list metrics'")
    return _REGISTRY[key]


def task_metric(name: str, task: str, **meta: Any) -> None:
    """Register a ``level="task"`` correctness metric; calling it says only ``task``
    computes it."""

    def computed_by_task(*_args: Any, **_kwargs: Any) -> Any:
        raise ConfigError(f"{name} is computed by the {task} task on its own data; run it "
                          f"with: assay run {task} --model M")

    computed_by_task.__name__ = name
    metric(name, level="task", dimension="correctness", **meta)(computed_by_task)
