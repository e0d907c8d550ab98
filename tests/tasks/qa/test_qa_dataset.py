"""The qa benchmark's dataset mapping: key inference, ids, choices, prompts, scorer inference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.core.types import Outcome
from assay.data.files import Rows, load_rows
from assay.errors import ConfigError, DatasetError
from assay.tasks.qa import QATask
from assay.tasks.qa.dataset import build_samples


def rows_of(*rows: dict) -> Rows:
    return Rows(list(rows), [f"data.jsonl:{i + 1}" for i in range(len(rows))],
                {"path": "data.jsonl"})


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# --------------------------------------------------------------------------- key inference


@pytest.mark.parametrize(
    ("q", "a"),
    [
        ("question", "answer"),
        ("input", "target"),
        ("problem", "solution"),
        ("prompt", "expected"),
        ("query", "ground_truth"),
        ("question", "final_answer"),
        ("text", "label"),
        ("Question", "Answer"),
        ("QUESTION", "ANSWER"),  # case-insensitive fallback
    ],
)
def test_common_field_names_are_inferred(q, a):
    samples, keys = build_samples(rows_of({"meta": "x", q: "What is 2+2?", a: "4"}))
    assert keys["question"] == q and keys["answer"] == a
    assert samples[0].input == "What is 2+2?"
    assert samples[0].target == "4"
    assert samples[0].metadata["source"] == "data.jsonl:1"


def test_explicit_keys_win_over_inference():
    samples, keys = build_samples(
        rows_of({"question": "ignored", "answer": "ignored", "q": "real q", "gold": "real a",
                 "key": "k1"}),
        question_key="q", answer_key="gold", id_key="key",
    )
    assert keys == {"question": "q", "answer": "gold", "choices": None, "id": "key"}
    assert (samples[0].id, samples[0].input, samples[0].target) == ("k1", "real q", "real a")


def test_uninferable_question_field_names_the_fields_and_the_flag():
    with pytest.raises(DatasetError) as e:
        build_samples(rows_of({"foo": "q", "answer": "a"}))
    msg = str(e.value)
    assert "data.jsonl:1" in msg and "foo" in msg and "--question-key" in msg


def test_uninferable_answer_field_names_the_flag():
    with pytest.raises(DatasetError, match="--answer-key"):
        build_samples(rows_of({"question": "q", "bar": "a"}))


def test_missing_key_on_a_later_row_names_file_line_key_and_flag(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [
        {"question": "q1", "answer": "a1"},
        {"question": "q2", "answer": "a2"},
        {"question": "q3", "solution": "a3"},
    ])
    with pytest.raises(DatasetError) as e:
        build_samples(load_rows(str(p)), answer_key="answer")
    msg = str(e.value)
    assert f"{p}:3" in msg and "'answer'" in msg and "--answer-key" in msg


def test_null_question_is_missing_and_empty_question_is_refused():
    with pytest.raises(DatasetError, match=r"data.jsonl:2: missing key 'question'.*--question-key"):
        build_samples(rows_of({"question": "q", "answer": "a"}, {"question": None, "answer": "b"}))
    with pytest.raises(DatasetError, match=r"data.jsonl:1: field 'question' must be a non-empty"):
        build_samples(rows_of({"question": "  ", "answer": "a"}))


def test_no_rows():
    with pytest.raises(DatasetError, match="no rows"):
        build_samples(Rows([], [], {"path": "empty.jsonl"}))


# --------------------------------------------------------------------------- ids


def test_ids_from_id_field_and_duplicate_is_an_error():
    samples, keys = build_samples(rows_of({"id": 7, "question": "q", "answer": "a"},
                                          {"id": "x", "question": "q", "answer": "a"}))
    assert keys["id"] == "id"
    assert [s.id for s in samples] == ["7", "x"]  # ids are strings
    with pytest.raises(DatasetError) as e:
        build_samples(rows_of({"id": "dup", "question": "q1", "answer": "a"},
                              {"id": "other", "question": "q2", "answer": "a"},
                              {"id": "dup", "question": "q3", "answer": "a"}))
    msg = str(e.value)
    assert "data.jsonl:3" in msg and "duplicate id 'dup'" in msg


@pytest.mark.parametrize("id_field", ["task_id", "question_id", "uid"])
def test_other_id_field_names_are_inferred(id_field):
    samples, keys = build_samples(rows_of({id_field: "t-1", "question": "q", "answer": "a"}))
    assert keys["id"] == id_field and samples[0].id == "t-1"


def test_id_falls_back_to_the_row_index():
    samples, keys = build_samples(rows_of({"question": "q", "answer": "a"},
                                          {"question": "q", "answer": "b"},
                                          {"question": "q", "answer": "c"}))
    assert keys["id"] is None
    assert [s.id for s in samples] == ["0", "1", "2"]


def test_empty_id_value_falls_back_to_the_row_index():
    samples, _ = build_samples(rows_of({"id": "a", "question": "q", "answer": "a"},
                                       {"id": "", "question": "q", "answer": "b"}))
    assert [s.id for s in samples] == ["a", "#1"]


def test_fallback_id_cannot_clash_with_a_real_id():
    samples, _ = build_samples(rows_of({"id": "1", "question": "q", "answer": "a"},
                                       {"question": "q", "answer": "b"}))
    assert [s.id for s in samples] == ["1", "#1"]


# --------------------------------------------------------------------------- choices


@pytest.mark.parametrize(
    "value",
    [
        ["Paris", "London", "Rome"],
        '["Paris", "London", "Rome"]',  # CSV cell with a JSON list
        {"label": ["A", "B", "C"], "text": ["Paris", "London", "Rome"]},  # ARC style
        "Paris | London | Rome",
    ],
)
def test_choices_forms(value):
    samples, keys = build_samples(rows_of({"question": "Capital of France?", "answer": "A",
                                           "choices": value}))
    assert keys["choices"] == "choices"
    assert samples[0].metadata["choices"] == ["Paris", "London", "Rome"]


def test_options_field_is_inferred_as_choices():
    samples, keys = build_samples(rows_of({"question": "q", "answer": "B",
                                           "options": ["x", "y"]}))
    assert keys["choices"] == "options" and samples[0].metadata["choices"] == ["x", "y"]


def test_choices_need_two_options():
    with pytest.raises(DatasetError, match=r"data.jsonl:1: choices must be a list of at least two"):
        build_samples(rows_of({"question": "q", "answer": "A", "choices": ["only"]}))


def test_explicit_choices_key_missing_on_a_row():
    with pytest.raises(DatasetError, match=r"data.jsonl:2: missing key 'opts'.*--choices-key"):
        build_samples(rows_of({"question": "q", "answer": "A", "opts": ["x", "y"]},
                              {"question": "q", "answer": "A"}), choices_key="opts")


# --------------------------------------------------------------------------- QATask


def test_default_prompt_asks_for_an_answer_line(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [{"question": "What is 2+2?", "answer": "four"}])
    bench = QATask(data=str(p))
    s = bench.samples()[0]
    assert s.input == "What is 2+2?"  # stored input: the question itself
    msgs = bench.build_messages(s)
    assert [m.role for m in msgs] == ["user"]
    assert msgs[0].content.startswith("What is 2+2?") and "Answer:" in msgs[0].content


def test_system_prompt_goes_first(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [{"question": "q?", "answer": "a"}])
    bench = QATask(data=str(p), system_prompt="Be terse.")
    msgs = bench.build_messages(bench.samples()[0])
    assert [(m.role, m.content) for m in msgs][0] == ("system", "Be terse.")
    assert msgs[1].role == "user"


def test_choice_prompt_lists_lettered_options(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [
        {"question": "Capital of France?", "answer": "A", "choices": ["Paris", "Rome"]},
    ])
    bench = QATask(data=str(p))
    prompt = bench.render(bench.samples()[0])
    assert "Capital of France?" in prompt
    assert "A. Paris\nB. Rome" in prompt
    assert prompt.count("Answer with the letter") == 1


def test_custom_template_uses_row_fields(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [
        {"id": "s1", "question": "Who is the hero?", "answer": "Ann", "context": "Ann saves Bob.",
         "lang": "en"},
        {"id": "s2", "question": "Who is saved?", "answer": "Bob", "context": "Ann saves Bob.",
         "lang": "fr"},
    ])
    bench = QATask(data=str(p),
                        template="[{{ row.lang }}] Context: {{ row.context }}\nQ: {{ question }}")
    prompts = {s.id: bench.build_messages(s)[-1].content for s in bench.samples()}
    assert prompts == {
        "s1": "[en] Context: Ann saves Bob.\nQ: Who is the hero?",
        "s2": "[fr] Context: Ann saves Bob.\nQ: Who is saved?",
    }
    # the stored input stays the question; the target is untouched
    assert [(s.input, s.target) for s in bench.samples()] == [
        ("Who is the hero?", "Ann"), ("Who is saved?", "Bob")]


def test_template_syntax_error_is_a_config_error(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "a"}])
    with pytest.raises(ConfigError, match="invalid --template"):
        QATask(data=str(p), template="{{ question ").samples()


def test_template_with_unknown_field_names_the_row(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "a"}])
    with pytest.raises(ConfigError) as e:
        QATask(data=str(p), template="{{ row.nope }} {{ question }}").samples()
    assert "--template" in str(e.value) and f"{p}:1" in str(e.value)


def test_qa_needs_data_and_a_known_scorer(tmp_path):
    with pytest.raises(ConfigError, match="--data"):
        QATask()
    p = jsonl(tmp_path / "d.jsonl", [{"question": "q", "answer": "a"}])
    with pytest.raises(ConfigError, match="unknown scorer 'nope'"):
        QATask(data=str(p), scorer="nope")


@pytest.mark.parametrize(
    ("rows", "scorer"),
    [
        ([{"question": "2+2?", "answer": "4"}, {"question": "3+3?", "answer": 6}], "numeric_match"),
        ([{"question": "1k?", "answer": "1,000"}, {"question": "half?", "answer": 0.5}],
         "numeric_match"),
        ([{"question": "Capital?", "answer": "B", "choices": ["Rome", "Paris"]}], "choice_accuracy"),
        ([{"question": "Capital?", "answer": "Paris"}, {"question": "Sky?", "answer": "blue"}],
         "normalized_match"),
    ],
)
def test_scorer_is_inferred_from_the_data(tmp_path, rows, scorer):
    p = jsonl(tmp_path / "d.jsonl", rows)
    bench = QATask(data=str(p))
    loaded = bench.load()
    assert loaded.options["scorer"] == scorer  # stored with the run: a re-score uses it
    info = loaded.info
    assert info["scorer"] == scorer
    assert info["rows"] == len(rows)
    assert info["keys"]["question"] == "question"
    assert info["content_hash"] == load_rows(str(p)).info["content_hash"]


def test_explicit_scorer_is_kept(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [{"question": "2+2?", "answer": "4"}])
    bench = QATask(data=str(p), scorer="exact")
    loaded = bench.load()
    # kept under the registry's name for it, the name its verdicts and metric carry
    assert loaded.options["scorer"] == "exact_match" and loaded.info["scorer"] == "exact_match"
    assert "scorer" not in loaded.samples[0].metadata


def test_the_inferred_scorer_travels_with_the_sample(tmp_path):
    """A task built anew (another process) scores a loaded sample with the scorer the
    data chose, without loading; a scorer given to the new task wins."""
    p = jsonl(tmp_path / "d.jsonl", [{"question": "2+2?", "answer": "4"},
                                     {"question": "3+3?", "answer": 6}])
    (sample, _) = QATask(data=str(p)).samples()
    assert sample.metadata["scorer"] == "numeric_match"
    out = Outcome(output="Answer: 4.0")
    (numeric,) = QATask(data=str(p)).score(sample, out)
    assert numeric.value == 1.0  # numeric: 4.0 == 4
    (exact,) = QATask(data=str(p), scorer="exact").score(sample, out)
    assert exact.value == 0.0


def test_scorer_inference_looks_at_every_target(tmp_path):
    p = jsonl(tmp_path / "d.jsonl", [
        {"question": "Year of the first moon landing?", "answer": "1969"},
        {"question": "Capital of France?", "answer": "Paris"},
    ])
    bench = QATask(data=str(p))
    assert bench.load().options["scorer"] == "normalized_match"


def test_builtin_templates_render_as_jinja_would(tmp_path) -> None:
    """The built-in prompts skip Jinja per sample; the text must be what Jinja gives."""
    import json

    from assay.tasks.qa import DEFAULT_CHOICE_TEMPLATE, DEFAULT_TEMPLATE, QATask

    plain = tmp_path / "plain.jsonl"
    plain.write_text(json.dumps({"question": "What is {x} + {{y}}?\n", "answer": "3"}) + "\n")
    choice = tmp_path / "choice.jsonl"
    choice.write_text(json.dumps({"question": "Pick {0}", "choices": ["a {0}", "b", "c"],
                                  "answer": "A"}) + "\n")
    for data, template in ((plain, DEFAULT_TEMPLATE), (choice, DEFAULT_CHOICE_TEMPLATE)):
        fast = QATask(data=str(data), choices_key="choices" if data == choice else None)
        (sample,) = fast.samples()
        assert fast.opts.template is None  # the fast path is the one under test
        # the same template given by the user goes through Jinja (a trailing space
        # makes it a user template)
        jinja = QATask(data=str(data), template=template + " ",
                            choices_key="choices" if data == choice else None)
        jinja.samples()
        assert fast.render(sample) + " " == jinja.render(sample)
