"""Step 2: BM25 retrieval over the gallery, per domain and for the whole request."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.plan.retrieve import (
    QUALITY,
    corpus,
    embedding_scores,
    retrieve,
    retriever,
    tokenize,
)
from assay.tasks.gallery.entry import all_entries
from assay.tasks.registry import plannable_tasks


def category(name: str) -> str:
    entry = all_entries().get(name)
    return entry.category if entry else plannable_tasks()[name].info.category


def test_the_corpus_is_every_ready_entry_and_the_builtins() -> None:
    names = {d.name for d in corpus()}
    ready = {e.name for e in all_entries().values() if e.readiness.status == "ready"}
    assert names == ready | {"converse"}  # the one registered task with no entry of its own
    assert set(plannable_tasks()) == {"converse"}
    planned = {e.name for e in all_entries().values() if e.readiness.status == "planned"}
    assert not names & planned  # planned: never retrieved
    assert "tau2_bench" in names  # ready since τ²-bench runs natively


def test_each_domain_is_searched_apart_and_leads_with_its_own_tasks() -> None:
    found = retrieve("grade-school math and calling tools", ["math", "tool_use"])
    assert [c.domain for c in found[:2]] == ["math", "tool_use"]
    assert category(found[0].name) == "math" and found[1].name == "bfcl"
    for c in found:
        if c.domain == "math":
            assert category(c.name) == "math"
        assert 0 < c.score <= 1 and c.bm25 > 0
        assert c.quality == (c.score >= QUALITY)
        assert "BM25" in c.reason and "matched" in c.reason
    assert len({c.name for c in found}) == len(found)


def test_a_domain_search_keeps_only_that_domain() -> None:
    r = retriever()
    for domain in ("medical", "code", "instruction_following", "science"):
        hits = r.search("questions and answers", domain=domain, k=10)
        assert hits, domain
        for c in hits:
            assert c.domain == domain
            doc = next(d for d in corpus() if d.name == c.name)
            assert doc.category == domain or domain in {t.replace("-", "_") for t in doc.tags}


def test_the_reason_names_the_words_that_matched() -> None:
    (top, *_rest) = retriever().search("sentiment of movie reviews", k=3)
    assert top.name == "sst2"
    assert "sentiment" in top.matched and "sentiment" in top.reason


def test_tokens_drop_stop_words_split_hyphens_and_read_chinese() -> None:
    assert tokenize("How good is my agent at grade-school math problems?") == [
        "agent", "grade-school", "grade", "school", "math", "problem"]
    assert tokenize("数学题") == ["数", "学", "题", "数学", "学题"]


def test_request_first_leads_with_the_whole_request() -> None:
    found = retrieve("social intelligence and emotional understanding", ["math"],
                     request_first=True)
    assert found[0].name == "social_iqa" and found[0].domain is None


def test_embeddings_are_asked_once_and_mixed_into_the_scores(fake_server: Any) -> None:
    server = fake_server()
    scores = embedding_scores("python unit tests", model="emb-1", base_url=server.base_url)
    assert len(server.embedding_requests) == 1
    body = server.embedding_requests[0]
    assert body["model"] == "emb-1" and len(body["input"]) == len(corpus()) + 1
    assert set(scores) == {d.name for d in corpus()}
    assert all(-1.0 <= v <= 1.0 + 1e-9 for v in scores.values())
    mixed = retriever().search("python unit tests", domain="code", embed=scores)
    plain = retriever().search("python unit tests", domain="code")
    by_name = {c.name: c for c in plain}
    both = [c for c in mixed if c.name in by_name]
    assert both
    for c in mixed:
        cos = max(0.0, scores[c.name])
        assert f"embedding cosine {cos:.2f}" in c.reason
    for c in both:  # the mean of the normalised BM25 score and the similarity
        assert abs(c.score - (by_name[c.name].score + max(0.0, scores[c.name])) / 2) < 1e-9


def test_a_planner_with_embeddings_records_them_and_falls_back_when_they_fail(
        fake_server: Any, tmp_path: Path) -> None:
    from assay.plan.planner import Settings, plan_request
    from assay.plan.schema import read_plan
    from assay.store.sqlite import Store

    server = fake_server()
    store = Store()
    try:
        def make(base_url: str, name: str) -> Any:
            return read_plan(plan_request(
                store, "python unit tests", Settings(output=str(tmp_path / name),
                                                     embeddings="emb-1", base_url=base_url),
                prompt=lambda _t: None, echo=lambda _t: None, yes=True))

        plan = make(server.base_url, "a.yaml")
        select = next(s for s in plan.trace if s["step"] == "select")
        assert select["retrieval"] == {"method": "bm25+embeddings", "model": "emb-1"}
        assert all("embedding cosine" in c["reason"] for c in select["candidates"])
        down = make("http://127.0.0.1:9/v1", "b.yaml")  # nothing listens on port 9
    finally:
        store.close()
    select = next(s for s in down.trace if s["step"] == "select")
    assert select["retrieval"]["method"] == "bm25" and "embeddings_error" in select["retrieval"]
    assert any("retrieval used BM25 alone" in n for n in down.notes)
    assert down.tasks, "the plan stands on BM25"
