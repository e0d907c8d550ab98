"""Shared pieces of the ``assay view`` tests: real runs made by the engine against the fake
server, synthetic runs written straight into a store (for paging, filters and hostile
text), and the app served from a background thread."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

REPO = Path(__file__).resolve().parents[2]
for sub in ("tests/tasks/gaia", "tests/tasks/converse"):
    if str(REPO / sub) not in sys.path:
        sys.path.insert(0, str(REPO / sub))

import gaia_fixtures as fx  # noqa: E402
from convfakes import ConverseServer, stop_after, write_case  # noqa: E402

from assay.api import make_spec, run_async  # noqa: E402
from assay.engine.loop import run as run_coro  # noqa: E402
from assay.store.sqlite import Store  # noqa: E402
from assay.testing import FakeServer, Rule  # noqa: E402

EXAMPLE_QA = REPO / "examples" / "qa_example.jsonl"
GAIA_ANSWER = "17"  # the fake agent answers 17 to every GAIA question: 1 of the 11 is right
XSS = ('<img src=x onerror="window.__xss=1">', "<script>window.__xss=1</script>",
       '"><svg onload=window.__xss=1>')
HOSTILE = " ".join(XSS)


def sample_url_of(run_id: str, sample_id: str) -> str:
    """The path of a sample's page, ids percent-encoded whole."""
    return f"/run/{quote(run_id, safe='')}/sample/{quote(sample_id, safe='')}"


def _bfcl_reply(body: dict[str, Any]) -> Any:
    """Calls the first offered tool with made-up arguments (wrong, but a real tool call)."""
    tools = body.get("tools") or []
    if tools:
        return {"tool_calls": [{"name": tools[0]["function"]["name"],
                                "arguments": {"base": 10, "height": 5}}]}
    return "no tools"


def _run(store: Store, task: str, model: str, **options: Any) -> str:
    spec = make_spec(task, model, **options)
    return run_coro(run_async(spec, store=store, reports=False)).run_id


def make_real_runs(home: Path) -> dict[str, str]:
    """A qa, a BFCL, a GAIA and a converse run, each run by the engine over real HTTP into
    the store at ``home/assay.db``; returns their ids by task."""
    home.mkdir(parents=True, exist_ok=True)
    store = Store(home / "assay.db")
    ids: dict[str, str] = {}
    try:
        rules = [Rule(r"capital of France", "Answer: Paris"),
                 Rule(r"capital of Italy", "Answer: Rome")]
        with FakeServer(rules=rules, default_reply="Answer: no idea") as srv:
            ids["qa"] = _run(store, "qa", "openai/qa-model", base_url=srv.base_url,
                             data=str(EXAMPLE_QA))
        with FakeServer(responder=_bfcl_reply) as srv:
            ids["bfcl"] = _run(store, "bfcl", "openai/bfcl-model", base_url=srv.base_url,
                               category="simple_python", mode="fc", limit=3)
        root = fx.write_gaia_fixture(home.parent / "gaia-data", layout="jsonl")
        with FakeServer(default_reply=f"I counted.\nFINAL ANSWER: {GAIA_ANSWER}") as srv:
            ids["gaia"] = _run(store, "gaia", "openai/gaia-model", base_url=srv.base_url,
                               data_dir=str(root))
        case = write_case(home.parent / "cases", "hello", max_rounds=3)
        with ConverseServer(examiner=stop_after(2)) as srv:
            ids["converse"] = _run(store, "converse", "openai/agent", base_url=srv.base_url,
                                   cases=str(case), examiner_model="openai/examiner",
                                   judge_model="openai/judge",
                                   examiner_base_url=srv.base_url, judge_base_url=srv.base_url)
    finally:
        store.close()
    return ids


def sample_row(i: int, *, value: float | None = 1.0, error: str | None = None,
               category: str = "c0", text: str = "", transcript: Any = None,
               metadata: dict[str, Any] | None = None, created: float | None = None
               ) -> tuple[Any, ...]:
    """A ``samples`` row (after ``run_id``) for :meth:`Store.record`."""
    scores = {} if error or value is None else {
        "exact": {"name": "exact", "value": value, "answer": f"a{i}{text}",
                  "explanation": f"why {i}{text}", "metadata": {"note": text}}}
    if transcript is None:
        transcript = [{"role": "user", "content": f"question {i}{text}"},
                      {"role": "assistant", "content": f"answer {i}{text}"}]
    return (f"s{i:04d}", 0, i, json.dumps(f"question {i}{text}"), json.dumps(f"t{i}{text}"),
            json.dumps(transcript), f"answer {i}{text}", f"a{i}", json.dumps(scores), error,
            0.5, 10, 2, 1, 0, json.dumps(metadata or {"category": category}),
            created or time.time())


def synthetic_run(store: Store, n: int, *, task: str = "qa", model: str = "openai/syn",
                  status: str = "finished", metrics: bool = True, parent_id: str | None = None,
                  pattern: Any = None) -> str:
    """A run of ``n`` samples written directly: sample ``i`` is an error when ``i % 10 ==
    9``, else wrong when ``i % 3 == 0``, else correct; its category is ``c{i % 4}``.
    ``pattern(i)`` may replace that with the keyword arguments of :func:`sample_row`."""
    rid = store.create_run(task=task, spec={"task": task, "epochs": 1},
                           model={"model": model}, dataset={"source": "synthetic", "selected": n},
                           package_version="test", parent_id=parent_id)
    rows = []
    for i in range(n):
        kw = pattern(i) if pattern else {
            "error": "boom: the endpoint said 500" if i % 10 == 9 else None,
            "value": 0.0 if i % 3 == 0 else 1.0, "category": f"c{i % 4}"}
        rows.append((rid, *sample_row(i, **kw), None, None, None, None))
    from assay.store.schema import INSERT_SAMPLE

    store._db.executemany(INSERT_SAMPLE, rows)
    store._db.commit()
    if status != "running":
        store.set_run_status(rid, status)
    if metrics and status == "finished":  # described as the engine's finalize does
        from assay.engine.finalize import finalize
        from assay.tasks.registry import task_class

        finalize(store, rid, task=task_class(task))
    return rid
