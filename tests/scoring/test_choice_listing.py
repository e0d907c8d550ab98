"""A reply that lists the options is not an answer: echoing "A. ... B. ... C. ..." must never
score as option A (the embedded model does exactly this on ARC with few-shot examples)."""

from __future__ import annotations

import pytest

from assay.scoring.choice import score_choice

CHOICES = ["cellular telephone", "television", "refrigerator", "airplane"]


@pytest.mark.parametrize("reply", [
    "A. cellular telephone\nB. television\nC. refrigerator\nD. airplane",
    "A. fur and wings\nB. gills and feet\nC. feathers and",
    "(A) cellular telephone\n(B) television",
    "  A) one\n  B) two",
])
def test_a_list_of_options_scores_as_no_answer(reply: str) -> None:
    got = score_choice(reply, "A", choices=CHOICES)
    assert (got.value, got.answer) == (0.0, None)
    assert "lists several options" in got.explanation
    assert got.metadata["match"] == "listing"


@pytest.mark.parametrize(("reply", "letter"), [
    ("A. barometer\n\nThe correct answer is B. hygrometer.", "B"),  # one option, then its answer
    ("A) first\nB) second\nAnswer: B", "B"),  # a list, then the answer named
    ("A. cellular telephone", "A"),  # one option given as the answer
    ("B", "B"),
])
def test_an_answer_named_beside_options_is_still_read(reply: str, letter: str) -> None:
    assert score_choice(reply, "A", choices=CHOICES).answer == letter
