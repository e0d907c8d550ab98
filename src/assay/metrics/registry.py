"""The metric registry: every metric assay can compute, with what a planner needs to know.

A metric is registered with :func:`metric`, which records its name, aliases, category,
dimension, a one-line description and usage, and what it is computed from:

* ``level="sample"``: ``fn(prediction, target, **opts) -> Score`` on one sample; the run's
  value is the mean over samples (with an interval), a ``None`` value is left out;
* ``level="corpus"``: ``fn(predictions, targets, **opts) -> float`` over a whole run
  (BLEU and chrF are corpus statistics, not means of sentence scores);
* ``level="group"``: ``fn(groups, **opts) -> float`` over per-sample groups of attempts
  (pass@k takes, per problem, how many of ``n`` attempts passed);
* ``level="judge"``: the verdict of a judge model, computed by a task with a judge role;
  the registry records it so plans can name it;
* ``level="task"``: a benchmark's own verdict, computed only by its task on its own data
  (BFCL's official checker, GAIA's leaderboard scorer); recorded so a plan names what the
  task really reports, and ``fn`` says where it is computed.

``assay list metrics`` prints the registry; the planner reads the same metadata.
Metric modules register themselves when imported; :func:`all_metrics` imports the
modules listed in :data:`MODULES` first.
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Any, Literal

from assay.errors import ConfigError

Dimension = Literal["correctness", "similarity", "format", "fluency", "validity", "diagnostic"]
Level = Literal["sample", "corpus", "group", "judge", "task"]
DIMENSIONS: tuple[str, ...] = ("correctness", "similarity", "format", "fluency", "validity",
                               "diagnostic")
LEVELS: tuple[str, ...] = ("sample", "corpus", "group", "judge", "task")

#: assay's general metric modules (imported by :func:`all_metrics`); the metrics of a
#: task's own come from the ``assay.metrics`` entry-point group (:data:`GROUP`)
MODULES: tuple[str, ...] = ("assay.metrics.library",)
#: entry points whose value is a module that registers metrics (built-in tasks and plugins)
GROUP = "assay.metrics"


@dataclass(frozen=True)
class MetricInfo:
    """A registered metric: its metadata and the function that computes it."""

    name: str
    fn: Callable[..., Any] = field(repr=False)
    category: str
    dimension: str
    description: str
    usage: str
    level: str = "sample"
    aliases: tuple[str, ...] = ()
    #: whether a higher value is better (false for error and repetition rates)
    higher_is_better: bool = True
    #: a reference implementation it is checked against, when one exists
    reference: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The metadata, JSON-ready (what the planner and ``assay list metrics --json`` see)."""
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
    """Register the decorated function as the metric ``name`` (see the module docstring)."""
    if dimension not in DIMENSIONS:
        raise ValueError(f"metric {name}: dimension must be one of {DIMENSIONS}")
    if level not in LEVELS:
        raise ValueError(f"metric {name}: level must be one of {LEVELS}")
    if not description.strip() or not usage.strip():
        raise ValueError(f"metric {name}: a description and a usage are required")

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


def _import_modules() -> None:
    for module in _modules():
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as e:
            # a module of the list that is not there (yet); any other import error is real
            if e.name != module and not module.startswith(f"{e.name}."):
                raise


def all_metrics() -> list[MetricInfo]:
    """Every registered metric, by name."""
    _import_modules()
    return [_REGISTRY[n] for n in sorted(_REGISTRY)]


def get_metric(name: str) -> MetricInfo:
    """The metric registered as ``name`` (or an alias); a one-line error otherwise."""
    _import_modules()
    key = _ALIASES.get(name)
    if key is None:
        close = difflib.get_close_matches(name, list(_ALIASES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown metric {name!r}{hint}; see 'assay list metrics'")
    return _REGISTRY[key]


def task_metric(name: str, task: str, **meta: Any) -> None:
    """Register ``name`` as a ``level="task"`` correctness metric of ``task`` (``meta``:
    the rest of :func:`metric`'s arguments); calling it says in one line that only the
    task computes it."""

    def computed_by_task(*_args: Any, **_kwargs: Any) -> Any:
        raise ConfigError(f"{name} is computed by the {task} task on its own data; run it "
                          f"with: assay run {task} --model M")

    computed_by_task.__name__ = name
    metric(name, level="task", dimension="correctness", **meta)(computed_by_task)
