"""The rubric judge against the fake OpenAI-compatible server (real HTTP, the real engine)."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest

from assay.engine.runner import Engine, RunSpec
from assay.errors import ConfigError
from assay.metrics.agreement import percent_agreement, weighted_kappa
from assay.reports.render import write_reports
from assay.store.sqlite import Store
from assay.tasks.datagen.judge import (
    JudgeTask,
    bootstrap_mean,
    jury_summary,
    rationale_limit,
    self_preference_warning,
)
from assay.tasks.datagen.rubric import (
    DEFAULT_RUBRIC,
    load_rubric,
    parse_verdict,
    rubric_schema,
)
from assay.tasks.registry import task_class

DIMS = ["correctness", "clarity", "difficulty_match", "completeness"]


@pytest.fixture
def store(workspace: Path) -> Store:
    s = Store()
    yield s
    s.close()


def write_problems(path: Path, qualities: list[int], *, model: str = "openai/gen-model") -> Path:
    """Generated problems whose text carries QUALITY=k, which the scripted judges read."""
    with open(path, "w") as f:
        for i, q in enumerate(qualities):
            f.write(json.dumps({
                "problem_id": f"gen-{i}", "source": "generated",
                "problem": f"Find the number of integers n with property {i}. QUALITY={q}",
                "answer": str(100 + i), "solution": f"Count them: {100 + i}.",
                "provenance": {"model": model},
            }) + "\n")
    return path


def verdict(scores: dict[str, int] | list[int], rationale: str = "ok") -> str:
    if isinstance(scores, list):
        scores = dict(zip(DIMS, scores, strict=True))
    return json.dumps({"rationale": rationale, "scores": scores})


def candidate_text(body: dict[str, Any]) -> str:
    """The judged problem (between '###Candidate problem' and '###Stated answer')."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    return user.split("###Candidate problem", 1)[1].split("###Stated answer", 1)[0]


def quality(body: dict[str, Any]) -> int:
    return int(re.search(r"QUALITY=(\d)", candidate_text(body)).group(1))


def is_retry(body: dict[str, Any]) -> bool:
    return len(body["messages"]) > 2


def run_judge(store: Store, srv: Any, options: dict[str, Any], model: str = "openai/fake",
              **spec: Any) -> tuple[str, list]:
    spec.setdefault("max_retries", 0)
    run_id = asyncio.run(Engine(store, quiet=True).run(RunSpec(
        task="datagen_judge", model=model, base_url=srv.base_url,
        task_options=options, **spec)))
    return run_id, store.results(run_id)


# -- valid verdicts -----------------------------------------------------------------------------

def test_registry_finds_the_judge() -> None:
    assert task_class("datagen_judge") is JudgeTask


def test_valid_verdicts_scored_with_intervals(fake_server, store, tmp_path) -> None:
    data = write_problems(tmp_path / "gen.jsonl", [5, 4, 3, 2, 5, 4])
    srv = fake_server(responder=lambda body: verdict([quality(body)] * 4, "as anchored"))
    run_id, results = run_judge(store, srv, {"data": str(data)})
    assert [r.sample_id for r in results] == [f"gen-{i}" for i in range(6)]
    values = [r.score_value("rubric") for r in results]
    assert values == [5.0, 4.0, 3.0, 2.0, 5.0, 4.0]
    s = results[0].scores["rubric"]
    assert s["metadata"]["scores"] == dict.fromkeys(DIMS, 5)
    assert s["metadata"]["invalid"] is False and s["metadata"]["attempts"] == 1
    assert s["metadata"]["judge_model"] == "openai/fake"
    # one call per problem, constrained by the rubric's schema, with the anchored rubric
    assert len(srv.requests) == 6
    req = srv.requests[0]
    assert req["response_format"]["json_schema"]["schema"] == rubric_schema(DEFAULT_RUBRIC)
    assert req["temperature"] == 0.0
    prompt = req["messages"][1]["content"]
    assert "Score 1:" in prompt and "Score 5:" in prompt and "[difficulty_match]" in prompt
    assert "Stated answer" in prompt and "Count them: 100." in prompt

    m = JudgeTask.metrics(results, store.get_run(run_id)["spec"]["task_options"])
    assert m["overall_mean"]["value"] == pytest.approx(23 / 6)
    assert m["overall_mean"]["method"] == "bootstrap-percentile"
    assert m["overall_mean"]["ci_low"] < 23 / 6 < m["overall_mean"]["ci_high"]
    assert m["mean_clarity"]["value"] == pytest.approx(23 / 6)
    assert m["pass_rate"]["successes"] == 4 and m["pass_rate"]["n"] == 6  # 5,4,5,4 >= 3.5
    assert m["pass_rate"]["method"] == "wilson" and m["pass_rate"]["ci_low"] is not None
    assert m["excellent_rate"]["successes"] == 2
    assert m["dimensions"]["correctness"]["distribution"] == {"1": 0, "2": 1, "3": 1, "4": 2,
                                                              "5": 2}
    assert m["n_valid"] == 6 and m["n_invalid"] == 0 and m["invalid_rate"]["value"] == 0
    assert m["n_errors"] == 0
    assert "bootstrap" in m["ci_method"]
    # judged by the generator? no: the warning stays off
    assert m["generator_model"] == "openai/gen-model"
    assert m["self_preference_warning"] is None
    extra = JudgeTask.report_extra(m, results)
    assert extra["sections"][0]["rows"][0][0] == "correctness"
    md = write_reports(store, run_id, tmp_path / "report")["markdown"].read_text()
    assert "overall_mean 3.833" in md and "Rubric scores per dimension" in md


def test_rationale_length_fits_the_token_budget(fake_server, store, tmp_path) -> None:
    assert rubric_schema()["properties"]["rationale"]["maxLength"] == 500
    assert "maxLength" not in rubric_schema(rationale_max_length=None)["properties"]["rationale"]
    assert rationale_limit(768) == 500 and rationale_limit(300) == 100
    assert rationale_limit(100) == 20 and rationale_limit(None) == 500
    data = write_problems(tmp_path / "gen.jsonl", [4])
    srv = fake_server(responder=lambda body: verdict([4] * 4))
    run_judge(store, srv, {"data": str(data), "max_tokens": 300})
    schema = srv.requests[0]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["rationale"]["maxLength"] == 100


def test_reference_problem_is_the_score_5_anchor(fake_server, store, tmp_path) -> None:
    data = write_problems(tmp_path / "gen.jsonl", [4])
    ref = tmp_path / "ref.jsonl"
    ref.write_text(json.dumps({"id": "aime-2020-1", "problem": "REAL AIME PROBLEM TEXT",
                               "answer": "17"}) + "\n")
    srv = fake_server(responder=lambda body: verdict([4] * 4))
    run_id, results = run_judge(store, srv, {"data": str(data), "reference": str(ref)})
    prompt = srv.requests[0]["messages"][1]["content"]
    assert "Reference problem (score 5)" in prompt and "REAL AIME PROBLEM TEXT" in prompt
    assert store.get_run(run_id)["dataset"]["reference_anchor"] == "aime-2020-1"
    assert results[0].score_value() == 4.0


# -- malformed replies ------------------------------------------------------------------------

def test_malformed_then_valid_on_retry(fake_server, store, tmp_path) -> None:
    data = write_problems(tmp_path / "gen.jsonl", [4, 2])

    def responder(body: dict[str, Any]) -> str:
        if not is_retry(body):
            return "Sure! Scores: correctness 4, clarity {oops"
        return "```json\n" + verdict([3, 4, 4, 5]) + "\n```"

    srv = fake_server(responder=responder)
    _, results = run_judge(store, srv, {"data": str(data)})
    assert len(srv.requests) == 4  # one retry per problem
    retry = next(r["messages"] for r in srv.requests if is_retry(r))
    assert retry[2]["role"] == "assistant" and "oops" in retry[2]["content"]
    assert "could not be used" in retry[3]["content"] and "difficulty_match" in retry[3]["content"]
    for r in results:
        s = r.scores["rubric"]
        assert s["value"] == 4.0 and s["metadata"]["attempts"] == 2
        assert s["metadata"]["invalid"] is False
    m = JudgeTask.metrics(results)
    assert m["retried"] == 2 and m["recovered_on_retry"] == 2 and m["n_invalid"] == 0


def test_always_malformed_is_invalid_never_a_score(fake_server, store, tmp_path) -> None:
    data = write_problems(tmp_path / "gen.jsonl", [5, 4, 1, 1])

    def responder(body: dict[str, Any]) -> str:
        q = quality(body)
        if q == 1:  # the judge never manages a verdict on these
            return '{"rationale": "fine", "scores": {"correctness": 3}}'
        return verdict([q] * 4)

    srv = fake_server(responder=responder)
    _, results = run_judge(store, srv, {"data": str(data)})
    assert len(srv.requests) == 2 + 2 * 2
    bad = [r for r in results if r.sample_id in ("gen-2", "gen-3")]
    for r in bad:
        s = r.scores["rubric"]
        assert s["value"] is None and s["answer"] is None
        assert s["metadata"]["invalid"] is True and s["metadata"]["attempts"] == 2
        assert s["metadata"]["scores"] is None
        assert "lack" in s["explanation"]
        assert "correctness" in s["metadata"]["raw"]
        assert r.error is None
    m = JudgeTask.metrics(results)
    assert m["n_invalid"] == 2 and m["n_valid"] == 2
    assert m["invalid_rate"]["value"] == 0.5 and m["invalid_rate"]["method"] == "wilson"
    # the invalid items are excluded, not averaged in as 3.0 (or anything else)
    assert m["overall_mean"]["value"] == 4.5 and m["overall_mean"]["n"] == 2
    assert m["pass_rate"]["n"] == 2 and m["pass_rate"]["successes"] == 2
    assert m["pass_rate_invalid_as_fail"]["n"] == 4
    assert sum(m["dimensions"]["clarity"]["distribution"].values()) == 2
    assert any("invalid" in rec for rec in JudgeTask.report_extra(m, results)
               ["recommendations"])


GARBAGE = [
    "",
    "The problem is a good problem. The problem is a good problem. The problem is a good",
    "correctness: 4\nclarity: 5\ndifficulty_match: 3\ncompleteness: 4",
    '{"rationale": "ok", "scores": {"correctness": 4, "clarity": 5, "difficulty_match": 3, '
    '"completeness": 4.5}}',
    '{"rationale": "ok", "scores": {"correctness": 6, "clarity": 5, "difficulty_match": 3, '
    '"completeness": 4}}',
    '{"rationale": "ok", "scores": {"correctness": 0, "clarity": 5, "difficulty_match": 3, '
    '"completeness": 4}}',
    '{"rationale": "ok", "scores": {"correctness": "excellent", "clarity": 5, '
    '"difficulty_match": 3, "completeness": 4}}',
    '{"rationale": "ok", "scores": {"correctness": true, "clarity": 5, "difficulty_match": 3, '
    '"completeness": 4}}',
    '{"rationale": "ok", "scores": {"correctness": 4, "clarity": 5, "difficul',
    '{"correctness": 4, "clarity": 5, "difficulty_match": 3, "completeness": 4}',
    '[4, 5, 3, 4]',
    "```json\n{rationale: good, scores: {correctness: 4}}\n```",
    '{"rationale": "<two or three sentences>", "scores": {"correctness": <1-5>, '
    '"clarity": <1-5>, "difficulty_match": <1-5>, "completeness": <1-5>}}',
    "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{",
    "4",
]


@pytest.mark.parametrize("text", GARBAGE)
def test_garbage_is_not_a_verdict(text: str) -> None:
    assert parse_verdict(text, DEFAULT_RUBRIC) is None


@pytest.mark.parametrize("text", [
    verdict([4, 5, 3, 4]),
    "```json\n" + verdict([4, 5, 3, 4]) + "\n```",
    "Here is my evaluation:\n" + verdict([4, 5, 3, 4]) + "\nThanks.",
    verdict({"correctness": 4.0, "clarity": "5", "difficulty_match": 3, "completeness": 4}),
    verdict({"correctness": {"score": 4, "reason": "right"}, "clarity": 5,
             "difficulty_match": 3, "completeness": 4, "overall": 4}),
])
def test_tolerated_verdict_shapes(text: str) -> None:
    v = parse_verdict(text, DEFAULT_RUBRIC)
    assert v is not None
    assert v["scores"] == {"correctness": 4, "clarity": 5, "difficulty_match": 3,
                           "completeness": 4}


def test_small_model_garbage_end_to_end(fake_server, store, tmp_path) -> None:
    """A 135M-style judge: repetition, truncated JSON, out-of-range scores. Nothing is scored."""
    data = write_problems(tmp_path / "gen.jsonl", [4] * len(GARBAGE))
    counter = {"n": 0}

    def responder(body: dict[str, Any]) -> str:
        i = int(re.search(r"property (\d+)", candidate_text(body)).group(1))
        counter["n"] += 1
        return GARBAGE[(i + (1 if is_retry(body) else 0)) % len(GARBAGE)]

    srv = fake_server(responder=responder)
    _, results = run_judge(store, srv, {"data": str(data)})
    assert counter["n"] == 2 * len(GARBAGE)
    assert all(r.score_value("rubric") is None for r in results)
    assert all(r.scores["rubric"]["metadata"]["invalid"] for r in results)
    m = JudgeTask.metrics(results)
    assert m["n_invalid"] == len(GARBAGE) and m["n_valid"] == 0
    assert m["invalid_rate"]["value"] == 1.0
    assert m["overall_mean"]["value"] is None and m["pass_rate"]["value"] is None


def test_call_failure_is_an_error_not_an_invalid_verdict(fake_server, store, tmp_path) -> None:
    data = write_problems(tmp_path / "gen.jsonl", [4, 4])
    srv = fake_server(responder=lambda body: {"status": 400, "error": "bad request"})
    _, results = run_judge(store, srv, {"data": str(data)})
    assert all(r.error and "400" in r.error for r in results)
    m = JudgeTask.metrics(results)
    assert m["n_errors"] == 2 and m["n_invalid"] == 0 and m["invalid_rate"]["n"] == 0


# -- custom rubrics ---------------------------------------------------------------------------

def test_custom_rubric_from_yaml(fake_server, store, tmp_path) -> None:
    path = tmp_path / "rubric.yaml"
    path.write_text(
        "name: two-dims\nversion: 2\ndimensions:\n"
        "  - name: novelty\n    description: Is it new?\n"
        "    levels: [copied, close, variant, fresh, original]\n"
        "  - name: elegance\n    description: Is it elegant?\n"
        "    levels: {1: ugly, 2: clumsy, 3: plain, 4: neat, 5: beautiful}\n")
    rubric = load_rubric(path)
    assert rubric.names == ["novelty", "elegance"] and rubric.version == "2"
    assert rubric.dimensions[0].levels[5] == "original"
    schema = rubric_schema(rubric)
    assert schema["properties"]["scores"]["required"] == ["novelty", "elegance"]
    data = write_problems(tmp_path / "gen.jsonl", [3])
    srv = fake_server(responder=lambda body: json.dumps(
        {"rationale": "r", "scores": {"novelty": 2, "elegance": 5}}))
    run_id, results = run_judge(store, srv, {"data": str(data), "rubric": str(path)})
    assert results[0].score_value() == 3.5
    assert "Score 5: beautiful" in srv.requests[0]["messages"][1]["content"]
    assert store.get_run(run_id)["dataset"]["dimensions"] == ["novelty", "elegance"]
    m = JudgeTask.metrics(results)
    assert set(m["dimensions"]) == {"novelty", "elegance"}
    # a default-rubric verdict is not a verdict for this rubric
    assert parse_verdict(verdict([4, 4, 4, 4]), rubric) is None


@pytest.mark.parametrize("text, fragment", [
    ("dimensions: [\n  - name: x", "invalid YAML at line"),
    ("- just a list", "expected a mapping"),
    ("dimensions:\n  - name: x\n    description: d\n    levels: [a, b, c]\n", "5 level"),
    ("dimensions:\n  - name: x\n    description: d\n    levels: {1: a, 2: b, 3: c, 4: d, 6: e}\n",
     "exactly 1 to 5"),
    ("dimensions:\n  - name: Bad Name\n    description: d\n    levels: [a, b, c, d, e]\n",
     "dimensions.0.name"),
    ("dimensions: []\n", "dimensions"),
    ("dimensions:\n  - {name: x, description: d, levels: [a, b, c, d, e]}\n"
     "  - {name: x, description: d, levels: [a, b, c, d, e]}\n", "duplicate"),
    ("dimensions:\n  - {name: x, description: d, levels: [a, b, c, d, e], weight: 2}\n",
     "weight"),
])
def test_bad_rubric_is_one_line_config_error(tmp_path, text: str, fragment: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_rubric(path)
    msg = str(e.value)
    assert "\n" not in msg and str(path) in msg and fragment in msg


def test_missing_rubric_file_and_missing_data(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot be read"):
        load_rubric(tmp_path / "nope.yaml")
    with pytest.raises(ConfigError, match="data"):
        JudgeTask()


# -- juries -----------------------------------------------------------------------------------

def test_jury_of_two_judges_with_agreement(fake_server, store, tmp_path) -> None:
    qualities = [5, 4, 3, 2, 4, 5]
    data = write_problems(tmp_path / "gen.jsonl", qualities)

    def responder(body: dict[str, Any]) -> str:
        q = quality(body)
        if body["model"] == "judge-a":
            return verdict([q] * 4)
        # judge-b: one point harsher on correctness, agrees elsewhere, fails on quality 2
        if q == 2:
            return "I cannot decide."
        return verdict([max(1, q - 1), q, q, q])

    srv = fake_server(responder=responder)
    _, res_a = run_judge(store, srv, {"data": str(data)}, model="openai/judge-a")
    _, res_b = run_judge(store, srv, {"data": str(data)}, model="openai/judge-b")
    js = jury_summary([("openai/judge-a", res_a), ("openai/judge-b", res_b)],
                      generator_model="openai/gen-model")
    assert js["judges"] == ["openai/judge-a", "openai/judge-b"]
    pa, pb = js["per_judge"]["openai/judge-a"], js["per_judge"]["openai/judge-b"]
    assert pa["overall_mean"]["value"] == pytest.approx(23 / 6)
    assert pa["dimension_means"]["correctness"]["value"] == pytest.approx(23 / 6)
    assert pb["n_invalid"] == 1 and pb["n_valid"] == 5
    assert pb["dimension_means"]["correctness"]["value"] == pytest.approx((4 + 3 + 2 + 3 + 4) / 5)
    # jury score per item: mean over the judges with a valid verdict
    item0 = js["per_item"]["gen-0"]
    assert item0["scores"]["correctness"] == 4.5 and item0["scores"]["clarity"] == 5
    assert item0["overall"] == pytest.approx((5 + 4.75) / 2)
    assert js["per_item"]["gen-3"]["judges"] == ["openai/judge-a"]  # judge-b invalid there
    assert js["per_item"]["gen-3"]["overall"] == 2
    assert js["jury"]["n_items"] == 6 and js["jury"]["n_items_unscored"] == 0
    overall = [v["overall"] for v in js["per_item"].values()]
    assert js["jury"]["overall_mean"]["value"] == pytest.approx(sum(overall) / 6)
    assert js["jury"]["pass_rate"]["successes"] == sum(x >= 3.5 for x in overall)
    # agreement on the 5 items both judged: correctness differs by one everywhere
    a = [5, 4, 3, 4, 5]
    b = [4, 3, 2, 3, 4]
    corr = js["agreement"]["correctness"]
    assert corr["pairs"][0]["n"] == 5
    assert corr["pairs"][0]["kappa"] == pytest.approx(weighted_kappa(a, b, labels=range(1, 6)))
    assert corr["pairs"][0]["percent_agreement"] == percent_agreement(a, b) == 0.0
    clar = js["agreement"]["clarity"]
    assert clar["pairs"][0]["kappa"] == pytest.approx(1.0)
    assert clar["pairs"][0]["percent_agreement"] == 1.0
    assert js["mean_kappa"] == pytest.approx((corr["mean_kappa"] + 3 * 1.0) / 4)
    assert js["self_preference_warning"] is None


def test_jury_flags_judge_that_generated(fake_server, store, tmp_path) -> None:
    data = write_problems(tmp_path / "gen.jsonl", [4, 3], model="openai/fake")
    srv = fake_server(responder=lambda body: verdict([quality(body)] * 4))
    _, res = run_judge(store, srv, {"data": str(data)})  # judged by openai/fake too
    m = JudgeTask.metrics(res)
    assert m["generator_model"] == "openai/fake"
    assert "generating model" in m["self_preference_warning"]
    assert res[0].scores["rubric"]["metadata"]["self_preference"] is True
    assert any("self-preference" in r for r in JudgeTask.report_extra(m, res)
               ["recommendations"])
    js = jury_summary([("openai/fake", res), ("openai/other", res)],
                      generator_model="openai/fake")
    assert "openai/fake" in js["self_preference_warning"]


def test_self_preference_warning_rules() -> None:
    assert self_preference_warning(None, ["openai/gpt-4o"]) is None
    assert self_preference_warning("openai/gpt-4o", ["openai/claude-3-haiku"]) is None
    w = self_preference_warning("gpt-4o", ["openai/gpt-4o"])
    assert w and "generating model" in w
    w = self_preference_warning("openai/gpt-4o", ["openai/gpt-4o-mini", "openai/claude-3"])
    assert w and "family" in w and "gpt-4o-mini" in w and "claude" not in w.split(";")[0]
    w = self_preference_warning("openai/Qwen/Qwen2.5-7B-Instruct", ["openai/qwen3-8b"])
    assert w and "(qwen)" in w
    assert "generating model" in self_preference_warning("local", ["local"])
    assert "family" in self_preference_warning("local", ["local/models/SmolLM2-360M.gguf"])
    assert self_preference_warning("openai/o3-mini", ["openai/gpt-4.1"]) is not None


def test_bootstrap_mean_is_seeded_and_sane() -> None:
    vals = [1, 2, 3, 4, 5] * 8
    a, b = bootstrap_mean(vals), bootstrap_mean(vals)
    assert a == b and a["value"] == 3
    assert 2.4 < a["ci_low"] < 3 < a["ci_high"] < 3.6
    assert bootstrap_mean([4.0])["ci_low"] is None
    assert bootstrap_mean([])["value"] is None
    assert bootstrap_mean([2.0] * 5)["ci_low"] == bootstrap_mean([2.0] * 5)["ci_high"] == 2.0
