"""``datagen_judge``: a rubric judge scores each generated problem on anchored 1-5 levels.

One corrective retry, then the vote is ``invalid`` (counted, never a neutral number).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from assay.core.types import Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError
from assay.metrics.format import counted
from assay.scoring.judge import JudgeModels, RoleURL, combine, jury_of, poll
from assay.tasks.base import LoadedData, RoleModel, Task, jury, run_params_of
from assay.tasks.capabilities import Measure
from assay.tasks.datagen.families import model_family, self_preference_warning
from assay.tasks.datagen.judge_metrics import (
    BOOTSTRAP_RESAMPLES,
    EXCELLENT_THRESHOLD,
    PASS_THRESHOLD,
    SCORE_NAME,
    bootstrap_mean,
    judge_metrics,
    judge_report_extra,
)
from assay.tasks.datagen.judge_prompts import (
    PROMPT_VERSION,
    judge_messages,
    rationale_limit,
    retry_text,
)
from assay.tasks.datagen.jury import jury_summary
from assay.tasks.datagen.problem import load_problems
from assay.tasks.datagen.rubric import Rubric, check_verdict, resolve_rubric, rubric_schema
from assay.tasks.info import TaskInfo
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task

__all__ = ["BOOTSTRAP_RESAMPLES", "EXCELLENT_THRESHOLD", "PASS_THRESHOLD", "PROMPT_VERSION",
           "SCORE_NAME", "JudgeTask", "JudgeOptions", "bootstrap_mean", "judge_metrics",
           "jury_summary", "model_family", "rationale_limit", "self_preference_warning"]

RAW_LIMIT = 4000  # characters of a judge reply kept in the score metadata


def _clip(text: str | None, limit: int = RAW_LIMIT) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def _content_hash(parts: list[Any]) -> str:
    raw = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


class JudgeOptions(TaskOptions):
    """Options of ``datagen_judge``."""

    data: str | None = PathField(None, description="Problems file to judge.")
    rubric: str | None = PathField(None, description="Custom rubric YAML.")
    reference: str | None = PathField(None, description="A reference problem file (its first "
                                  "problem anchors the scale).")
    generator_model: str | None = Field(None, description="The model that generated the data.")
    max_tokens: int | None = Field(None, description="Max tokens per verdict.")
    judge_model: JudgeModels = Field([], description="The judge model; repeat for a jury "
                                     "(default: the run's model).")
    judge_base_url: RoleURL = Field(None, description="The judge's endpoint (default: ASSAY_JUDGE_BASE_URL, "
                                   "else OPENAI_BASE_URL; never --base-url unless the "
                                   "judge is the model under test).")
    judge_samples: int = Field(1, ge=1, le=15, description="Verdicts asked per judge (more "
                               "than one: sampled at temperature 0.7, averaged).")


@task("datagen_judge")
class JudgeTask(Task):
    """Rubric judging of generated problems (the judge: the judge_model option or the run's model).

    ``generator_model`` (self-preference warning) defaults to the problems' provenance."""

    description = ("Rubric judge of generated problems: anchored 1-5 levels, validated JSON "
                   "with one retry, invalid verdicts counted apart, bootstrap and Wilson intervals.")
    headline_metric = "overall_mean"
    info = TaskInfo(plannable=False, runs_here="assay.tasks.datagen:runs_in_a_plan",
                    measures=(Measure(capability="data_quality", standing="canonical",
                                      why=("a rubric judge (anchored 1-5 levels) is how the quality of "
                                           "generated problems is reported (HelloAgents ch. 12, One-Eval)")),),
                    roles=("judge",), tags=("datagen", "judge"))
    Options = JudgeOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        self.opts: JudgeOptions = JudgeOptions.model_validate(self.options)
        if not self.opts.data:
            raise ConfigError("datagen_judge needs the problems to judge: data=FILE.json[l]")
        self.rubric: Rubric = resolve_rubric(self.opts.rubric)

    def read(self) -> LoadedData:
        problems = load_problems(self.opts.data)
        ref = None
        ref_path = self.opts.reference
        if ref_path:
            refs = load_problems(ref_path)
            if not refs:
                raise ConfigError(f"reference file {ref_path} holds no problems")
            ref = refs[0]
        anchor = ({"problem_id": ref.problem_id, "problem": ref.problem, "answer": ref.answer}
                  if ref else None)
        generators = sorted({str(p.provenance.get("model")) for p in problems
                             if p.provenance.get("model")})
        generator = self.opts.generator_model or (generators[0] if len(generators) == 1 else None)
        samples = []
        for p in problems:
            meta: dict[str, Any] = {"topic": p.topic, "source": p.source,
                                    "generator_model": p.provenance.get("model") or generator}
            if anchor:
                meta["anchor"] = anchor
            samples.append(Sample(id=p.problem_id, input=p.problem, target=p.answer,
                                  metadata=meta, row=p.to_dict()))
        info = {
            "data": str(self.opts.data), "problems": len(samples),
            "rubric": self.rubric.name, "rubric_version": self.rubric.version,
            "rubric_hash": self.rubric.content_hash(), "dimensions": self.rubric.names,
            "reference_anchor": ref.problem_id if ref else None,
            "generator_model": generator, "prompt_version": PROMPT_VERSION,
            "content_hash": _content_hash([
                PROMPT_VERSION, [p.to_dict() for p in problems], self.rubric.content_hash(),
                ref.to_dict() if ref else None]),
        }
        return LoadedData(samples, info, dict(self.options))

    def roles(self, model: str) -> dict[str, RoleModel]:
        """The judges of ``judge_model`` (a jury); without one, the run's model judges."""
        return jury(self.opts.judge_model or [model], self.opts.judge_base_url)

    def generation_params(self, ctx: Any = None) -> dict[str, Any]:
        """Deterministic judging with room for a rationale; the run's parameters override."""
        return {"max_tokens": self.opts.max_tokens or 768, "temperature": 0.0, **run_params_of(ctx)}

    def build_messages(self, sample: Sample) -> list[Any]:
        problem = sample.row or {"problem": sample.input, "answer": sample.target}
        return judge_messages(problem, self.rubric, sample.metadata.get("anchor"))

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """Nothing to ask the run's model: the problem is the sample's (``score`` judges)."""
        return Outcome(output=str(sample.input))

    async def score(self, sample: Sample, outcome: Outcome, ctx: Any) -> list[Score]:
        """The jury's mean of the dimension scores (1-5); ``None`` when no vote is valid."""
        jury = jury_of(ctx)
        params = self.generation_params(ctx)
        schema = rubric_schema(self.rubric,
                               rationale_max_length=rationale_limit(params.get("max_tokens")))
        votes = await poll(jury, self.build_messages(sample),
                           lambda raw: check_verdict(raw, self.rubric),
                           retry=lambda why: retry_text(why, self.rubric), schema=schema,
                           params=params, samples=self.opts.judge_samples,
                           seed=params.get("seed"))
        verdict = combine([None if v.invalid else v.value["scores"] for v in votes], rule="mean")
        judges = [j.model_id for j in jury]
        generator = sample.metadata.get("generator_model")
        reasons = [r for v in votes for r in v.refused]
        common = {"raw": _clip(votes[-1].replies[-1]),
                  "attempts": max(v.attempts for v in votes),
                  "judge_model": judges[0], "generator_model": generator,
                  "self_preference": bool(self_preference_warning(generator, judges))}
        if len(votes) > 1:
            common.update(judge_models=judges, agreement=verdict.agreement, votes=[
                {"judge": v.judge, "scores": None if v.invalid else v.value["scores"],
                 "attempts": v.attempts, "reasons": v.refused} for v in votes])
        if verdict.invalid:
            return [Score(SCORE_NAME, None, None,
                          f"invalid verdict after {counted(common['attempts'], 'attempt')}: "
                          + "; ".join(r for r in reasons if r),
                          {**common, "scores": None, "invalid": True, "reasons": reasons})]
        scores = verdict.value
        rationale = next(v.value["rationale"] for v in votes if not v.invalid)
        value = sum(scores.values()) / len(scores)
        return [Score(SCORE_NAME, value, json.dumps(scores), _clip(rationale, 500),
                      {**common, "scores": scores, "invalid": False,
                       "rationale": rationale, "reasons": reasons})]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        return judge_metrics(results, options or {})

    @classmethod
    def report_extra(cls, metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
        return judge_report_extra(metrics)
