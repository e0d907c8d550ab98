"""The shared answer extraction and scorers (:mod:`assay.scoring`)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from typing import Any

import pytest

from assay.core.types import Score
from assay.scoring import (
    extract_answer,
    extract_numbers,
    format_choices,
    normalize_text,
    parse_number,
    score_choice,
    score_exact,
    score_f1,
    score_math,
    score_normalized,
    score_numeric,
    squad_tokens,
    strip_reasoning,
)

CHOICES = ["Paris", "London", "Berlin", "Madrid"]

# --------------------------------------------------------------------------- extraction


@pytest.mark.parametrize(
    ("output", "expected"),
    [
        ("Answer: 42", ("42", "marker")),
        ("answer: 42", ("42", "marker")),
        ("FINAL ANSWER: Paris", ("Paris", "marker")),
        ("Final answer: Paris.", ("Paris", "marker")),
        ("Reasoning...\nFinal Answer: (B).\nThanks!", ("B", "marker")),
        ("Answer: 1\nsome more thought\nAnswer: 2", ("2", "marker")),  # last occurrence wins
        ('Answer: "Paris"', ("Paris", "marker")),
        ("Answer: [yes]", ("yes", "marker")),
        ("**Final Answer:** 12", ("12", "marker")),
        ("**Final Answer**: 12", ("12", "marker")),
        ("Final answer: $\\boxed{7}$", ("7", "marker")),
        ("Answer:\n\n  17 ", ("17", "marker")),  # marker ends its line: next non-empty line
        ("So the answer is 4.", ("4", "marker")),
        ("The answer is 4. Answer: 5", ("5", "marker")),
        ("Answer: (a) and (b)", ("(a) and (b)", "marker")),  # not one wrapping pair
        ("We get \\boxed{\\frac{1}{2}} here", ("\\frac{1}{2}", "boxed")),
        ("\\boxed{1} then \\boxed{{2}}", ("{2}", "boxed")),  # last, balanced braces
        ("\\boxed{3} and a cut-off \\boxed{4", ("3", "boxed")),
        ("\\boxed{ \\boxed{x}", ("x", "boxed")),
        ("\\boxed{} \\fbox{y}", ("y", "boxed")),
        ("  Paris  ", ("Paris", "full")),
        ("Paris.", ("Paris.", "full")),
        ("", (None, "none")),
        ("   \n\t ", (None, "none")),
        ("<think>Answer: 3</think>The answer is 4.", ("4", "marker")),
        ("<think>\\boxed{9}</think>\n8", ("8", "full")),
        ("<THINK>x</THINK> Paris", ("Paris", "full")),
        ("reasoning without opening tag</think>Answer: 5", ("5", "marker")),
        ("<think>cut off reasoning, Answer: 3", (None, "none")),
        ("The unanswered question", ("The unanswered question", "full")),
    ],
)
def test_extract_answer(output: str, expected: tuple[str | None, str]) -> None:
    assert extract_answer(output) == expected


def test_strip_reasoning() -> None:
    text = "no tags here: answer 1"
    assert strip_reasoning(text) is text
    assert strip_reasoning("<think>a</think>b<think>c</think>d") == "bd"
    assert strip_reasoning("a</think>b<think>c</think>d") == "bd"
    assert strip_reasoning("<think>a<think>b</think>c") == "c"
    assert strip_reasoning("x<think>a</think>y<think>z") == "xy"


PATHOLOGICAL = ["<think> ", "\\boxed{ ", "Answer: { ", "(B) 1,234 "]
_SCORE_PATHOLOGICAL = """
import json, sys
from assay.scoring import SCORERS
chunks, choices = json.loads(sys.argv[1]), json.loads(sys.argv[2])
scores = {c: {name: scorer(c * 20_000, "1", choices=choices)
              for name, scorer in SCORERS.items() if name != "math_verify"} for c in chunks}
print(json.dumps({c: {name: [s.value, s.answer and s.answer[:10]] for name, s in by.items()}
                  for c, by in scores.items()}))
"""
#: (value, first 10 characters of the extracted answer) per scorer, for target "1"
#: the scorers comparing text, whose answer is the extracted text itself
TEXT_SCORERS = ["exact_match", "normalized_match", "includes_match", "token_f1"]
PATHOLOGICAL_VERDICTS = {
    "<think> ": dict.fromkeys(["exact_match", "normalized_match", "includes_match",
                               "numeric_match", "token_f1", "choice_accuracy"],
                              [0.0, None]),  # all reasoning, never closed: nothing extracted
    "\\boxed{ ": {**dict.fromkeys(TEXT_SCORERS, [0.0, "\\boxed{ \\b"]),
                  "numeric_match": [0.0, None], "choice_accuracy": [0.0, None]},
    "Answer: { ": {**dict.fromkeys(TEXT_SCORERS, [0.0, "{"]),
                   "numeric_match": [0.0, None], "choice_accuracy": [0.0, None]},
    "(B) 1,234 ": {**dict.fromkeys(TEXT_SCORERS, [0.0, "(B) 1,234 "]),
                   "numeric_match": [0.0, "1,234"], "choice_accuracy": [1.0, "B"]},  # "1" is B
}


@pytest.fixture(scope="module")
def pathological_scores() -> dict[str, Any] | str:
    """Every scorer but math (it has its own guard) on 100k+ characters of pathological
    output, in a subprocess: a regex that backtracks catastrophically turns well under a
    second into hours, and the generous timeout only turns such a hang into a failure
    (returned as a message, so that it is waited for once, not once per chunk)."""
    try:
        out = subprocess.run([sys.executable, "-c", _SCORE_PATHOLOGICAL,
                              json.dumps(PATHOLOGICAL), json.dumps(CHOICES)],
                             capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        return "a scorer hung on pathological output (catastrophic backtracking?)"
    if out.returncode != 0:
        return out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("chunk", PATHOLOGICAL)
def test_pathological_outputs_are_scored(chunk: str,
                                         pathological_scores: dict[str, Any] | str) -> None:
    assert not isinstance(pathological_scores, str), pathological_scores
    assert pathological_scores[chunk] == PATHOLOGICAL_VERDICTS[chunk]


# --------------------------------------------------------------------------- exact / normalized


@pytest.mark.parametrize(
    ("output", "target", "value"),
    [
        ("Paris", "Paris", 1.0),
        ("  Paris\n", " Paris ", 1.0),
        ("paris", "Paris", 0.0),
        ("Answer: Paris", "Paris", 1.0),
        ("Answer: Paris.", "Paris", 1.0),  # marker cleaning drops the trailing period
        ("Paris.", "Paris", 0.0),  # full output: only stripped
        ("42", 42, 1.0),
        ("Answer: 42.0", 42, 0.0),
        ("Answer: Rome", ["Paris", "Rome"], 1.0),
        ("Answer: Oslo", ["Paris", "Rome"], 0.0),
        ("<think>Answer: nope</think>Answer: Paris", "Paris", 1.0),
    ],
)
def test_score_exact(output: str, target: object, value: float) -> None:
    s = score_exact(output, target)
    assert isinstance(s, Score)
    assert (s.name, s.value) == ("exact_match", value)
    assert "extraction" in s.metadata


@pytest.mark.parametrize(
    ("output", "target", "value"),
    [
        ("paris", "Paris", 1.0),
        ("PARIS!", "Paris", 1.0),
        ("Answer: 'Paris'.", "paris", 1.0),
        ("New   York", "new york", 1.0),
        ("new-york", "New York", 0.0),  # punctuation is removed, not replaced by a space
        ("U.S.A.", "usa", 1.0),
        ("Ｐａｒｉｓ", "paris", 1.0),  # NFKC folds full-width letters
        ("Straße", "STRASSE", 1.0),  # case folding
        ("«Paris»", "Paris", 1.0),  # unicode punctuation
        ("the Paris", "Paris", 0.0),  # articles are NOT removed
        ("$5", "5", 0.0),  # symbols (S*) are kept
        ("Answer: rome", ["Paris", "Rome"], 1.0),
        ("London", ["Paris", "Rome"], 0.0),
    ],
)
def test_score_normalized(output: str, target: object, value: float) -> None:
    s = score_normalized(output, target)
    assert (s.name, s.value) == ("normalized_match", value)


def test_normalize_text() -> None:
    assert normalize_text("  Hello,   World!! ") == "hello world"
    assert normalize_text("¿Qué?") == "qué"
    assert normalize_text("a+b=c") == "a+b=c"


@pytest.mark.parametrize("scorer", [score_exact, score_normalized, score_f1])
@pytest.mark.parametrize("output", ["", "   ", "<think>only thinking</think>"])
def test_nothing_extracted(scorer, output: str) -> None:
    s = scorer(output, "Paris")
    assert s.value == 0.0
    assert s.answer is None
    assert "nothing extracted" in s.explanation
    assert s.metadata["extraction"] == "none"


# --------------------------------------------------------------------------- numeric


@pytest.mark.parametrize(
    ("output", "target", "value", "extraction"),
    [
        ("42", "42", 1.0, "last_number"),
        ("The answer is 42.", 42, 1.0, "marker"),
        ("Answer: 1,234,567", "1234567", 1.0, "marker"),
        ("Answer: 1234567", "1,234,567", 1.0, "marker"),
        ("Answer: -17", -17, 1.0, "marker"),
        ("Answer: −17", "-17", 1.0, "marker"),  # unicode minus
        ("x = -3.5", -3.5, 1.0, "last_number"),
        ("Answer: 1.5e3", 1500, 1.0, "marker"),
        ("Answer: 2E-3", 0.002, 1.0, "marker"),
        ("Answer: 45%", 45, 1.0, "marker"),
        ("Answer: 45\\%", "45", 1.0, "marker"),
        ("Answer: 45%", "45%", 1.0, "marker"),
        ("Answer: $1,234.50", 1234.5, 1.0, "marker"),
        ("It costs -$5 now", -5, 1.0, "last_number"),
        ("Answer: €12", 12, 1.0, "marker"),
        ("Answer: 3/4", 0.75, 1.0, "marker"),
        ("Answer: -3/4.", -0.75, 1.0, "marker"),
        ("\\boxed{\\frac{3}{4}}", "0.75", 1.0, "boxed"),
        ("Answer: 0.75", "3/4", 1.0, "marker"),
        ("5 apples and 7 pears, so 12", 12, 1.0, "last_number"),
        ("Answer: 12 apples (about 3 kg)", 12, 0.0, "marker"),  # the LAST number counts
        ("9 - 4", 4, 1.0, "last_number"),  # a binary minus is not a sign
        ("Answer: 1,23", 23, 1.0, "marker"),  # not a thousands group
        ("Answer: 1,14,200", 14200, 0.0, "marker"),  # groups of 3 only: never 14,200
        ("Answer: 1,14,200", 200, 1.0, "marker"),
        ("Answer: 0.1", 0.1000000001, 1.0, "marker"),  # within rel_tol
        ("Answer: 100.001", 100, 0.0, "marker"),
        ("I computed 18.\nFinal answer: eighteen", 18, 1.0, "last_number"),
        ("Answer: unknown", 5, 0.0, "last_number"),
        ("<think>The result is 7</think>Answer: 8", 8, 1.0, "marker"),
        ("<think>The result is 7</think>no idea", 7, 0.0, "full"),
        ("Answer: 7", [5, "7", "9"], 1.0, "marker"),
        ("Answer: 6", [5, "7"], 0.0, "marker"),
        ("Answer: 1e999", 1, 0.0, "last_number"),  # overflow is not a number
    ],
)
def test_score_numeric(output: str, target: object, value: float, extraction: str) -> None:
    s = score_numeric(output, target)
    assert (s.name, s.value) == ("numeric_match", value), s
    assert s.metadata["extraction"] == extraction


def test_score_numeric_tolerance() -> None:
    assert score_numeric("Answer: 3.14", "3.14159").value == 0.0
    assert score_numeric("Answer: 3.14", "3.14159", tolerance=0.01).value == 1.0
    assert score_numeric("Answer: 103", 100, rel_tol=0.05).value == 1.0
    assert score_numeric("Answer: 0", 0).value == 1.0
    assert score_numeric("Answer: 1e-10", 0).value == 1.0  # default abs_tol 1e-9


def test_score_numeric_answer_and_metadata() -> None:
    s = score_numeric("So the total is $1,234.", "1234")
    assert s.answer == "$1,234"
    assert s.metadata["predicted"] == 1234.0
    assert s.metadata["target"] == 1234.0
    s = score_numeric("no digits at all", 3)
    assert s.answer is None and s.value == 0.0
    assert "nothing extracted" in s.explanation


@pytest.mark.parametrize("target", ["Paris", "", "12 apples", True, None, [], [1, "x"], "nan"])
def test_score_numeric_rejects_non_numeric_target(target: object) -> None:
    with pytest.raises(ValueError):
        score_numeric("Answer: 1", target)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42.0),
        (" -1,000 ", -1000.0),
        ("+2.5", 2.5),
        (".5", 0.5),
        ("1.5e3", 1500.0),
        ("45%", 45.0),
        ("$5", 5.0),
        ("3/4", 0.75),
        (7, 7.0),
        (2.5, 2.5),
        ("5 apples", None),
        ("1/0", None),
        (True, None),
        (float("inf"), None),
        (None, None),
        ("", None),
    ],
)
def test_parse_number(text: object, value: float | None) -> None:
    assert parse_number(text) == value


def test_extract_numbers() -> None:
    assert [v for v, _ in extract_numbers("12/25/2023")] == [0.48, 2023.0]
    assert extract_numbers("no numbers") == []
    assert extract_numbers("x = -2, y = 1,000") == [(-2.0, "-2"), (1000.0, "1,000")]


# --------------------------------------------------------------------------- f1


@pytest.mark.parametrize(
    ("output", "target", "value"),
    [
        ("Paris", "Paris", 1.0),
        ("the Eiffel Tower", "Eiffel Tower", 1.0),  # articles removed
        ("The Eiffel Tower!", "eiffel tower", 1.0),
        ("the big cat", "a cat", 2 / 3),  # p=1/2, r=1
        ("Eiffel Tower in Paris", "Eiffel Tower", 2 * 0.5 * 1 / 1.5),
        ("red red blue", "red blue blue", 2 / 3),  # token multisets
        ("London", "Paris", 0.0),
        ("Answer: Paris France", ["Paris", "Paris France"], 1.0),  # max over targets
        ("Answer: Paris", ["London", "Paris France"], 2 / 3),
        ("Answer: the", "a", 1.0),  # both empty after article removal
        ("Answer: the", "Paris", 0.0),
    ],
)
def test_score_f1(output: str, target: object, value: float) -> None:
    s = score_f1(output, target)
    assert s.name == "token_f1"
    assert s.value == pytest.approx(value)


def test_squad_tokens() -> None:
    assert squad_tokens("The cat, an apple and A dog.") == ["cat", "apple", "and", "dog"]
    assert squad_tokens("theatre anthem") == ["theatre", "anthem"]


# --------------------------------------------------------------------------- choice


@pytest.mark.parametrize(
    ("output", "target", "value", "answer"),
    [
        ("B", "B", 1.0, "B"),
        ("b", "B", 1.0, "B"),
        ("(B)", "B", 1.0, "B"),
        ("B.", "B", 1.0, "B"),
        ("B)", "B", 1.0, "B"),
        ("[B]", "B", 1.0, "B"),
        ("Answer: B", "B", 1.0, "B"),
        ("Answer: (B) London", "B", 1.0, "B"),
        ("The answer is B", "B", 1.0, "B"),
        ("The answer is (B).", "B", 1.0, "B"),
        ("I think the correct option is C because of X.", "C", 1.0, "C"),
        ("B) London", "B", 1.0, "B"),
        ("B. London", "B", 1.0, "B"),
        ("\\boxed{D}", "D", 1.0, "D"),
        ("**Answer:** C", "C", 1.0, "C"),
        ("<think>Maybe A? Answer: A</think>Answer: B", "B", 1.0, "B"),
        ("Answer: london", "B", 1.0, "B"),  # text of a choice
        ("London", 1, 1.0, "B"),  # 0-based int index target
        ("B", 1, 1.0, "B"),
        ("B", "London", 1.0, "B"),  # choice-text target
        ("B", "london.", 1.0, "B"),
        ("B", "(B)", 1.0, "B"),
        ("B", "b", 1.0, "B"),
        ("B", "1", 1.0, "B"),  # digit string: index when no choice text matches
        ("C", ["B", "C"], 1.0, "C"),
        ("A", ["B", "C"], 0.0, "A"),
        ("C", "B", 0.0, "C"),
        ("Answer: A good guess is C", "C", 1.0, "C"),  # last standalone letter
        ("E", "B", 0.0, None),  # out of range: nothing extracted
        ("Answer: Rome", "A", 0.0, None),
        ("Answer: it's a bit tricky", "A", 0.0, None),
    ],
)
def test_score_choice(output: str, target: object, value: float, answer: str | None) -> None:
    s = score_choice(output, target, choices=CHOICES)
    assert (s.name, s.value, s.answer) == ("choice_accuracy", value, answer), s
    assert "extraction" in s.metadata
    if answer is None:
        assert "nothing extracted" in s.explanation


def test_score_choice_metadata() -> None:
    s = score_choice("Answer: (C)", "London", choices=CHOICES)
    assert s.metadata["predicted_index"] == 2
    assert s.metadata["target_index"] == 1
    assert s.metadata["match"] == "letter"
    assert score_choice("Berlin", 2, choices=CHOICES).metadata["match"] == "text"


def test_score_choice_numeric_choice_texts() -> None:
    choices = ["1", "2", "3"]
    assert score_choice("B", "2", choices=choices).value == 1.0  # text beats index
    assert score_choice("Answer: 3", "C", choices=choices).value == 1.0


@pytest.mark.parametrize(
    ("target", "choices"),
    [("E", CHOICES), (4, CHOICES), (-1, CHOICES), ("Rome", CHOICES), (True, CHOICES),
     ("A", None), ("A", []), ("A", [str(i) for i in range(27)])],
)
def test_score_choice_bad_target_or_choices(target: object, choices) -> None:
    with pytest.raises(ValueError):
        score_choice("A", target, choices=choices)


def test_format_choices() -> None:
    text = format_choices("Capital of France?", CHOICES)
    assert text == (
        "Capital of France?\n\nA. Paris\nB. London\nC. Berlin\nD. Madrid\n\n"
        "Answer with the letter of the correct option."
    )
    assert text.splitlines()[-1] == "Answer with the letter of the correct option."


# --------------------------------------------------------------------------- math


@pytest.mark.parametrize(
    ("output", "target", "value"),
    [
        ("The answer is $\\boxed{\\frac{1}{2}}$.", "0.5", 1.0),
        ("So we get 0.5", "\\frac{1}{2}", 1.0),
        ("$\\boxed{\\frac12}$", "1/2", 1.0),
        ("Thus $x = 2$.", "2", 1.0),
        ("\\boxed{2}", "x=2", 1.0),
        ("\\boxed{\\frac{1}{\\sqrt{2}}}", "\\frac{\\sqrt{2}}{2}", 1.0),
        ("\\boxed{(x+1)^2}", "x^2+2x+1", 1.0),
        ("\\boxed{1,234}", "1234", 1.0),
        ("\\boxed{3}", "$\\boxed{3}$", 1.0),
        ("\\boxed{3}", 3, 1.0),
        ("\\boxed{3}", ["4", "3"], 1.0),
        ("\\boxed{\\frac{1}{3}}", "0.5", 0.0),
        ("<think>\\boxed{5}</think>\\boxed{4}", "4", 1.0),
    ],
)
def test_score_math(output: str, target: object, value: float) -> None:
    s = score_math(output, target)
    assert (s.name, s.value) == ("math_verify", value), s
    assert s.answer is not None
    assert "extraction" in s.metadata


@pytest.mark.parametrize("output", ["", "  ", "no math here at all", "<think>x</think>"])
def test_score_math_nothing_extracted(output: str) -> None:
    s = score_math(output, "2")
    assert s.value == 0.0 and s.answer is None
    assert "nothing extracted" in s.explanation


def test_score_math_in_worker_thread() -> None:
    results: list[Score] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(score_math("\\boxed{\\frac{1}{2}}", "0.5"))
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=work)
    t.start()
    t.join(timeout=60)
    assert not errors
    assert results and results[0].value == 1.0
