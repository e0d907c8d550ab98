"""What a task is: samples, a solve, a pure scorer and metrics over stored results.

Subclass :class:`Task` with an ``Options`` model, or build one in a ``@task`` factory. A task
holds no per-run state (it can be pickled): a :class:`Sample` carries all solve and scoring need.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from assay.agents.react import run_agent, tool_agent
from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError
from assay.metrics.summary import (
    error_messages,
    extraction_rate,
    primary_name,
    score_summary,
    usage_summary,
)
from assay.scoring import canonical_scorer, get_scorer
from assay.scoring.judge import jury_roles
from assay.tasks.info import TaskInfo
from assay.tasks.options import TaskOptions, validate_options


@dataclass(frozen=True)
class LoadedData:
    """What :meth:`Task.load` gives the engine, once per run."""

    #: the evaluation items, in a stable order
    samples: list[Sample]
    #: the dataset record stored with the run: source, version, content hash
    info: dict[str, Any]
    #: the options as resolved (defaults, files read, choices from the data): stored as the
    #: run's ``task_options``, what ``--resume`` and ``assay score`` rebuild the task from
    options: dict[str, Any]


@dataclass(frozen=True)
class RoleModel:
    """A model a task uses besides the one under test (an examiner, a judge)."""

    model: str
    #: its endpoint (``None``: the run's ``--base-url`` for an OpenAI-compatible model)
    base_url: str | None = None


def jury(models: Any, base_url: str | None = None) -> dict[str, RoleModel]:
    """A jury's roles for :meth:`Task.roles`: ``judge`` for the first model, ``judge_2``,
    ... after (none when ``models`` is empty), each at ``base_url``."""
    return {name: RoleModel(m, base_url) for name, m in jury_roles(models or [])}


#: a scorer given to ``Task(scorer=...)``: a qa scorer's name or a function
ScorerArg = str | Callable[[Sample, Outcome], Any]


def _as_sample(item: Any, index: int) -> Sample:
    if isinstance(item, Sample):
        return item
    if isinstance(item, dict) and "input" in item:
        return Sample(id=str(item.get("id", index)), input=item["input"], target=item.get("target"),
                      metadata=dict(item.get("metadata") or {}), row=item)
    raise ConfigError(f"sample {index}: a task's samples are Sample objects or dicts with "
                      f"'input' (and 'target', 'id'); got {type(item).__name__}")


def run_params_of(ctx: Any) -> dict[str, Any]:
    """The run's generation parameters in a sample's context (``{}`` outside the engine)."""
    return dict(getattr(ctx, "params", None) or {})


async def score_sample(task: Task, sample: Sample, outcome: Outcome, ctx: Any) -> list[Score]:
    """How the engine and ``assay score`` score a sample: ``async score(sample, outcome,
    ctx)`` is awaited with the sample's context (``ctx.roles``: the judge); a plain
    ``score(sample, outcome)`` is called as it is."""
    if inspect.iscoroutinefunction(task.score):
        return list(await task.score(sample, outcome, ctx))
    return list(task.score(sample, outcome))


def _defined_by(cls: type, name: str) -> type:
    """The class of ``cls``'s MRO whose body defines ``name``."""
    return next(c for c in cls.__mro__ if name in vars(c))


def _as_scores(value: Any, outcome: Outcome) -> list[Score]:
    """What a scorer function returned, as scores (``bool``/number: one ``score``)."""
    if isinstance(value, Score):
        return [value]
    if isinstance(value, list) and all(isinstance(v, Score) for v in value):
        return value
    if isinstance(value, (bool, int, float)) or value is None:
        v = None if value is None else float(value)
        return [Score("score", v, outcome.output, "")]
    raise ConfigError(f"a scorer returned {type(value).__name__}; return a Score, a list of "
                      "Scores, a bool or a number")


class Task:
    """Base class of every task; also usable directly with its parts as arguments.

    Subclasses implement :meth:`samples` (or :meth:`read`) and :meth:`score`."""

    #: the registered name (set by ``@task`` and when a task is built by name)
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: the metrics key reports lead with (``None``: the first rate in the metrics)
    headline_metric: ClassVar[str | None] = None
    #: the options model (a task with no options keeps the empty base)
    Options: ClassVar[type[TaskOptions]] = TaskOptions
    #: what the planner, ``assay data pull`` and ``assay list tasks`` know of the task
    info: ClassVar[TaskInfo] = TaskInfo()

    def __init__(self, *, samples: Any = None, scorer: ScorerArg | None = None,
                 solver: Callable[..., Any] | None = None, system_prompt: str | None = None,
                 generation: dict[str, Any] | None = None, description: str | None = None,
                 options: dict[str, Any] | None = None) -> None:
        #: the options the task was built with, JSON-ready (stored with the run)
        self.options: dict[str, Any] = dict(options or {})
        #: the same options, validated by the task's ``Options`` model (what tasks read)
        self.opts: TaskOptions = validate_options(self.Options, self.options,
                                                  self.name or type(self).__name__)
        #: how this task is found again: a name, ``path.py@name`` or ``path.yaml``
        self.ref: str = self.name
        self._given_samples, self._scorer, self._solver = samples, scorer, solver
        self._system_prompt = system_prompt
        self._generation = dict(generation or {})
        if description:
            self.description = description  # type: ignore[misc]
        if isinstance(scorer, str):
            get_scorer(scorer)  # fail fast on a typo

    @classmethod
    def create(cls, options: TaskOptions) -> Task:
        """The task built from validated options (what the registry calls)."""
        return cls(**options.model_dump())

    def load(self) -> LoadedData:
        """The samples, dataset record and resolved options, read once per run (nothing is
        kept on the task): :meth:`read`, with the samples of a subclass that reshapes a
        whole-data task's (overriding :meth:`samples`, calling ``super().samples()``)."""
        data = self.read()
        read_by, sampled_by = _defined_by(type(self), "read"), _defined_by(type(self), "samples")
        if read_by is not Task and sampled_by is not read_by and issubclass(sampled_by, read_by):
            data = replace(data, samples=self.samples())
        return data

    def read(self) -> LoadedData:
        """What :meth:`load` returns. The default builds it from :meth:`samples` (what
        ``@task`` factories and subclasses implement) and :meth:`dataset_info`; a task that
        reads samples, dataset record and options together overrides this instead."""
        samples = self.samples()
        return LoadedData(samples, self.dataset_info(samples), dict(self.options))

    def samples(self) -> list[Sample]:
        """The evaluation items, in a stable order (a task that overrides :meth:`read`:
        the ones it reads)."""
        if _defined_by(type(self), "read") is not Task:
            return self.read().samples
        given = self._given_samples
        if given is None:
            raise NotImplementedError(f"task {self.name or type(self).__name__} has no samples")
        if callable(given):
            given = given()
        out = [_as_sample(item, i) for i, item in enumerate(given)]
        ids = [s.id for s in out]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise ConfigError(f"task {self.name}: sample id {dup!r} is used twice; ids must "
                              "be unique")
        return out

    def dataset_info(self, samples: list[Sample]) -> dict[str, Any]:
        """Source, version and content hash of ``samples`` (stored with the run)."""
        return {"source": "task", "samples": len(samples)}

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        """Generation parameters for every call: the run's (``ctx.params``: ``--param``,
        ``--seed``) over the task's defaults."""
        return {**self._generation, **run_params_of(ctx)}

    def affinity(self, sample: Sample) -> str | None:
        """Samples that share run state (``ctx.run_state``) return one key here: an executor
        that spreads samples over processes (``--executor ray``) runs them in one."""
        return None

    def roles(self, model: str) -> dict[str, RoleModel]:
        """Models this task needs besides the one under test (``model``), by role name: each
        sample gets a context per role in ``agent.roles[name]``, called like the agent's."""
        return {}

    def build_messages(self, sample: Sample) -> list[Message]:
        """The conversation sent to the agent for a single-turn sample."""
        msgs = [Message("system", self._system_prompt)] if self._system_prompt else []
        if isinstance(sample.input, str):
            return [*msgs, Message("user", sample.input)]
        return [*msgs, *sample.input]

    def agent_messages(self, sample: Sample, tools: tuple[str, ...]) -> list[Message]:
        """The messages a sample starts with when the model runs with an agent that has
        ``tools`` (default: :meth:`build_messages`)."""
        return self.build_messages(sample)

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """Default single-turn solve: one call with the sample's messages and tools; or the
        constructor's ``solver(sample, agent)`` (maybe async: an :class:`Outcome` or text)."""
        if self._solver is not None:
            made = self._solver(sample, agent)
            if inspect.isawaitable(made):
                made = await made
            return made if isinstance(made, Outcome) else Outcome(output=str(made or ""))
        with_tools = tool_agent(agent)
        if with_tools is not None:  # the model with an agent (agent/react?...): its loop
            return await run_agent(with_tools, sample, agent,
                                   self.agent_messages(sample, with_tools.spec.tools),
                                   **self.generation_params(agent))
        messages = self.build_messages(sample)
        reply = await agent.generate(messages, tools=sample.tools, **self.generation_params(agent))
        messages.append(reply.message)
        return Outcome(transcript=messages, output=reply.message.content or "",
                       tool_calls=reply.message.tool_calls)

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        """Verdicts for one sample: pure, from the sample and outcome alone (no network
        unless this is a judge)."""
        scorer = self._scorer
        if scorer is None:
            raise NotImplementedError(f"task {self.name or type(self).__name__} has no scorer")
        if isinstance(scorer, str):
            opts: dict[str, Any] = {}
            if canonical_scorer(scorer) == "choice_accuracy":
                opts["choices"] = sample.metadata.get("choices") or []
            return [get_scorer(scorer)(outcome.output, sample.target, **opts)]
        return _as_scores(scorer(sample, outcome), outcome)

    @classmethod
    def judged(cls) -> bool:
        """Whether the task scores with ``async score(sample, outcome, ctx)``: a judge
        model or a sandbox reached through ``ctx`` (the engine awaits it)."""
        return inspect.iscoroutinefunction(cls.score)

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Summary metrics over stored results; every rate carries an interval. Default: the
        primary score's rate under its name (clustered by sample over epochs), errors apart,
        extraction rate, latency and tokens; the first rate is the headline."""
        summary = score_summary(results)
        return {primary_name(results): summary.pop("score"), **summary,
                "extraction_rate": extraction_rate(results), **usage_summary(results),
                "top_errors": error_messages(results)}

    @classmethod
    def report_extra(cls, metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
        """Task-specific report content: ``{"sections": [...], "recommendations": [...]}``; a
        section is ``{"title", "headers", "rows", "bars": [(label, value 0..1)], "note"}``
        (every key but ``title`` optional)."""
        return {}

    @classmethod
    def write_artifacts(cls, run: dict[str, Any], results: list[SampleResult],
                        out_dir: Any) -> dict[str, Any]:
        """Official exports written beside the reports; returns ``{name: path}``."""
        return {}
