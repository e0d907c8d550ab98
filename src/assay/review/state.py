"""The review app's shared state, and how a request handler reaches it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aiohttp import web
from jinja2 import Environment, FileSystemLoader

from assay.review.mathml import render_math
from assay.review.records import ReviewError, normalize_reviewer
from assay.review.store import ReviewStore
from assay.tasks.datagen.problem import Problem

__all__ = ["STATE_KEY", "STATIC", "STORE_KEY", "TEMPLATES", "ReviewState", "reviewer_param",
           "state_of", "store_of"]

HERE = Path(__file__).resolve().parent
TEMPLATES = HERE / "templates"
STATIC = HERE / "static"


class ReviewState:
    """What every request of one review app shares: the problems, the judge's scores,
    the default reviewer, where exports go, and the page templates.
    """

    def __init__(self, problems: Sequence[Problem], dataset_id: str,
                 judge_scores: Mapping[str, Mapping[str, Any]], reviewer: str | None,
                 export_path: Path, dimensions: Sequence[str], title: str) -> None:
        self.problems = list(problems)
        self.by_id = {p.problem_id: i for i, p in enumerate(self.problems)}
        self.dataset_id = dataset_id
        self.judge = {str(k): dict(v) for k, v in judge_scores.items()}
        self.reviewer = reviewer
        self.export_path = export_path
        self.dimensions = tuple(dimensions)
        self.title = title
        self.env = Environment(loader=FileSystemLoader(str(TEMPLATES)), autoescape=True,
                               trim_blocks=True, lstrip_blocks=True)
        self.env.filters["math"] = render_math
        self.static_version = str(int(max(f.stat().st_mtime for f in STATIC.iterdir())))

    def render(self, name: str, **ctx: Any) -> str:
        """The HTML of template ``name`` rendered with ``ctx``."""
        return self.env.get_template(name).render(**ctx)


STORE_KEY = web.AppKey("review_store", ReviewStore)
STATE_KEY = web.AppKey("review_state", ReviewState)


def state_of(request: web.Request) -> ReviewState:
    """The state of the app that received ``request``."""
    return request.app[STATE_KEY]


def store_of(request: web.Request) -> ReviewStore:
    """The review store of the app that received ``request``."""
    return request.app[STORE_KEY]


def reviewer_param(request: web.Request, st: ReviewState) -> str | None:
    """The reviewer a URL names (else the app's default); None when the name is not usable."""
    raw = request.query.get("reviewer")
    if raw is None:
        return st.reviewer
    try:
        return normalize_reviewer(raw)
    except ReviewError:
        return None
