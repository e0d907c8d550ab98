"""The Python API: ``assay.evaluate`` against the fake server (Python agents: tests/models)."""

from __future__ import annotations

import base64
from pathlib import Path

from aiohttp import web

import assay
from assay.api import RunResult, make_spec, redact_url, run_async
from assay.store.sqlite import Store
from assay.testing import Rule

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"
RULES = [
    Rule(r"capital of France", "Answer: Paris"),
    Rule(r"capital of Japan", "Answer: Tokyo"),
    Rule(r"capital of Italy", "Answer: Milan"),
]


def test_evaluate_against_an_openai_compatible_server(fake_server, workspace):
    srv = fake_server(rules=RULES, default_reply="Answer: no idea")
    result = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=str(EXAMPLE),
                            limit=4, quiet=True)
    assert isinstance(result, RunResult)
    assert result.status == "finished"
    acc = result.metrics["normalized_match"]
    assert (acc["value"], acc["successes"], acc["n"]) == (0.5, 2, 4)
    assert 0.0 < acc["ci_low"] < 0.5 < acc["ci_high"] < 1.0
    assert result.metrics["n_errors"] == 0
    assert result.stats["model_calls"] == 4 and result.stats["samples"] == 4
    assert srv.stats["requests"] == 4
    assert srv.requests[0]["model"] == "fake"
    assert set(result.reports) == {"markdown", "html", "results"}
    for path in result.reports.values():
        assert path.is_file() and path.parent == workspace / "runs" / result.run_id
    store = Store()
    try:
        run = store.get_run(result.run_id)
        assert run["spec"]["limit"] == 4 and run["spec"]["model"] == "openai/fake"
        assert run["model"] == {"model": "openai/fake", "base_url": srv.base_url}
        assert run["dataset"]["content_hash"] and run["dataset"]["selected"] == 4
        assert [r.sample_id for r in store.results(result.run_id)] == [
            "capital-france", "capital-japan", "capital-italy", "capital-germany"]
    finally:
        store.close()


def test_evaluate_options_reach_the_run(fake_server):
    srv = fake_server(default_reply="Answer: Paris")
    result = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=str(EXAMPLE),
                            sample_ids=["capital-spain", "capital-france"], scorer="exact",
                            params={"temperature": 0.2}, max_tokens=7,
                            system_prompt="Be brief.")
    assert result.metrics["exact_match"]["n"] == 2
    assert result.metrics["exact_match"]["successes"] == 1
    body = srv.requests[0]
    assert body["temperature"] == 0.2 and body["max_tokens"] == 7
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}


def test_api_key_is_sent_and_never_stored(fake_server, workspace):
    key = "sk-api-key-456"
    srv = fake_server(rules=RULES, require_api_key=key)
    # without the key the server refuses every call (a non-transient 401): each is an error
    refused = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url,
                             data=str(EXAMPLE), limit=2)
    assert refused.metrics["n_errors"] == 2

    result = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=str(EXAMPLE),
                            limit=3, api_key=key)
    assert result.metrics["n_errors"] == 0
    assert result.metrics["normalized_match"]["successes"] == 2
    files = [f for f in workspace.rglob("*") if f.is_file()]
    assert workspace / "assay.db" in files and result.reports["html"] in files
    for f in files:
        assert key.encode() not in f.read_bytes(), f


def test_credentials_in_base_url_are_not_stored(fake_server, workspace):
    srv = fake_server(default_reply="Answer: x")
    url = srv.base_url.replace("http://", "http://user:pa55word@")
    assert redact_url(url) == srv.base_url
    result = assay.evaluate("qa", model="openai/fake", base_url=url, data=str(EXAMPLE), limit=1)
    assert result.metrics["n_errors"] == 0
    for f in (f for f in workspace.rglob("*") if f.is_file()):
        assert b"pa55word" not in f.read_bytes(), f


async def test_credentials_in_base_url_are_sent_to_the_endpoint():
    seen: list[str | None] = []

    async def chat(request: web.Request) -> web.Response:
        seen.append(request.headers.get("Authorization"))
        return web.json_response({"choices": [{"message": {"role": "assistant",
                                                           "content": "Answer: Paris"}}]})

    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        port = runner.addresses[0][1]
        spec = make_spec("qa", "openai/x", base_url=f"http://user:pa55word@127.0.0.1:{port}/v1",
                         data=str(EXAMPLE), limit=1)
        result = await run_async(spec, reports=False)
    finally:
        await runner.cleanup()
    assert result.metrics["n_errors"] == 0
    assert seen == ["Basic " + base64.b64encode(b"user:pa55word").decode()]


NOTEBOOK = '''
import json, sys
import assay
from assay import Sample, Score, Task, task

@task
def arith(n: int = 3) -> Task:
    """Doubling numbers."""
    def check(sample, outcome):
        return Score("double", float(sample.target in outcome.output), outcome.output)
    return Task(samples=[Sample(str(i), f"What is {i} + {i}?", str(2 * i)) for i in range(n)],
                scorer=check)

base_url = sys.argv[1]
first = assay.evaluate(arith, model="openai/fake", base_url=base_url, n=2)
try:
    assay.evaluate(arith, model="openai/fake", base_url=base_url, limt=2)
    typo = None
except assay.AssayError as e:
    typo = str(e)
again = assay.evaluate(arith, model="openai/fake", base_url=base_url, resume=first.run_id)
print(json.dumps({"run": first.run_id, "acc": first.metrics["double"]["value"],
                  "typo": typo, "resumed": again.run_id}))
'''


def test_evaluate_takes_a_task_object_as_a_notebook_defines_it(fake_server, workspace,
                                                              tmp_path):
    """A notebook (here: a script's ``__main__``) passes its ``@task`` function itself; a
    misspelt keyword names the nearest one (1194102 refused the object: 'give a task: a
    name ...', and said nothing of ``limit``)."""
    import json
    import subprocess
    import sys

    srv = fake_server(rules=[Rule(r"What is 0 \+ 0", "Answer: 0")], default_reply="no")
    script = tmp_path / "notebook.py"
    script.write_text(NOTEBOOK)
    p = subprocess.run([sys.executable, str(script), srv.base_url], capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["acc"] == 0.5 and out["resumed"] == out["run"]
    assert out["typo"].startswith("unknown option limt for task arith (did you mean limit?)")
    # the run is the store's like any other; resumed elsewhere, it says how to give it again
    store = Store()
    try:
        assert store.get_run(out["run"])["spec"]["task"] == "object:arith"
    finally:
        store.close()
    with __import__("pytest").raises(assay.AssayError, match="given as a Python object"):
        assay.evaluate("object:arith", model="openai/fake", base_url=srv.base_url)


def test_a_task_object_from_a_module_file_is_named_so_it_resolves_again(tmp_path, monkeypatch):
    """A ``@task`` from a module file is stored as ``FILE.py@NAME`` (resumable from the
    command line); a plain function returning a Task declares nothing in its file, so it is
    named for this process and resolves to itself."""
    import importlib

    from assay.tasks.registry import reference_of, resolve

    (tmp_path / "mytasks.py").write_text(
        "from assay import Sample, Score, Task, task\n"
        "def _t():\n"
        "    return Task(samples=[Sample('0', 'q', 'a')],\n"
        "                scorer=lambda s, o: Score('s', 1.0, o.output))\n"
        "@task\ndef decorated() -> Task:\n    return _t()\n"
        "def plain() -> Task:\n    return _t()\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    mod = importlib.import_module("mytasks")
    ref = reference_of(mod.decorated)
    assert ref == f"{(tmp_path / 'mytasks.py').resolve()}@decorated"
    assert resolve(ref).name == "decorated"
    ref = reference_of(mod.plain)
    assert ref == "object:plain" and resolve(ref).name == "plain"
