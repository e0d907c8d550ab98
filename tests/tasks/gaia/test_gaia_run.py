"""GAIA end to end over real HTTP: prompts, attachments, official scoring, levels, submissions."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import gaia_fixtures as fx
import pytest

import assay
from assay.errors import DatasetError
from assay.tasks.gaia.score_files import score_predictions
from assay.tasks.gaia.task import GAIA_SYSTEM_PROMPT

WRONG = {"Saint Petersburg": "St. Petersburg",  # abbreviations are not expanded
         "0.5": "1/2"}                           # not a float


def responder(split: str, *, style: str = "final") -> Any:
    """Answers every task; wrong on purpose for the WRONG ones; ``style`` picks the format."""
    tasks = {t["Question"]: t for t in fx.default_tasks("validation")}

    def respond(body: dict[str, Any]) -> str:
        user = body["messages"][-1]["content"]
        question = next(q for q in tasks if user.startswith(q))
        answer = tasks[question]["Final answer"]
        answer = WRONG.get(answer, answer)
        if style == "last_line":
            return f"Let me think.\n{answer}"
        return f"I read the question carefully.\nFINAL ANSWER: {answer}"

    return respond


@pytest.mark.parametrize("layout", ["jsonl", "parquet"])
def test_validation_run_scores_officially_and_writes_a_submission(fake_server, tmp_path,
                                                                   layout: str) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia", layout=layout)
    srv = fake_server(responder=responder("validation"))
    result = assay.evaluate("gaia", model="openai/fake", base_url=srv.base_url,
                            data_dir=str(root))
    m = result.metrics
    assert (m["exact_match_rate"]["successes"], m["exact_match_rate"]["n"]) == (9, 11)
    assert m["exact_match_rate"]["ci_low"] < 9 / 11 < m["exact_match_rate"]["ci_high"]
    assert {k: (v["successes"], v["n"]) for k, v in m["level_accuracy"].items()} == {
        "level_1": (3, 4), "level_2": (3, 4), "level_3": (3, 3)}
    assert m["drop_rate_1_to_2"]["value"] == pytest.approx(0.0)
    assert m["drop_rate_2_to_3"]["value"] == pytest.approx((0.75 - 1.0) / 0.75)
    for key in ("drop_rate_1_to_2", "drop_rate_2_to_3"):  # a bootstrap interval around it
        d = m[key]
        assert d["method"] == "bootstrap" and d["ci_low"] <= d["value"] <= d["ci_high"]
    assert m["extraction_rate"]["value"] == 1.0
    assert m["mean_annotator_steps_correct"]["n"] == 9
    assert m["leaderboard_score"] is None and "subset" in m["subset_note"]
    # what the agent saw: the official system prompt, text attachments inlined, others named
    first = srv.requests[0]["messages"]
    assert first[0] == {"role": "system", "content": GAIA_SYSTEM_PROMPT}
    prompts = [r["messages"][1]["content"] for r in srv.requests]
    csv_prompt = next(p for p in prompts if ".csv" in p)
    assert "Contents of" in csv_prompt and "```" in csv_prompt
    png_prompt = next(p for p in prompts if ".png" in p)
    assert "png file; open it with your tools" in png_prompt and "Contents of" not in png_prompt
    # the submission: every task, bare answers as strings, reasoning kept
    sub = result.reports["gaia_submission"]
    lines = [json.loads(x) for x in sub.read_text().splitlines()]
    assert len(lines) == 11 and all(isinstance(x["model_answer"], str) for x in lines)
    assert {x["model_answer"] for x in lines} >= {"17", "St. Petersburg", "right-handed"}
    assert all("FINAL ANSWER" in x["reasoning_trace"] for x in lines)
    guide = result.reports["gaia_submission_guide"].read_text()
    assert "will reject this file" in guide and "53/86/26" in guide
    # rescoring the submission against the gold answers gives the same verdicts
    gold = root / "2023" / "validation" / "metadata.jsonl"
    if layout == "jsonl":
        rescored = score_predictions(gold, sub)
        assert sum(v["correct"] for v in rescored.verdicts) == 9
    md = result.reports["markdown"].read_text()
    assert "## Levels" in md and "## Answer extraction" in md


def test_fallback_extraction_is_recorded(fake_server, tmp_path) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia")
    srv = fake_server(responder=responder("validation", style="last_line"))
    m = assay.evaluate("gaia", model="openai/fake", base_url=srv.base_url, data_dir=str(root),
                       level=1).metrics
    assert m["extraction_rate"]["value"] == 0.0
    assert m["extraction_methods"] == {"last_line": 4}
    assert m["exact_match_rate"]["successes"] == 3  # still scored, extraction noted


def test_lenient_scorer_and_partial_diagnostic(fake_server, tmp_path) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia")
    srv = fake_server(responder=responder("validation"))
    m = assay.evaluate("gaia", model="openai/fake", base_url=srv.base_url, data_dir=str(root),
                       scorer="lenient").metrics
    assert m["scorer"] == "lenient"
    # lenient has no float parsing: "1/2" is still wrong; "St. Petersburg" too
    assert m["exact_match_rate"]["successes"] == 9
    assert m["partial_match_rate_diagnostic"]["value"] >= m["exact_match_rate"]["value"]


def test_test_split_exports_without_scoring(fake_server, tmp_path) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia", split="test")
    srv = fake_server(responder=responder("test"))
    result = assay.evaluate("gaia", model="openai/fake", base_url=srv.base_url,
                            data_dir=str(root), split="test")
    m = result.metrics
    assert m["exact_match_rate"] is None and m["n_scored"] == 0 and m["n_unscored"] == 11
    assert "private" in m["unscored_note"]
    lines = [json.loads(x) for x in result.reports["gaia_submission"].read_text().splitlines()]
    assert len(lines) == 11 and lines[0]["model_answer"]
    guide = result.reports["gaia_submission_guide"].read_text()
    assert "assay scored nothing" in guide
    md = result.reports["markdown"].read_text()
    assert "no scored samples" in md and "unscored" in md


def test_gaia_score_cli(tmp_path, workspace) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(json.dumps(x) for x in [
        {"task_id": "a", "Final answer": "17", "Level": 1},
        {"task_id": "b", "Final answer": "sea gull", "Level": "2"},
        {"task_id": "c", "Final answer": "a, b", "Level": 3},
    ]) + "\n")
    preds = tmp_path / "preds.jsonl"
    preds.write_text("\n".join(json.dumps(x) for x in [
        {"task_id": "a", "model_answer": "17.0"},
        {"task_id": "b", "model_answer": "seagull"},
        {"task_id": "c", "model_answer": "b, a"},
    ]) + "\n")
    out = tmp_path / "verdicts.jsonl"
    cli = subprocess.run([sys.executable, "-m", "assay", "gaia", "score", "--answers",
                          str(answers), "--predictions", str(preds), "--output", str(out)],
                         capture_output=True, text=True)
    assert cli.returncode == 0, cli.stderr
    assert [json.loads(x) for x in out.read_text().splitlines()] == [
        {"task_id": "a", "correct": True}, {"task_id": "b", "correct": True},
        {"task_id": "c", "correct": False}]
    assert "exact match  0.667" in cli.stdout
    lenient = subprocess.run([sys.executable, "-m", "assay", "gaia", "score", "--answers",
                              str(answers), "--predictions", str(preds), "--scorer", "lenient"],
                             capture_output=True, text=True)
    assert "exact match  0.333" in lenient.stdout  # no float parsing, no space removal; sorted list


@pytest.mark.parametrize(("line", "message"), [
    ('{"task_id": "zz", "model_answer": "1"}', r"preds\.jsonl:1: task_id 'zz' is not in"),
    ('{"task_id": "a", "model_answer": 17}', r":1: model_answer must be a string"),
    ('{"task_id": "a"}', r":1: missing 'model_answer'"),
    ("{oops", r":1: invalid JSON"),
])
def test_bad_prediction_files_name_the_line(tmp_path, line: str, message: str) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"task_id": "a", "Final answer": "17"}) + "\n")
    preds = tmp_path / "preds.jsonl"
    preds.write_text(line + "\n")
    with pytest.raises(DatasetError, match=message):
        score_predictions(answers, preds)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True, text=True)


def test_user_errors_are_one_line(tmp_path, workspace) -> None:
    root = fx.write_gaia_fixture(tmp_path / "gaia")
    meta = root / "2023" / "validation" / "metadata.jsonl"
    # a missing attachment
    attachment = next((root / "2023" / "validation").glob("*.csv"))
    attachment.unlink()
    out = _cli("run", "gaia", "--data-dir", str(root), "--model", "openai/x", "-q")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "is missing" in out.stderr and attachment.name in out.stderr
    # a malformed metadata line
    lines = meta.read_text().splitlines()
    lines[1] = lines[1][:20]
    meta.write_text("\n".join(lines) + "\n")
    out = _cli("run", "gaia", "--data-dir", str(root), "--model", "openai/x", "-q")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert f"{meta}:2: invalid JSON" in out.stderr
    # no local copy, offline (HF_HUB_OFFLINE=1) and no token: says what to do
    out = _cli("run", "gaia", "--model", "openai/x", "-q")
    assert out.returncode == 2 and out.stderr.count("\n") == 1
    assert "--data-dir" in out.stderr
