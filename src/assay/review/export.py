"""Which data a review is about, and the reviews in the book's ``_verifications.json``.

``dataset_id`` hashes the problems' content, so the same problems saved as JSON or JSONL
keep their reviews, while any edit to a problem starts afresh."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_write_text
from assay.data.problems import Problem, load_problems
from assay.store.review import Review, ReviewStore, iso_time

__all__ = ["book_entry", "book_verifications", "dataset_id", "dataset_id_for_file",
           "export_verifications"]


def dataset_id(problems: Iterable[Problem]) -> str:
    """16 hex digits of a hash of the problems' ids, texts, answers, solutions, in order."""
    h = hashlib.sha256()
    for p in problems:
        h.update(json.dumps([p.problem_id, p.problem, str(p.answer), p.solution or ""],
                            ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()[:16]


def dataset_id_for_file(path: str | Path) -> str:
    return dataset_id(load_problems(path))


def book_entry(r: Review) -> dict[str, Any]:
    """One review in the book's entry shape, plus reviewer, creation time and version."""
    return {"problem_id": r.problem_id, "scores": dict(r.scores), "total_score": r.total_score,
            "status": r.status, "comments": r.comment, "verified_at": iso_time(r.updated_at),
            "reviewer": r.reviewer, "created_at": iso_time(r.created_at), "version": r.version}


def book_verifications(dataset_id: str, reviews: Sequence[Review],
                       problems: Sequence[Problem] | None) -> dict[str, Any]:
    """The book's verifications mapping, keyed by problem id in the problems'
    order (then other ids sorted): each item's latest review, with ``dataset_id`` and every
    reviewer's entry under ``reviews``; items nobody reviewed are left out, as in the book."""
    by_item: dict[str, list[Review]] = {}
    for r in reviews:
        by_item.setdefault(r.problem_id, []).append(r)
    order = [p.problem_id for p in problems or []]
    order += sorted(set(by_item) - set(order))
    out: dict[str, Any] = {}
    for pid in order:
        items = by_item.get(pid)
        if not items:
            continue
        items.sort(key=lambda r: (r.updated_at, r.reviewer))
        entry = book_entry(items[-1])
        entry["dataset_id"] = dataset_id
        entry["reviews"] = [book_entry(r) for r in sorted(items, key=lambda r: r.reviewer)]
        out[pid] = entry
    return out


def export_verifications(store: ReviewStore, dataset_id: str,
                         problems: Sequence[Problem] | None, path: str | Path | None, *,
                         reviewer: str | None = None) -> dict[str, Any]:
    """Write (unless ``path`` is None) and return the book's verifications:
    :func:`book_verifications` of every review, or of ``reviewer``'s; replaced atomically."""
    out = book_verifications(dataset_id, store.reviews_for(dataset_id, reviewer), problems)
    if path is not None:
        atomic_write_text(path, json.dumps(out, ensure_ascii=False, indent=2))
    return out
