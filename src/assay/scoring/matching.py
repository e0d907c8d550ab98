"""Pure, fast scorers comparing the extracted answer with the target(s): ``score_X(output, target,
**opts) -> Score``, unknown options ignored, ``metadata["extraction"]`` set (``"full"`` is no
extraction); an unusable target raises ``ValueError``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from assay.core.types import Score
from assay.scoring.extraction import extract_answer, strip_reasoning
from assay.scoring.normalize import normalize_text, squad_tokens
from assay.scoring.numbers import extract_numbers, parse_number
from assay.scoring.targets import nothing_extracted, short_repr, target_list, target_text

__all__ = ["score_exact", "score_f1", "score_includes", "score_normalized", "score_numeric"]


def _equal(label: str, output: str, target: Any, norm: Callable[[str], str]) -> Score:
    answer, method = extract_answer(output)
    if answer is None:
        return nothing_extracted(label, method)
    pred = norm(answer)
    golds = [norm(target_text(t)) for t in target_list(target)]
    for g in golds:
        if pred == g:
            return Score(label, 1.0, answer, f"{label.removesuffix('_match')} match {short_repr(g)}",
                         {"extraction": method})
    return Score(label, 0.0, answer, f"{short_repr(pred)} != {short_repr(golds[0])}",
                 {"extraction": method})


def score_exact(output: str, target: Any, **opts: Any) -> Score:
    """The extracted answer equals ``str(target)``, both only ``.strip()``-ed."""
    return _equal("exact_match", output, target, str.strip)


def score_normalized(output: str, target: Any, **opts: Any) -> Score:
    """Equal after :func:`normalize_text` (articles kept: ``f1`` drops them)."""
    return _equal("normalized_match", output, target, normalize_text)


def score_includes(output: str, target: Any, **opts: Any) -> Score:
    """The normalized target appears as whole words in the normalized answer: for chatty
    models ("The capital of France is Paris."); more lenient than ``normalized``."""
    answer, method = extract_answer(output)
    if answer is None:
        return nothing_extracted("includes_match", method)
    pred = f" {normalize_text(answer)} "
    golds = [normalize_text(target_text(t)) for t in target_list(target)]
    for g in golds:
        if g and f" {g} " in pred:
            return Score("includes_match", 1.0, answer, f"contains {short_repr(g)}",
                         {"extraction": method})
    return Score("includes_match", 0.0, answer,
                 f"{short_repr(golds[0])} not in {short_repr(pred.strip())}",
                 {"extraction": method})


def score_numeric(output: str, target: Any, *, tolerance: float | None = None,
                  abs_tol: float = 1e-9, rel_tol: float = 1e-6, **opts: Any) -> Score:
    """The last number of the extracted answer (else, or with no marker, of the whole
    output: extraction ``last_number``) within ``max(abs_tol, rel_tol * |target|)``;
    ``tolerance`` overrides ``abs_tol``. A non-numeric target raises ``ValueError``."""
    values = []
    for t in target_list(target):
        v = parse_number(t)
        if v is None:
            raise ValueError(
                f"the numeric scorer needs a numeric target, got {short_repr(target_text(t))}; "
                "use another scorer (e.g. normalized) for this benchmark")
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
        return Score("numeric_match", 0.0, None,
                     "nothing extracted from the output (no number found)",
                     {"extraction": method if answer is not None else "none",
                      "predicted": None, "target": meta_target})
    pred, text = nums[-1]
    if method == "full":  # no marker: the reply's last number, not the reply as the answer
        method = "last_number"
    meta = {"extraction": method, "predicted": pred, "target": meta_target}
    for v in values:
        if abs(pred - v) <= max(abs_tol, rel_tol * abs(v)):
            return Score("numeric_match", 1.0, text, f"{pred:g} == {v:g}", meta)
    return Score("numeric_match", 0.0, text, f"{pred:g} != {values[0]:g}", meta)


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
    """Token F1 on :func:`squad_tokens` (two empty token lists score 1.0, unlike SQuAD v1.1),
    the best over the targets."""
    answer, method = extract_answer(output)
    if answer is None:
        return nothing_extracted("token_f1", method)
    pred = squad_tokens(answer)
    best, best_gold = -1.0, ""
    for t in target_list(target):
        gold = target_text(t)
        v = _f1(pred, squad_tokens(gold))
        if v > best:
            best, best_gold = v, gold
    return Score("token_f1", best, answer, f"F1 {best:.3f} against {short_repr(best_gold)}",
                 {"extraction": method})
