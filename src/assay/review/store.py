"""Human reviews of generated problems, kept in the workspace SQLite file.

One row per (dataset, problem, reviewer) in ``reviews``: reviewers never
overwrite each other, and a reviewer's later submission replaces their earlier
one (its ``version`` goes up). Every submission is also appended to
``review_events``, which is never updated or deleted: the audit trail of who
said what, and when.

Each submission is its own committed transaction (``BEGIN IMMEDIATE`` ...
``COMMIT`` with ``synchronous=FULL`` on this connection), so a review that was
acknowledged survives a server restart, a killed process or a power cut. The
file is shared with :class:`assay.store.sqlite.Store` (same ``assay.db``, WAL),
through a connection of its own, so several review servers and a running
evaluation can write to it at once; a writer that finds the file busy waits
(``busy_timeout``) instead of failing.

``dataset_id`` ties reviews to the data they are about: a hash of the problems'
content (id, problem, answer, solution), so the same problems saved as JSON or
JSONL, or re-indented, keep their reviews, while any edit to a problem starts
afresh.

What a review is, and the rules a submission follows, are in :mod:`.records`; the
book's export format in :mod:`.book_export`; score pairing for agreement in :mod:`.pairing`.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from assay.review.book_export import book_verifications, write_json_atomically
from assay.review.pairing import PairedScores, pair_scores, score_number
from assay.review.records import (
    DECIDED,
    DIMENSIONS,
    MAX_COMMENT,
    STATUSES,
    Review,
    ReviewError,
    ReviewEvent,
    normalize_reviewer,
    normalize_scores,
    normalize_status,
)
from assay.store.sqlite import workspace_dir
from assay.tasks.datagen.problem import Problem, load_problems

_SCHEMA = """
CREATE TABLE IF NOT EXISTS reviews (
    dataset_id TEXT NOT NULL,
    problem_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    scores TEXT NOT NULL,
    status TEXT NOT NULL,
    comment TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    version INTEGER NOT NULL,
    PRIMARY KEY (dataset_id, problem_id, reviewer)
);
CREATE TABLE IF NOT EXISTS review_events (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    dataset_id TEXT NOT NULL,
    problem_id TEXT NOT NULL,
    reviewer TEXT NOT NULL,
    scores TEXT NOT NULL,
    status TEXT NOT NULL,
    comment TEXT NOT NULL DEFAULT '',
    at REAL NOT NULL,
    version INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS review_events_item
    ON review_events (dataset_id, problem_id, reviewer);
"""

_REVIEW_COLS = ("dataset_id, problem_id, reviewer, scores, status, comment, created_at,"
                " updated_at, version")


# -- dataset ids ----------------------------------------------------------------------------
def dataset_id(problems: Iterable[Problem]) -> str:
    """A content hash of the problems (16 hex digits): ids, texts, answers, solutions, in order."""
    h = hashlib.sha256()
    for p in problems:
        h.update(json.dumps([p.problem_id, p.problem, str(p.answer), p.solution or ""],
                            ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:16]


def dataset_id_for_file(path: str | Path) -> str:
    """The dataset id of a problems file (JSON, JSONL or CSV, as :func:`load_problems` reads)."""
    return dataset_id(load_problems(path))


# -- the store ------------------------------------------------------------------------------
class ReviewStore:
    """Reviews in the workspace database (``workspace_dir()/"assay.db"`` unless ``path``).

    Thread-safe: one connection guarded by a lock, so an async server may call it
    from worker threads. Several ``ReviewStore`` objects (or processes) may share
    the file.
    """

    def __init__(self, path: str | Path | None = None, *, busy_timeout_s: float = 30.0) -> None:
        self.path = Path(path) if path else workspace_dir() / "assay.db"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        db = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None,
                             check_same_thread=False)
        db.execute(f"PRAGMA busy_timeout={int(busy_timeout_s * 1000)}")
        db.execute("PRAGMA journal_mode=WAL")
        # FULL: an acknowledged review survives even an OS crash (reviews are few and precious).
        db.execute("PRAGMA synchronous=FULL")
        self._db = db
        with self._write():
            for stmt in _SCHEMA.split(";"):
                if stmt.strip():
                    db.execute(stmt)

    # context management -------------------------------------------------------------------
    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ReviewStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``) and committed on exit."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _query(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    # writes --------------------------------------------------------------------------------
    def save_review(self, dataset_id: str, problem_id: str, reviewer: str, *,
                    scores: Mapping[str, Any] | None = None, status: str = "pending",
                    comment: str = "", dimensions: Sequence[str] | None = DIMENSIONS
                    ) -> Review:
        """Record one submission and commit it before returning.

        Replaces this reviewer's previous review of the item (``version`` + 1,
        ``created_at`` kept) and appends the submission to ``review_events``.
        Other reviewers' rows are never touched. ``dimensions=None`` accepts any
        dimension names (custom rubrics).
        """
        reviewer = normalize_reviewer(reviewer)
        if not dataset_id or not str(problem_id):
            raise ReviewError("a review needs a dataset id and a problem id")
        clean = normalize_scores(scores, dimensions)
        status = normalize_status(status)
        comment = str(comment or "")
        if len(comment) > MAX_COMMENT:
            raise ReviewError(f"comment is longer than {MAX_COMMENT} characters")
        scores_json = json.dumps(clean, ensure_ascii=False)
        key = (dataset_id, str(problem_id), reviewer)
        with self._write() as db:
            now = time.time()
            row = db.execute(
                "SELECT version, created_at, updated_at FROM reviews"
                " WHERE dataset_id=? AND problem_id=? AND reviewer=?", key).fetchone()
            version = row[0] + 1 if row else 1
            created = row[1] if row else now
            now = max(now, row[2]) if row else now  # never let time run backwards per row
            db.execute(f"INSERT OR REPLACE INTO reviews ({_REVIEW_COLS})"
                       " VALUES (?,?,?,?,?,?,?,?,?)",
                       (*key, scores_json, status, comment, created, now, version))
            db.execute("INSERT INTO review_events (dataset_id, problem_id, reviewer, scores,"
                       " status, comment, at, version) VALUES (?,?,?,?,?,?,?,?)",
                       (*key, scores_json, status, comment, now, version))
        return Review(*key, scores=clean, status=status, comment=comment, created_at=created,
                      updated_at=now, version=version)

    # reads ---------------------------------------------------------------------------------
    @staticmethod
    def _review(r: tuple[Any, ...]) -> Review:
        return Review(dataset_id=r[0], problem_id=r[1], reviewer=r[2], scores=json.loads(r[3]),
                      status=r[4], comment=r[5], created_at=r[6], updated_at=r[7], version=r[8])

    def get_review(self, dataset_id: str, problem_id: str, reviewer: str) -> Review | None:
        """This reviewer's current review of the item, or None."""
        rows = self._query(f"SELECT {_REVIEW_COLS} FROM reviews"
                           " WHERE dataset_id=? AND problem_id=? AND reviewer=?",
                           (dataset_id, str(problem_id), str(reviewer).strip()))
        return self._review(rows[0]) if rows else None

    def reviews_for(self, dataset_id: str, reviewer: str | None = None) -> list[Review]:
        """Current reviews of a dataset (one reviewer's, or everyone's), oldest first."""
        sql = f"SELECT {_REVIEW_COLS} FROM reviews WHERE dataset_id=?"
        args: tuple[Any, ...] = (dataset_id,)
        if reviewer is not None:
            sql += " AND reviewer=?"
            args += (str(reviewer).strip(),)
        rows = self._query(sql + " ORDER BY created_at, problem_id, reviewer", args)
        return [self._review(r) for r in rows]

    def history(self, dataset_id: str, problem_id: str | None = None,
                reviewer: str | None = None) -> list[ReviewEvent]:
        """Every submission (the audit trail), in the order they were made."""
        sql = ("SELECT seq, dataset_id, problem_id, reviewer, scores, status, comment, at, version"
               " FROM review_events WHERE dataset_id=?")
        args: tuple[Any, ...] = (dataset_id,)
        if problem_id is not None:
            sql += " AND problem_id=?"
            args += (str(problem_id),)
        if reviewer is not None:
            sql += " AND reviewer=?"
            args += (str(reviewer).strip(),)
        rows = self._query(sql + " ORDER BY seq", args)
        return [ReviewEvent(seq=r[0], dataset_id=r[1], problem_id=r[2], reviewer=r[3],
                            scores=json.loads(r[4]), status=r[5], comment=r[6], at=r[7],
                            version=r[8]) for r in rows]

    def reviewers(self, dataset_id: str) -> list[str]:
        """Names of everyone who reviewed something in the dataset, sorted."""
        rows = self._query("SELECT DISTINCT reviewer FROM reviews WHERE dataset_id=?"
                           " ORDER BY reviewer", (dataset_id,))
        return [r[0] for r in rows]

    def statuses(self, dataset_id: str, reviewer: str) -> dict[str, str]:
        """``problem_id -> status`` of one reviewer's saved reviews."""
        rows = self._query("SELECT problem_id, status FROM reviews WHERE dataset_id=?"
                           " AND reviewer=?", (dataset_id, str(reviewer).strip()))
        return {r[0]: r[1] for r in rows}

    def progress(self, dataset_id: str, reviewer: str, n_items: int) -> dict[str, Any]:
        """How far a reviewer is: ``reviewed`` (decided) of ``total`` and counts per status.

        ``pending`` counts the items without a decision (drafts and untouched ones).
        """
        counts = dict.fromkeys(DECIDED, 0)
        drafts = 0
        for status in self.statuses(dataset_id, reviewer).values():
            if status in counts:
                counts[status] += 1
            else:
                drafts += 1
        reviewed = sum(counts.values())
        return {"reviewer": str(reviewer).strip(), "total": n_items, "reviewed": reviewed,
                **counts, "pending": max(n_items - reviewed, 0), "drafts": drafts}

    def project_progress(self, dataset_id: str, n_items: int) -> dict[str, Any]:
        """Across reviewers: items with at least one decision, reviews per status, reviewers."""
        rows = self._query("SELECT problem_id, status FROM reviews WHERE dataset_id=?",
                           (dataset_id,))
        by_status = dict.fromkeys(STATUSES, 0)
        covered: set[str] = set()
        for pid, status in rows:
            by_status[status] = by_status.get(status, 0) + 1
            if status in DECIDED:
                covered.add(pid)
        return {"total": n_items, "items_reviewed": len(covered), "reviews": len(rows),
                "by_status": by_status, "reviewers": self.reviewers(dataset_id)}

    # agreement hooks ----------------------------------------------------------------------
    def paired_scores(self, dataset_id: str, reviewer_a: str, reviewer_b: str,
                      dimensions: Sequence[str] = DIMENSIONS) -> dict[str, PairedScores]:
        """Per dimension, the two reviewers' scores on the items both scored (for kappa)."""
        a = {r.problem_id: r.scores for r in self.reviews_for(dataset_id, reviewer_a)}
        b = {r.problem_id: r.scores for r in self.reviews_for(dataset_id, reviewer_b)}
        return pair_scores(a, b, dimensions)

    def paired_with_judge(self, dataset_id: str, reviewer: str,
                          judge_scores: Mapping[str, Mapping[str, Any]],
                          dimensions: Sequence[str] = DIMENSIONS) -> dict[str, PairedScores]:
        """Per dimension, ``a`` = the reviewer's scores, ``b`` = the judge's, on shared items."""
        a = {r.problem_id: r.scores for r in self.reviews_for(dataset_id, reviewer)}
        return pair_scores(a, {str(k): dict(v) for k, v in judge_scores.items()}, dimensions)

    def reviewer_pairs(self, dataset_id: str, dimensions: Sequence[str] = DIMENSIONS
                       ) -> dict[tuple[str, str], dict[str, PairedScores]]:
        """:meth:`paired_scores` for every pair of reviewers who scored a common item."""
        names = self.reviewers(dataset_id)
        by = {n: {r.problem_id: r.scores for r in self.reviews_for(dataset_id, n)} for n in names}
        out: dict[tuple[str, str], dict[str, PairedScores]] = {}
        for i, x in enumerate(names):
            for y in names[i + 1:]:
                pairs = pair_scores(by[x], by[y], dimensions)
                if any(len(p) for p in pairs.values()):
                    out[(x, y)] = pairs
        return out

    def ratings(self, dataset_id: str, dimensions: Sequence[str] = DIMENSIONS, *,
                judge_scores: Mapping[str, Mapping[str, Any]] | None = None,
                judge_name: str = "judge") -> dict[str, dict[str, dict[str, float]]]:
        """``{dimension: {rater: {problem_id: score}}}`` for every reviewer (and the judge).

        The shape :func:`assay.metrics.agreement.pairwise_agreement` takes, one
        dimension at a time; empty scores are left out.
        """
        out: dict[str, dict[str, dict[str, float]]] = {d: {} for d in dimensions}
        raters: dict[str, Mapping[str, Mapping[str, Any]]] = {}
        for r in self.reviews_for(dataset_id):
            raters.setdefault(r.reviewer, {})[r.problem_id] = r.scores  # type: ignore[index]
        if judge_scores:
            raters[judge_name] = {str(k): v for k, v in judge_scores.items()}
        for rater, items in raters.items():
            for d in dimensions:
                got = {pid: x for pid, sc in items.items()
                       if (x := score_number(sc.get(d))) is not None}
                if got:
                    out[d][rater] = got
        return out

    # export --------------------------------------------------------------------------------
    def export_verifications(self, dataset_id: str, problems: Sequence[Problem] | None,
                             path: str | Path | None, *, reviewer: str | None = None
                             ) -> dict[str, Any]:
        """Write (and return) the book's ``_verifications.json``, keyed by problem id.

        Each entry has the book's fields ``problem_id, scores, total_score, status,
        comments, verified_at`` (the latest review of the item, or ``reviewer``'s
        when given), plus ``reviewer``, ``created_at``, ``version``, ``dataset_id``
        and ``reviews``: every reviewer's entry in the same shape, for the audit.
        Items nobody reviewed are left out, as in the book. Entries follow the
        problems' order. ``path=None`` only returns the mapping. The file is
        replaced atomically.
        """
        out = book_verifications(dataset_id, self.reviews_for(dataset_id, reviewer), problems)
        if path is not None:
            write_json_atomically(Path(path), out)
        return out
