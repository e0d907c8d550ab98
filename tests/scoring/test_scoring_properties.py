"""Properties of the shared extraction and scorers, checked with hypothesis."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from assay.scoring import (
    extract_answer,
    get_scorer,
    score_choice,
    score_exact,
    score_f1,
    score_math,
    score_normalized,
    score_numeric,
)

CHOICES = ["Paris", "London", "Berlin", "Madrid"]


# --------------------------------------------------------------------------- properties

_FAST = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_SCALAR_TARGETS = st.one_of(st.text(max_size=20), st.integers(), st.floats(allow_nan=False))


@_FAST
@given(output=st.text(max_size=200), target=_SCALAR_TARGETS)
def test_text_scorers_never_crash(output: str, target: object) -> None:
    for scorer in (score_exact, score_normalized, score_f1):
        s = scorer(output, target)
        assert 0.0 <= s.value <= 1.0
        assert s.answer is None or isinstance(s.answer, str)
        assert "extraction" in s.metadata


@_FAST
@given(output=st.text(max_size=200), target=st.integers(-10**12, 10**12))
def test_numeric_never_crashes(output: str, target: int) -> None:
    s = score_numeric(output, target)
    assert s.value in (0.0, 1.0)


@_FAST
@given(output=st.text(max_size=200), target=st.integers(0, 3))
def test_choice_never_crashes(output: str, target: int) -> None:
    s = score_choice(output, target, choices=CHOICES)
    assert s.value in (0.0, 1.0)
    assert s.answer is None or s.answer in "ABCD"


@settings(max_examples=30, deadline=None)
@given(output=st.text(max_size=80))
def test_math_never_crashes(output: str) -> None:
    s = score_math(output, "2")
    assert s.value in (0.0, 1.0)


@given(output=st.text(max_size=200))
def test_extract_answer_shape(output: str) -> None:
    answer, method = extract_answer(output)
    assert method in ("marker", "boxed", "full", "none")
    assert (answer is None) == (method == "none")


_WORDS = st.text(
    alphabet=st.characters(categories=["Lu", "Ll", "Nd"], max_codepoint=0x24F) | st.just(" "),
    min_size=1,
    max_size=30,
).filter(lambda s: s.strip() and "nswer" not in s.casefold())
_PUNCT = st.text(alphabet=list("\"'.,!?;:()[]{}-«»¿¡…"), max_size=4)


@_FAST
@given(target=_WORDS, before=_PUNCT, after=_PUNCT)
def test_normalized_invariant_to_case_and_surrounding_punctuation(
    target: str, before: str, after: str
) -> None:
    for variant in (target.upper(), target.lower(), target.swapcase()):
        # Some letters do not survive a case round trip ("ı".upper() is "I", whose
        # casefold is "i"): no case-insensitive comparison can equate those.
        assume(variant.casefold() == target.casefold())
        output = f"{before}{variant}{after}"
        s = score_normalized(output, target)
        assert s.value == 1.0, (output, target)


@_FAST
@given(target=st.integers(-10**15, 10**15))
def test_numeric_accepts_thousands_separators(target: int) -> None:
    formatted = f"{target:,}"
    assert score_numeric(formatted, target).value == 1.0
    assert score_numeric(f"Answer: {formatted}", str(target)).value == 1.0
    assert score_numeric(f"The total is {formatted}.", formatted).value == 1.0


@_FAST
@given(target=st.floats(-1e9, 1e9, allow_nan=False).map(lambda x: round(x, 4)))
def test_numeric_accepts_formatted_floats(target: float) -> None:
    assert score_numeric(f"Answer: {target:,.4f}", target).value == 1.0


@pytest.mark.parametrize(
    ("output", "target", "expected"),
    [
        ("The capital of France is Paris.", "Paris", 1.0),
        ("Paris", "paris", 1.0),
        ("Parisian food is good", "Paris", 0.0),  # whole words only
        ("It is Neptune, not Jupiter's moon", "Jupiter", 0.0),
        ("The largest ocean is the Pacific Ocean.", "pacific ocean", 1.0),
        ("A spider has 8 legs.", "8", 1.0),
        ("A spider has 18 legs.", "8", 0.0),
        ("", "Paris", 0.0),
        ("Answer: Rome", ["Roma", "Rome"], 1.0),
    ],
)
def test_includes(output: str, target: object, expected: float) -> None:
    score = get_scorer("includes")(output, target)
    assert score.name == "includes_match"
    assert score.value == expected
