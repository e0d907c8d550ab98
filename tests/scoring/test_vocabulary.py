"""One scoring vocabulary: one canonical name per function, aliases declared, and every
reader of a scorer name (qa's option, ``Task(scorer=...)``, the metric registry) resolving
the same way, so the spellings stored runs hold keep scoring identically."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

import assay.scoring
from assay.core.types import Outcome, Sample
from assay.errors import ConfigError
from assay.metrics.registry import get_metric
from assay.scoring import (
    ALIASES,
    SCORER_ONLY,
    SCORERS,
    VOCABULARY,
    canonical_scorer,
    get_parser,
    get_scorer,
)
from assay.scoring.choice import score_choice
from assay.scoring.matching import (
    score_exact,
    score_f1,
    score_includes,
    score_normalized,
    score_numeric,
)
from assay.scoring.math_scoring import score_math
from assay.tasks.base import Task
from assay.tasks.qa import QATask

#: the vocabulary written out by hand: canonical name (the name its verdicts carry) ->
#: (aliases, function)
TABLE = {
    "exact_match": (("exact", "em"), score_exact),
    "normalized_match": (("normalized",), score_normalized),
    "includes_match": (("includes",), score_includes),
    "numeric_match": (("numeric",), score_numeric),
    "token_f1": (("f1",), score_f1),
    "choice_accuracy": (("choice", "mc_accuracy"), score_choice),
    "math_verify": (("math", "math_equivalence"), score_math),
}
CANONICAL = ", ".join(TABLE)
SPELLINGS = [(canon, key) for canon, (aliases, _) in TABLE.items()
             for key in (canon, *aliases)]

#: (output, target, choices) cases for every scorer, right and wrong answers
CASES = {
    "exact_match": [("Answer: Paris", "Paris", None), ("Answer: paris", "Paris", None)],
    "normalized_match": [("Answer: PARIS.", "paris", None), ("Paris, France", "Paris", None)],
    "includes_match": [("The capital is Paris.", "paris", None), ("Parisian", "Paris", None)],
    "numeric_match": [("Answer: 1,234", "1234", None), ("It is 12.", 13, None)],
    "token_f1": [("Answer: the big cat", "a big cat", None), ("dog", "cat", None)],
    "choice_accuracy": [("The answer is (B)", "B", ["x", "y"]), ("Answer: A", 1, ["x", "y"])],
    "math_verify": [("\\boxed{\\frac{1}{2}}", "0.5", None), ("\\boxed{3}", "2", None)],
}


def test_the_vocabulary_is_the_table() -> None:
    assert [s.name for s in VOCABULARY] == list(TABLE)
    for s in VOCABULARY:
        aliases, fn = TABLE[s.name]
        assert (s.aliases, s.fn) == (aliases, fn), s.name
    assert SCORERS == {canon: fn for canon, (_, fn) in TABLE.items()}
    assert ALIASES == {key: canon for canon, key in SPELLINGS}


@pytest.mark.parametrize(("canonical", "spelling"), SPELLINGS)
def test_every_spelling_resolves_to_its_canonical_function(canonical: str,
                                                           spelling: str) -> None:
    assert canonical_scorer(spelling) == canonical
    assert get_scorer(spelling) is TABLE[canonical][1]


def test_the_package_docstring_documents_the_alias_table() -> None:
    rows = {}
    for line in (assay.scoring.__doc__ or "").splitlines():
        m = re.fullmatch(r"(\w+)\s{2,}(.+?)\s{2,}[\w.]+", line.strip())
        if m and m.group(1) in TABLE:
            rows[m.group(1)] = tuple(a.strip() for a in m.group(2).split(","))
    assert rows == {canon: aliases for canon, (aliases, _) in TABLE.items()}


def test_every_canonical_name_is_a_metric_with_the_same_aliases() -> None:
    for s in VOCABULARY:
        if s.name in SCORER_ONLY:
            continue
        info = get_metric(s.name)
        assert info.name == s.name
        assert info.aliases == s.aliases
        for alias in s.aliases:
            assert get_metric(alias) is info, alias
    assert SCORER_ONLY == frozenset()  # documented as none in assay.scoring


@pytest.mark.parametrize("canonical", list(TABLE))
def test_the_metric_gives_the_scorer_verdict_under_its_canonical_name(canonical: str) -> None:
    for output, target, choices in CASES[canonical]:
        opts = {"choices": choices} if choices else {}
        direct = TABLE[canonical][1](output, target, **opts)
        for spelling in (canonical, *TABLE[canonical][0]):
            via_metric = get_metric(spelling).fn(output, target, **opts)
            assert via_metric == direct and direct.name == canonical, spelling
    verdicts = {TABLE[canonical][1](o, t, **({"choices": c} if c else {})).value
                for o, t, c in CASES[canonical]}
    assert verdicts == {1.0, 0.0}  # the cases tell right from wrong


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.mark.parametrize("canonical", list(TABLE))
def test_every_spelling_scores_a_qa_run_identically(tmp_path: Path, canonical: str) -> None:
    rows = [{"id": str(i), "question": "q", "answer": t, **({"choices": c} if c else {})}
            for i, (_, t, c) in enumerate(CASES[canonical])]
    data = str(_jsonl(tmp_path / "d.jsonl", rows))
    outputs = [o for o, _, _ in CASES[canonical]]
    by_spelling = {}
    for spelling in (canonical, *TABLE[canonical][0]):
        task = QATask(data=data, scorer=spelling)
        by_spelling[spelling] = [task.score(s, Outcome(output=o))
                                 for s, o in zip(task.samples(), outputs, strict=True)]
        # stored under the canonical name, the one its verdicts carry: re-scores the same
        assert task.options["scorer"] == canonical
    first = by_spelling[canonical]
    assert [s[0].name for s in first] == [canonical] * len(outputs)
    assert [s[0].value for s in first] == [1.0, 0.0]
    for spelling, scores in by_spelling.items():
        assert scores == first, spelling


def test_qa_tolerance_reaches_numeric_under_any_spelling(tmp_path: Path) -> None:
    data = str(_jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": 10}]))
    for spelling in ("numeric", "numeric_match"):
        task = QATask(data=data, scorer=spelling, tolerance=0.5)
        assert task.score(task.samples()[0], Outcome(output="Answer: 10.4"))[0].value == 1.0


@pytest.mark.parametrize("canonical", ["exact_match", "normalized_match", "numeric_match",
                                       "token_f1"])
def test_every_spelling_scores_a_task_file_identically(canonical: str) -> None:
    samples = [Sample(id=str(i), input="q", target=t)
               for i, (_, t, _) in enumerate(CASES[canonical])]
    outputs = [o for o, _, _ in CASES[canonical]]
    results = {spelling: [Task(samples=samples, scorer=spelling).score(s, Outcome(output=o))
                          for s, o in zip(samples, outputs, strict=True)]
               for spelling in (canonical, *TABLE[canonical][0])}
    assert len({json.dumps([[dataclasses.asdict(x) for x in r] for r in v])
                for v in results.values()}) == 1


@pytest.mark.parametrize(("name", "suggestion"), [("exct", "exact_match"),
                                                  ("normalised", "normalized_match"),
                                                  ("numeric_mach", "numeric_match"),
                                                  ("mc_acuracy", "choice_accuracy")])
def test_an_unknown_scorer_is_a_one_line_error_with_a_suggestion(name: str,
                                                                suggestion: str) -> None:
    with pytest.raises(ConfigError) as e:
        get_scorer(name)
    msg = str(e.value)
    assert msg == (f"unknown scorer {name!r} (did you mean {suggestion!r}?); "
                   f"choose one of: {CANONICAL}")
    with pytest.raises(ConfigError) as e:
        Task(samples=[], scorer=name)
    assert str(e.value) == msg


def test_an_unknown_scorer_in_qa_is_the_same_error(tmp_path: Path) -> None:
    data = str(_jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "a"}]))
    with pytest.raises(ConfigError) as e:
        QATask(data=data, scorer="includs")
    assert "\n" not in str(e.value)
    assert str(e.value).startswith("unknown scorer 'includs' (did you mean 'includes_match'?)")


def test_a_name_far_from_every_spelling_gets_no_suggestion() -> None:
    for bad in ("zzzz", None, ["exact"]):
        with pytest.raises(ConfigError) as e:
            get_scorer(bad)  # type: ignore[arg-type]
        assert "did you mean" not in str(e.value) and CANONICAL in str(e.value)


def test_an_unknown_answer_parser_is_a_one_line_error_with_a_suggestion() -> None:
    assert get_parser("whole")("x") == "x"
    with pytest.raises(ConfigError) as e:
        get_parser("gsm8k_flexibel")
    assert str(e.value) == (
        "unknown answer parser 'gsm8k_flexibel' (did you mean 'gsm8k_flexible'?); choose one "
        "of: answer_line, gsm8k_strict, gsm8k_flexible, gsm8k_cot, boxed, first_line, whole")
