"""The Python API: ``assay.evaluate`` against the fake server and against Python agents."""

from __future__ import annotations

import base64
import importlib
import json
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from aiohttp import web

import assay
from assay.api import RunResult, make_spec, redact_url, run_async
from assay.errors import ModelSpecError
from assay.store.sqlite import Store
from assay.testing import Rule

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "qa_example.jsonl"
RULES = [
    Rule(r"capital of France", "Answer: Paris"),
    Rule(r"capital of Japan", "Answer: Tokyo"),
    Rule(r"capital of Italy", "Answer: Milan"),
]


def results_of(run_id: str):
    store = Store()
    try:
        return {r.sample_id: r for r in store.results(run_id)}
    finally:
        store.close()


def test_evaluate_against_an_openai_compatible_server(fake_server, workspace):
    srv = fake_server(rules=RULES, default_reply="Answer: no idea")
    result = assay.evaluate("qa", model="openai/fake", base_url=srv.base_url, data=str(EXAMPLE),
                            limit=4, quiet=True)
    assert isinstance(result, RunResult)
    assert result.status == "finished"
    acc = result.metrics["accuracy"]
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
    assert result.metrics["accuracy"]["n"] == 2
    assert result.metrics["accuracy"]["successes"] == 1
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
    assert result.metrics["accuracy"]["successes"] == 2
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


# --------------------------------------------------------------------------- Python agents


@pytest.fixture
def agent_module(tmp_path, monkeypatch):
    """Write a module into tmp_path (the cwd) and return its unique name."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # load_factory adds the cwd
    names: list[str] = []

    def make(source: str) -> str:
        name = f"assay_test_agent_{uuid.uuid4().hex[:10]}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        names.append(name)
        return name

    yield make
    for name in names:
        sys.modules.pop(name, None)


AGENT_WITH_STATE = """
    import threading

    CREATED = []
    LOCK = threading.Lock()


    class Agent:
        def __init__(self):
            with LOCK:
                CREATED.append(self)
            self.memory = []

        def run(self, prompt):
            self.memory.append(prompt)
            if "Japan" in prompt:
                raise ValueError("no idea about Japan")
            answer = "Paris" if "France" in prompt else "Rome"
            # an agent that kept its memory across samples would answer "stale"
            return f"Answer: {answer}" if len(self.memory) == 1 else "Answer: stale"


    def make():
        return Agent()
"""


def test_python_agent_gets_a_fresh_instance_per_sample(agent_module):
    name = agent_module(AGENT_WITH_STATE)
    result = assay.evaluate("qa", model=f"python/{name}:make", data=str(EXAMPLE), limit=5,
                            max_connections=2)
    module = importlib.import_module(name)
    assert len(module.CREATED) == 5
    assert all(len(a.memory) == 1 for a in module.CREATED)
    outputs = results_of(result.run_id)
    assert "stale" not in json.dumps([r.output for r in outputs.values()])
    # the raising sample is an error with the exception text; the others are scored
    m = result.metrics
    assert (m["n_samples"], m["n_scored"], m["n_errors"]) == (5, 4, 1)
    err = outputs["capital-japan"].error
    assert "ValueError" in err and "no idea about Japan" in err
    assert outputs["capital-japan"].scores == {}
    assert m["accuracy"]["successes"] == 2  # France (Paris) and Italy (Rome)
    assert outputs["capital-france"].score_value() == 1.0
    assert outputs["capital-germany"].score_value() == 0.0
    assert m["top_errors"] == [{"message": err, "count": 1}]


def test_python_agent_replies_are_not_cached(agent_module):
    name = agent_module(AGENT_WITH_STATE)
    assay.evaluate("qa", model=f"python/{name}:make", data=str(EXAMPLE), limit=2)
    again = assay.evaluate("qa", model=f"python/{name}:make", data=str(EXAMPLE), limit=2)
    assert again.stats["cache_hits"] == 0
    assert len(importlib.import_module(name).CREATED) == 4


def test_async_def_agent_target(agent_module):
    name = agent_module("""
        import asyncio

        PROMPTS = []


        async def agent(prompt):
            await asyncio.sleep(0)
            PROMPTS.append(prompt)
            return "Answer: Paris" if "France" in prompt else "Answer: Lima"
    """)
    result = assay.evaluate("qa", model=f"python/{name}:agent", data=str(EXAMPLE), limit=3)
    assert result.metrics["n_errors"] == 0
    acc = result.metrics["accuracy"]
    assert (acc["successes"], acc["n"]) == (1, 3)
    prompts = importlib.import_module(name).PROMPTS
    assert len(prompts) == 3
    assert any(p.startswith("What is the capital of France?") for p in prompts)


def test_agent_with_async_run_method(agent_module):
    name = agent_module("""
        class Agent:
            async def run(self, prompt):
                return "Answer: Tokyo" if "Japan" in prompt else "Answer: ?"
    """)
    result = assay.evaluate("qa", model=f"python/{name}:Agent", data=str(EXAMPLE), limit=2)
    assert result.metrics["n_errors"] == 0
    assert result.metrics["accuracy"]["successes"] == 1


def test_bad_python_agent_specs(agent_module):
    name = agent_module("VALUE = 3\n")
    with pytest.raises(ModelSpecError, match="cannot import agent module"):
        assay.evaluate("qa", model="python/no_such_module_xyz:make", data=str(EXAMPLE))
    with pytest.raises(ModelSpecError, match="has no attribute 'make'"):
        assay.evaluate("qa", model=f"python/{name}:make", data=str(EXAMPLE))
    with pytest.raises(ModelSpecError, match="not callable"):
        assay.evaluate("qa", model=f"python/{name}:VALUE", data=str(EXAMPLE))
    with pytest.raises(ModelSpecError, match="python/<module>:<factory>"):
        assay.evaluate("qa", model=f"python/{name}", data=str(EXAMPLE))
