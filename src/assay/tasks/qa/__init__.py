"""``qa``: any question/answer dataset (JSONL, JSON, CSV or a Hugging Face id), scored by any
name of the scoring vocabulary (:mod:`assay.scoring`), inferred from the data when not given.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from pydantic import field_validator

from assay.core.checks import check_number
from assay.core.templates import render as render_template
from assay.core.templates import sandbox
from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.data.files import load_rows
from assay.errors import ConfigError, DatasetError
from assay.scoring import (
    canonical_scorer,
    format_choices,
    get_scorer,
    infer_scorer,
    score_includes,
)
from assay.tasks.base import LoadedData, Task, run_params_of
from assay.tasks.capabilities import Measure
from assay.tasks.info import TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.qa.dataset import build_samples
from assay.tasks.qa.metrics import HINTED_SCORERS, includes_hint, qa_metrics
from assay.tasks.registry import task

DEFAULT_TEMPLATE = (
    "{{ question }}\n\nGive only the final answer, on one line starting with \"Answer:\"."
)
DEFAULT_CHOICE_TEMPLATE = "{{ question }}\n\n{{ choices }}\n\nAnswer with the letter of the correct option."


#: the built-in templates as ``str.format`` patterns (they use only these two variables)
_BUILTIN_FORMATS = {
    t: t.replace("{{ question }}", "{question}").replace("{{ choices }}", "{choices}")
    for t in (DEFAULT_TEMPLATE, DEFAULT_CHOICE_TEMPLATE)
}
#: a sample without choices in a set with choices names the built-in template it uses
_BUILTIN_TEMPLATES = {"choices": DEFAULT_CHOICE_TEMPLATE}


@functools.lru_cache(maxsize=32)
def compile_template(source: str) -> Any:
    """A user's prompt template, compiled once per process in Jinja2's sandbox (it refuses
    attribute tricks reaching Python internals and bounds what it builds)."""
    from jinja2 import TemplateError  # startup

    try:
        return sandbox().from_string(source)
    except TemplateError as e:
        raise ConfigError(f"invalid --template: {e}") from e


def template_from_file(value: str | None) -> str | None:
    """``--template FILE``: the file's text is the template (and is what is stored)."""
    if value and "\n" not in value and len(value) < 4096:
        path = Path(value).expanduser()
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return value


class QAOptions(TaskOptions):
    """Options of the ``qa`` task."""

    data: str | None = PathField(None, description="Dataset: a .jsonl/.json/.csv file or a "
                             "Hugging Face dataset id.", json_schema_extra={"flags": ["-d"]})
    split: str | None = Field(None, description="HF split (default 'test').")
    config: str | None = Field(None, description="HF dataset config name.")
    question_key: str | None = Field(None, description="Field holding the question.")
    answer_key: str | None = Field(None, description="Field holding the answer.")
    choices_key: str | None = Field(None, description="Field holding multiple-choice options.")
    id_key: str | None = Field(None, description="Field holding the sample id.")
    scorer: str | None = Field(None, description="exact_match | normalized_match | "
                               "includes_match | numeric_match | token_f1 | choice_accuracy | "
                               "math_verify, or an alias such as exact (default: inferred).")
    tolerance: float | None = Field(None, description="Absolute tolerance for the numeric "
                                    "scorer.")
    template: str | None = PathField(None, description="Jinja2 prompt template (or a file holding "
                                 "one) with {{ question }}, {{ choices }}, {{ row.<field> }}.")
    system_prompt: str | None = Field(None, description="System message for every sample.")
    max_tokens: int | None = Field(None, description="Max tokens per answer (default 256).")

    @field_validator("template")
    @classmethod
    def _template_file(cls, value: str | None) -> str | None:
        return template_from_file(value)


def on_your_data() -> tuple[bool, str]:
    """A plan has no data of yours to run it on: the command that does."""
    return False, "it runs on your own data: assay run qa --data FILE.jsonl (or --data hf:ID)"


@task("qa")
class QATask(Task):
    """Generic question answering."""

    info = TaskInfo(plannable=False, tags=("qa", "custom"), runs_here="assay.tasks.qa:on_your_data",
                    measures=(Measure(capability="custom_data", standing="canonical",
                                      why="your own questions and answers, scored as you "
                                          "choose (exact, F1, numeric, choice, math)"),))
    Options = QAOptions
    description = "Generic question answering over JSONL/CSV/HF data with exact, normalized, includes, numeric, F1, choice or math scoring."

    opts: QAOptions

    def __init__(self, **options: Any) -> None:
        if options.get("scorer"):  # its metric's name, whatever the spelling (fails on a typo)
            options["scorer"] = canonical_scorer(options["scorer"])
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        if not self.opts.data:
            raise ConfigError("qa needs a dataset: --data FILE.jsonl|FILE.csv|<hf-dataset-id>")
        check_number("--tolerance", self.opts.tolerance, minimum=0)
        check_number("--max-tokens", self.opts.max_tokens, minimum=1, integer=True)
        if self.opts.template and self.opts.template not in _BUILTIN_FORMATS:
            compile_template(self.opts.template)  # a broken template fails at once

    def read(self) -> LoadedData:
        """Rows with their keys mapped; each sample carries what its prompt and its
        scoring need (the scorer inferred from the data, the row a template reads)."""
        o = self.opts
        rows = load_rows(o.data, split=o.split, config=o.config)
        samples, keys = build_samples(
            rows, question_key=o.question_key, answer_key=o.answer_key,
            choices_key=o.choices_key, id_key=o.id_key,
        )
        if not samples:
            raise DatasetError(f"{o.data}: the dataset has no rows")
        custom = bool(o.template) and o.template not in _BUILTIN_FORMATS
        mapped = {k for k in keys.values() if k}
        for sample, row in zip(samples, rows.rows, strict=True):
            # the row goes with the sample when a user's template may read it ({{ row.<field>
            # }}) or when it holds more than the sample's own fields; a row of only the
            # question, answer, choices and id is the sample itself (100k copies: 140 MB)
            if custom or not mapped.issuperset(row):
                sample.row = row
        has_choices = any("choices" in s.metadata for s in samples)
        template = o.template or (DEFAULT_CHOICE_TEMPLATE if has_choices else DEFAULT_TEMPLATE)
        scorer = o.scorer
        if not scorer:
            # Every sample votes: one non-numeric answer makes the whole set "normalized".
            kinds = {infer_scorer(s.target, s.metadata.get("choices")) for s in samples}
            scorer = kinds.pop() if len(kinds) == 1 else "normalized_match"
        for sample in samples:  # what solve and score read, whatever process they run in
            if template == DEFAULT_CHOICE_TEMPLATE and "choices" not in sample.metadata:
                sample.metadata["template"] = "choices"  # the set's prompt, not its own
            if not o.scorer:
                sample.metadata["scorer"] = scorer
        # Prompts are rendered per sample as it runs (the stored input stays the
        # question); the first one is rendered now so a broken template fails at once.
        self.render(samples[0])
        info = dict(rows.info, keys=keys, scorer=scorer, rows=len(samples))
        # stored: a re-score uses the same scorer
        return LoadedData(samples, info, {**self.options, "scorer": scorer})

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        """Short answers by default; run parameters override."""
        return {"max_tokens": int(self.opts.max_tokens or 256), **run_params_of(ctx)}

    def render(self, sample: Sample) -> str:
        """The prompt for ``sample``: the template applied to its question, choices and row."""
        choices = sample.metadata.get("choices")
        # format_choices ends with its own instruction line; the template has one too
        choice_text = (format_choices("", choices).strip().rsplit("\n", 1)[0].rstrip()
                       if choices else "")
        source = self.opts.template or _BUILTIN_TEMPLATES.get(
            sample.metadata.get("template"),
            DEFAULT_CHOICE_TEMPLATE if choices else DEFAULT_TEMPLATE)
        if source in _BUILTIN_FORMATS:  # a built-in template: same text, without Jinja
            return _BUILTIN_FORMATS[source].format(question=sample.input, choices=choice_text)
        from jinja2 import TemplateError  # startup

        try:
            return render_template(compile_template(source), question=sample.input,
                                   choices=choice_text, row=sample.row or {})
        except TemplateError as e:  # SecurityError is one: the sandbox refused something
            raise ConfigError(f"--template failed on {sample.metadata['source']}: {e}") from e
        except (ValueError, TypeError, ArithmeticError, LookupError, RecursionError) as e:
            raise ConfigError(f"--template failed on {sample.metadata['source']}: "
                              f"{type(e).__name__}: {e}") from e

    def build_messages(self, sample: Sample) -> list[Message]:
        system = self.opts.system_prompt
        msgs = [Message("system", system)] if system else []
        msgs.append(Message("user", self.render(sample)))
        return msgs

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        # the scorer given, else the one inferred from the data (carried by the sample)
        name = self.opts.scorer or sample.metadata.get("scorer") or "normalized_match"
        kind = canonical_scorer(name)  # any spelling of the vocabulary
        opts: dict[str, Any] = {}
        if kind == "choice_accuracy":
            opts["choices"] = sample.metadata.get("choices") or []
        if kind == "numeric_match" and self.opts.tolerance is not None:
            opts["tolerance"] = float(self.opts.tolerance)
        try:
            score = get_scorer(name)(outcome.output, sample.target, **opts)
        except ValueError as e:
            raise ConfigError(f"{sample.metadata.get('source', sample.id)}: {e}") from e
        if kind in HINTED_SCORERS and score.value == 0.0:
            # a wrong answer that states the target in a sentence ("The capital of France
            # is Paris."): counted at finalize for the --scorer includes hint
            score.metadata["target_in_reply"] = bool(
                score_includes(outcome.output, sample.target).value)
        return [score]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        """The scorer's rate under its metric name (Wilson 95%), errors apart, extraction
        rate, latency, tokens, and how many wrong answers contain the target."""
        return qa_metrics(results, (options or {}).get("scorer"))

    @classmethod
    def report_extra(cls, metrics: dict[str, Any],
                     results: list[SampleResult]) -> dict[str, Any]:
        """The hint to try ``--scorer includes`` when many wrong answers contain the target."""
        hint = includes_hint(metrics)
        return {"recommendations": [hint]} if hint else {}
