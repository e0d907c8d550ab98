"""A reference harness's own scoring, re-stated to reproduce published numbers: lm-eval's
``generate_until`` filters and ``exact_match``, step for step (tested against lm-eval), declared
in a gallery entry's ``reference`` block (:class:`assay.tasks.gallery.entry.Reference`)."""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from typing import Any

from assay.core.types import Score

__all__ = ["FILTER_FUNCTIONS", "INVALID", "apply_filters", "exact_match", "filter_metric_name",
           "score_reference"]

#: what lm-eval's regex filter gives when nothing matches
INVALID = "[invalid]"

FILTER_FUNCTIONS = ("regex", "take_first", "remove_whitespace", "lowercase", "uppercase")
_CASE_STEPS = {"remove_whitespace": str.strip, "lowercase": str.lower, "uppercase": str.upper}


def _regex(text: str, pattern: str, group_select: int = 0,
           fallback: str = INVALID) -> str:
    """lm-eval's ``RegexFilter`` on one response: the match at ``group_select``, its first
    non-empty group, stripped; ``fallback`` when nothing matches."""
    found = re.findall(pattern, text)
    if not found:
        return fallback
    match = found[group_select]
    if isinstance(match, tuple):
        parts = [m for m in match if m]
        match = parts[0] if parts else fallback
    return match.strip()


def apply_filters(reply: str, steps: Sequence[dict[str, Any]]) -> str:
    """``reply`` through lm-eval's ``filter:`` list of one filter set."""
    text = reply if isinstance(reply, str) else ""
    for step in steps:
        fn = step.get("function")
        if fn == "regex":
            text = _regex(text, step["regex_pattern"], int(step.get("group_select", 0)),
                          str(step.get("fallback", INVALID)))
        elif fn == "take_first":
            continue  # one response per sample: it is the first
        elif fn in _CASE_STEPS:
            text = _CASE_STEPS[fn](text)
        else:
            raise ValueError(f"unknown lm-eval filter function {fn!r}; this re-statement "
                             f"knows {', '.join(FILTER_FUNCTIONS)}")
    return text


def _normalized(text: str, regexes_to_ignore: Sequence[str], ignore_case: bool,
                ignore_punctuation: bool, ignore_numbers: bool) -> str:
    for pattern in regexes_to_ignore:
        text = re.sub(pattern, "", text)
    if ignore_case:
        text = text.lower()
    if ignore_punctuation:
        text = text.translate(str.maketrans("", "", string.punctuation))
    if ignore_numbers:
        text = text.translate(str.maketrans("", "", string.digits))
    return text


def exact_match(prediction: str, reference: str, *, regexes_to_ignore: Sequence[str] = (),
                ignore_case: bool = False, ignore_punctuation: bool = False,
                ignore_numbers: bool = False) -> float:
    """lm-eval's ``exact_match``: ``regexes_to_ignore`` removed in order, then the options."""
    opts = (regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers)
    return float(_normalized(prediction, *opts) == _normalized(reference, *opts))


def filter_metric_name(metric: str, filter_name: str) -> str:
    """lm-eval's ``exact_match,strict-match`` as ``lm_eval_exact_match_strict_match``."""
    return "lm_eval_" + re.sub(r"[^A-Za-z0-9]+", "_", f"{metric}_{filter_name}").strip("_")


def score_reference(reply: str, target: Any, *, metric: str, filter_name: str,
                    steps: Sequence[dict[str, Any]], options: dict[str, Any]) -> Score:
    """The verdict under one filter, the filtered reply as the answer (``None`` for
    ``[invalid]``); a list target is its first answer (lm-eval's gives one string)."""
    if metric != "exact_match":
        raise ValueError(f"reference metric {metric!r} is not re-stated; only exact_match")
    first = target[0] if isinstance(target, (list, tuple)) and target else target
    reference = first if isinstance(first, str) else str(first)
    filtered = apply_filters(reply or "", steps)
    value = exact_match(filtered, reference, **options)
    name = filter_metric_name(metric, filter_name)
    verdict = "equals" if value else "does not equal"
    return Score(name, value, None if filtered == INVALID else filtered,
                 f"lm-eval {metric} ({filter_name}): {filtered!r} {verdict} {reference!r}",
                 {"extraction": filter_name if filtered != INVALID else "none",
                  "filtered": filtered, "reference": "lm-evaluation-harness"})
