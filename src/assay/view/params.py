"""The query-string parameters of ``assay view``'s pages, parsed and checked.

A value that cannot mean anything (``page=abc``, a date that is no date) is a
:class:`BadParam` (a 400 page naming it); one merely out of range is clamped."""

from __future__ import annotations

import math
import time
from typing import Any
from urllib.parse import urlencode

from multidict import MultiMapping

from assay.store.queries import FIELD_PATTERN, RUN_SORTS, SAMPLE_SORTS, RunFilter, SampleFilter
from assay.web.state import PageError

__all__ = ["RUN_STATUSES", "VERDICTS", "BadParam", "RunFilters", "SampleFilters", "page_number"]

RUN_STATUSES = ("running", "finished", "interrupted", "failed")
#: by the primary score: correct = 1, wrong = below 1, error = failed (never wrong),
#: unscored = no error and no primary score
VERDICTS = ("all", "correct", "wrong", "error", "unscored")

_MAX_TEXT = 200


class BadParam(PageError):
    """A query parameter that cannot be understood (answered with a 400 page)."""

    def __init__(self, name: str, value: str, expected: str) -> None:
        shown = value if len(value) <= 60 else value[:59] + "…"
        super().__init__(400, "Bad request",
                         f"the parameter {name}={shown!r} is not usable: {expected}")
        self.name = name


def _text(query: MultiMapping[str], name: str) -> str:
    return query.get(name, "").strip()[:_MAX_TEXT]


def page_number(query: MultiMapping[str]) -> int:
    """The 1-based ``page``, clamped to 1 and above."""
    raw = query.get("page", "").strip()
    if not raw:
        return 1
    try:
        n = int(raw)
    except ValueError:
        raise BadParam("page", raw, "give a page number such as 2") from None
    return max(1, min(n, 10_000_000))


def _float(query: MultiMapping[str], name: str) -> float | None:
    raw = query.get(name, "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise BadParam(name, raw, "give a number such as 0.5") from None
    if not math.isfinite(value):
        raise BadParam(name, raw, "give a finite number such as 0.5")
    return value


def _date(query: MultiMapping[str], name: str) -> tuple[str, float | None]:
    """``(text, epoch seconds of that local midnight)`` for a ``YYYY-MM-DD`` parameter."""
    raw = query.get(name, "").strip()
    if not raw:
        return "", None
    try:
        parsed = time.strptime(raw, "%Y-%m-%d")
    except ValueError:
        raise BadParam(name, raw, "give a date as YYYY-MM-DD") from None
    return raw, time.mktime(parsed)


def _choice(query: MultiMapping[str], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = query.get(name, "").strip()
    if not raw:
        return default
    if raw not in choices:
        raise BadParam(name, raw, f"choose one of {', '.join(choices)}")
    return raw


def _order(query: MultiMapping[str], default: str) -> bool:
    return _choice(query, "order", ("asc", "desc"), default) == "desc"


def _link(params: dict[str, Any]) -> str:
    return urlencode({k: v for k, v in params.items() if v is not None and v != ""})


class RunFilters(RunFilter):
    """The runs list's filters, read from and written to a query string."""

    @classmethod
    def parse(cls, query: MultiMapping[str]) -> RunFilters:
        date_from, ts_from = _date(query, "from")
        date_to, ts_to = _date(query, "to")
        if ts_to is not None:
            ts_to += 86_400
        return cls(task=_text(query, "task"), model=_text(query, "model"),
                   status=_choice(query, "status", ("all", *RUN_STATUSES), "all"),
                   date_from=date_from, date_to=date_to, q=_text(query, "q"),
                   page=page_number(query), ts_from=ts_from, ts_to=ts_to,
                   sort=_choice(query, "sort", tuple(RUN_SORTS), "created"),
                   descending=_order(query, "desc"))

    def query(self, **change: Any) -> str:
        """The query string of these filters with ``change`` applied."""
        params = {"task": self.task, "model": self.model,
                  "status": None if self.status == "all" else self.status,
                  "from": self.date_from, "to": self.date_to, "q": self.q,
                  "page": self.page if self.page > 1 else None,
                  "sort": None if self.sort == "created" else self.sort,
                  "order": None if self.descending else "asc"}
        params.update(change)
        if params.get("page") == 1:
            params["page"] = None
        return _link(params)

    def sort_link(self, column: str) -> str:
        """Sorted by ``column`` (flipped if sorted by it now, else largest first); on page 1."""
        descending = (not self.descending if column == self.sort
                      else column in ("created", "samples", "errors", "headline"))
        return "/?" + self.query(sort=None if column == "created" else column,
                                 order=None if descending else "asc", page=None)


class SampleFilters(SampleFilter):
    """A run's sample-table filters, read from and written to a query string."""

    @classmethod
    def parse(cls, query: MultiMapping[str]) -> SampleFilters:
        fld = _text(query, "field")
        if fld and not FIELD_PATTERN.match(fld):
            raise BadParam("field", fld, "give a metadata key made of letters, digits, "
                           "'_', '-', '.' or spaces")
        lo, hi = _float(query, "score_min"), _float(query, "score_max")
        if lo is not None and hi is not None and lo > hi:
            raise BadParam("score_min", str(lo), f"it is above score_max={hi}")
        return cls(verdict=_choice(query, "verdict", VERDICTS, "all"), field=fld,
                   category=query.get("category", "")[:_MAX_TEXT], score_min=lo,
                   score_max=hi, q=_text(query, "q"), page=page_number(query),
                   sort=_choice(query, "sort", SAMPLE_SORTS, "sample"),
                   descending=_order(query, "asc"))

    def params(self, **change: Any) -> dict[str, Any]:
        params: dict[str, Any] = {
            "verdict": None if self.verdict == "all" else self.verdict,
            "field": self.field, "category": self.category,
            "score_min": _num(self.score_min), "score_max": _num(self.score_max),
            "q": self.q, "page": self.page if self.page > 1 else None,
            "sort": None if self.sort == "sample" else self.sort,
            "order": "desc" if self.descending else None}
        params.update(change)
        if params.get("page") == 1:
            params["page"] = None
        return params

    def query(self, **change: Any) -> str:
        return _link(self.params(**change))

    def sort_link(self, column: str) -> str:
        """Sorted by ``column``: the other way if sorted by it now, else ascending; on page 1."""
        descending = not self.descending if column == self.sort else False
        return self.query(sort=None if column == "sample" else column,
                          order="desc" if descending else None, page=None)


def _num(value: float | None) -> str | None:
    if value is None:
        return None
    return str(int(value)) if value == int(value) else repr(value)
