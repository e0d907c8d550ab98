"""Metrics and report sections of a ``datagen_winrate`` run: win/tie/loss rates with
Wilson intervals, the pair-clustered adjusted win rate, and the judge's position bias."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from assay.core.types import SampleResult
from assay.metrics.format import counted
from assay.metrics.stats import proportion
from assay.metrics.summary import error_messages, usage_summary
from assay.tasks.datagen.families import self_preference_warning
from assay.tasks.datagen.judge_metrics import BOOTSTRAP_RESAMPLES, bootstrap_mean, fmt_interval

#: the score a pair gets, and each verdict's value (win 1, tie 0.5, loss 0)
SCORE_NAME = "winrate"
VALUES = {"win": 1.0, "tie": 0.5, "loss": 0.0}

__all__ = ["winrate_metrics", "winrate_report_extra"]


def winrate_metrics(results: list[SampleResult], options: dict[str, Any] | None = None
                    ) -> dict[str, Any]:
    options = options or {}
    errors = [r for r in results if r.error is not None]
    scored = [r.scores[SCORE_NAME] for r in results if r.error is None and r.scores.get(SCORE_NAME)]
    ids = [r.sample_id for r in results if r.error is None and r.scores.get(SCORE_NAME)]
    valid = [(i, s) for i, s in zip(ids, scored, strict=True) if s.get("value") is not None]
    n_invalid = len(scored) - len(valid)
    counts = {k: sum(1 for _, s in valid if s["answer"] == k) for k in VALUES}
    n = len(valid)
    inconsistent = sum(1 for _, s in valid if (s.get("metadata") or {}).get("inconsistent"))
    mixed = sum(1 for _, s in valid if (s.get("metadata") or {}).get("mixed"))
    per_pair: dict[str, list[float]] = defaultdict(list)
    for i, s in valid:
        per_pair[i].append(float(s["value"]))
    # single judgments: every order with a valid verdict, including the valid half of an
    # invalid pair
    singles = [j for s in scored for j in ((s.get("metadata") or {}).get("judgments") or {})
               .values() if j.get("winner") is not None]
    n_single_invalid = sum(1 for s in scored
                           for j in ((s.get("metadata") or {}).get("judgments") or {}).values()
                           if j.get("winner") is None)
    first = sum(1 for j in singles if j["winner"] == "1")
    second = sum(1 for j in singles if j["winner"] == "2")
    judges = sorted({str(j) for s in scored
                     for j in ((s.get("metadata") or {}).get("judge_models")
                               or [(s.get("metadata") or {}).get("judge_model")])} - {"None"})
    generator = options.get("generator_model") or next(
        (str(g) for r in results if (g := (r.metadata or {}).get("generator_model"))), None)
    seeds = sorted({(r.metadata or {}).get("seed") for r in results} - {None})
    pairing = [[(r.metadata or {}).get("generated_id"), (r.metadata or {}).get("reference_id")]
               for r in results if r.epoch == 0]
    return {
        "win_rate_adjusted": {
            **bootstrap_mean([sum(v) / len(v) for v in per_pair.values()]),
            "clustered_by": "pair", "ties_count": 0.5},
        "win_rate": proportion(counts["win"], n),
        "loss_rate": proportion(counts["loss"], n),
        "tie_rate": proportion(counts["tie"], n),
        "decisive_win_rate": proportion(counts["win"], counts["win"] + counts["loss"]),
        "position_inconsistency_rate": proportion(inconsistent, n),
        "tie_with_preference_rate": proportion(mixed, n),
        "first_position_pick_rate": proportion(first, len(singles)),
        "first_position_pick_rate_decisive": proportion(first, first + second),
        "invalid_rate": proportion(n_invalid, len(scored)),
        "wins": counts["win"], "losses": counts["loss"], "ties": counts["tie"],
        "ties_from_position_flips": inconsistent,
        "n_pairs": len(results), "n_valid_pairs": n, "n_invalid_pairs": n_invalid,
        "n_errors": len(errors),
        "n_single_judgments": len(singles), "n_single_invalid": n_single_invalid,
        "seed": seeds[0] if len(seeds) == 1 else seeds or None,
        "pairing": pairing,
        "ci_method": (f"win_rate_adjusted: percentile bootstrap over pairs ({BOOTSTRAP_RESAMPLES}"
                      " resamples, seed 0; a pair's two orders form one cluster); rates: Wilson"),
        "combination_rule": ("both orders prefer the same item -> win/loss; different items -> "
                             "tie + position flip; any tie -> tie; any invalid order -> "
                             "pair invalid (excluded, counted)"),
        "judge_models": judges,
        "generator_model": generator,
        "self_preference_warning": self_preference_warning(generator, judges),
        **usage_summary(results),
        "top_errors": error_messages(results),
    }


def _pct(rate: dict[str, Any] | None) -> str:
    return fmt_interval(rate, ".1%")


def winrate_report_extra(metrics: dict[str, Any]) -> dict[str, Any]:
    if not metrics:
        return {}
    n = metrics["n_valid_pairs"]
    flips = metrics["ties_from_position_flips"]
    inc = metrics["position_inconsistency_rate"]
    rows = [["win", metrics["wins"], _pct(metrics["win_rate"])],
            ["tie", metrics["ties"], _pct(metrics["tie_rate"])],
            ["loss", metrics["losses"], _pct(metrics["loss_rate"])],
            ["invalid (excluded)", metrics["n_invalid_pairs"], _pct(metrics["invalid_rate"])]]
    note = (f"Each pair was judged in both orders. {flips} of {n} valid pairs "
            f"({_pct(inc)}) flipped with the position and count as ties. Adjusted win rate "
            f"(ties as 0.5): {_pct(metrics['win_rate_adjusted'])}; about 50% means parity with "
            f"the real problems. The judge picked the first position in "
            f"{_pct(metrics['first_position_pick_rate'])} of single judgments.")
    if n and inc.get("value") is not None and inc["value"] >= 0.5:
        note += (" Most pairs are position-driven: the adjusted win rate near 0.5 reflects "
                 "ties from position bias, not parity.")
    sections = [{
        "title": "Win rate against reference problems",
        "headers": ["outcome", "pairs", "rate [95% CI]"],
        "rows": rows,
        "bars": [(k, metrics[f"{k}_rate"]["value"]) for k in ("win", "tie", "loss")
                 if metrics[f"{k}_rate"]["value"] is not None],
        "note": note,
    }, {
        "title": "Judge position consistency",
        "headers": ["measure", "value"],
        "rows": [["position inconsistency (flips)", _pct(inc)],
                 ["tie + preference (mixed)", _pct(metrics["tie_with_preference_rate"])],
                 ["first-position picks (all valid)", _pct(metrics["first_position_pick_rate"])],
                 ["first-position picks (decisive)",
                  _pct(metrics["first_position_pick_rate_decisive"])],
                 ["invalid single judgments", metrics["n_single_invalid"]]],
        "note": metrics["combination_rule"],
    }]
    recs = []
    if inc.get("value") is not None and inc["value"] >= 0.3:
        recs.append(f"The judge is position-inconsistent on {inc['value']:.0%} of pairs; use a "
                    "stronger judge or a jury before trusting the win rate.")
    if metrics.get("self_preference_warning"):
        recs.append(metrics["self_preference_warning"])
    if metrics["n_invalid_pairs"]:
        recs.append(f"{counted(metrics['n_invalid_pairs'], 'pair')} had an invalid verdict "
                    "(excluded).")
    return {"sections": sections, "recommendations": recs}
