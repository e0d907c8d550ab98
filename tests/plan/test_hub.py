"""The planner's Hub fallback against a fake Hub: real HTTP on 127.0.0.1 through the real
huggingface_hub client (``assay.testing.fake_hub.FakeHub``), never the network."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest

from assay.data import cache
from assay.data.hf import split_path
from assay.errors import DatasetError
from assay.plan.hub import fetch_split, hub_enabled, resolve_hub, search_hub
from assay.plan.schema import HubRef
from assay.testing.fake_hub import FakeHub, jsonl_bytes, parquet_bytes

SHA = "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678"


#: a search, a resolution and a fetch: the three ways the planner reaches the Hub
HUB_CALLS = (lambda: search_hub("math", limit=3),
             lambda: resolve_hub("someone/math-qa"),
             lambda: fetch_split(HubRef(id="someone/math-qa", split="train")))


def one_line(e: pytest.ExceptionInfo[DatasetError]) -> str:
    msg = str(e.value)
    assert "\n" not in msg and msg.strip() == msg and msg
    return msg


def qa_rows(n: int, tag: str) -> list[dict[str, Any]]:
    return [{"question": f"{tag} question {i}?", "answer": f"{tag}-{i}"} for i in range(n)]


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def card_configs(*configs: tuple[str, dict[str, str]], default: str | None = None) -> dict:
    """``configs:`` of a card: (name, {split: pattern}) each."""
    out = []
    for name, splits in configs:
        entry: dict[str, Any] = {"config_name": name,
                                 "data_files": [{"split": s, "path": p}
                                                for s, p in splits.items()]}
        if name == default:
            entry["default"] = True
        out.append(entry)
    return {"configs": out}


# -- search ----------------------------------------------------------------------------------

def add_search_datasets(hub: FakeHub) -> None:
    hub.add_dataset("someone/math-qa", downloads=10, likes=1, tags=["math"],
                    description="A few math questions.")
    hub.add_dataset("bigorg/competition_math", downloads=250_000, likes=300,
                    tags=["task_categories:text-generation", "math"],
                    description="Competition mathematics problems with worked solutions.")
    hub.add_dataset("other/cooking", downloads=99_999, description="Recipes, no math here.")


def test_search_returns_scored_candidates_from_a_real_search_request(hub: FakeHub) -> None:
    add_search_datasets(hub)
    found = search_hub("math", limit=5)
    assert [c.id for c in found] == ["bigorg/competition_math", "someone/math-qa"]
    top = found[0]
    assert top.downloads == 250_000 and top.likes == 300 and "math" in top.tags
    assert top.description.startswith("Competition mathematics")
    assert top.verified is False and all(c.verified is False for c in found)
    assert all(0.0 <= c.score <= 1.0 for c in found)
    assert found[0].score > found[1].score  # more downloads, ranked first by the Hub
    assert "'math' in id" in top.reason and "250,000 downloads" in top.reason
    assert "\n" not in top.reason
    (req,) = hub.requests_of("search")
    assert req.method == "GET" and req.path == "/api/datasets"
    assert req.query["search"] == ["math"] and req.query["sort"] == ["downloads"]
    assert {"downloads", "likes", "tags", "description"} <= set(req.query["expand"])
    assert req.authorization is None  # no token anywhere


def test_search_sentence_searches_each_word_and_ranks_by_coverage(hub: FakeHub,
                                                                   monkeypatch) -> None:
    add_search_datasets(hub)
    hub.add_dataset("x/word-problems", downloads=5, description="Grade school math, in words.")
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    found = search_hub("how good is my model at math word problems?", limit=2)
    terms = [r.query["search"] for r in hub.requests_of("search")]
    assert terms == [["math"], ["word"], ["problems"]]  # stopwords dropped, three at most
    assert {r.authorization for r in hub.requests_of("search")} == {"Bearer hf_secret"}
    # x/word-problems matches all three words (two in its id, one in its description)
    assert found[0].id == "x/word-problems" and len(found) == 2
    assert "'math' in description" in found[0].reason
    assert "'word' in id" in found[0].reason


def test_search_limit_zero_makes_no_request(hub: FakeHub) -> None:
    add_search_datasets(hub)
    assert search_hub("math", limit=0) == []
    assert hub.requests == []
    assert len(search_hub("math", limit=1)) == 1
    assert len(hub.requests_of("search")) == 1


def test_offline_is_one_line_and_sends_nothing(online, monkeypatch,
                                               tmp_path: Path) -> None:
    from huggingface_hub import constants

    with FakeHub() as fake:
        online(fake.url)
        add_search_datasets(fake)
        monkeypatch.setenv("HF_HUB_OFFLINE", "1")
        assert hub_enabled() is False
        for call in HUB_CALLS:
            with pytest.raises(DatasetError) as e:
                call()
            msg = one_line(e)
            assert "HF_HUB_OFFLINE is set" in msg and "unset HF_HUB_OFFLINE" in msg
        # huggingface_hub's own constant alone switches it off too
        monkeypatch.delenv("HF_HUB_OFFLINE")
        assert hub_enabled() is True
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
        assert hub_enabled() is False
        with pytest.raises(DatasetError, match="HF_HUB_OFFLINE is set"):
            search_hub("math", limit=3)
        assert fake.requests == []


def test_refused_connection_is_one_line(online) -> None:
    with FakeHub() as fake:
        url = fake.url
    online(url)  # nothing listens there any more
    for call in HUB_CALLS:
        with pytest.raises(DatasetError) as e:
            call()
        msg = one_line(e)
        assert msg.startswith(f"cannot reach the Hugging Face Hub at {url} to ")
        assert "(offline?)" in msg and "HF_HUB_OFFLINE=1" in msg


def test_http_errors_and_unknown_dataset_are_one_line(hub: FakeHub) -> None:
    hub.fail["search"] = 404
    with pytest.raises(DatasetError) as e:
        search_hub("math", limit=3)
    assert one_line(e).startswith("the Hugging Face Hub answered HTTP 404")
    hub.fail.clear()
    hub.fail["info"] = 500
    with pytest.raises(DatasetError) as e:
        resolve_hub("someone/math-qa")
    assert "HTTP 500" in one_line(e)
    hub.fail.clear()
    with pytest.raises(DatasetError) as e:
        resolve_hub("nobody/nothing")
    assert one_line(e).startswith("dataset nobody/nothing was not found on the Hugging Face Hub")


# -- resolution ------------------------------------------------------------------------------

def test_resolve_parquet_with_card_configs_prefers_test(hub: FakeHub) -> None:
    card = card_configs(("default", {"train": "data/train-*", "validation": "data/validation-*",
                                     "test": "data/test-*"}))
    card["dataset_info"] = {"features": [{"name": "question", "dtype": "string"},
                                         {"name": "answer", "dtype": "string"}],
                            "splits": [{"name": "train"}, {"name": "validation"},
                                       {"name": "test"}]}
    hub.add_dataset("org/pq", card=card, sha=SHA, files={
        f"data/{s}-00000-of-00001.parquet": parquet_bytes(qa_rows(2, s))
        for s in ("train", "validation", "test")})
    res = resolve_hub("org/pq")
    assert (res.config, res.split, res.revision) == ("default", "test", SHA)
    assert res.columns == ["question", "answer"]
    assert res.eval_type == "generate" and res.ok and res.problem is None
    assert res.fields == {"question_key": "question", "answer_key": "answer"}
    assert "test > validation > train" in res.reasons["split"]
    assert "train, validation, test" in res.reasons["split"]
    assert res.reasons["config"] == "'default' is the only config (the card's configs)"
    assert set(res.reasons) >= {"config", "split", "question_key", "answer_key",
                                "choices_key", "eval_type"}
    assert res.model_calls == []
    assert hub.requests_of("resolve") == []  # the card's features: no download needed


def test_resolve_jsonl_without_card_metadata_takes_train(hub: FakeHub) -> None:
    rows = [{"problem": "2+2?", "solution": "4"}, {"problem": "3+3?", "solution": "6"}]
    hub.add_dataset("someone/plain", files={"train.jsonl": jsonl_bytes(rows)})
    res = resolve_hub("someone/plain")
    assert res.config is None and res.split == "train" and res.ok
    assert "no configs in the card" in res.reasons["config"]
    assert "file names" in res.reasons["config"]
    assert "'train' preferred" in res.reasons["split"] and "available: train" in res.reasons["split"]
    assert res.columns == ["problem", "solution"]
    assert res.fields == {"question_key": "problem", "answer_key": "solution"}
    assert res.reasons["columns"] == "read from train.jsonl"
    gets = [r.path for r in hub.requests_of("resolve") if r.method == "GET"]
    assert gets == [f"/datasets/someone/plain/resolve/{res.revision}/train.jsonl"]


MC_ROWS = [{"question": "Sky colour?", "choices": ["red", "blue", "green"], "answer": 1},
           {"question": "Grass colour?", "choices": ["green", "pink", "grey"], "answer": 0},
           {"question": "Snow colour?", "choices": ["black", "white", "blue"], "answer": 1}]


def test_resolve_multiple_choice_from_a_list_column(hub: FakeHub) -> None:
    card = card_configs(("default", {"test": "test.parquet"}))
    hub.add_dataset("org/mc", card=card, files={"test.parquet": parquet_bytes(MC_ROWS)})
    res = resolve_hub("org/mc")
    assert res.eval_type == "multiple_choice" and res.ok
    assert res.fields == {"question_key": "question", "answer_key": "answer",
                          "choices_key": "choices"}
    assert "list" in res.reasons["choices_key"] and "multiple_choice" in res.reasons["eval_type"]
    # a column named like choices that is not a list is not multiple choice
    rows = [{"question": "q?", "options": "a|b", "answer": "a"}]
    hub.add_dataset("org/not-mc", files={"test.jsonl": jsonl_bytes(rows)})
    res = resolve_hub("org/not-mc")
    assert res.eval_type == "generate" and res.ok and "choices_key" not in res.fields
    assert "not a list" in res.reasons["eval_type"]


ODD = [{"zz_stem": "What is 2+2?", "zz_gold": "4", "zz_note": "easy"}]


def test_resolve_asks_the_planner_only_for_unmapped_keys(hub: FakeHub) -> None:
    hub.add_dataset("org/odd", files={"data/test.jsonl": jsonl_bytes(ODD)})
    calls: list[tuple[str, dict]] = []

    def ask(prompt: str, schema: dict) -> dict:
        calls.append((prompt, schema))
        return {"question_key": "zz_stem", "answer_key": "zz_gold"}

    res = resolve_hub("org/odd", ask=ask)
    assert res.ok and res.fields == {"question_key": "zz_stem", "answer_key": "zz_gold"}
    (prompt, schema), = calls
    assert schema["type"] == "object" and schema["required"] == ["question_key", "answer_key"]
    assert set(schema["properties"]) == {"question_key", "answer_key"}
    for prop in schema["properties"].values():
        assert prop["enum"] == ["zz_stem", "zz_gold", "zz_note"]
    assert "zz_stem" in prompt and "org/odd" in prompt
    assert res.model_calls == [{"prompt": prompt, "reply": {"question_key": "zz_stem",
                                                            "answer_key": "zz_gold"},
                                "accepted": True, "problem": None}]
    assert "the planner chose 'zz_gold'" in res.reasons["answer_key"]
    # with the question mapped by the rules, only the answer is asked for
    hub.add_dataset("org/half", files={"test.jsonl": jsonl_bytes(
        [{"question": "q?", "zz_gold": "a"}])})
    calls.clear()
    res = resolve_hub("org/half", ask=lambda p, s: calls.append((p, s)) or {"answer_key": "zz_gold"})
    assert res.ok and set(calls[0][1]["properties"]) == {"answer_key"}
    assert res.reasons["question_key"].startswith("rule:")


def test_resolve_rejects_a_planner_column_that_does_not_exist(hub: FakeHub) -> None:
    hub.add_dataset("org/odd", files={"test.jsonl": jsonl_bytes(ODD)})
    res = resolve_hub("org/odd", ask=lambda p, s: {"question_key": "zz_stem",
                                                   "answer_key": "nope"})
    assert res.ok is False and "answer_key" not in res.fields
    (call,) = res.model_calls
    assert call["accepted"] is False and call["reply"]["answer_key"] == "nope"
    assert "\n" not in res.problem
    assert "'nope' is not a column" in res.problem and "answer_key" in res.problem
    assert "zz_stem, zz_gold, zz_note" in res.problem
    # without a planner the rules' failure is the problem, and nothing is asked
    res = resolve_hub("org/odd")
    assert res.ok is False and res.model_calls == []
    assert res.problem.startswith("dataset org/odd: no column for question_key, answer_key")


def test_resolve_several_configs_without_default_takes_the_first(hub: FakeHub) -> None:
    card = card_configs(("easy", {"test": "easy/test.jsonl"}),
                        ("hard", {"test": "hard/test.jsonl"}))
    hub.add_dataset("org/levels", card=card, files={
        "easy/test.jsonl": jsonl_bytes(qa_rows(2, "easy")),
        "hard/test.jsonl": jsonl_bytes(qa_rows(2, "hard"))})
    res = resolve_hub("org/levels")
    assert res.config == "easy" and res.split == "test" and res.ok
    assert res.reasons["config"] == ("no default config: took the first, 'easy' "
                                     "(available: easy, hard)")
    # a config marked default wins over the first
    hub.add_dataset("org/levels2", card=card_configs(
        ("easy", {"test": "easy/test.jsonl"}), ("hard", {"test": "hard/test.jsonl"}),
        default="hard"), files=hub.datasets["org/levels"].files)
    res = resolve_hub("org/levels2")
    assert res.config == "hard" and "default config" in res.reasons["config"]


def test_resolve_configs_from_dataset_info_and_config_folders(hub: FakeHub) -> None:
    # no `configs:`, but `dataset_info` per config, data in a folder per config (gsm8k-like)
    feats = [{"name": "question", "dtype": "string"}, {"name": "answer", "dtype": "string"}]
    card = {"dataset_info": [
        {"config_name": "main", "features": feats,
         "splits": [{"name": "train"}, {"name": "test"}]},
        {"config_name": "socratic", "features": feats + [{"name": "hint", "dtype": "string"}],
         "splits": [{"name": "train"}, {"name": "test"}]}]}
    files = {f"{c}/{s}-00000-of-00001.parquet": parquet_bytes(qa_rows(2, f"{c}-{s}"))
             for c in ("main", "socratic") for s in ("train", "test")}
    hub.add_dataset("org/gsm", card=card, files=files, sha=SHA)
    res = resolve_hub("org/gsm")
    assert (res.config, res.split) == ("main", "test") and res.ok
    assert "available: main, socratic" in res.reasons["config"]
    assert res.columns == ["question", "answer"]  # main's features, not socratic's
    path = fetch_split(HubRef(id="org/gsm", config="socratic", split="test", revision=SHA))
    assert read_jsonl(path) == qa_rows(2, "socratic-test")


# -- fetching --------------------------------------------------------------------------------

def test_fetch_split_writes_one_jsonl_and_reuses_it(hub: FakeHub, workspace: Path) -> None:
    card = card_configs(("default", {"train": "data/train-*", "test": "data/test-*"}))
    test_rows = qa_rows(5, "test")
    hub.add_dataset("org/pq", card=card, sha=SHA, files={
        "data/train-00000-of-00001.parquet": parquet_bytes(qa_rows(3, "train")),
        "data/test-00000-of-00002.parquet": parquet_bytes(test_rows[:3]),
        "data/test-00001-of-00002.parquet": parquet_bytes(test_rows[3:])})
    res = resolve_hub("org/pq")
    ref = HubRef(id="org/pq", config=res.config, split=res.split, revision=res.revision)
    hub.clear_requests()
    path = fetch_split(ref)
    assert path == workspace / "data" / "hub" / "org__pq" / SHA / "default" / "test.jsonl"
    assert path == split_path("org/pq", SHA, "default", "test")
    assert read_jsonl(path) == test_rows  # both shards, in order, nothing from train
    gets = sorted(r.path.rsplit("/", 1)[1] for r in hub.requests_of("resolve")
                  if r.method == "GET")
    # resolve_hub already read the first shard (for its columns): it is not fetched again
    assert gets == ["test-00001-of-00002.parquet"]
    assert all(f"/resolve/{SHA}/" in r.path for r in hub.requests_of("resolve"))  # pinned
    hub.clear_requests()
    assert fetch_split(ref) == path
    assert hub.requests == []  # pinned and already there: no request at all
    unpinned = HubRef(id="org/pq", config="default", split="test")
    assert fetch_split(unpinned) == path
    assert [r.kind for r in hub.requests] == ["info"]  # which commit is latest; no download


def test_fetch_split_goes_through_the_data_cache_and_its_manifest(
        hub: FakeHub, workspace: Path, tmp_path: Path, monkeypatch: Any) -> None:
    # recorded as `assay data pull` records: under ASSAY_DATA_DIR, each file's size and sha256
    moved = (tmp_path / "moved").resolve()  # the cache's root is kept with links followed
    monkeypatch.setenv(cache.ENV, str(moved))
    card = card_configs(("default", {"test": "data/test-*"}))
    shards = {f"data/test-0000{i}-of-00002.parquet": parquet_bytes(qa_rows(2, f"s{i}"))
              for i in range(2)}
    hub.add_dataset("org/pq", card=card, sha=SHA, files=shards)
    ref = HubRef(id="org/pq", config="default", split="test", revision=SHA)
    path = fetch_split(ref)
    assert path.is_relative_to(moved / "hub")
    assert not (workspace / "data").exists()
    kept = {i.name: i for i in cache.items()}
    assert sorted(kept) == ["org/pq/data/test-00000-of-00002.parquet",
                            "org/pq/data/test-00001-of-00002.parquet", "org/pq[default/test]"]
    assert all((i.owner, i.source, i.origin, i.version) == ("hub", "hf", "org/pq", SHA)
               for i in kept.values())
    split = kept["org/pq[default/test]"]
    assert split.files == [str(path)]
    assert split.sums == [[path.stat().st_size, hashlib.sha256(path.read_bytes()).hexdigest()]]
    for name, data in shards.items():
        one = kept[f"org/pq/{name}"]
        assert one.sums == [[len(data), hashlib.sha256(data).hexdigest()]]
        assert Path(one.files[0]).is_relative_to(moved / "hf")
    # a kept split that is not as written is refused, not read
    path.write_text(path.read_text().replace("s1-1", "s1-X"))
    with pytest.raises(DatasetError) as e:
        fetch_split(ref)
    assert "not the file the data cache fetched from org/pq" in one_line(e)
    path.unlink()  # deleted: fetched again
    assert read_jsonl(fetch_split(ref)) == qa_rows(2, "s0") + qa_rows(2, "s1")


def test_fetch_split_multiple_choice_runs_as_qa(hub: FakeHub) -> None:
    hub.add_dataset("org/mc", files={"test.jsonl": jsonl_bytes(MC_ROWS)})
    res = resolve_hub("org/mc")
    path = fetch_split(HubRef(id="org/mc", config=res.config, split=res.split))
    assert read_jsonl(path) == MC_ROWS
    from assay.tasks.qa import QATask

    samples = QATask(data=str(path), **res.fields).samples()
    assert [s.metadata["choices"] for s in samples] == [r["choices"] for r in MC_ROWS]
    assert [s.input for s in samples] == [r["question"] for r in MC_ROWS]


def test_fetch_split_unknown_split_or_config_is_one_line(hub: FakeHub) -> None:
    hub.add_dataset("org/plain", files={"train.jsonl": jsonl_bytes(qa_rows(1, "t"))})
    with pytest.raises(DatasetError) as e:
        fetch_split(HubRef(id="org/plain", split="test"))
    assert one_line(e) == ("dataset org/plain has no split 'test' with data files "
                           "(splits: train); fix the plan's hub split")
    with pytest.raises(DatasetError) as e:
        fetch_split(HubRef(id="org/plain", config="nope", split="train"))
    assert "has no config 'nope'" in one_line(e)


def test_fetch_split_says_what_the_hub_answered_never_offline(hub: FakeHub,
                                                              monkeypatch: Any) -> None:
    # the client wraps a file request's HTTP answer in LocalEntryNotFoundError; the Hub
    # answered, so the message says what it answered, never "cannot reach (offline?)"
    hub.add_dataset("org/plain", files={"train.jsonl": jsonl_bytes(qa_rows(1, "t"))})
    hub.fail["resolve"] = 404
    with pytest.raises(DatasetError) as e:
        fetch_split(HubRef(id="org/plain", split="train"))
    assert one_line(e) == ("file train.jsonl of dataset org/plain is not on the Hugging Face "
                           f"Hub at revision {hub.datasets['org/plain'].sha} (HTTP 404): the "
                           "dataset changed since the plan was made; make the plan again")
    hub.fail["resolve"] = 410
    with pytest.raises(DatasetError) as e:
        fetch_split(HubRef(id="org/plain", split="train"))
    assert one_line(e) == ("the Hugging Face Hub answered HTTP 410 (Gone) when asked to "
                           "download dataset org/plain; the request itself was refused: check "
                           "the plan's hub id, config and split")
    # no answer at all is what "cannot reach" means (a port nothing listens on)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    with pytest.raises(DatasetError) as e:
        fetch_split(HubRef(id="org/plain", split="train"))
    assert "cannot reach the Hugging Face Hub" in one_line(e)
