"""Comma groups in the middle of a text (issue 32): ``1,2345`` and ``1,234,5678``.

A run of digits joined by commas is one thousands-separated number only when it is
written as Python's own ``,`` format writes that number (PEP 378: groups of three from
the right, ``12,345``, ``1,234,567``); that is the oracle here, not the reader. Any other
run (``1,2345``, ``1,234,5678``, ``1,23``) is its comma-separated parts, each a number of
its own (the reader's documented rule, as ``1,14,200`` is 1, 14 and 200): never the
digits glued together (``12345``) and never a valid-looking prefix (``1,234``).

lm-eval's own gsm8k filters read every comma away (``1,2345`` is 12345 there), and the
gsm8k entry's ``lm_eval_exact_match_*`` columns must keep doing what lm-eval's code does
on the same replies; only assay's own ``numeric_match`` reads groups.
"""

from __future__ import annotations

import re

import pytest

from assay.scoring.numbers import extract_numbers, parse_number
from assay.tasks.gallery.entry import all_entries
from assay.tasks.gallery.task import score_reply

#: a maximal run of comma-joined digits (with an optional decimal part)
_RUN = re.compile(r"(?<![\d.])\d+(?:,\d+)+(?:\.\d+)?(?![\d.])")


def pep378(run: str) -> bool:
    """Whether ``run`` is how Python's ``format(n, ",")`` writes its number."""
    whole, _, frac = run.partition(".")
    digits = whole.replace(",", "")
    return format(int(digits), ",") == whole and (not frac or frac.isdigit())


def expected(text: str) -> list[float]:
    """The numbers a reader must find in ``text`` (which holds only plain digits, commas,
    periods and words): a PEP 378 run is one number, any other run is its parts."""
    out: list[float] = []
    pos = 0
    for m in _RUN.finditer(text):
        out += [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text[pos:m.start()])]
        run = m.group()
        if pep378(run):
            out.append(float(run.replace(",", "")))
        else:
            out += [float(p) for p in run.split(",")]
        pos = m.end()
    out += [float(x) for x in re.findall(r"\d+(?:\.\d+)?", text[pos:])]
    return out


TEXTS = [
    "1,2345",
    "1,234,5678",
    "The total is 1,2345 apples.",
    "We counted 1,234,5678 grains, then 9.",
    "12,3456 and 123,4567",
    "1,23",
    "1,234,56",
    "99,999,9999 is not a number",
    "between 1,2345 and 12,345",          # a bad run beside a good one
    "1,234,567 then 1,234,5678",
    "1,234.5 and 1,2345.5",
]


def test_the_oracle_knows_a_grouping_when_it_sees_one() -> None:
    assert pep378("12,345") and pep378("1,234,567") and pep378("1,234.5")
    assert not pep378("1,2345") and not pep378("1,234,5678") and not pep378("1,23")
    assert not pep378("0,123")


@pytest.mark.parametrize("text", TEXTS)
def test_comma_runs_are_read_as_pep378_groups_or_as_their_parts(text: str) -> None:
    got = [v for v, _ in extract_numbers(text)]
    assert got == expected(text), text


@pytest.mark.parametrize(("text", "never"), [
    ("1,2345", {12345.0, 1234.0}),
    ("1,234,5678", {12345678.0, 1234.0, 1234567.0, 2345678.0}),
    ("12,3456", {123456.0, 12345.0}),
])
def test_a_bad_group_is_never_glued_or_cut_to_a_valid_prefix(text: str,
                                                             never: set[float]) -> None:
    got = {v for v, _ in extract_numbers(f"so it is {text} in all")}
    assert not got & never, got
    assert parse_number(text) is None  # not one number


@pytest.mark.parametrize(("reply", "wrong"), [
    ("The answer is 1,2345.", ["12345", "1234"]),
    ("#### 1,234,5678", ["12345678", "1234", "1234567"]),
    ("We get 12,3456 in total", ["123456"]),
])
def test_gsm8k_numeric_match_does_not_credit_a_misgrouped_number(reply: str,
                                                                 wrong: list[str]) -> None:
    entry = all_entries()["gsm8k"]
    for gold in wrong:
        scores = {s.name: s for s in score_reply(entry, reply, gold, None)}
        assert scores["numeric_match"].value == 0.0, (reply, gold)
        # what it read is the reply's last number by the oracle's reading
        assert scores["numeric_match"].metadata["predicted"] == expected(reply)[-1]
    # the control: a well-grouped number is read whole
    good = {s.name: s for s in score_reply(entry, "The answer is 12,345.", "12345", None)}
    assert good["numeric_match"].value == 1.0


def test_the_lm_eval_columns_read_these_replies_as_lm_eval_does() -> None:
    """lm-eval (its own filter classes and exact_match, imported as the oracle) strips
    every comma: the reference columns must agree with it reply for reply, here where
    they part from ``numeric_match``."""
    from gallery.test_lm_eval_filters import gsm8k_reference, lm_eval_scores, task_file

    entry = all_entries()["gsm8k"]
    pairs = [("The answer is 1,2345.", "12345"), ("#### 1,2345", "12345"),
             ("#### 1,234,5678", "12345678"), ("#### 1,234,5678", "5678"),
             ("so 12,3456 in all\n#### 12,3456", "123456"), ("#### 1,2345", "2345")]
    oracle = lm_eval_scores(task_file("gsm8k/gsm8k.yaml"), [r for r, _ in pairs],
                            [gsm8k_reference(g) for _, g in pairs])
    names = {"strict-match": "lm_eval_exact_match_strict_match",
             "flexible-extract": "lm_eval_exact_match_flexible_extract"}
    for i, (reply, gold) in enumerate(pairs):
        scores = {s.name: s for s in score_reply(entry, reply, gold, None)}
        for filter_name, score_name in names.items():
            assert scores[score_name].value == oracle[filter_name][i], (reply, gold,
                                                                        filter_name)
    # lm-eval glues the groups: the pairs really are ones where the two readings part
    assert oracle["strict-match"][1] == 1.0 and oracle["strict-match"][2] == 1.0
