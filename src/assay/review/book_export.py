"""Reviews in the book's ``_verifications.json`` shape, and writing that file atomically."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from assay.review.records import Review, iso_time
from assay.tasks.datagen.problem import Problem

__all__ = ["book_entry", "book_verifications", "write_json_atomically"]


def book_verifications(dataset_id: str, reviews: Sequence[Review],
                       problems: Sequence[Problem] | None) -> dict[str, Any]:
    """The book's verifications mapping for ``reviews``, keyed by problem id.

    Each entry is the latest review of the item, with ``dataset_id`` and every reviewer's
    entry under ``reviews``; entries follow the problems' order, then the other reviewed
    ids sorted. See :meth:`assay.review.store.ReviewStore.export_verifications`.
    """
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


def write_json_atomically(target: Path, data: Any) -> None:
    """Write ``data`` as indented UTF-8 JSON to ``target``, replacing it atomically."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    os.replace(tmp, target)


def book_entry(r: Review) -> dict[str, Any]:
    """One review in the book's entry shape, plus reviewer, creation time and version."""
    return {
        "problem_id": r.problem_id,
        "scores": dict(r.scores),
        "total_score": r.total_score,
        "status": r.status,
        "comments": r.comment,
        "verified_at": iso_time(r.updated_at),
        "reviewer": r.reviewer,
        "created_at": iso_time(r.created_at),
        "version": r.version,
    }
