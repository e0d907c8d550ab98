"""The second frozen field set (issue 40, ``requests_field2.yaml``: 118 requests written by
someone who read neither the planner nor the first set) and the kinds of miss it found,
each fixed in general: a catalogue name in any common spelling wherever it stands, the
request's own language never taken for the benchmarks', and a capability described by its
use reaching its tasks. The figures: ``python bench/plan_quality.py --set field2``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.plan.ask import Asker
from assay.plan.intent import parse_rules
from assay.tasks.capabilities import capabilities_in
from assay.tasks.gallery.entry import find_entry
from assay.tasks.registry import available
from tests.plan import quality


def test_the_second_field_set_is_well_formed() -> None:
    requests, capabilities = quality.load_field(quality.FIELD2)
    assert len(requests) >= 100 and len({r["request"] for r in requests}) == len(requests)
    builtin = set(available())
    for cap, c in capabilities.items():
        assert set(c["canonical"]) <= set(c["meets"]), cap
        for name in c["meets"]:
            assert find_entry(name) is not None or name in builtin, (cap, name)
    for r in requests:
        assert set(r["capabilities"]) | set(r.get("unavailable", [])) <= set(capabilities), r
        for name in r.get("named", []):
            assert find_entry(name) is not None or name in builtin, (r, name)


@pytest.mark.parametrize(("request_", "named"), [
    # a name that is also a word, written as a name or listed beside another benchmark
    ("Jeopardy! style clues would be fun, plus maybe TriviaQA.", ["jeopardy", "triviaqa"]),
    ("squad + drop", ["squad", "drop"]),
    ("run MATH and GSM8K", ["math", "gsm8k"]),
    # two letters in capitals, in a list after full-width punctuation
    ("NLI：RTE / CB；paraphrase：MRPC", ["rte", "cb", "mrpc"]),
    # Greek letters and superscripts folded: τ²-bench is tau2-bench
    ("Eval: τ²-bench (telecom domain) + BFCL v3 multi-turn", ["tau2_bench", "bfcl"]),
    ("Run GSM8K、MATH500、HumanEval（100 each）", ["gsm8k", "math500", "humaneval"]),
    # "perplexity on LAMBADA": the entry's perplexity form too
    ("perplexity of my base model on lambada", ["lambada", "lambada_perplexity"]),
    # a leaderboard names its suite
    ("score it the way the new Open LLM Leaderboard (v2) does", ["ifeval", "math"]),
    # and a word stays a word
    ("I want to improve my math and drop the bad answers", []),
    ("Is my model in jeopardy?", []),
    ("Test on gsm8k and math word problems", ["gsm8k"]),
])
def test_a_catalogue_name_is_found_in_any_common_spelling(request_: str, named: list[str]) -> None:
    assert parse_rules(request_).intent.benchmarks == named


def test_a_suites_benchmarks_the_gallery_lacks_are_said_in_one_line(tmp_path: Path) -> None:
    intent = parse_rules("the way the new Open LLM Leaderboard (v2) does it").intent
    assert [u["name"] for u in intent.unknown_benchmarks] == ["BBH", "GPQA", "MuSR", "MMLU-Pro"]
    made = quality.make_plans([{"request": "the way the new Open LLM Leaderboard (v2) does it",
                                "capabilities": []}], tmp_path)[0]
    said = [n for n in made["plan"].notes if "MMLU-Pro" in n]
    assert len(said) == 1 and "BBH, GPQA, MuSR, MMLU-Pro" in said[0]


@pytest.mark.parametrize(("request_", "languages"), [
    ("我想评估一个能上网搜索、能读Excel和PDF附件的通用助手。", ["en"]),  # written in Chinese
    ("测一下模型的中文能力", ["zh"]),  # asks for Chinese
    ("Chinese-language academic examinations, including the Gaokao", ["en", "zh"]),
    ("math in many language, Spanish, French, Swahili (MGSM)", ["en", "multi", "fr", "es", "sw"]),
])
def test_the_requests_own_language_is_not_the_benchmarks(request_: str,
                                                         languages: list[str]) -> None:
    assert sorted(parse_rules(request_).intent.languages) == sorted(languages)


@pytest.mark.parametrize(("request_", "capability"), [
    ("an assistant that searches the web and reads Excel and PDF attachments", "agent"),
    ("我想评估一个能上网搜索、能读Excel和PDF附件的通用助手。", "agent"),
    ("My company do robot for clean the house", "commonsense"),
    ("We want the perplexity number, bits per byte", "language_modeling"),
    ("a helper for reading scientific papers and literature", "science_research"),
    ("a tool for novelists: long-form writing quality", "chat"),
    ("My model make math problems for students competition, I want to know the quality",
     "data_quality"),
    ("我们的模型用来给数学竞赛出题，想评估它出的题目质量", "data_quality"),
    ("evaluate on my own jsonl of question/answer pairs", "custom_data"),
    ("does it say 'I don't know' when it should, or hallucinate?", "truthfulness"),
    ("graduate-level, Google-proof science questions", "hard_reasoning"),
    ("answer questions over long legal contracts, 100 pages each", "long_context"),
])
def test_a_capability_described_by_its_use_is_found(request_: str, capability: str) -> None:
    assert capability in capabilities_in(request_)[0]


def test_tasks_that_run_on_your_own_files_are_offered_with_the_command(
        tmp_path: Path) -> None:
    """The data-generation judges and qa measure what was asked, but a plan has no file of
    the user's to run them on: the plan says the command instead, in one line."""
    for request, command in (
            ("My model makes competition math problems; judge the quality of the problems",
             "assay datagen pipeline"),
            ("evaluate on my own jsonl of question/answer pairs", "assay run qa --data")):
        made = quality.make_plans([{"request": request, "capabilities": []}], tmp_path)[0]
        assert any(command in n for n in made["plan"].notes), made["plan"].notes
        assert not {"qa", "datagen_judge"} & {t.task for t in made["plan"].tasks}


@pytest.fixture(scope="module")
def field2_smoked() -> dict[str, dict[str, Any]]:
    return {}


def test_the_planner_meets_the_issues_targets_on_the_second_field_set(
        tmp_path: Path, fake_server: Any, field2_smoked: dict[str, Any]) -> None:
    # issue 40's acceptance: named recall >= 97%, capability recall@5 >= 92%, every plan
    # executable (first measurement, rules: 92.5% / 89.9% / 100%, bench/results/)
    requests, capabilities = quality.load_field(quality.FIELD2)
    plans = quality.make_plans(requests, tmp_path)
    quality.smoke(plans, fake_server().base_url, field2_smoked)
    rates = quality.field_rates(plans, field2_smoked, capabilities)
    misses = "\n".join(rates["failures"])
    assert rates["named_recall"] >= 0.97, misses
    assert rates["capability_recall_at_5"] >= 0.92, misses
    assert rates["executable"] == 1.0, misses


def test_a_planner_endpoint_answers_under_the_schema(llama_server: str) -> None:
    """The planner over a real endpoint (the embedded model served by llama.cpp): OpenAI's
    json_schema response format is taken, and the answer is one JSON object of the schema."""
    schema = {"type": "object", "properties": {"capabilities": {
        "type": "array", "items": {"type": "string", "enum": ["math", "code", "agent"]}}},
        "required": ["capabilities"], "additionalProperties": False}
    asker = Asker("openai/local", base_url=llama_server)
    try:
        data = asker("Which capabilities does this request ask for: 'grade-school math word "
                     "problems'? Reply in JSON.", schema)
    finally:
        asker.close()
    assert asker.calls and "error" not in asker.calls[0], asker.calls
    assert isinstance(data, dict) and set(data) == {"capabilities"}
    assert set(data["capabilities"]) <= {"math", "code", "agent"}
