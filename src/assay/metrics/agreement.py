"""Agreement between raters: weighted Cohen's kappa (quadratic for ordinal 1-5 ratings) and
percent agreement; scikit-learn when installed, else an equal NumPy fallback. Pass the full
scale as ``labels``. An undefined quantity is ``None``, never a number."""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from itertools import combinations
from typing import Any

WEIGHTS = ("quadratic", "linear", None)


def _check_pair(a: Sequence[Any], b: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    a, b = list(a), list(b)
    if len(a) != len(b):
        raise ValueError(f"rating lists differ in length: {len(a)} != {len(b)}")
    return a, b


def _kappa_numpy(a: Sequence[Any], b: Sequence[Any], weights: str | None = "quadratic",
                 labels: Iterable[Any] | None = None) -> float | None:
    import numpy as np  # heavy

    a, b = _check_pair(a, b)
    labs = sorted(set(a) | set(b)) if labels is None else list(labels)
    index = {lab: i for i, lab in enumerate(labs)}
    k = len(labs)
    conf = np.zeros((k, k), dtype=float)
    for x, y in zip(a, b, strict=True):
        if x in index and y in index:  # as scikit-learn: pairs outside ``labels`` are ignored
            conf[index[x], index[y]] += 1
    total = conf.sum()
    if total == 0:
        return None
    expected = np.outer(conf.sum(axis=1), conf.sum(axis=0)) / total
    i, j = np.indices((k, k))
    if weights is None:
        w = (i != j).astype(float)
    elif weights == "linear":
        w = np.abs(i - j).astype(float)
    else:
        w = ((i - j) ** 2).astype(float)
    denom = float((w * expected).sum())
    return None if denom == 0 else float(1.0 - (w * conf).sum() / denom)


def weighted_kappa(a: Sequence[Any], b: Sequence[Any], weights: str | None = "quadratic",
                   labels: Iterable[Any] | None = None) -> float | None:
    """Cohen's kappa of two raters on the same items; ``weights``: ``"quadratic"``,
    ``"linear"`` or ``None``; ``labels``: the scale in order (e.g. ``range(1, 6)``)."""
    if weights not in WEIGHTS:
        raise ValueError(f"weights must be one of {WEIGHTS}, got {weights!r}")
    a, b = _check_pair(a, b)
    labs = None if labels is None else list(labels)
    if not a:
        return None
    if labs is not None and not any(x in labs and y in labs for x, y in zip(a, b, strict=True)):
        return None
    try:
        from sklearn.metrics import cohen_kappa_score  # optional
    except ImportError:
        return _kappa_numpy(a, b, weights, labs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = cohen_kappa_score(a, b, labels=labs, weights=weights)
    value = float(value)
    return None if math.isnan(value) else value


def percent_agreement(a: Sequence[Any], b: Sequence[Any], tolerance: float = 0) -> float | None:
    """Share of items the two raters agree on (``tolerance=1``: "adjacent agreement")."""
    a, b = _check_pair(a, b)
    if not a:
        return None
    if tolerance:
        hits = sum(abs(float(x) - float(y)) <= tolerance for x, y in zip(a, b, strict=True))
    else:
        hits = sum(x == y for x, y in zip(a, b, strict=True))
    return hits / len(a)


def pairwise_agreement(ratings: Mapping[str, Mapping[Hashable, Any]], *,
                       weights: str | None = "quadratic",
                       labels: Iterable[Any] | None = None) -> dict[str, Any]:
    """Kappa and percent agreement for every pair of raters (``{rater: {item: rating}}``) on
    the items both rated; the means are over pairs where the value is defined."""
    labs = None if labels is None else list(labels)
    pairs = []
    for r1, r2 in combinations(list(ratings), 2):
        common = [i for i in ratings[r1] if i in ratings[r2]]
        a = [ratings[r1][i] for i in common]
        b = [ratings[r2][i] for i in common]
        pairs.append({"raters": [r1, r2], "n": len(common),
                      "kappa": weighted_kappa(a, b, weights, labs) if common else None,
                      "percent_agreement": percent_agreement(a, b) if common else None})
    kappas = [p["kappa"] for p in pairs if p["kappa"] is not None]
    pcts = [p["percent_agreement"] for p in pairs if p["percent_agreement"] is not None]
    return {"pairs": pairs, "mean_kappa": sum(kappas) / len(kappas) if kappas else None,
            "mean_percent_agreement": sum(pcts) / len(pcts) if pcts else None,
            "weights": weights or "unweighted"}
