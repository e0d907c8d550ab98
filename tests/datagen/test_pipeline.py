"""The one-command pipeline and the datagen CLI, end to end against the fake provider."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from datagen_fakes import REFERENCE, scripted

from assay.compat import AIMEGenerator, LLMJudgeTool, WinRateTool
from assay.pipelines.datagen import run_pipeline
from assay.tasks.datagen.problem import load_problems, save_problems


def test_pipeline_end_to_end(fake_server, tmp_path: Path, workspace: Path) -> None:
    srv = fake_server(responder=scripted)
    ref = save_problems(REFERENCE, tmp_path / "ref.jsonl")
    record = run_pipeline(n=4, model="openai/gen", judge_models=["openai/judge-a",
                                                                 "openai/judge-b"],
                          solver_models=["openai/solver"], reference=str(ref), seed=3,
                          engine={"base_url": srv.base_url})
    assert record["outputs"]["n_problems"] == 4 and record["outputs"]["n_failures"] == 0
    assert len(record["judge_runs"]) == 2
    assert record["jury"]["jury"]["overall_mean"]["value"] == 4.0
    assert record["verification"]["any_solver_agrees"]["value"] == 1.0
    assert record["near_duplicates"] == []
    md = Path(record["reports"]["markdown"]).read_text()
    for needle in ("Generated-data quality report", "Generation", "Judge openai/judge-a",
                   "Jury agreement", "Win rate", "Answer verification", "Near-duplicates",
                   "Human review", "not reviewed yet"):
        assert needle in md, needle
    folder = Path(record["reports"]["html"]).parent
    saved = json.loads((folder / "pipeline.json").read_text())
    assert saved["winrate_run"] == record["winrate_run"]
    # the generated item always wins, in both orders: a win rate of 1, no inconsistency
    from assay.pipelines.parent import metrics_of
    from assay.store.sqlite import Store

    store = Store()
    try:
        wr = metrics_of(store, record["winrate_run"])
    finally:
        store.close()
    assert wr["win_rate_adjusted"]["value"] == 1.0
    assert wr["position_inconsistency_rate"]["value"] == 0.0
    assert wr["judge_models"] == ["openai/judge-a", "openai/judge-b"]  # the whole jury


def test_cli_generate_judge_winrate(fake_server, tmp_path: Path, workspace: Path) -> None:
    srv = fake_server(responder=scripted)
    out = tmp_path / "gen.jsonl"
    base = [sys.executable, "-m", "assay", "datagen"]
    gen = subprocess.run([*base, "generate", "--n", "3", "--model", "openai/gen", "--base-url",
                          srv.base_url, "--reference", "none", "--out", str(out), "-q"],
                         capture_output=True, text=True)
    assert gen.returncode == 0, gen.stderr
    assert "3 problems" in gen.stdout and len(load_problems(out)) == 3
    judge = subprocess.run([*base, "judge", str(out), "--judge-model", "openai/gen",
                            "--base-url", srv.base_url, "-q"], capture_output=True, text=True)
    assert judge.returncode == 0, judge.stderr
    assert "self-preference" in judge.stderr  # judging with the generating model is flagged
    assert "overall mean 4.000" in judge.stdout
    ref = save_problems(REFERENCE, tmp_path / "ref.jsonl")
    win = subprocess.run([*base, "winrate", str(out), "--reference", str(ref), "--judge-model",
                          "openai/judge", "--base-url", srv.base_url, "-q"],
                         capture_output=True, text=True)
    assert win.returncode == 0, win.stderr
    assert "win rate 1.000" in win.stdout


def test_book_api(fake_server, tmp_path: Path, workspace: Path, monkeypatch) -> None:
    srv = fake_server(responder=scripted)
    monkeypatch.setenv("OPENAI_BASE_URL", srv.base_url)
    path = AIMEGenerator(llm="openai/gen", delay_seconds=0, use_reference_examples=False
                         ).generate_and_save(2, tmp_path / "out")
    problems = json.loads(Path(path).read_text())
    assert len(problems) == 2 and problems[0]["provenance"]["model"] == "openai/gen"

    class BookLLM:  # the book's HelloAgentsLLM shape: invoke(messages) -> str
        model = "book-judge"

        def invoke(self, messages: list[dict[str, str]]) -> str:
            return json.dumps({"rationale": "ok", "scores": {
                "correctness": 5, "clarity": 4, "difficulty_match": 3, "completeness": 4}})

    result = json.loads(LLMJudgeTool(llm=BookLLM()).run(
        {"generated_data_path": path, "max_samples": 2, "output_dir": str(tmp_path / "judge")}))
    assert result["status"] == "success" and result["num_problems"] == 2
    assert result["metrics"]["overall_mean"]["value"] == 4.0
    assert Path(result["result_file"]).is_file() and Path(result["report_file"]).is_file()
    ref = save_problems(REFERENCE, tmp_path / "ref.jsonl")
    win = json.loads(WinRateTool(llm="openai/judge").run(
        {"generated_data_path": path, "reference_data_path": str(ref), "num_comparisons": 2,
         "output_dir": str(tmp_path / "win")}))
    assert win["status"] == "success" and win["metrics"]["win_rate_adjusted"]["value"] == 1.0
    missing = json.loads(WinRateTool(llm="openai/judge").run({"generated_data_path": path}))
    assert missing["status"] == "error" and "reference" in missing["message"]


def test_report_shows_review_status_and_agreement(fake_server, tmp_path: Path,
                                                  workspace: Path) -> None:
    from assay.reports.datagen import write_pipeline_report
    from assay.review.export import dataset_id_for_file
    from assay.store.review import ReviewStore
    from assay.store.sqlite import Store

    srv = fake_server(responder=scripted)
    record = run_pipeline(n=3, model="openai/gen", judge_models=["openai/judge"],
                          reference="none", engine={"base_url": srv.base_url})
    data = Path(record["outputs"]["problems"])
    did = dataset_id_for_file(data)
    rs = ReviewStore()
    try:
        for i, p in enumerate(load_problems(data)):
            for reviewer, score in (("ann", 4), ("bob", 4 if i else 2)):
                rs.save_review(did, p.problem_id, reviewer, status="approved",
                               scores={d: score for d in ("correctness", "clarity",
                                                          "difficulty_match", "completeness")})
    finally:
        rs.close()
    store = Store()
    try:
        paths = write_pipeline_report(store, record, Path(record["reports"]["markdown"]).parent)
    finally:
        store.close()
    md = paths["markdown"].read_text()
    assert "| approved | 6 |" in md
    assert "Review agreement (quadratic-weighted kappa)" in md
    assert "ann vs bob" in md and "ann vs judge" in md
