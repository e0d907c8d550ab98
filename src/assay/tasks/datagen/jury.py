"""Juries: several judges' runs over the same problems, combined PoLL-style, with
inter-judge agreement (quadratic-weighted Cohen's kappa per dimension)."""

from __future__ import annotations

from typing import Any

from assay.core.types import SampleResult
from assay.metrics.agreement import pairwise_agreement
from assay.metrics.stats import proportion
from assay.tasks.datagen.families import self_preference_warning
from assay.tasks.datagen.judge_metrics import (
    EXCELLENT_THRESHOLD,
    PASS_THRESHOLD,
    bootstrap_mean,
    judge_metrics,
    mean,
    split_verdicts,
)
from assay.tasks.datagen.rubric import LEVELS


def _first_valid(results: list[SampleResult]) -> dict[str, dict[str, int]]:
    """``{sample_id: scores}`` from each sample's lowest epoch with a valid verdict."""
    valid, _, _ = split_verdicts(sorted(results, key=lambda r: r.epoch))
    out: dict[str, dict[str, int]] = {}
    for r, sc in valid:
        out.setdefault(r.sample_id, sc)
    return out


def jury_summary(runs: list[tuple[str, list[SampleResult]]], *,
                 generator_model: str | None = None) -> dict[str, Any]:
    """Several judges' runs as a PoLL-style jury: per-judge metrics, per-problem means over valid
    verdicts, and pairwise agreement per dimension."""
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
            "scores": {d: mean([sc[d] for sc in given.values() if d in sc]) for d in dims
                       if any(d in sc for sc in given.values())},
            "overall": mean([mean(list(sc.values())) for sc in given.values()]),
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
        "judges": names, "per_judge": per_judge,
        "jury": {
            "overall_mean": bootstrap_mean(overall),
            "dimension_means": {d: bootstrap_mean([v["scores"][d] for v in per_item.values()
                                                   if d in v["scores"]]) for d in dims},
            "pass_rate": proportion(sum(x >= PASS_THRESHOLD for x in overall), len(overall)),
            "excellent_rate": proportion(sum(x >= EXCELLENT_THRESHOLD for x in overall),
                                         len(overall)),
            "n_items": len(overall), "n_items_unscored": len(items) - len(overall),
            "aggregation": "mean over judges with a valid verdict",
        },
        "per_item": per_item, "agreement": agreement,
        "mean_kappa": mean(kappas) if kappas else None,
        "mean_percent_agreement": mean(pcts) if pcts else None,
        "agreement_method": "quadratic-weighted Cohen's kappa on the 1-5 scale, per judge pair",
        "self_preference_warning": self_preference_warning(generator_model, judges),
    }
