"""The scorer registry by the labels verdicts carry, its error, and scorer inference."""

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
    assert list(SCORERS) == ["exact", "normalized", "includes", "numeric", "f1", "choice", "math"]
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
        ("B", ["a", "b"], "choice"),
        (1, ["a", "b"], "choice"),
        ("42", None, "numeric"),
        (42, None, "numeric"),
        (-3.5, [], "numeric"),
        ("1,234", None, "numeric"),
        ("1e-3", None, "numeric"),
        (["1", 2, "3.5"], None, "numeric"),
        (["1", "two"], None, "normalized"),
        ([], None, "normalized"),
        ("Paris", None, "normalized"),
        ("12 apples", None, "normalized"),
        ("45%", None, "normalized"),
        (True, None, "normalized"),
        (float("nan"), None, "normalized"),
    ],
)
def test_infer_scorer(target: object, choices, name: str) -> None:
    assert infer_scorer(target, choices) == name
