"""``datagen_judge``: a rubric judge scores each generated problem on anchored 1-5 levels.

The run's model is the judge. Per problem: one call with the rubric (Prometheus
style: every dimension with its five anchored levels), the problem, its stated
answer and solution, and optionally a real competition problem given as the
score-5 anchor; the reply is requested as JSON matching :func:`rubric_schema`
(constrained where the backend supports it) and validated. An unreadable reply
gets ONE retry with a corrective message; if that fails too the verdict is
``invalid``: its score value is ``None``, it is counted and reported, and it is
never turned into a neutral number.

Metrics (:meth:`JudgeBenchmark.metrics`): the overall mean and each dimension's
mean with 95% percentile-bootstrap intervals over problems (2,000 resamples,
seed 0), pass (overall >= 3.5) and excellent (>= 4.5) rates with Wilson
intervals, score distributions, and the invalid count and rate. Juries are
several runs of this benchmark with different judge models, combined by
:func:`jury_summary`. :func:`self_preference_warning` flags a judge that is the
generating model (or from its family).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from assay.core.types import Message, Outcome, Sample, SampleResult, Score
from assay.datagen.problem import Problem, load_problems
from assay.datagen.rubric import (
    LEVELS,
    Rubric,
    check_verdict,
    resolve_rubric,
    rubric_schema,
    verdict_example,
)
from assay.errors import ConfigError
from assay.metrics.stats import proportion
from assay.tasks.base import Task
from assay.tasks.options import Field, TaskOptions
from assay.tasks.registry import task

PROMPT_VERSION = "judge-v1"
PASS_THRESHOLD = 3.5
EXCELLENT_THRESHOLD = 4.5
SCORE_NAME = "rubric"
RAW_LIMIT = 4000  # characters of a judge reply kept in the score metadata
BOOTSTRAP_RESAMPLES = 2000

JUDGE_SYSTEM = (
    "You are an impartial, strict judge of competition mathematics problems. You evaluate "
    "one problem at a time against a score rubric with anchored levels, and you reply with "
    "JSON only."
)

JUDGE_TEMPLATE = """###Task Description
Evaluate the candidate AIME-style problem below (its statement, stated answer and solution) \
on every dimension of the score rubric.
1. Check the mathematics yourself: work out the answer and compare it with the stated answer \
before scoring correctness.
2. For each dimension, choose the level whose description fits best; judge strictly by the \
level descriptions, not by your general impression.
3. Do not reward length or elaborate wording; a concise, precise problem can score 5.
4. Write a short rationale (two or three sentences), then the scores.
Reply with only a JSON object of this form:
{example}
{reference}
###Candidate problem
{problem}

###Stated answer
{answer}

###Solution
{solution}

###Score rubric
{rubric}
"""

REFERENCE_TEMPLATE = """
###Reference problem (score 5)
A real competition problem, given as the standard of a score of 5 on every dimension:
{problem}
Answer: {answer}
"""

RETRY_TEMPLATE = (
    "Your reply could not be used: {why}. Reply again with only a JSON object of the form "
    "{example} with an integer from 1 to 5 for each of: {dims}. No other text."
)


def rationale_limit(max_tokens: Any, *, cap: int = 500, room: int = 200) -> int:
    """The rationale's ``maxLength``: at most ``cap`` characters, and ``room`` tokens fewer
    than ``max_tokens`` (a token is at least one character), so that a constrained judge
    always has the tokens left to write its verdict after the rationale."""
    try:
        budget = int(max_tokens)
    except (TypeError, ValueError):
        return cap
    return max(20, min(cap, budget - room))


def _clip(text: str | None, limit: int = RAW_LIMIT) -> str:
    text = text or ""
    return text if len(text) <= limit else text[:limit] + f"... [{len(text) - limit} more chars]"


def bootstrap_mean(values: Sequence[float], *, confidence: float = 0.95,
                   n_resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0) -> dict[str, Any]:
    """A mean with a percentile-bootstrap interval over the given (independent) units.

    Pass one value per cluster (per problem, per pair): resampling clusters is
    what makes the interval honest when a unit has several judgments. Seeded,
    so the same results always give the same interval. Shaped like
    :func:`assay.metrics.stats.mean_with_ci` (``value``, ``n``, ``ci_low``,
    ``ci_high``, ``method``).
    """
    import numpy as np

    n = len(values)
    out: dict[str, Any] = {"value": float(sum(values) / n) if n else None, "n": n,
                           "ci_low": None, "ci_high": None, "method": "bootstrap-percentile",
                           "resamples": n_resamples}
    if n < 2:
        return out
    arr = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(n_resamples)
    chunk = max(1, 2_000_000 // n)
    for start in range(0, n_resamples, chunk):
        stop = min(n_resamples, start + chunk)
        means[start:stop] = arr[rng.integers(0, n, size=(stop - start, n))].mean(axis=1)
    alpha = (1 - confidence) / 2
    out["ci_low"] = float(np.quantile(means, alpha))
    out["ci_high"] = float(np.quantile(means, 1 - alpha))
    return out


# -- self-preference --------------------------------------------------------------------------

_FAMILIES = ("gpt", "claude", "gemini", "gemma", "llama", "qwen", "mistral", "mixtral",
             "phi", "deepseek", "command", "smollm", "grok", "glm", "yi", "falcon", "olmo",
             "granite", "internlm", "nemotron", "kimi", "minimax")


def _model_base(model: str) -> str:
    """``openai/gpt-4o`` -> ``gpt-4o``; ``local/x/y.gguf`` -> ``y``; lower case."""
    s = str(model).strip().lower()
    for prefix in ("openai/", "local/", "python/"):
        if s.startswith(prefix):
            s = s[len(prefix):]
    s = s.rsplit("/", 1)[-1]
    return re.sub(r"\.gguf$", "", s)


def model_family(model: str) -> str | None:
    """A coarse model family from the name (``gpt``, ``qwen``, ``llama``...), if recognisable."""
    base = _model_base(model)
    if base == "local":
        return "smollm"  # the embedded default model is SmolLM2-135M-Instruct
    if re.match(r"^o\d", base):
        return "gpt"  # o1 / o3 / o4-mini come from the same provider
    for fam in _FAMILIES:
        if re.search(rf"(^|[^a-z]){fam}", base):
            return fam
    return None


def self_preference_warning(generator_model: str | None, judge_models: Sequence[str]
                            ) -> str | None:
    """A warning when a judge is the generating model or from its family, else ``None``.

    LLM judges prefer their own outputs (MT-Bench: about +10% to +25% win rate
    when judging themselves), so a judge should come from a different family
    than the generator, or be one of a jury.
    """
    if not generator_model:
        return None
    gen, fam = _model_base(generator_model), model_family(generator_model)
    same = [j for j in judge_models if _model_base(j) == gen]
    kin = [j for j in judge_models if j not in same and fam and model_family(j) == fam]
    if not same and not kin:
        return None
    parts = []
    if same:
        parts.append(f"judge {', '.join(sorted(set(same)))} is the generating model "
                     f"({generator_model})")
    if kin:
        parts.append(f"judge {', '.join(sorted(set(kin)))} is from the generator's family "
                     f"({fam})")
    return ("self-preference risk: " + "; ".join(parts) + ". LLM judges favour their own "
            "outputs; use a judge from another family, or a jury of several families.")


# -- the benchmark ----------------------------------------------------------------------------

def _content_hash(parts: list[Any]) -> str:
    raw = json.dumps(parts, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(raw.encode()).hexdigest()


class JudgeOptions(TaskOptions):
    """Options of ``datagen_judge``."""

    data: str | None = Field(None, description="Problems file to judge.")
    rubric: str | None = Field(None, description="Custom rubric YAML.")
    reference: str | None = Field(None, description="A reference problem file (its first "
                                  "problem anchors the scale).")
    generator_model: str | None = Field(None, description="The model that generated the data.")
    max_tokens: int | None = Field(None, description="Max tokens per verdict.")


@task("datagen_judge")
class JudgeBenchmark(Task):
    """Rubric judging of generated problems (the run's model is the judge).

    Options: ``data`` (problems file), ``rubric`` (YAML path; default: the
    AIME rubric), ``reference`` (problems file whose first problem is shown as
    the score-5 anchor), ``generator_model`` (for the self-preference warning;
    default: the problems' recorded provenance), ``max_tokens`` (default 768).
    """

    description = ("Rubric judge of generated problems: anchored 1-5 levels, validated JSON "
                   "with one retry, invalid verdicts counted apart, bootstrap and Wilson intervals.")
    headline_metric = "overall_mean"
    Options = JudgeOptions

    def __init__(self, **options: Any) -> None:
        super().__init__(options={k: v for k, v in options.items() if v is not None})
        options = self.options
        if not options.get("data"):
            raise ConfigError("datagen_judge needs the problems to judge: data=FILE.json[l]")
        self.rubric: Rubric = resolve_rubric(options.get("rubric"))
        self._samples: list[Sample] | None = None
        self._problems: dict[str, Problem] = {}
        self._reference: Problem | None = None
        self._info: dict[str, Any] = {}

    def samples(self) -> list[Sample]:
        """One sample per problem, in file order."""
        if self._samples is not None:
            return self._samples
        problems = load_problems(self.options["data"])
        ref_path = self.options.get("reference")
        if ref_path:
            refs = load_problems(ref_path)
            if not refs:
                raise ConfigError(f"reference file {ref_path} holds no problems")
            self._reference = refs[0]
        generators = sorted({str(p.provenance.get("model")) for p in problems
                             if p.provenance.get("model")})
        generator = self.options.get("generator_model") or (
            generators[0] if len(generators) == 1 else None)
        samples = []
        for p in problems:
            self._problems[p.problem_id] = p
            samples.append(Sample(
                id=p.problem_id, input=p.problem, target=p.answer,
                metadata={"topic": p.topic, "source": p.source,
                          "generator_model": p.provenance.get("model") or generator},
            ))
        ref = self._reference
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

    def build_messages(self, sample: Sample) -> list[Message]:
        """System role, then the rubric prompt for this sample's problem."""
        p = self._problems[sample.id]
        ref = ""
        if self._reference is not None:
            ref = REFERENCE_TEMPLATE.format(problem=self._reference.problem.strip(),
                                            answer=self._reference.answer)
        user = JUDGE_TEMPLATE.format(
            example=verdict_example(self.rubric), reference=ref, problem=p.problem.strip(),
            answer=str(p.answer).strip() or "(none given)",
            solution=(p.solution or "").strip() or "(none given)", rubric=self.rubric.render())
        return [Message("system", JUDGE_SYSTEM), Message("user", user)]

    async def solve(self, sample: Sample, agent: Any) -> Outcome:
        """One constrained call; one corrective retry when the reply is not a valid verdict."""
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
            messages.append(Message("user", RETRY_TEMPLATE.format(
                why=why, example=verdict_example(self.rubric), dims=", ".join(self.rubric.names))))
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


# -- metrics ----------------------------------------------------------------------------------

def _verdicts(results: list[SampleResult]) -> tuple[list[tuple[SampleResult, dict[str, int]]],
                                                    list[SampleResult], list[SampleResult]]:
    """(valid (result, scores) pairs, invalid results, errored results)."""
    valid, invalid, errors = [], [], []
    for r in results:
        if r.error is not None:
            errors.append(r)
            continue
        s = r.scores.get(SCORE_NAME)
        if s is None:
            continue
        meta = s.get("metadata") or {}
        if s.get("value") is None or meta.get("invalid") or not meta.get("scores"):
            invalid.append(r)
        else:
            valid.append((r, {k: int(v) for k, v in meta["scores"].items()}))
    return valid, invalid, errors


def _mean(xs: Sequence[float]) -> float:
    return sum(xs) / len(xs)


def judge_metrics(results: list[SampleResult], options: dict[str, Any] | None = None
                  ) -> dict[str, Any]:
    """Metrics of one judge's run (see the module docstring for the methods)."""
    from assay.metrics.summary import error_messages, usage_summary

    options = options or {}
    valid, invalid, errors = _verdicts(results)
    dims: list[str] = []
    for _, sc in valid:
        dims += [d for d in sc if d not in dims]
    # one unit per problem: epochs of a problem are averaged first (clustered)
    per_item: dict[str, list[dict[str, int]]] = defaultdict(list)
    for r, sc in valid:
        per_item[r.sample_id].append(sc)
    overall_items = [_mean([_mean(list(sc.values())) for sc in v]) for v in per_item.values()]
    n_items = len(overall_items)
    judged = len(valid) + len(invalid)
    m: dict[str, Any] = {
        "overall_mean": bootstrap_mean(overall_items),
        "pass_rate": proportion(sum(x >= PASS_THRESHOLD for x in overall_items), n_items),
        "excellent_rate": proportion(sum(x >= EXCELLENT_THRESHOLD for x in overall_items),
                                     n_items),
    }
    dimensions: dict[str, Any] = {}
    for d in dims:
        item_means = [_mean([sc[d] for sc in v if d in sc]) for v in per_item.values()
                      if any(d in sc for sc in v)]
        all_scores = [sc[d] for _, sc in valid if d in sc]
        dist = Counter(all_scores)
        m[f"mean_{d}"] = bootstrap_mean(item_means)
        dimensions[d] = {
            "mean": m[f"mean_{d}"],
            "distribution": {str(k): dist.get(k, 0) for k in LEVELS},
            "at_least_4": proportion(sum(x >= 4 for x in item_means), len(item_means)),
            "at_most_2": proportion(sum(x <= 2 for x in item_means), len(item_means)),
        }
    pessimistic_pass = sum(x >= PASS_THRESHOLD for x in overall_items)
    invalid_items = {r.sample_id for r in invalid} - set(per_item)
    judges = sorted({str((r.scores.get(SCORE_NAME) or {}).get("metadata", {}).get("judge_model"))
                     for r in results if r.scores.get(SCORE_NAME)} - {"None"})
    generator = options.get("generator_model") or next(
        (str(g) for r in results if (g := (r.metadata or {}).get("generator_model"))), None)
    invalid_keys = {(r.sample_id, r.epoch) for r in invalid}
    retried = [r for r in list(invalid) + [r for r, _ in valid]
               if (r.scores[SCORE_NAME].get("metadata") or {}).get("attempts", 1) > 1]
    m.update({
        "invalid_rate": proportion(len(invalid), judged),
        # invalid verdicts counted as failing: the pessimistic pass rate, beside the headline
        "pass_rate_invalid_as_fail": proportion(pessimistic_pass, n_items + len(invalid_items)),
        "n_samples": len(results),
        "n_valid": len(valid),
        "n_invalid": len(invalid),
        "n_errors": len(errors),
        "n_items": n_items,
        "retried": len(retried),
        "recovered_on_retry": sum((r.sample_id, r.epoch) not in invalid_keys for r in retried),
        "dimensions": dimensions,
        "dimension_names": dims,
        "thresholds": {"pass": PASS_THRESHOLD, "excellent": EXCELLENT_THRESHOLD},
        "ci_method": (f"means: percentile bootstrap over problems ({BOOTSTRAP_RESAMPLES} "
                      "resamples, seed 0); rates: Wilson"),
        "judge_models": judges,
        "generator_model": generator,
        "self_preference_warning": self_preference_warning(generator, judges),
        **usage_summary(results),
        "top_errors": error_messages(results),
    })
    return m


def _fmt(rate: dict[str, Any] | None, digits: int = 2) -> str:
    if not rate or rate.get("value") is None:
        return "n/a"
    s = f"{rate['value']:.{digits}f}"
    if rate.get("ci_low") is not None:
        s += f" [{rate['ci_low']:.{digits}f}, {rate['ci_high']:.{digits}f}]"
    return s


def judge_report_extra(metrics: dict[str, Any]) -> dict[str, Any]:
    """Report sections for a judge run."""
    if not metrics:
        return {}
    rows = []
    for d, info in (metrics.get("dimensions") or {}).items():
        dist = info["distribution"]
        rows.append([d, _fmt(info["mean"]), *[dist[str(k)] for k in LEVELS],
                     _fmt(info["at_least_4"]), _fmt(info["at_most_2"])])
    sections = [{
        "title": "Rubric scores per dimension",
        "headers": ["dimension", "mean [95% CI]", "1", "2", "3", "4", "5", ">= 4", "<= 2"],
        "rows": rows,
        "bars": [(d, (info["mean"]["value"] - 1) / 4) for d, info in
                 (metrics.get("dimensions") or {}).items() if info["mean"]["value"] is not None],
        "note": (f"{metrics['ci_method']}. Invalid verdicts ({metrics['n_invalid']}) are "
                 "excluded from every mean and rate and counted apart; they never become a "
                 "score."),
    }]
    recs = []
    if metrics.get("self_preference_warning"):
        recs.append(metrics["self_preference_warning"])
    inv = metrics.get("invalid_rate") or {}
    if inv.get("value"):
        recs.append(f"{metrics['n_invalid']} verdict(s) were invalid after a retry "
                    f"({inv['value']:.0%}); use a stronger judge or constrained decoding.")
    if len(metrics.get("judge_models") or []) < 2:
        recs.append("A single judge: consider a jury of judges from different families "
                    "(jury_summary) and report inter-judge agreement.")
    return {"sections": sections, "recommendations": recs}


# -- juries -----------------------------------------------------------------------------------

def _first_valid(results: list[SampleResult]) -> dict[str, dict[str, int]]:
    """``{sample_id: scores}`` from each sample's lowest epoch with a valid verdict."""
    valid, _, _ = _verdicts(sorted(results, key=lambda r: r.epoch))
    out: dict[str, dict[str, int]] = {}
    for r, sc in valid:
        out.setdefault(r.sample_id, sc)
    return out


def jury_summary(runs: list[tuple[str, list[SampleResult]]], *,
                 generator_model: str | None = None) -> dict[str, Any]:
    """Combine several judges' runs over the same problems (a PoLL-style jury).

    Per judge: its metrics (means, rates, invalid count). Per problem: the jury
    score per dimension and overall, averaged over the judges that gave a valid
    verdict (a problem no judge could score is counted in ``n_items_unscored``).
    Jury means use the percentile bootstrap over problems, pass/excellent rates
    Wilson. Agreement per dimension: quadratic-weighted Cohen's kappa (scale 1-5)
    and exact percent agreement for every pair of judges on the problems both
    scored validly, plus their means over pairs.
    """
    from assay.metrics.agreement import pairwise_agreement

    names: list[str] = []
    for judge, _ in runs:
        name, k = str(judge), 2
        while name in names:
            name, k = f"{judge}#{k}", k + 1
        names.append(name)
    per_judge: dict[str, Any] = {}
    verdicts: dict[str, dict[str, dict[str, int]]] = {}
    for name, (_, results) in zip(names, runs, strict=True):
        jm = judge_metrics(results)
        per_judge[name] = {
            "overall_mean": jm["overall_mean"],
            "dimension_means": {d: jm[f"mean_{d}"] for d in jm["dimension_names"]},
            "pass_rate": jm["pass_rate"], "excellent_rate": jm["excellent_rate"],
            "n_valid": jm["n_valid"], "n_invalid": jm["n_invalid"], "n_errors": jm["n_errors"],
            "invalid_rate": jm["invalid_rate"],
        }
        verdicts[name] = _first_valid(results)
    dims: list[str] = []
    for v in verdicts.values():
        for sc in v.values():
            dims += [d for d in sc if d not in dims]
    items: list[str] = []
    for _, results in runs:
        items += [r.sample_id for r in results if r.sample_id not in items]
    per_item: dict[str, Any] = {}
    for item in items:
        given = {n: verdicts[n][item] for n in names if item in verdicts[n]}
        if not given:
            continue
        per_item[item] = {
            "scores": {d: _mean([sc[d] for sc in given.values() if d in sc]) for d in dims
                       if any(d in sc for sc in given.values())},
            "overall": _mean([_mean(list(sc.values())) for sc in given.values()]),
            "judges": sorted(given),
        }
    overall = [v["overall"] for v in per_item.values()]
    agreement: dict[str, Any] = {}
    for d in dims:
        ratings = {n: {i: sc[d] for i, sc in verdicts[n].items() if d in sc} for n in names}
        agreement[d] = pairwise_agreement(ratings, weights="quadratic", labels=LEVELS)
    kappas = [a["mean_kappa"] for a in agreement.values() if a["mean_kappa"] is not None]
    pcts = [a["mean_percent_agreement"] for a in agreement.values()
            if a["mean_percent_agreement"] is not None]
    judges = [str(j) for j, _ in runs]
    return {
        "judges": names,
        "per_judge": per_judge,
        "jury": {
            "overall_mean": bootstrap_mean(overall),
            "dimension_means": {d: bootstrap_mean([v["scores"][d] for v in per_item.values()
                                                   if d in v["scores"]]) for d in dims},
            "pass_rate": proportion(sum(x >= PASS_THRESHOLD for x in overall), len(overall)),
            "excellent_rate": proportion(sum(x >= EXCELLENT_THRESHOLD for x in overall),
                                         len(overall)),
            "n_items": len(overall),
            "n_items_unscored": len(items) - len(overall),
            "aggregation": "mean over judges with a valid verdict",
        },
        "per_item": per_item,
        "agreement": agreement,
        "mean_kappa": _mean(kappas) if kappas else None,
        "mean_percent_agreement": _mean(pcts) if pcts else None,
        "agreement_method": "quadratic-weighted Cohen's kappa on the 1-5 scale, per judge pair",
        "self_preference_warning": self_preference_warning(generator_model, judges),
    }

