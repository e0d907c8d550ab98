"""Judge-level metrics of the registry: a rubric judge's mean score and a pairwise win
rate, aggregated by datagen's own metric code (so the numbers equal those tasks' headlines).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from assay.core.types import SampleResult
from assay.errors import ConfigError
from assay.metrics.registry import metric
from assay.tasks.datagen.judge_metrics import SCORE_NAME as RUBRIC_SCORE
from assay.tasks.datagen.judge_metrics import judge_metrics
from assay.tasks.datagen.rubric import check_verdict, resolve_rubric
from assay.tasks.datagen.winrate import ORDERS, VALUES, check_winner, combine, preferred_item
from assay.tasks.datagen.winrate import SCORE_NAME as WINRATE_SCORE
from assay.tasks.datagen.winrate_metrics import winrate_metrics


def _stored(i: int, scores: dict[str, Any]) -> SampleResult:
    """A minimal stored result holding one score, for the datagen metric functions."""
    return SampleResult(run_id="", sample_id=str(i), epoch=0, input=None, target=None,
                        output="", prediction=None, scores=scores, error=None, latency_s=0.0,
                        input_tokens=0, output_tokens=0)


def _reply_text(v: Any) -> str | None:
    return v if v is None or isinstance(v, str) else json.dumps(v)


@metric("judge_score", category="judge", dimension="correctness", level="judge",
        aliases=("rubric_score",), reference="assay.tasks.datagen.judge (datagen_judge)",
        description="""The mean rubric score (1-5) a judge model gives, as datagen_judge's
        overall_mean. Each verdict {"rationale", "scores": {dimension: 1-5}} scores the mean of
        its dimensions, and the metric is the mean over items. Verdicts are read with the datagen judge's parser (fences and prose
        tolerated; a missing dimension or a score outside 1-5 makes a verdict invalid); invalid
        verdicts are left out, never turned into a number.""",
        usage="quality of open-ended or generated items graded on anchored 1-5 levels; option "
              "rubric (a YAML path; default the AIME rubric)")
def judge_score(verdicts: Iterable[Any], *, rubric: Any = None, **opts: Any) -> float | None:
    """Mean rubric score over valid verdicts (judge reply texts or verdict dicts)."""
    rub = resolve_rubric(rubric)
    results = []
    for i, v in enumerate(verdicts):
        verdict, why = check_verdict(_reply_text(v), rub)
        if verdict is None:
            score = {"value": None, "answer": None, "explanation": why,
                     "metadata": {"invalid": True, "scores": None}}
        else:
            sc = verdict["scores"]
            score = {"value": sum(sc.values()) / len(sc), "answer": json.dumps(sc),
                     "metadata": {"invalid": False, "scores": sc}}
        results.append(_stored(i, {RUBRIC_SCORE: score}))
    if not results:
        return None
    return judge_metrics(results)["overall_mean"]["value"]


_WIN_RATES = ("win_rate_adjusted", "win_rate", "loss_rate", "tie_rate", "decisive_win_rate")


def _pair_score(i: int, item: Any) -> dict[str, Any]:
    """A pair's score as datagen_winrate stores it, from an outcome or two orders' verdicts."""
    if item is None or isinstance(item, str):
        outcome = "invalid" if item is None else item.strip().lower()
        if outcome not in (*VALUES, "invalid"):
            raise ConfigError(f"pairwise_win_rate: pair {i} is {item!r}; give win, tie, loss, "
                              "invalid or the two orders' verdicts {'A': ..., 'B': ...}")
        c = {"outcome": outcome, "inconsistent": False, "mixed": False}
        judgments: dict[str, Any] = {}
    elif isinstance(item, dict) and set(ORDERS) <= set(item):
        judgments = {}
        for order in ORDERS:
            w = item[order]
            if w is not None and not (isinstance(w, str) and w in ("1", "2", "tie")):
                parsed = check_winner(_reply_text(w))[0]
                w = parsed["winner"] if parsed else None
            judgments[order] = {"winner": w}
        c = combine(*(preferred_item(o, judgments[o]["winner"]) for o in ORDERS))
    else:
        raise ConfigError(f"pairwise_win_rate: pair {i} must be an outcome word or a mapping "
                          f"with the verdicts of orders 'A' and 'B', got {str(item)[:60]!r}")
    value = None if c["outcome"] == "invalid" else VALUES[c["outcome"]]
    return {"value": value, "answer": None if value is None else c["outcome"],
            "metadata": {**c, "judgments": judgments, "invalid": value is None}}


@metric("pairwise_win_rate", category="judge", dimension="correctness", level="judge",
        aliases=("win_rate", "winrate"), reference="assay.tasks.datagen.winrate (datagen_winrate)",
        description="""How often a judge prefers the candidate over the reference in blind
        pairwise comparisons, as in datagen_winrate. Each pair is judged in both orders (A:
        candidate shown first, B: reference first): the same preference in both orders is a win
        or loss, a preference that follows the position is a tie, a tie in either order is a
        tie, an invalid order makes the pair invalid (left out). The default rate is the
        adjusted win rate, ties counting 0.5; about 0.5 means parity.""",
        usage="generated data or answers against a reference set judged by a model; option "
              "rate (win_rate_adjusted, win_rate, loss_rate, tie_rate, decisive_win_rate)")
def pairwise_win_rate(pairs: Iterable[Any], *, rate: str = "win_rate_adjusted",
                      **opts: Any) -> float | None:
    """Win rate over pairs, each an outcome word or ``{"A": winner, "B": winner}`` where a
    winner is "1", "2", "tie", ``None`` (invalid) or the judge's reply."""
    if rate not in _WIN_RATES:
        raise ConfigError(f"pairwise_win_rate: rate must be one of {', '.join(_WIN_RATES)}, "
                          f"got {rate!r}")
    results = [_stored(i, {WINRATE_SCORE: _pair_score(i, p)}) for i, p in enumerate(pairs)]
    if not results:
        return None
    return winrate_metrics(results)[rate]["value"]
