"""Web search end to end through the engine, on the official ``WebSearchAPI`` as it ships.

No network here: the packages the official module imports are replaced by stand-ins in
``sys.modules`` (``serpapi.GoogleSearch`` answers from the ground truth, keyed by the query
text), so the official ``search_engine_query`` runs unchanged: it reads the key from
``SERPAPI_API_KEY``, drops the snippets for ``web_search_no_snippet`` and returns
``{"error": str(e)}`` when the search raises. The fake model searches twice (once with a
query whose error message echoes the key) and answers with what the snippets say.
"""

from __future__ import annotations

import asyncio
import importlib.machinery
import re
import sys
import types
from collections.abc import Iterator
from typing import Any

import official_oracle as oracle
import pytest
from memory_model import is_results

from assay.engine.runner import Engine, RunSpec
from assay.rescore import rescore
from assay.store.sqlite import Store
from assay.tasks.bfcl.agentic.data import load_agentic
from assay.tasks.bfcl.data import locate
from assay.tasks.bfcl.multiturn.sim import PREFIX

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)

KEY = "sk-serp-0123456789abcdef"
MODULE = f"{PREFIX}.web_search"
N = 3


@pytest.fixture
def searches(monkeypatch) -> Iterator[list[dict[str, Any]]]:
    """Stand-ins for the official module's imports; yields the searches made."""
    data = load_agentic(locate(), "web_search_base")
    truth = {e["question"][0][-1]["content"]: data.ground_truth[e["id"]][0]
             for e in data.entries}
    made: list[dict[str, Any]] = []

    class GoogleSearch:
        def __init__(self, params: dict[str, Any]) -> None:
            made.append(dict(params))
            self.params = params

        def get_dict(self) -> dict[str, Any]:
            if self.params["q"] == "boom":
                raise RuntimeError(f"Invalid API key: {self.params['api_key']}")
            return {"organic_results": [{"title": "A result", "link": "https://example.test/",
                                         "snippet": f"The answer is {truth[self.params['q']]}."}]}

    fakes = {"serpapi": {"GoogleSearch": GoogleSearch}, "html2text": {},
             "bs4": {"BeautifulSoup": object}, "requests": {}}
    for name, attrs in fakes.items():
        module = types.ModuleType(name)
        module.__spec__ = importlib.machinery.ModuleSpec(name, None)
        vars(module).update(attrs)
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    sys.modules.pop(MODULE, None)
    yield made
    sys.modules.pop(MODULE, None)  # bound to the stand-ins: never reused


def web_model(body: dict[str, Any]) -> Any:
    """Search for "boom", then for the question, then answer from the snippets."""
    messages = body["messages"]
    steps = sum(1 for m in messages if m["role"] == "assistant")
    question = next(m for m in messages if m["role"] == "user")["content"]
    if steps == 0:
        return {"tool_calls": [{"name": "search_engine_query", "arguments": {"keywords": "boom"}}]}
    if steps == 1:
        return {"tool_calls": [{"name": "search_engine_query",
                                "arguments": {"keywords": question}}]}
    assert is_results(messages[-1])
    found = re.search(r"The answer is (.+?)\.['\"]", messages[-1]["content"])
    if found is None:
        return "{'answer': 'I do not know', 'context': 'I do not know'}"
    return f"{{'answer': '{found.group(1)}', 'context': 'the search said so'}}"


def test_web_search_runs_on_the_official_backend(fake_server, searches, workspace, capsys,
                                                monkeypatch) -> None:
    srv = fake_server(responder=web_model)
    store = Store()
    try:
        ids = [f"web_search_{v}_{i}" for v in ("base", "no_snippet") for i in range(N)]
        spec = RunSpec(task="bfcl", model="openai/fake", base_url=srv.base_url,
                       task_options={"category": "web_search", "mode": "fc"},
                       sample_ids=ids, cache=False)
        rid = asyncio.run(Engine(store, quiet=True).run(spec))
        results = {r.sample_id: r for r in store.results(rid)}
        assert all(r.error is None for r in results.values())
        # the snippets hold the answer: found with them, not without
        assert [results[i].score_value("bfcl") for i in ids] == [1.0] * N + [0.0] * N
        assert {results[i].scores["bfcl"]["metadata"]["error_type"] for i in ids[N:]} == {
            "agentic:answer_not_found"}
        # the official code read the key from the environment; nothing stored holds it
        assert {s["api_key"] for s in searches} == {KEY} and len(searches) == 4 * N
        assert KEY not in repr(srv.requests)
        rows = store._db.execute("SELECT * FROM samples WHERE run_id = ?", (rid,)).fetchall()
        assert rows and KEY not in repr(rows)
        errors = [m["content"] for b in srv.requests for m in b["messages"]
                  if m["role"] == "tool" and "Invalid API key" in m["content"]]
        assert errors and set(errors) == {'{"error": "Invalid API key: ***"}'}
        # the official code prints SerpAPI's error text: masked too
        printed = capsys.readouterr().out
        assert "Error from SerpAPI: Invalid API key: ***." in printed and KEY not in printed
        first = srv.requests[0]
        assert first["messages"][0]["role"] == "system"
        assert {t["function"]["name"] for t in first["tools"]} == {"search_engine_query",
                                                                    "fetch_url_content"}
        # scoring again needs neither the key nor the packages
        monkeypatch.delenv("SERPAPI_API_KEY")
        monkeypatch.setitem(sys.modules, "serpapi", None)
        again = rescore(store, rid)
        assert {r.sample_id: r.score_value("bfcl") for r in store.results(again.run_id)} == {
            i: results[i].score_value("bfcl") for i in ids}
    finally:
        store.close()
