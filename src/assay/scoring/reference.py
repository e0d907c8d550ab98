"""A reference harness's own scoring of a reply, re-stated so published numbers can be
reproduced: lm-evaluation-harness's ``generate_until`` filters and ``exact_match``.

A gallery entry that has a reference scorer declares it in its ``reference`` block with
the task file's own values (see :class:`assay.tasks.gallery.entry.Reference`), for
example GSM8K's two filters of lm-eval 0.4.13's ``gsm8k.yaml``::

    filter_list:
      - name: strict-match
        filter: [{function: regex, regex_pattern: "#### (\\-?[0-9\\.\\,]+)"},
                 {function: take_first}]
      - name: flexible-extract
        filter: [{function: regex, group_select: -1,
                  regex_pattern: "(-?[$0-9.,]{2,})|(-?[0-9]+)"}, {function: take_first}]
    metric_list:
      - {metric: exact_match, ignore_case: true, ignore_punctuation: false,
         regexes_to_ignore: [",", "\\$", "(?s).*#### ", "\\.$"]}

The rules, step for step as lm-eval applies them (the tests check them against lm-eval's
own ``RegexFilter``, ``TakeFirstFilter`` and ``exact_match`` on designed replies):

* ``regex``: ``findall`` of the pattern; the match at ``group_select`` (0: the first,
  -1: the last); of a match with several groups, the first non-empty one; stripped.
  No match: the literal ``[invalid]``.
* ``take_first``: the first of a sample's responses (one response per sample here).
* ``remove_whitespace``: leading and trailing whitespace removed (``str.strip()``).
* ``lowercase`` / ``uppercase``: the case changed.
* ``exact_match``: every ``regexes_to_ignore`` pattern removed (``re.sub``, in order)
  from the filtered reply and from the reference, then lower-cased if ``ignore_case``,
  punctuation (``string.punctuation``) removed if ``ignore_punctuation``, digits removed
  if ``ignore_numbers``; 1.0 when the two strings are equal.
"""

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

#: the lm-eval filter functions re-stated here
FILTER_FUNCTIONS = ("regex", "take_first", "remove_whitespace", "lowercase", "uppercase")


def _regex(text: str, pattern: str, group_select: int = 0,
           fallback: str = INVALID) -> str:
    """lm-eval's ``RegexFilter`` on one response."""
    found = re.findall(pattern, text)
    if not found:
        return fallback
    match = found[group_select]
    if isinstance(match, tuple):
        parts = [m for m in match if m]
        match = parts[0] if parts else fallback
    return match.strip()


def apply_filters(reply: str, steps: Sequence[dict[str, Any]]) -> str:
    """``reply`` through a filter pipeline (lm-eval's ``filter:`` list of one filter
    set); an unknown function raises ``ValueError``."""
    text = reply if isinstance(reply, str) else ""
    for step in steps:
        fn = step.get("function")
        if fn == "regex":
            text = _regex(text, step["regex_pattern"], int(step.get("group_select", 0)),
                          str(step.get("fallback", INVALID)))
        elif fn == "take_first":
            continue  # one response per sample: it is the first
        elif fn == "remove_whitespace":
            text = text.strip()
        elif fn == "lowercase":
            text = text.lower()
        elif fn == "uppercase":
            text = text.upper()
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
    """lm-eval's ``exact_match`` of one filtered reply against one reference."""
    opts = (regexes_to_ignore, ignore_case, ignore_punctuation, ignore_numbers)
    return float(_normalized(prediction, *opts) == _normalized(reference, *opts))


def filter_metric_name(metric: str, filter_name: str) -> str:
    """The score name of a reference metric under one filter: lm-eval reports
    ``exact_match,strict-match``; here ``lm_eval_exact_match_strict_match``."""
    return "lm_eval_" + re.sub(r"[^A-Za-z0-9]+", "_", f"{metric}_{filter_name}").strip("_")


def score_reference(reply: str, target: Any, *, metric: str, filter_name: str,
                    steps: Sequence[dict[str, Any]], options: dict[str, Any]) -> Score:
    """The reference harness's verdict on ``reply`` under one filter: the filtered reply
    as the answer (``None`` for ``[invalid]``), 1.0 or 0.0. A list target is the first
    acceptable answer (lm-eval's ``doc_to_target`` gives one string)."""
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
