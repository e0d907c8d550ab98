"""The human review page (:class:`ReviewPage`), mounted under ``/review/``.

One problem at a time (``/review/item/<n>``) with four 1-5 scores, a status and a comment;
blind mode hides the judge's scores until the reviewer decides. Each submission is
committed to the workspace database before the page says "saved"."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from aiohttp import web

from assay.data.problems import Problem, load_problems
from assay.errors import DatasetError
from assay.review.export import dataset_id
from assay.review.inputs import load_judge_scores, utf8_error
from assay.store.review import DIMENSIONS, ReviewError, ReviewStore, normalize_reviewer
from assay.store.sqlite import workspace_dir

__all__ = ["PREFIX", "REVIEW_KEY", "STORE_KEY", "ReviewPage", "default_export_path",
           "review_of", "reviewer_param"]

PREFIX = "/review"
"""Where the review page lives in the app."""


def default_export_path(data_path: str | Path | None, dataset_id: str) -> Path:
    """``<data>_verifications.json`` beside the data file, else in the workspace."""
    if data_path is not None:
        p = Path(data_path)
        return p.with_name(f"{p.stem}_verifications.json")
    return workspace_dir() / "reviews" / f"{dataset_id}_verifications.json"


@dataclass
class ReviewPage:
    """One review page: the problems (filed under ``dataset_id``), judge scores, the
    default reviewer, export file, rubric, title, blind mode and review store (``None``: one
    on the app's store file, closed with the app)."""

    problems: Sequence[Problem]
    dataset_id: str
    judge: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    reviewer: str | None = None
    export_path: Path | None = None
    dimensions: Sequence[str] = DIMENSIONS
    title: str = ""
    blind: bool = False
    store: ReviewStore | None = None

    def __post_init__(self) -> None:
        if not self.problems:
            raise DatasetError("no problems to review")
        self.problems = list(self.problems)
        self.by_id = {p.problem_id: i for i, p in enumerate(self.problems)}
        self.judge = {str(k): dict(v) for k, v in self.judge.items()}
        self.reviewer = normalize_reviewer(self.reviewer) if self.reviewer else None
        self.export_path = Path(self.export_path or default_export_path(None, self.dataset_id))
        self.dimensions = tuple(self.dimensions)
        self.title = self.title or f"dataset {self.dataset_id}"

    @classmethod
    def from_file(cls, data_path: str | Path, reviewer: str | None = None, *,
                  judge_scores: str | Path | Mapping[str, Any] | None = None,
                  blind: bool = False, export_path: str | Path | None = None,
                  store: ReviewStore | None = None) -> ReviewPage:
        """A problems file's page, filed under its dataset_id; a bad file is a one-line error."""
        if reviewer is not None:
            reviewer = normalize_reviewer(reviewer)
        try:
            problems = load_problems(data_path)
        except UnicodeDecodeError as e:  # a reader that lets it through: one line, file:line
            raise utf8_error(Path(data_path), e) from e
        did = dataset_id(problems)
        return cls(problems, did, load_judge_scores(judge_scores), reviewer,
                   Path(export_path or default_export_path(data_path, did)),
                   title=Path(str(data_path)).name, blind=blind, store=store)

    def start_path(self) -> str:
        """``/review/`` with the reviewer and blind mode."""
        q = {"reviewer": self.reviewer} if self.reviewer else {}
        if self.blind:
            q["blind"] = "1"
        return f"{PREFIX}/" + (f"?{urlencode(q)}" if q else "")


REVIEW_KEY = web.AppKey("review_page", ReviewPage)
STORE_KEY = web.AppKey("review_store", ReviewStore)


def review_of(request: web.Request) -> tuple[ReviewPage, ReviewStore]:
    return request.app[REVIEW_KEY], request.app[STORE_KEY]


def reviewer_param(request: web.Request, page: ReviewPage) -> str | None:
    """The reviewer a URL names (else the page's); None when the name is not usable."""
    raw = request.query.get("reviewer")
    if raw is None:
        return page.reviewer
    try:
        return normalize_reviewer(raw)
    except ReviewError:
        return None
