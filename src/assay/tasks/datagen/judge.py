"""``datagen_judge``: a rubric judge scores each generated problem on anchored 1-5 levels.

The run's model is the judge. Per problem: one call with the rubric (Prometheus
style: every dimension with its five anchored levels), the problem, its stated
answer and solution, and optionally a real competition problem given as the
score-5 anchor (:mod:`assay.tasks.datagen.judge_prompts`); the reply is requested as
JSON matching :func:`~assay.tasks.datagen.rubric.rubric_schema` (constrained where the
backend supports it) and validated. An unreadable reply gets ONE retry with a
corrective message; if that fails too the verdict is ``invalid``: its score value
is ``None``, it is counted and reported, and it is never turned into a neutral
number.

Each sample carries its problem (``row``) and the anchor, and the verdict is stored
with the outcome, so a stored run is scored again (``assay score RUN``) with no
model call. Metrics: :mod:`assay.tasks.datagen.judge_metrics`; juries (several runs of
this task with different judges): :func:`~assay.tasks.datagen.jury.jury_summary`;
:func:`~assay.tasks.datagen.families.self_preference_warning` flags a judge that is the
generating model (or from its family).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from assay.core.types import Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError
from assay.tasks.base import Task
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
    retry_message,
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


@task("datagen_judge")
class JudgeTask(Task):
    """Rubric judging of generated problems (the run's model is the judge).

    Options: ``data`` (problems file), ``rubric`` (YAML path; default: the
    AIME rubric), ``reference`` (problems file whose first problem is shown as
    the score-5 anchor), ``generator_model`` (for the self-preference warning;
    default: the problems' recorded provenance), ``max_tokens`` (default 768).
    """

    description = ("Rubric judge of generated problems: anchored 1-5 levels, validated JSON "
                   "with one retry, invalid verdicts counted apart, bootstrap and Wilson intervals.")
    headline_metric = "overall_mean"
    info = TaskInfo(plannable=False, tags=("datagen", "judge"))
    Options = JudgeOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        options = self.options
        if not options.get("data"):
            raise ConfigError("datagen_judge needs the problems to judge: data=FILE.json[l]")
        self.rubric: Rubric = resolve_rubric(options.get("rubric"))
        self._samples: list[Sample] | None = None
        self._info: dict[str, Any] = {}

    def samples(self) -> list[Sample]:
        """One sample per problem, in file order; each carries its problem and the anchor."""
        if self._samples is not None:
            return self._samples
        problems = load_problems(self.options["data"])
        ref = None
        ref_path = self.options.get("reference")
        if ref_path:
            refs = load_problems(ref_path)
            if not refs:
                raise ConfigError(f"reference file {ref_path} holds no problems")
            ref = refs[0]
        anchor = ({"problem_id": ref.problem_id, "problem": ref.problem, "answer": ref.answer}
                  if ref else None)
        generators = sorted({str(p.provenance.get("model")) for p in problems
                             if p.provenance.get("model")})
        generator = self.options.get("generator_model") or (
            generators[0] if len(generators) == 1 else None)
        samples = []
        for p in problems:
            meta: dict[str, Any] = {"topic": p.topic, "source": p.source,
                                    "generator_model": p.provenance.get("model") or generator}
            if anchor:
                meta["anchor"] = anchor
            samples.append(Sample(id=p.problem_id, input=p.problem, target=p.answer,
                                  metadata=meta, row=p.to_dict()))
        self._info = {
            "data": str(self.options["data"]), "problems": len(samples),
            "rubric": self.rubric.name, "rubric_version": self.rubric.version,
            "rubric_hash": self.rubric.content_hash(), "dimensions": self.rubric.names,
            "reference_anchor": ref.problem_id if ref else None,
            "generator_model": generator, "prompt_version": PROMPT_VERSION,
            "content_hash": _content_hash([
                PROMPT_VERSION, [p.to_dict() for p in problems], self.rubric.content_hash(),
                ref.to_dict() if ref else None]),
        }
        self._samples = samples
        return samples

    def generation_params(self) -> dict[str, Any]:
        """Deterministic judging with room for a rationale; run parameters override."""
        return {"max_tokens": int(self.options.get("max_tokens") or 768), "temperature": 0.0,
                **self.run_params}

    def build_messages(self, sample: Sample) -> list[Any]:
        """System role, then the rubric prompt for this sample's problem."""
        problem = sample.row or {"problem": sample.input, "answer": sample.target}
        return judge_messages(problem, self.rubric, sample.metadata.get("anchor"))

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """One constrained call; one corrective retry when the reply is not a valid verdict.

        The outcome's metadata holds the verdict (``None`` when invalid), the attempts,
        the reasons a reply was refused and the judge model.
        """
        messages = self.build_messages(sample)
        params = self.generation_params()
        schema = rubric_schema(self.rubric,
                               rationale_max_length=rationale_limit(params.get("max_tokens")))
        reply = await agent.generate(messages, response_schema=schema, **params)
        messages.append(reply.message)
        text = reply.message.content or ""
        verdict, why = check_verdict(text, self.rubric)
        reasons = [why] if why else []
        attempts = 1
        if verdict is None:
            messages.append(retry_message(why, self.rubric))
            reply = await agent.generate(messages, response_schema=schema, **params)
            messages.append(reply.message)
            text = reply.message.content or ""
            verdict, why = check_verdict(text, self.rubric)
            attempts = 2
            if why:
                reasons.append(why)
        return Outcome(transcript=messages, output=text, metadata={
            "verdict": verdict, "invalid": verdict is None, "attempts": attempts,
            "reasons": reasons, "judge_model": getattr(agent, "model_id", None)})

    def score(self, sample: Sample, outcome: Outcome) -> list[Score]:
        """The mean of the dimension scores (1-5), or ``None`` for an invalid verdict."""
        meta = outcome.metadata
        if "verdict" in meta:
            verdict = meta["verdict"]
            reasons = list(meta.get("reasons") or [])
        else:  # an outcome from elsewhere: read the reply as is
            verdict, why = check_verdict(outcome.output, self.rubric)
            reasons = [why] if why else []
        judge = meta.get("judge_model")
        generator = sample.metadata.get("generator_model")
        common = {"raw": _clip(outcome.output), "attempts": int(meta.get("attempts", 1)),
                  "judge_model": judge, "generator_model": generator,
                  "self_preference": bool(judge and self_preference_warning(generator, [judge]))}
        if verdict is None:
            return [Score(SCORE_NAME, None, None,
                          f"invalid verdict after {common['attempts']} attempt(s): "
                          + "; ".join(r for r in reasons if r),
                          {**common, "scores": None, "invalid": True, "reasons": reasons})]
        scores = verdict["scores"]
        value = sum(scores.values()) / len(scores)
        return [Score(SCORE_NAME, value, json.dumps(scores), _clip(verdict["rationale"], 500),
                      {**common, "scores": scores, "invalid": False,
                       "rationale": verdict["rationale"], "reasons": reasons})]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        """Overall and per-dimension means (bootstrap), pass/excellent/invalid rates (Wilson)."""
        return judge_metrics(results, options or {})

    @classmethod
    def report_extra(cls, metrics: dict[str, Any],
                     results: list[SampleResult]) -> dict[str, Any]:
        """Per-dimension table with distributions, validity note, recommendations."""
        return judge_report_extra(metrics)
