"""Scorers that compare the extracted answer with the target: exact, normalized,
includes, numeric and SQuAD-style F1.

Everything here is pure and fast (no I/O, no network): scorers run once per sample on the
event loop. Every scorer has the signature ``score_X(output, target, **opts) -> Score``:

* ``output`` is the raw model output (``<think>...</think>`` blocks are removed);
* ``target`` is a string, a number, or a list of acceptable answers (any match
  counts; :func:`score_f1` takes the maximum);
* unknown keyword options are ignored, so callers may pass the same options to
  every scorer;
* the returned :class:`~assay.core.types.Score` has ``name`` = the scorer's label
  (:data:`assay.scoring.vocabulary.VOCABULARY`), ``answer`` = the extracted prediction
  (``None`` when nothing could be extracted) and ``metadata["extraction"]`` = how it was
  extracted: ``"full"`` only where the whole reply was taken as the answer (no marker,
  no ``\\boxed{}``), which the extraction rate does not count as an extraction.

A target a scorer cannot use (a non-numeric target for ``numeric``, a target
that is not one of the options for ``choice``, ...) raises ``ValueError`` with
a message saying what is wrong; the caller turns it into a user error.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from assay.core.types import Score
from assay.scoring.extraction import extract_answer, strip_reasoning
from assay.scoring.normalize import normalize_text, squad_tokens
from assay.scoring.numbers import extract_numbers, parse_number
from assay.scoring.targets import nothing_extracted, short_repr, target_list, target_text

__all__ = ["score_exact", "score_f1", "score_includes", "score_normalized", "score_numeric"]


def score_exact(output: str, target: Any, **opts: Any) -> Score:
    """Exact match: the extracted answer equals ``str(target)``, both only ``.strip()``-ed.

    Returns ``Score("exact", 1.0 | 0.0, answer, explanation, {"extraction": method})``.
    """
    answer, method = extract_answer(output)
    if answer is None:
        return nothing_extracted("exact", method)
    pred = answer.strip()
    golds = [target_text(t).strip() for t in target_list(target)]
    for g in golds:
        if pred == g:
            return Score("exact", 1.0, answer, f"exact match {short_repr(g)}",
                         {"extraction": method})
    return Score("exact", 0.0, answer, f"{short_repr(pred)} != {short_repr(golds[0])}",
                 {"extraction": method})


def score_normalized(output: str, target: Any, **opts: Any) -> Score:
    """Match after :func:`normalize_text` (NFKC, casefold, no punctuation, collapsed spaces).

    Articles are not removed (use ``f1`` for SQuAD normalization). Returns
    ``Score("normalized", 1.0 | 0.0, answer, explanation, {"extraction": method})``.
    """
    answer, method = extract_answer(output)
    if answer is None:
        return nothing_extracted("normalized", method)
    pred = normalize_text(answer)
    golds = [normalize_text(target_text(t)) for t in target_list(target)]
    for g in golds:
        if pred == g:
            return Score("normalized", 1.0, answer, f"normalized match {short_repr(g)}",
                         {"extraction": method})
    return Score("normalized", 0.0, answer, f"{short_repr(pred)} != {short_repr(golds[0])}",
                 {"extraction": method})


def score_includes(output: str, target: Any, **opts: Any) -> Score:
    """Whether the normalized target appears as whole words in the normalized answer.

    For chatty models that answer in a sentence ("The capital of France is
    Paris."). More lenient than ``normalized``: say so when reporting it.
    """
    answer, method = extract_answer(output)
    if answer is None:
        return nothing_extracted("includes", method)
    pred = f" {normalize_text(answer)} "
    golds = [normalize_text(target_text(t)) for t in target_list(target)]
    for g in golds:
        if g and f" {g} " in pred:
            return Score("includes", 1.0, answer, f"contains {short_repr(g)}",
                         {"extraction": method})
    return Score("includes", 0.0, answer,
                 f"{short_repr(golds[0])} not in {short_repr(pred.strip())}",
                 {"extraction": method})


def score_numeric(output: str, target: Any, *, tolerance: float | None = None,
                  abs_tol: float = 1e-9, rel_tol: float = 1e-6, **opts: Any) -> Score:
    """Numeric match of the last number in the extracted answer against the target.

    The prediction is the last number (see :func:`extract_numbers`) in the
    extracted answer; when that has none, or when no answer marker or ``\\boxed{}`` was
    found, the last number in the whole output (``metadata["extraction"] ==
    "last_number"``). Correct when
    ``|pred - target| <= max(abs_tol, rel_tol * |target|)``; ``tolerance``
    overrides ``abs_tol``. Raises ``ValueError`` when a target is not a number.

    Returns ``Score("numeric", 1.0 | 0.0, matched_number_text, explanation,
    {"extraction": method, "predicted": float | None, "target": float | list[float]})``.
    """
    values = []
    for t in target_list(target):
        v = parse_number(t)
        if v is None:
            raise ValueError(
                f"the numeric scorer needs a numeric target, got {short_repr(target_text(t))}; "
                "use another scorer (e.g. normalized) for this benchmark"
            )
        values.append(v)
    if tolerance is not None:
        abs_tol = float(tolerance)
    meta_target: float | list[float] = values if isinstance(target, (list, tuple)) else values[0]

    answer, method = extract_answer(output)
    nums = extract_numbers(answer) if answer is not None else []
    if not nums and answer is not None and method != "full":
        nums = extract_numbers(strip_reasoning(output))
        method = "last_number"
    if not nums:
        return Score("numeric", 0.0, None,
                     "nothing extracted from the output (no number found)",
                     {"extraction": method if answer is not None else "none",
                      "predicted": None, "target": meta_target})
    pred, text = nums[-1]
    if method == "full":  # no marker: the reply's last number, not the reply as the answer
        method = "last_number"
    meta = {"extraction": method, "predicted": pred, "target": meta_target}
    for v in values:
        if abs(pred - v) <= max(abs_tol, rel_tol * abs(v)):
            return Score("numeric", 1.0, text, f"{pred:g} == {v:g}", meta)
    return Score("numeric", 0.0, text, f"{pred:g} != {values[0]:g}", meta)


def _f1(pred: list[str], gold: list[str]) -> float:
    if not pred or not gold:
        return float(pred == gold)
    common = Counter(pred) & Counter(gold)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred)
    recall = same / len(gold)
    return 2 * precision * recall / (precision + recall)


def score_f1(output: str, target: Any, **opts: Any) -> Score:
    """SQuAD-style token F1 between the extracted answer and the target.

    Tokens come from :func:`squad_tokens`: the ``normalized`` normalization plus
    removal of the English articles a/an/the, as in the SQuAD evaluation script.
    Two empty token lists score 1.0; one empty list scores 0.0. For a list
    target the best F1 is taken. Returns ``Score("f1", value in [0, 1], answer,
    explanation, {"extraction": method})``.
    """
    answer, method = extract_answer(output)
    if answer is None:
        return nothing_extracted("f1", method)
    pred = squad_tokens(answer)
    best, best_gold = -1.0, ""
    for t in target_list(target):
        gold = target_text(t)
        v = _f1(pred, squad_tokens(gold))
        if v > best:
            best, best_gold = v, gold
    return Score("f1", best, answer, f"F1 {best:.3f} against {short_repr(best_gold)}",
                 {"extraction": method})
