"""Step 2: BM25 retrieval over the gallery, per domain and for the whole request."""

from __future__ import annotations

from assay.gallery.entry import all_entries
from assay.plan.intent import BUILTIN_TASKS
from assay.plan.retrieve import QUALITY, corpus, retrieve, retriever, tokenize


def category(name: str) -> str:
    entry = all_entries().get(name)
    return entry.category if entry else BUILTIN_TASKS[name]["category"]


def test_the_corpus_is_every_ready_entry_and_the_builtins() -> None:
    names = {d.name for d in corpus()}
    ready = {e.name for e in all_entries().values() if e.readiness.status == "ready"}
    assert names == ready | set(BUILTIN_TASKS)
    assert "tau2_bench" not in names  # planned: never retrieved


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
