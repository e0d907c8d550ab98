"""Log-likelihood metrics as lm-evaluation-harness 0.4.13 computes them: multiple choice by the
likeliest choice (``acc``; ``acc_norm`` per character, ``acc_bytes`` per UTF-8 byte of the
choice's text, without the delimiter), and perplexity over a corpus (``word_perplexity``,
``byte_perplexity``, ``bits_per_byte``: summed log-likelihood over summed words or bytes)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from typing import Any

from assay.core.types import Score
from assay.metrics.registry import metric

_REF = "lm-evaluation-harness 0.4.13 (api/task.py process_results, api/metrics.py)"


def _pick(logprobs: Sequence[float], divisors: Sequence[float]) -> int:
    """The first index of the highest ``logprob / divisor`` (numpy's argmax)."""
    values = [lp / max(d, 1.0) for lp, d in zip(logprobs, divisors, strict=True)]
    return values.index(max(values))


def _choice_metric(name: str, unit: Callable[[str], float], norm: str) -> Callable[..., Score]:
    def score(logprobs: Sequence[float], target: Any, *, choices: Sequence[str],
              **_: Any) -> Score:
        pick = _pick(logprobs, [unit(c) for c in choices])
        gold = int(target)
        return Score(name, 1.0 if pick == gold else 0.0, choices[pick],
                     f"picked choice {pick} of {len(choices)} by {norm} (gold {gold})",
                     {"pick": pick, "gold": gold})
    return score


acc = metric(
    "acc", category="likelihood", dimension="correctness", reference=_REF,
    description="""Multiple choice by log-likelihood: the choice whose continuation the model
    finds likeliest (summed token log-probs after the context) is its pick; 1.0 when that is the
    gold choice.""",
    usage="multiple-choice entries run with --mc loglikelihood (base models, published numbers)",
)(_choice_metric("acc", lambda c: 1.0, "summed log-prob"))
acc_norm = metric(
    "acc_norm", category="likelihood", dimension="correctness", reference=_REF,
    description="""Multiple choice by log-likelihood per character: each choice's summed log-prob
    divided by the length of its text in characters (lm-eval's acc_norm), the highest picked; 1.0
    when that is the gold choice. Removes the bias against long choices.""",
    usage="--mc loglikelihood on HellaSwag, ARC, PIQA, OpenBookQA (what model cards report)",
)(_choice_metric("acc_norm", len, "log-prob per character"))
acc_bytes = metric(
    "acc_bytes", category="likelihood", dimension="correctness", reference=_REF,
    description="""Multiple choice by log-likelihood per UTF-8 byte of each choice's text (lm-eval's
    acc_bytes), the highest picked; 1.0 when that is the gold choice.""",
    usage="--mc loglikelihood where choices mix scripts of different byte widths",
)(_choice_metric("acc_bytes", lambda c: float(len(c.encode("utf-8"))), "log-prob per byte"))


def count_words(text: str) -> int:
    """lm-eval's word count: the pieces between runs of whitespace."""
    return len(re.split(r"\s+", text))


def count_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf


def _weighted(items: Sequence[tuple[float, float]]) -> float:
    return sum(a for a, _ in items) / sum(b for _, b in items)


@metric("word_perplexity", category="likelihood", dimension="fluency", level="corpus",
        higher_is_better=False, reference=_REF,
        description="""exp(-(summed log-likelihood of the texts) / (their words)), words being what
        lies between runs of whitespace. Lower is better; depends on the tokenizer only through
        the model.""",
        usage="perplexity entries (rolling log-likelihood over whole texts)")
def word_perplexity(items: Sequence[tuple[float, float]]) -> float:
    return _exp(-_weighted(items))


@metric("byte_perplexity", category="likelihood", dimension="fluency", level="corpus",
        higher_is_better=False, reference=_REF,
        description="""exp(-(summed log-likelihood) / (UTF-8 bytes of the texts)). Lower is better;
        comparable across tokenizers.""",
        usage="perplexity entries; compare models with different tokenizers")
def byte_perplexity(items: Sequence[tuple[float, float]]) -> float:
    return _exp(-_weighted(items))


@metric("bits_per_byte", category="likelihood", dimension="fluency", level="corpus",
        higher_is_better=False, reference=_REF, aliases=("bpb",),
        description="""-(summed log-likelihood) / (UTF-8 bytes) / ln 2: the bits the model needs per
        byte of text. Lower is better; comparable across tokenizers.""",
        usage="perplexity entries (the headline: the same figure papers report as bpb)")
def bits_per_byte(items: Sequence[tuple[float, float]]) -> float:
    return -_weighted(items) / math.log(2)


def corpus_interval(fn: Callable[[Sequence[tuple[float, float]]], float],
                    items: Sequence[tuple[float, float]], *, resamples: int = 1000,
                    seed: int = 0, confidence: float = 0.95) -> dict[str, Any]:
    """``fn`` over ``items`` with a seeded percentile bootstrap over the texts (each resample
    keeps a text's log-likelihood with its count)."""
    import numpy as np  # heavy

    value = fn(items)
    out: dict[str, Any] = {"value": value, "n": len(items), "ci_low": None, "ci_high": None,
                           "method": "bootstrap"}
    if len(items) < 2:
        return out
    arr = np.asarray(items, dtype=float)
    idx = np.random.default_rng(seed).integers(0, len(arr), size=(resamples, len(arr)))
    sums = arr[idx].sum(axis=1)  # each resample's summed log-likelihood and count
    draws = [fn([(float(a), float(b))]) for a, b in sums]
    tail = (1 - confidence) / 2 * 100
    out["ci_low"], out["ci_high"] = (float(x) for x in np.percentile(draws, [tail, 100 - tail]))
    return out
