"""The multi-turn loop end to end: the engine drives a model over real HTTP (the fake
OpenAI-compatible server) through official entries, in FC and in prompt mode.

The fake model replays each turn's ground-truth calls (positional arguments named with
the official method's signature), then answers in text. What the loop sends is checked
against the official harness's rules: the tools, the holdout message of ``miss_func``,
tool results with their call ids (FC), the results ``repr`` in one user message (prompt),
and the step limit.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
from pathlib import Path
from typing import Any

import official_oracle as oracle
import pytest

from assay.engine.runner import Engine, RunSpec
from assay.store.sqlite import Store
from assay.tasks.bfcl.data import locate
from assay.tasks.bfcl.multiturn.data import load_multi_turn
from assay.tasks.bfcl.multiturn.loop import MORE_FUNCTIONS_FC
from assay.tasks.bfcl.multiturn.sim import load_class

pytestmark = pytest.mark.skipif(not oracle.available(), reason=oracle.NOT_INSTALLED)

RESULTS_PREFIX = "[{'role': 'tool'"


def named_call(call: str, involved: list[str]) -> tuple[str, dict[str, Any]]:
    """A ground-truth call string as (name, keyword arguments)."""
    node = ast.parse(call, mode="eval").body
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    name = node.func.id
    kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    if node.args:
        method = next(getattr(load_class(c), name) for c in involved
                      if hasattr(load_class(c), name))
        params = [p for p in inspect.signature(method).parameters if p != "self"]
        kwargs.update({params[i]: ast.literal_eval(a) for i, a in enumerate(node.args)})
    return name, kwargs


class Replayer:
    """Answers each turn with its ground-truth calls in one step, then with text."""

    def __init__(self, category: str, mode: str, *, always_call: bool = False) -> None:
        data = load_multi_turn(locate(), category)
        self.mode = mode
        self.always_call = always_call
        self.by_first: dict[str, dict[str, Any]] = {}
        for e in data.entries:
            first = e["question"][0][-1]["content"]
            self.by_first[first] = {"entry": e, "gt": data.ground_truth[e["id"]]}

    def _queries(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [m for m in messages if m["role"] == "user"
                and not str(m["content"]).startswith(RESULTS_PREFIX)]

    def __call__(self, body: dict[str, Any]) -> Any:
        messages = body["messages"]
        queries = self._queries(messages)
        found = self.by_first[queries[0]["content"]]
        turn = len(queries) - 1
        calls = found["gt"][turn]
        answered = messages[-1]["role"] != "user" or str(
            messages[-1]["content"]).startswith(RESULTS_PREFIX)
        if self.always_call:
            calls = ["ls()"] if "GorillaFileSystem" in found["entry"]["involved_classes"] \
                else calls[:1]
        elif answered or not calls:
            return "I have done what you asked."
        named = [named_call(c, found["entry"]["involved_classes"]) for c in calls]
        if self.mode == "fc":
            return {"tool_calls": [{"name": n, "arguments": a} for n, a in named]}
        return "[" + ", ".join(f"{n}({', '.join(f'{k}={v!r}' for k, v in a.items())})"
                               for n, a in named) + "]"


def run(store: Store, spec: RunSpec) -> str:
    return asyncio.run(Engine(store, quiet=True).run(spec))


@pytest.fixture
def store(workspace: Path):
    s = Store()
    yield s
    s.close()


def spec(base_url: str, category: str, mode: str, **kw: Any) -> RunSpec:
    return RunSpec(task="bfcl", model="openai/fake", base_url=base_url,
                   task_options={"category": category, "mode": mode}, **kw)


@pytest.mark.parametrize("mode", ["fc", "prompt"])
@pytest.mark.parametrize("category", ["multi_turn_base", "multi_turn_miss_func",
                                      "multi_turn_long_context"])
def test_replaying_the_ground_truth_passes_every_turn(fake_server, store, mode, category):
    srv = fake_server(responder=Replayer(category, mode))
    rid = run(store, spec(srv.base_url, category, mode, limit=6))
    results = store.results(rid)
    assert len(results) == 6 and all(r.error is None for r in results)
    assert [r.score_value("bfcl") for r in results] == [1.0] * 6, [
        r.scores["bfcl"]["explanation"] for r in results]
    for r in results:
        meta = r.scores["bfcl"]["metadata"]
        turns = r.outcome["metadata"]["turn_log"]
        assert len(turns) == len(r.target) == len(r.outcome["metadata"]["multi_turn"])
        # every executed call is logged with its result, per turn and step
        for t, gt in zip(turns, r.target, strict=True):
            executed = [c for s in t["steps"] for c in s.get("calls", [])]
            assert len(executed) == len(gt)
            assert all("results" in s for s in t["steps"] if s.get("calls"))
        assert meta["first_failing_turn"] is None and meta["error_type"] is None
    bodies = srv.requests
    first = bodies[0]
    if mode == "fc":
        names = {t["function"]["name"] for t in first["tools"]}
        assert names and all(t["function"]["description"].endswith(
            " Note that the provided function is in Python 3 syntax.") for t in first["tools"])
        tool_msgs = [m for b in bodies for m in b["messages"] if m["role"] == "tool"]
        assert tool_msgs and all(m.get("tool_call_id") for m in tool_msgs)
    else:
        assert "tools" not in first or not first["tools"]
        assert first["messages"][0]["role"] == "system"
        # the official single-turn prompt (tested against the official text in
        # test_prompts.py) over the entry's hinted docs
        from assay.tasks.bfcl.prompts import add_language_hints, system_prompt

        # samples run side by side, so which entry's request came first is not fixed:
        # every entry's requests carry the prompt over its own docs, and only those
        expected = {system_prompt(add_language_hints(r.metadata["functions"], "python"))
                    for r in store.results(rid)}
        seen = {b["messages"][0]["content"] for b in bodies}
        assert seen == expected
        results_msgs = [m for b in bodies for m in b["messages"]
                        if m["role"] == "user" and m["content"].startswith(RESULTS_PREFIX)]
        assert results_msgs
        parsed = ast.literal_eval(results_msgs[0]["content"])
        assert set(parsed[0]) == {"role", "name", "content"}


def test_miss_func_offers_the_withheld_function_at_its_turn(fake_server, store):
    srv = fake_server(responder=Replayer("multi_turn_miss_func", "fc"))
    rid = run(store, spec(srv.base_url, "multi_turn_miss_func", "fc", limit=1))
    sample = store.results(rid)[0]
    withheld_turn, names = next(iter(
        sample.metadata["missed_function"].items()))
    withheld = {d["name"] for d in names}
    before = [b for b in srv.requests
              if sum(m["role"] == "user" for m in b["messages"]) <= int(withheld_turn)]
    after = [b for b in srv.requests
             if sum(m["role"] == "user" for m in b["messages"]) > int(withheld_turn)]
    assert before and after
    assert all(not withheld & {t["function"]["name"] for t in b["tools"]} for b in before)
    assert all(withheld <= {t["function"]["name"] for t in b["tools"]} for b in after)
    holdout_query = [m for m in after[0]["messages"] if m["role"] == "user"][-1]
    assert holdout_query["content"] == MORE_FUNCTIONS_FC
    # the withheld docs carry no language hint, as officially
    added = [t for t in after[0]["tools"] if t["function"]["name"] in withheld]
    assert not any(t["function"]["description"].endswith("Python 3 syntax.") for t in added)


def test_step_limit_forces_quit_after_21_steps(fake_server, store):
    srv = fake_server(responder=Replayer("multi_turn_base", "fc", always_call=True))
    rid = run(store, spec(srv.base_url, "multi_turn_base", "fc", limit=1))
    r = store.results(rid)[0]
    meta = r.outcome["metadata"]
    assert meta["force_quit"] is True
    assert len(meta["multi_turn"]) == 1 and len(meta["multi_turn"][0]) == 21
    assert srv.stats["requests"] == 21
    assert r.score_value("bfcl") == 0.0
    assert r.scores["bfcl"]["metadata"]["error_type"] == "multi_turn:force_terminated"
