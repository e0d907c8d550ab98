"""ReviewStore (:mod:`assay.store.review`): reviews in the workspace SQLite file, per
reviewer, with an audit trail; their export in the book's shape (:mod:`assay.review.export`)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from assay.review.export import dataset_id, dataset_id_for_file, export_verifications
from assay.store.review import DIMENSIONS, ReviewError, ReviewStore
from assay.store.sqlite import Store
from assay.tasks.datagen.problem import Problem, save_problems

DS = "ds-test"
BOOK_KEYS = {"problem_id", "scores", "total_score", "status", "comments", "verified_at"}


def _problems(n: int = 4) -> list[Problem]:
    return [Problem(problem_id=f"gen_aime_{i}", problem=f"Find $x$ if $x + {i} = {2 * i}$.",
                    answer=str(i), solution=f"$x = {i}$.") for i in range(1, n + 1)]


def _scores(a: int, b: int, c: int, d: int) -> dict[str, int]:
    return dict(zip(DIMENSIONS, (a, b, c, d), strict=True))


@pytest.fixture
def store(workspace: Path):
    s = ReviewStore()
    yield s
    s.close()


def test_defaults_to_the_workspace_database_shared_with_store(workspace: Path) -> None:
    runs = Store()  # the run store and the review store share one file
    with ReviewStore() as reviews:
        assert reviews.path == workspace / "assay.db"
        reviews.save_review(DS, "p1", "alice", scores=_scores(5, 4, 4, 5), status="approved")
    runs.close()
    with ReviewStore(workspace / "assay.db") as again:
        assert again.get_review(DS, "p1", "alice").status == "approved"


def test_save_and_get(store: ReviewStore) -> None:
    saved = store.save_review(DS, "p1", " alice ", scores={"correctness": 5, "clarity": "4"},
                              status="approved", comment="rigorous")
    got = store.get_review(DS, "p1", "alice")
    assert got == saved
    assert got.reviewer == "alice"
    assert got.scores == {"correctness": 5, "clarity": 4, "difficulty_match": None,
                          "completeness": None}
    assert got.total_score == 4.5
    assert got.version == 1 and got.created_at == got.updated_at
    assert got.decided
    assert store.get_review(DS, "p1", "bob") is None
    assert store.get_review("other", "p1", "alice") is None


def test_two_reviewers_on_one_item_are_both_kept(store: ReviewStore) -> None:
    store.save_review(DS, "p1", "alice", scores=_scores(5, 5, 4, 4), status="approved")
    store.save_review(DS, "p1", "bob", scores=_scores(2, 3, 3, 2), status="rejected",
                      comment="answer is wrong")
    rows = {r.reviewer: r for r in store.reviews_for(DS)}
    assert set(rows) == {"alice", "bob"}
    assert rows["alice"].status == "approved" and rows["bob"].status == "rejected"
    assert rows["bob"].comment == "answer is wrong"
    assert store.reviewers(DS) == ["alice", "bob"]
    assert [r.reviewer for r in store.reviews_for(DS, "bob")] == ["bob"]


def test_same_reviewer_update_replaces_and_keeps_history(store: ReviewStore) -> None:
    first = store.save_review(DS, "p1", "alice", scores=_scores(3, 3, 3, 3), status="pending")
    second = store.save_review(DS, "p1", "alice", scores=_scores(4, 5, 4, 4),
                               status="needs_revision", comment="fix step 2")
    third = store.save_review(DS, "p1", "alice", scores=_scores(5, 5, 4, 4), status="approved")
    current = store.get_review(DS, "p1", "alice")
    assert current == third
    assert (first.version, second.version, third.version) == (1, 2, 3)
    assert current.created_at == first.created_at
    assert current.updated_at >= second.updated_at >= first.updated_at
    assert len(store.reviews_for(DS)) == 1
    events = store.history(DS, "p1", "alice")
    assert [e.status for e in events] == ["pending", "needs_revision", "approved"]
    assert [e.version for e in events] == [1, 2, 3]
    assert events[1].comment == "fix step 2" and events[1].scores == _scores(4, 5, 4, 4)
    assert events[0].seq < events[1].seq < events[2].seq
    assert events[2].to_dict()["at_iso"].endswith("+00:00")


def test_reviews_survive_reopening_the_file(workspace: Path) -> None:
    with ReviewStore() as s:
        s.save_review(DS, "p1", "alice", scores=_scores(5, 4, 4, 5), status="approved",
                      comment="ok")
        s.save_review(DS, "p2", "bob", scores=_scores(1, 2, 2, 1), status="rejected")
    # nothing but the file carries over: a new handle (as after a server restart)
    with ReviewStore(workspace / "assay.db") as s2:
        a = s2.get_review(DS, "p1", "alice")
        assert (a.status, a.comment, a.scores["correctness"]) == ("approved", "ok", 5)
        assert s2.get_review(DS, "p2", "bob").status == "rejected"
        assert len(s2.history(DS)) == 2


def test_invalid_reviews_are_refused_and_nothing_is_written(store: ReviewStore) -> None:
    bad = [
        dict(scores={"correctness": 6}),
        dict(scores={"correctness": 0}),
        dict(scores={"correctness": 2.5}),
        dict(scores={"correctness": True}),
        dict(scores={"correctness": "high"}),
        dict(scores={"beauty": 3}),
        dict(scores=[1, 2]),
        dict(status="maybe"),
        dict(comment="x" * 20_001),
    ]
    for kwargs in bad:
        with pytest.raises(ReviewError):
            store.save_review(DS, "p1", "alice", **kwargs)
    for name in ("", "   ", "a" * 65, "tab\tname"):
        with pytest.raises(ReviewError):
            store.save_review(DS, "p1", name, scores={})
    assert store.reviews_for(DS) == [] and store.history(DS) == []
    # custom rubrics: any dimension names when dimensions=None
    r = store.save_review(DS, "p1", "alice", scores={"elegance": 4}, dimensions=None)
    assert r.scores == {"elegance": 4}


def test_progress_counts_decisions_not_drafts(store: ReviewStore) -> None:
    store.save_review(DS, "p1", "alice", scores=_scores(5, 5, 5, 5), status="approved")
    store.save_review(DS, "p2", "alice", scores=_scores(1, 1, 1, 1), status="rejected")
    store.save_review(DS, "p3", "alice", scores={"correctness": 3})  # a draft
    store.save_review(DS, "p1", "bob", scores=_scores(4, 4, 4, 4), status="needs_revision")
    p = store.progress(DS, "alice", 5)
    assert p == {"reviewer": "alice", "total": 5, "reviewed": 2, "approved": 1, "rejected": 1,
                 "needs_revision": 0, "pending": 3, "drafts": 1}
    assert store.progress(DS, "carol", 5)["reviewed"] == 0
    proj = store.project_progress(DS, 5)
    assert proj["items_reviewed"] == 2 and proj["reviews"] == 4
    assert proj["reviewers"] == ["alice", "bob"]
    assert store.statuses(DS, "alice") == {"p1": "approved", "p2": "rejected", "p3": "pending"}


def test_export_has_the_book_shape_with_reviewer_and_times(store: ReviewStore,
                                                           tmp_path: Path) -> None:
    problems = _problems(4)
    store.save_review(DS, "gen_aime_3", "alice", scores=_scores(4, 4, 3, 5), status="approved",
                      comment="fine")
    store.save_review(DS, "gen_aime_1", "alice", scores=_scores(2, 3, 3, 3),
                      status="needs_revision")
    store.save_review(DS, "gen_aime_1", "bob", scores=_scores(1, 2, 2, 2), status="rejected",
                      comment="wrong answer")
    out = tmp_path / "aime_generated_verifications.json"
    data = export_verifications(store, DS, problems, out)
    assert json.loads(out.read_text(encoding="utf-8")) == data
    assert list(data) == ["gen_aime_1", "gen_aime_3"]  # problem order; unreviewed left out
    e3 = data["gen_aime_3"]
    assert BOOK_KEYS <= set(e3)
    assert e3["problem_id"] == "gen_aime_3"
    assert e3["scores"] == {"correctness": 4, "clarity": 4, "difficulty_match": 3,
                            "completeness": 5}
    assert e3["total_score"] == 4.0
    assert e3["status"] == "approved" and e3["comments"] == "fine"
    assert e3["verified_at"].startswith("20") and "T" in e3["verified_at"]
    assert e3["reviewer"] == "alice" and e3["version"] == 1 and e3["created_at"]
    assert e3["dataset_id"] == DS
    e1 = data["gen_aime_1"]  # two reviewers: the latest on top, everyone under "reviews"
    assert e1["reviewer"] == "bob" and e1["status"] == "rejected"
    assert [r["reviewer"] for r in e1["reviews"]] == ["alice", "bob"]
    assert all(BOOK_KEYS <= set(r) for r in e1["reviews"])
    only_alice = export_verifications(store, DS, problems, None, reviewer="alice")
    assert only_alice["gen_aime_1"]["status"] == "needs_revision"
    assert [r["reviewer"] for r in only_alice["gen_aime_1"]["reviews"]] == ["alice"]
    assert not list(tmp_path.glob(".*.tmp"))


def test_dataset_id_is_a_content_hash_of_the_problems(tmp_path: Path) -> None:
    problems = _problems(3)
    as_json = save_problems(problems, tmp_path / "a.json")
    as_jsonl = save_problems(problems, tmp_path / "a.jsonl")
    assert dataset_id_for_file(as_json) == dataset_id_for_file(as_jsonl) == dataset_id(problems)
    assert len(dataset_id(problems)) == 16
    edited = _problems(3)
    edited[1].answer = "999"
    assert dataset_id(edited) != dataset_id(problems)
    assert dataset_id(problems[:2]) != dataset_id(problems)


def test_ratings_for_agreement(store: ReviewStore) -> None:
    store.save_review(DS, "p1", "alice", scores=_scores(5, 4, 3, 5), status="approved")
    store.save_review(DS, "p2", "alice", scores={"correctness": 2, "clarity": 3})
    store.save_review(DS, "p3", "alice", scores=_scores(1, 1, 1, 1), status="rejected")
    store.save_review(DS, "p1", "bob", scores=_scores(4, 4, 3, 4), status="approved")
    store.save_review(DS, "p2", "bob", scores=_scores(2, 2, 2, 2), status="rejected")
    store.save_review("other-ds", "p1", "carol", scores=_scores(3, 3, 3, 3))
    judge = {"p1": {"correctness": 4.5, "clarity": 4}, "p3": {"correctness": 2},
             "p9": {"correctness": 5, "clarity": True, "completeness": "n/a"}}
    by_dim = store.ratings(DS, judge_scores=judge)
    assert set(by_dim) == set(DIMENSIONS)
    assert by_dim["correctness"] == {"alice": {"p1": 5, "p2": 2, "p3": 1},
                                     "bob": {"p1": 4, "p2": 2},
                                     "judge": {"p1": 4.5, "p3": 2, "p9": 5}}
    assert by_dim["clarity"]["judge"] == {"p1": 4}  # a boolean is no score
    assert by_dim["completeness"] == {"alice": {"p1": 5, "p3": 1}, "bob": {"p1": 4, "p2": 2}}
    assert store.ratings(DS, judge_scores=judge, judge_name="gpt")["correctness"]["gpt"] == {
        "p1": 4.5, "p3": 2, "p9": 5}


def test_concurrent_writers_on_one_file_lose_nothing(workspace: Path) -> None:
    """Two handles (as two servers) and several threads write at once: every row and event."""
    stores = [ReviewStore(), ReviewStore()]
    errors: list[BaseException] = []

    def work(k: int) -> None:
        s = stores[k % 2]
        reviewer = f"r{k}"
        try:
            for i in range(25):
                s.save_review(DS, f"p{i}", reviewer, scores=_scores(1 + i % 5, 3, 3, 3),
                              status="approved")
            s.save_review(DS, "p0", reviewer, scores=_scores(5, 5, 5, 5), status="rejected")
        except BaseException as e:  # noqa: BLE001 - surfaced below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    with ReviewStore() as check:
        assert len(check.reviews_for(DS)) == 4 * 25
        assert len(check.history(DS)) == 4 * 26
        for k in range(4):
            r = check.get_review(DS, "p0", f"r{k}")
            assert (r.status, r.version, r.scores["correctness"]) == ("rejected", 2, 5)
    for s in stores:
        s.close()
