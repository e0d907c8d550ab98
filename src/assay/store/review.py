"""Human reviews of generated problems, in the workspace SQLite file (WAL, shared with the
Store through its own connection). One ``reviews`` row per (dataset, problem, reviewer):
reviewers never overwrite each other, a later submission replaces one's own (``version``
up); each is also appended to ``review_events``, the never-updated audit trail, in its own
transaction (``synchronous=FULL``: an acknowledged review survives a crash)."""

from __future__ import annotations

import json
import math
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from assay.errors import AssayError
from assay.store.sqlite import workspace_dir

__all__ = ["DECIDED", "DIMENSIONS", "MAX_COMMENT", "MAX_REVIEWER", "STATUSES", "Review",
           "ReviewError", "ReviewEvent", "ReviewStore", "iso_time", "normalize_reviewer",
           "normalize_scores", "normalize_status"]

#: the rubric dimensions, in the book's names and order
DIMENSIONS: tuple[str, ...] = ("correctness", "clarity", "difficulty_match", "completeness")
#: ``pending`` is a saved draft with no decision yet
STATUSES: tuple[str, ...] = ("approved", "rejected", "needs_revision", "pending")
DECIDED: tuple[str, ...] = ("approved", "rejected", "needs_revision")
MAX_COMMENT = 20_000
MAX_REVIEWER = 64


class ReviewError(AssayError):
    """A review is malformed: unknown status, a score outside 1-5, no reviewer name."""


def iso_time(ts: float | None) -> str | None:
    if ts is None:
        return None
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="seconds")


@dataclass
class Review:
    dataset_id: str
    problem_id: str
    reviewer: str
    scores: dict[str, int | None]
    status: str
    comment: str
    created_at: float
    updated_at: float
    version: int

    @property
    def total_score(self) -> float | None:
        """Mean of the scores given (the book's ``total_score``)."""
        values = [v for v in self.scores.values() if v is not None]
        return round(sum(values) / len(values), 4) if values else None

    @property
    def decided(self) -> bool:
        return self.status in DECIDED

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["total_score"] = self.total_score
        out["created_at_iso"] = iso_time(self.created_at)
        out["updated_at_iso"] = iso_time(self.updated_at)
        return out


@dataclass
class ReviewEvent:
    """One submission as made: a row of the append-only audit trail."""

    seq: int
    dataset_id: str
    problem_id: str
    reviewer: str
    scores: dict[str, int | None]
    status: str
    comment: str
    at: float
    version: int

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["at_iso"] = iso_time(self.at)
        return out


def normalize_reviewer(name: Any) -> str:
    """A reviewer id: stripped, 1-64 printable characters."""
    text = str(name or "").strip()
    if not text:
        raise ReviewError("a review needs a reviewer name (--reviewer NAME)")
    if len(text) > MAX_REVIEWER or not text.isprintable():
        raise ReviewError(f"reviewer name must be 1-{MAX_REVIEWER} printable characters")
    return text


def normalize_scores(scores: Mapping[str, Any] | None,
                     dimensions: Sequence[str] | None = None) -> dict[str, int | None]:
    """Scores as ``{dim: 1..5 or None}``; with ``dimensions`` every one is present, no other."""
    if scores is not None and not isinstance(scores, Mapping):
        raise ReviewError("scores must be an object of dimension -> 1..5 or null")
    given = dict(scores or {})
    if dimensions is not None:
        unknown = set(given) - set(dimensions)
        if unknown:
            raise ReviewError(f"unknown score dimension{'s' if len(unknown) > 1 else ''} "
                              f"{sorted(unknown)}; "
                              f"expected {list(dimensions)}")
    keys = list(dimensions) if dimensions is not None else list(given)
    out: dict[str, int | None] = {}
    for k in keys:
        if not isinstance(k, str) or not k:
            raise ReviewError("score dimensions must be non-empty names")
        v = given.get(k)
        if v is None or v == "":
            out[k] = None
            continue
        if isinstance(v, bool):
            raise ReviewError(f"score {k!r} must be an integer 1-5, got {v!r}")
        try:
            f = float(v)
        except (TypeError, ValueError):
            raise ReviewError(f"score {k!r} must be an integer 1-5, got {v!r}") from None
        if not math.isfinite(f) or not f.is_integer() or not 1 <= f <= 5:
            raise ReviewError(f"score {k!r} must be an integer 1-5, got {v!r}")
        out[k] = int(f)
    return out


def normalize_status(status: Any) -> str:
    """A review status (``pending`` when empty), lowercased."""
    text = str(status or "pending").strip().lower()
    if text not in STATUSES:
        raise ReviewError(f"status must be one of {', '.join(STATUSES)}; got {status!r}")
    return text


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


# -- the store ------------------------------------------------------------------------------
class ReviewStore:
    """Reviews in the workspace database; one connection under a lock (an async server
    calls it from worker threads); several objects or processes may share the file."""

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

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> ReviewStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken at once (``BEGIN IMMEDIATE``)."""
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

    def save_review(self, dataset_id: str, problem_id: str, reviewer: str, *,
                    scores: Mapping[str, Any] | None = None, status: str = "pending",
                    comment: str = "", dimensions: Sequence[str] | None = DIMENSIONS
                    ) -> Review:
        """Record one submission, committed before returning: this reviewer's review is
        replaced (``version`` + 1), the event appended. ``dimensions=None``: any names."""
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

    @staticmethod
    def _review(r: tuple[Any, ...]) -> Review:
        return Review(*r[:3], json.loads(r[3]), *r[4:])

    def get_review(self, dataset_id: str, problem_id: str, reviewer: str) -> Review | None:
        rows = self._query(f"SELECT {_REVIEW_COLS} FROM reviews"
                           " WHERE dataset_id=? AND problem_id=? AND reviewer=?",
                           (dataset_id, str(problem_id), str(reviewer).strip()))
        return self._review(rows[0]) if rows else None

    def reviews_for(self, dataset_id: str, reviewer: str | None = None) -> list[Review]:
        """Current reviews (one reviewer's, or everyone's), oldest first."""
        sql = f"SELECT {_REVIEW_COLS} FROM reviews WHERE dataset_id=?"
        args: tuple[Any, ...] = (dataset_id,)
        if reviewer is not None:
            sql += " AND reviewer=?"
            args += (str(reviewer).strip(),)
        rows = self._query(sql + " ORDER BY created_at, problem_id, reviewer", args)
        return [self._review(r) for r in rows]

    def history(self, dataset_id: str, problem_id: str | None = None,
                reviewer: str | None = None) -> list[ReviewEvent]:
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
        return [ReviewEvent(*r[:4], json.loads(r[4]), *r[5:]) for r in rows]

    def reviewers(self, dataset_id: str) -> list[str]:
        rows = self._query("SELECT DISTINCT reviewer FROM reviews WHERE dataset_id=?"
                           " ORDER BY reviewer", (dataset_id,))
        return [r[0] for r in rows]

    def statuses(self, dataset_id: str, reviewer: str) -> dict[str, str]:
        rows = self._query("SELECT problem_id, status FROM reviews WHERE dataset_id=?"
                           " AND reviewer=?", (dataset_id, str(reviewer).strip()))
        return {r[0]: r[1] for r in rows}

    def progress(self, dataset_id: str, reviewer: str, n_items: int) -> dict[str, Any]:
        """A reviewer's ``reviewed`` (decided) of ``total``, counts per status; ``pending``
        counts items without a decision (drafts and untouched ones)."""
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

    def ratings(self, dataset_id: str, dimensions: Sequence[str] = DIMENSIONS, *,
                judge_scores: Mapping[str, Mapping[str, Any]] | None = None,
                judge_name: str = "judge") -> dict[str, dict[str, dict[str, float]]]:
        """``{dimension: {rater: {problem_id: score}}}`` for every reviewer and the judge (for
        :func:`assay.metrics.agreement.pairwise_agreement`); no-scores left out."""
        raters: dict[str, dict[str, Mapping[str, Any]]] = {}
        for r in self.reviews_for(dataset_id):
            raters.setdefault(r.reviewer, {})[r.problem_id] = r.scores
        if judge_scores:
            raters[judge_name] = {str(k): v for k, v in judge_scores.items()}
        out: dict[str, dict[str, dict[str, float]]] = {d: {} for d in dimensions}
        for rater, items in raters.items():
            for d in dimensions:
                got = {pid: x for pid, sc in items.items()
                       if (x := _score_number(sc.get(d))) is not None}
                if got:
                    out[d][rater] = got
        return out


def _score_number(v: Any) -> float | None:
    """A score as a number (ints stay ints); None for no score, a bool or a non-number."""
    if v is None or isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None
