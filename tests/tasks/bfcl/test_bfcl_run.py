"""BFCL end to end: the engine drives agents over real HTTP; verdicts, reports and exports."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import official_oracle as oracle
import pytest
from bfcl_prompt_text import calls_to_prompt_text

import assay
from assay.engine.runner import Engine, RunSpec
from assay.errors import DatasetError
from assay.store.sqlite import Store
from assay.tasks.bfcl.score_files import score_results

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)


def truth_answers(category: str) -> dict[str, dict[str, Any]]:
    """question text -> {"calls": decoded GT answer (dotted names), "id": entry id}."""
    questions, answers = oracle.entries(category)
    out = {}
    for i, q in enumerate(questions):
        text = q["question"][0][-1]["content"]
        calls = []
        if answers is not None:
            calls = oracle.render(oracle.truth_calls(q["function"], answers[i]["ground_truth"]),
                                  "python", fc=False)
        out[text] = {"calls": calls, "id": q["id"]}
    return out


def perfect_responder(categories: list[str], mode: str):
    table: dict[str, dict[str, Any]] = {}
    for c in categories:
        table.update(truth_answers(c))

    def respond(body: dict[str, Any]) -> Any:
        text = [m for m in body["messages"] if m["role"] == "user"][-1]["content"]
        calls = table[text]["calls"]
        if mode == "fc":
            return {"tool_calls": [{"name": name.replace(".", "_"), "arguments": args}
                                   for call in calls for name, args in call.items()]}
        return calls_to_prompt_text(calls, "python")

    return respond


def run(store: Store, spec: RunSpec) -> str:
    return asyncio.run(Engine(store, quiet=True).run(spec))


@pytest.fixture
def store(workspace: Path):
    s = Store()
    yield s
    s.close()


def bfcl_spec(base_url: str, category: str, mode: str, **kw: Any) -> RunSpec:
    return RunSpec(task="bfcl", model="openai/fake", base_url=base_url,
                   task_options={"category": category, "mode": mode}, **kw)


@pytest.mark.parametrize("mode", ["fc", "prompt"])
def test_perfect_agent_scores_everything(fake_server, store, mode: str) -> None:
    cats = ["simple_python", "multiple", "parallel", "parallel_multiple"]
    srv = fake_server(responder=perfect_responder(cats, mode))
    run_id = run(store, bfcl_spec(srv.base_url, "non_live", mode,
                                  sample_ids=[f"{c}_{i}" for c in cats for i in range(12)]))
    results = store.results(run_id)
    assert len(results) == 48
    assert all(r.score_value("bfcl") == 1.0 for r in results), [
        (r.sample_id, r.scores["bfcl"]["explanation"]) for r in results
        if r.score_value("bfcl") != 1.0]
    sent = srv.requests[0]
    if mode == "fc":
        tool = sent["tools"][0]["function"]
        assert "." not in tool["name"] and tool["parameters"]["type"] == "object"
        assert sent["tool_choice"] == "auto"
        assert all(m["role"] != "system" for m in sent["messages"])
    else:
        assert "tools" not in sent
        assert sent["messages"][0]["role"] == "system"
        assert sent["messages"][0]["content"].startswith(
            "You are an expert in composing functions.You are given a question")
    info = store.get_run(run_id)["dataset"]
    assert info["version"] == "2026.3.23" and len(info["content_hash"]) == 64
    assert info["mode"] == mode and info["underscore_to_dot"] == (mode == "fc")


def test_wrong_answers_carry_official_error_types(fake_server, store) -> None:
    table = truth_answers("simple_python")

    def respond(body: dict[str, Any]) -> Any:
        text = body["messages"][-1]["content"]
        calls = table[text]["calls"]
        ((name, args),) = calls[0].items()
        if table[text]["id"] == "simple_python_0":
            return f"[{name}(base=10)]"  # height missing
        if table[text]["id"] == "simple_python_1":
            return f"Sure! Here it is: [{name}(number=5)]"  # prose around the list
        return calls_to_prompt_text(calls, "python")

    srv = fake_server(responder=respond)
    run_id = run(store, bfcl_spec(srv.base_url, "simple_python", "prompt", limit=3))
    by_id = {r.sample_id: r.scores for r in store.results(run_id)}
    assert by_id["simple_python_0"]["bfcl"]["metadata"]["error_type"] == \
        "simple_function_checker:missing_required"
    assert by_id["simple_python_1"]["bfcl"]["metadata"]["error_type"] == \
        "ast_decoder:decoder_failed"
    # the labelled tolerant score accepts the call wrapped in prose; the official does not
    assert by_id["simple_python_1"]["bfcl_tolerant"]["value"] == 1.0
    assert by_id["simple_python_1"]["bfcl_tolerant"]["metadata"]["extraction"] == "embedded"
    assert store.get_run(run_id)["stats"]["samples"] == 3


def test_irrelevance_passes_on_text_and_fails_on_a_call(fake_server, store) -> None:
    questions, _ = oracle.entries("irrelevance")
    calling = {questions[0]["question"][0][-1]["content"]}

    def respond(body: dict[str, Any]) -> Any:
        if body["messages"][-1]["content"] in calling:
            return {"tool_calls": [{"name": body["tools"][0]["function"]["name"],
                                    "arguments": {}}]}
        return "None of these functions can help with that."

    srv = fake_server(responder=respond)
    run_id = run(store, bfcl_spec(srv.base_url, "irrelevance", "fc", limit=4))
    verdicts = {r.sample_id: r.scores["bfcl"] for r in store.results(run_id)}
    assert verdicts["irrelevance_0"]["metadata"]["error_type"] == \
        "irrelevance_error:decoder_success"
    assert all(v["value"] == 1.0 for k, v in verdicts.items() if k != "irrelevance_0")


def test_reports_exports_and_rescoring_agree(fake_server, store, tmp_path) -> None:
    table = truth_answers("simple_python")

    def respond(body: dict[str, Any]) -> Any:
        entry = table[body["messages"][-1]["content"]]
        if entry["id"].endswith(("_3", "_5")):
            return "I would rather not."
        return calls_to_prompt_text(entry["calls"], "python")

    srv = fake_server(responder=respond)
    result = assay.evaluate("bfcl", model="openai/fake", base_url=srv.base_url,
                            category="simple_python", mode="prompt", limit=8)
    m = result.metrics
    assert (m["accuracy"]["successes"], m["accuracy"]["n"]) == (6, 8)
    assert m["categories"]["simple_python"]["n"] == 8
    assert m["error_types"] == {"ast_decoder:decoder_failed": 2}
    assert m["aggregates"]["non_live_overall"] is None  # not all its parts were run
    md = result.reports["markdown"].read_text(encoding="utf-8")
    for heading in ("## Categories", "## Leaderboard aggregates", "## Error types",
                    "## Recommendations"):
        assert heading in md
    html = result.reports["html"].read_text(encoding="utf-8")
    assert "<svg" in html and "ast_decoder:decoder_failed" in html
    files = [p for k, p in result.reports.items() if k.startswith("bfcl_result:")]
    assert len(files) == 1 and files[0].name == "BFCL_v4_simple_python_result.json"
    assert files[0].parent.name == "non_live" and files[0].parent.parent.name == "openai_fake"
    assert files[0].parent.parent.parent == result.reports["markdown"].parent / "result"
    lines = [json.loads(x) for x in files[0].read_text().splitlines()]
    assert [x["id"] for x in lines] == [f"simple_python_{i}" for i in range(8)]
    rescored = score_results(files[0])
    by_id = {r.sample_id: r.score_value("bfcl") == 1.0 for r in store.results(result.run_id)}
    assert {v["id"]: v["valid"] for v in rescored.verdicts} == by_id
    # the CLI does the same and writes one verdict per line
    out = tmp_path / "verdicts.jsonl"
    cli = subprocess.run([sys.executable, "-m", "assay", "bfcl", "score", "--results",
                          str(files[0].parent.parent), "--output", str(out)],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert "simple_python" in cli.stdout and "0.750" in cli.stdout
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert {r["id"]: r["valid"] for r in rows} == by_id
    assert {r["error_type"] for r in rows if not r["valid"]} == {"ast_decoder:decoder_failed"}


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("\n".join(x if isinstance(x, str) else json.dumps(x) for x in lines) + "\n")
    return path


@pytest.mark.parametrize(("name", "lines", "message"), [
    ("BFCL_v4_simple_python_result.json",
     [{"id": "simple_python_0", "result": "[f(a=1)]"}, "{broken"], r"_result\.json:2: invalid JSON"),
    ("BFCL_v4_simple_python_result.json",
     [{"id": "simple_python_99999", "result": ""}], r":1: unknown id 'simple_python_99999'"),
    ("BFCL_v4_simple_python_result.json",
     [{"id": "multiple_3", "result": ""}], r":1: unknown id 'multiple_3'.*belongs to multiple"),
    ("BFCL_v4_simple_python_result.json",
     [{"id": "simple_python_0", "result": ""}, {"id": "simple_python_0", "result": ""}],
     r":2: duplicate id"),
    ("BFCL_v4_simple_python_result.json", [{"id": "simple_python_0"}],
     r":1: each line needs an object with 'id' and 'result'"),
    ("BFCL_v4_format_sensitivity_result.json", [], r"not a supported BFCL category"),
    ("results.json", [], r"must be named BFCL_v4_<category>_result\.json"),
])
def test_bad_result_files_name_the_line(tmp_path: Path, name: str, lines: list[Any],
                                        message: str) -> None:
    path = _write(tmp_path / name, lines)
    with pytest.raises(DatasetError, match=message):
        score_results(path)


def test_fc_style_result_lines_are_scored(tmp_path: Path) -> None:
    path = _write(tmp_path / "BFCL_v4_simple_python_result.json", [
        {"id": "simple_python_0",
         "result": [{"calculate_triangle_area": json.dumps({"base": 10, "height": 5})}]},
        {"id": "simple_python_1", "result": [{"math_factorial": json.dumps({"number": 5})}]},
        {"id": "simple_python_2", "result": [{"math_hypot": "{not json"}]},
    ])
    verdicts = {v["id"]: v for v in score_results(path).verdicts}
    assert verdicts["simple_python_0"]["valid"] and verdicts["simple_python_1"]["valid"]
    assert verdicts["simple_python_2"]["error_type"] == "ast_decoder:decoder_failed"
    # without the FC dot rule, math_factorial is the wrong name for math.factorial
    strict = {v["id"]: v for v in score_results(path, underscore_to_dot=False).verdicts}
    assert strict["simple_python_1"]["error_type"] == "simple_function_checker:wrong_func_name"


def test_python_agent_gets_prompt_text(fake_server, store, tmp_path, monkeypatch) -> None:
    table = {k: calls_to_prompt_text(v["calls"], "python")
             for k, v in truth_answers("simple_python").items()}
    (tmp_path / "bfcl_text_agent.py").write_text(
        "import json\nTABLE = json.load(open('table.json'))\n"
        "class Agent:\n"
        "    def run(self, prompt):\n"
        "        assert prompt.startswith('You are an expert in composing functions.')\n"
        "        return TABLE[prompt.rsplit('\\n\\n', 1)[1]]\n"
        "def make():\n    return Agent()\n")
    (tmp_path / "table.json").write_text(json.dumps(table))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    spec = RunSpec(task="bfcl", model="python/bfcl_text_agent:make",
                   task_options={"category": "simple_python", "mode": "fc"}, limit=5)
    results = store.results(run(store, spec))
    assert [r.score_value("bfcl") for r in results] == [1.0] * 5
    assert all(r.scores["bfcl"]["metadata"]["mode"] == "prompt" for r in results)


def test_unsupported_category_is_a_one_line_cli_error(workspace: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "assay", "run", "bfcl", "--category",
                          "format_sensitivity", "--model", "openai/x", "-q"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1 and "not supported yet" in out.stderr


@pytest.mark.light_bfcl  # deselected with ASSAY_FULL_BFCL=1 (the full install imports)
def test_official_tool_missing_dependencies_is_explained() -> None:
    from assay.tasks.bfcl.official import official_importable

    ok, why = official_importable()
    assert not ok, "the full bfcl-eval imports here: run with ASSAY_FULL_BFCL=1"
    assert "pip install bfcl-eval" in why


def test_book_api(workspace: Path, tmp_path: Path) -> None:
    from assay.compat import BFCLDataset, BFCLEvaluationTool, BFCLEvaluator

    table = {k: calls_to_prompt_text(v["calls"], "python")
             for k, v in truth_answers("simple_python").items()}

    class BookAgent:
        name = "book-agent"

        def run(self, prompt: str) -> str:
            return table.get(prompt.rsplit("\n\n", 1)[1], "no idea")

    ds = BFCLDataset(category="simple_python")
    evaluator = BFCLEvaluator(dataset=ds, category="simple_python", evaluation_mode="ast")
    results = evaluator.evaluate(BookAgent(), max_samples=4)
    assert results["total_samples"] == 4 and results["correct_samples"] == 4
    assert results["overall_accuracy"] == 1.0
    assert results["category_metrics"]["simple_python"] == {"total": 4, "correct": 4,
                                                            "accuracy": 1.0}
    assert results["agent_name"] == "book-agent"
    path = evaluator.export_to_bfcl_format(results, tmp_path / "BFCL_v4_simple_python_result.json")
    assert all(v["valid"] for v in score_results(path).verdicts)
    tool = BFCLEvaluationTool(project_root=str(tmp_path))
    out = tool.run(agent=BookAgent(), category="simple_python", max_samples=2,
                   run_official_eval=False, model_name="my/agent")
    assert {"overall_accuracy", "correct_samples", "total_samples", "category_metrics"} <= set(out)
    assert Path(out["result_files"][0]) == (tmp_path / "result" / "my_agent" / "non_live"
                                            / "BFCL_v4_simple_python_result.json")
    assert Path(out["report_file"]).is_file()


@pytest.mark.slow
def test_embedded_model_gets_a_non_zero_score(workspace: Path) -> None:
    out = subprocess.run([sys.executable, "-m", "assay", "run", "bfcl", "--category",
                          "simple_python", "--limit", "6", "--model", "local", "-q"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    line = next(x for x in out.stdout.splitlines() if x.startswith("accuracy:"))
    assert not line.startswith("accuracy: 0.000"), out.stdout


@pytest.mark.full_bfcl  # deselected unless ASSAY_FULL_BFCL=1 (CI has the light install only)
def test_official_bfcl_evaluate_agrees_when_fully_installed(fake_server, workspace) -> None:
    """Needs the full ``pip install bfcl-eval``: its own ``evaluate`` agrees with ours."""
    from assay.tasks.bfcl.official import official_importable, run_official

    ok, why = official_importable()
    assert ok, f"ASSAY_FULL_BFCL=1 but the full bfcl-eval does not import: {why}"
    table = truth_answers("simple_python")

    def respond(body: dict[str, Any]) -> Any:
        entry = table[body["messages"][-1]["content"]]
        if entry["id"].endswith(("1", "7")):
            return "no call"
        return calls_to_prompt_text(entry["calls"], "python")

    srv = fake_server(responder=respond)
    result = assay.evaluate("bfcl", model="openai/fake", base_url=srv.base_url,
                            category="simple_python", mode="prompt", limit=30)
    official = run_official(result.run_id)
    assert official.available, official.message
    off = official.official["simple_python"]
    mine = result.metrics["categories"]["simple_python"]
    assert (off["correct_count"], off["total_count"]) == (mine["successes"], mine["n"])
    assert "agree" in official.summary() and "DIFFER" not in official.summary()
