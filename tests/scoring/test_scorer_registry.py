"""The scorer registry by the names verdicts carry, its error, and scorer inference."""

from __future__ import annotations

import pytest

from assay.errors import ConfigError
from assay.scoring import (
    SCORERS,
    get_scorer,
    infer_scorer,
)

# --------------------------------------------------------------------------- registry / infer


def test_registry() -> None:
    assert list(SCORERS) == ["exact_match", "normalized_match", "includes_match", "numeric_match",
                             "token_f1", "choice_accuracy", "math_verify"]
    for name, fn in SCORERS.items():
        assert get_scorer(name) is fn


def test_get_scorer_unknown() -> None:
    with pytest.raises(ConfigError) as info:
        get_scorer("x")
    assert str(info.value) == (
        "unknown scorer 'x'; choose one of: exact_match, normalized_match, includes_match, "
        "numeric_match, token_f1, choice_accuracy, math_verify"
    )


@pytest.mark.parametrize(
    ("target", "choices", "name"),
    [
        ("B", ["a", "b"], "choice_accuracy"),
        (1, ["a", "b"], "choice_accuracy"),
        ("42", None, "numeric_match"),
        (42, None, "numeric_match"),
        (-3.5, [], "numeric_match"),
        ("1,234", None, "numeric_match"),
        ("1e-3", None, "numeric_match"),
        (["1", 2, "3.5"], None, "numeric_match"),
        (["1", "two"], None, "normalized_match"),
        ([], None, "normalized_match"),
        ("Paris", None, "normalized_match"),
        ("12 apples", None, "normalized_match"),
        ("45%", None, "normalized_match"),
        (True, None, "normalized_match"),
        (float("nan"), None, "normalized_match"),
    ],
)
def test_infer_scorer(target: object, choices, name: str) -> None:
    assert infer_scorer(target, choices) == name
