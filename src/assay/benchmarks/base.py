"""What a benchmark is, and the registry that finds them by name.

A benchmark lives in one folder (``assay/benchmarks/<name>/``) and registers
itself with :func:`benchmark`. Third parties register theirs through the
entry-point group ``assay.benchmarks`` (value: ``module:Class``). The engine
only ever talks to the :class:`Benchmark` interface.
"""

from __future__ import annotations

import importlib
from typing import Any, ClassVar

from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError

_REGISTRY: dict[str, type[Benchmark]] = {}
_BUILTINS = {"qa": "assay.benchmarks.qa", "bfcl": "assay.benchmarks.bfcl",
             "gaia": "assay.benchmarks.gaia",
             # generated-data quality: each step is a run of the engine with its own model
             "datagen_generate": "assay.datagen.generate",
             "datagen_judge": "assay.datagen.judge",
             "datagen_winrate": "assay.datagen.winrate",
             "datagen_verify": "assay.datagen.verify"}


def benchmark(name: str):  # noqa: ANN201 - decorator
    """Class decorator registering a :class:`Benchmark` under ``name``."""

    def deco(cls: type[Benchmark]) -> type[Benchmark]:
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return deco


def _entry_points() -> dict[str, Any]:
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group="assay.benchmarks")}


def get_benchmark_class(name: str) -> type[Benchmark]:
    """The benchmark class registered as ``name`` (built-in or from an entry point)."""
    if name not in _REGISTRY and name in _BUILTINS:
        importlib.import_module(_BUILTINS[name])
    if name not in _REGISTRY:
        ep = _entry_points().get(name)
        if ep is not None:
            cls = ep.load()
            _REGISTRY.setdefault(name, cls)
    if name not in _REGISTRY:
        raise ConfigError(
            f"unknown benchmark {name!r}; available: {', '.join(available_benchmarks())}"
        )
    return _REGISTRY[name]


def available_benchmarks() -> list[str]:
    """Names of every benchmark that can be run."""
    return sorted(set(_BUILTINS) | set(_REGISTRY) | set(_entry_points()))


class Benchmark:
    """Base class: load samples, drive the agent, score, summarise.

    Subclasses implement :meth:`samples`, :meth:`score` and :meth:`metrics`;
    most keep the default single-turn :meth:`solve`. ``options`` must be
    JSON-serialisable: the run stores them so ``--resume`` can rebuild the
    benchmark exactly.
    """

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: the metrics key reports lead with (``None``: the first rate in the metrics)
    headline_metric: ClassVar[str | None] = None

    def __init__(self, **options: Any) -> None:
        self.options = options
        #: generation parameters given for the run (``--param``, ``--seed``); they
        #: override the benchmark's defaults.
        self.run_params: dict[str, Any] = {}

    def samples(self) -> list[Sample]:
        """The evaluation items, in a stable order."""
        raise NotImplementedError

    def dataset_info(self) -> dict[str, Any]:
        """Source, version and content hash of what is evaluated (stored with the run).

        The default loads the samples and returns ``self._info``, which ``samples()``
        is expected to fill.
        """
        self.samples()
        return dict(getattr(self, "_info", {}))

    def generation_params(self) -> dict[str, Any]:
        """Generation parameters for every call: the run's, over any benchmark defaults."""
        return dict(self.run_params)

    def build_messages(self, sample: Sample) -> list[Message]:
        """The conversation sent to the agent for a single-turn sample."""
        if isinstance(sample.input, str):
            return [Message("user", sample.input)]
        return list(sample.input)

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """Default single-turn solve: one call with the sample's messages and tools."""
        messages = self.build_messages(sample)
        reply = await agent.generate(messages, tools=sample.tools, **self.generation_params())
        messages.append(reply.message)
        return Outcome(
            transcript=messages,
            output=reply.message.content or "",
            tool_calls=reply.message.tool_calls,
        )

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        """Verdicts for one sample (pure: no network unless this is a judge)."""
        raise NotImplementedError

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Summary metrics over stored results; every rate carries an interval.

        A classmethod: reports recompute metrics from the store without loading
        data; ``options`` are the run's benchmark options. The first entry whose
        value is a rate is the headline.
        """
        raise NotImplementedError

    @classmethod
    def report_extra(cls, metrics: dict[str, Any],
                     results: list[SampleResult]) -> dict[str, Any]:
        """Benchmark-specific report content.

        Returns ``{"sections": [...], "recommendations": [...]}``; a section is
        ``{"title", "headers", "rows", "bars": [(label, value 0..1)], "note"}``
        (every key but ``title`` optional). Rendered by the generic templates.
        """
        return {}

    @classmethod
    def write_artifacts(cls, run: dict[str, Any], results: list[SampleResult],
                        out_dir: Any) -> dict[str, Any]:
        """Official exports written beside the reports; returns ``{name: path}``."""
        return {}

