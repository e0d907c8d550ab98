"""A run's stored metrics laid out for the page, without knowing its task: any dict with
``value`` and ``ci_low`` is a rate, and a dict of rates is a per-category table."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

from assay.compare.render import fmt_delta, fmt_p
from assay.metrics.format import by_name, fmt_rate
from assay.reports.render import fmt_value, is_rate
from assay.store.described import run_headline

__all__ = ["ERROR_KEYS", "headline_for", "metric_sections", "models_view", "rate_cells"]

#: metrics shown in the errors box rather than among the scores
ERROR_KEYS = ("n_errors", "error_rate", "top_errors")

_RATE_KEYS = {"value", "ci_low", "ci_high", "successes", "n", "method"}


def headline_for(run: dict[str, Any]) -> tuple[str, str] | None:
    """``(metric, "0.650 [0.433, 0.819] (13/20)")``: the stored headline, else first rate."""
    head = run_headline(run)
    return (head[0], fmt_rate(head[1])) if head else None


def _num(value: Any) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def rate_cells(entry: dict[str, Any] | None) -> dict[str, str]:
    """A rate entry as table cells: value, interval, n (``13/20`` or ``n=20``), method."""
    if not is_rate(entry):
        return {"value": "n/a", "interval": "", "n": "", "method": ""}
    assert entry is not None
    lo, hi = entry.get("ci_low"), entry.get("ci_high")
    interval = f"[{_num(lo)}, {_num(hi)}]" if lo is not None and hi is not None else ""
    if "successes" in entry:
        n = f"{entry['successes']}/{entry.get('n')}"
    elif entry.get("n") is not None:
        n = f"n={entry['n']}"
    else:
        n = ""
    return {"value": _num(entry.get("value")), "interval": interval, "n": n,
            "method": str(entry.get("method") or "")}


def _text(value: Any, name: str | None = None) -> str:
    """A metrics value as a cell: names (a list of strings) comma-joined, other lists and
    mappings as JSON, the rest as reports write them."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return ", ".join(value)
    if is_rate(value):  # a mean or rate inside a group: as the rates table writes it
        cells = rate_cells(value)
        return " ".join(c for c in (cells["value"], cells["interval"],
                                    f"({cells['n']})" if cells["n"] else "") if c)
    if isinstance(value, dict) and value and all(
            isinstance(v, (str, int, float)) and not isinstance(v, bool)
            for v in value.values()):  # counts by name: "calculator 2, think 1"
        return by_name({k: fmt_value(v) for k, v in value.items()})
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False, default=str)
    return fmt_value(value, name)


def _rate_table(title: str, entries: dict[str, Any]) -> dict[str, Any]:
    extra = list(dict.fromkeys(k for e in entries.values() for k in (e or {})
                               if k not in _RATE_KEYS))
    rows = []
    for name, e in entries.items():
        cells = rate_cells(e)
        rows.append([str(name), cells["value"], cells["interval"], cells["n"], cells["method"],
                     *(_text((e or {}).get(k)) if e else "" for k in extra)])
    return {"title": title, "kind": "rates",
            "columns": ["name", "value", "95% interval", "n", "method", *extra], "rows": rows}


def _records_table(title: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    columns = list(dict.fromkeys(str(k) for r in records for k in r))
    rows = [[_text(r.get(c)) if not is_rate(r.get(c)) else fmt_rate(r[c]) for c in columns]
            for r in records]
    return {"title": title, "kind": "records", "columns": columns, "rows": rows}


def _dict_table(title: str, value: dict[str, Any]) -> dict[str, Any]:
    if value and all(isinstance(v, dict) and not is_rate(v) for v in value.values()):
        records = [{"name": k, **v} for k, v in value.items()]
        return _records_table(title, records)
    return {"title": title, "kind": "pairs", "columns": ["name", "value"],
            "rows": [[str(k), _text(v, str(k))] for k, v in value.items()]}


def metric_sections(metrics: dict[str, Any] | None) -> dict[str, Any]:
    """The metrics split for display: ``rates`` ([(name, cells)]), ``figures``
    ([(name, text)]), ``tables`` (``{"title", "kind", "columns", "rows"}``) and ``errors``."""
    rates: list[tuple[str, dict[str, str]]] = []
    figures: list[tuple[str, str]] = []
    tables: list[dict[str, Any]] = []
    errors: dict[str, Any] = {"n_errors": None, "error_rate": None, "top_errors": []}
    for name, value in (metrics or {}).items():
        if name in ERROR_KEYS:
            if name == "error_rate" and is_rate(value):
                errors[name] = fmt_rate(value)
            elif name == "top_errors" and isinstance(value, list):
                errors[name] = [(str(e.get("message", e)) if isinstance(e, dict) else str(e),
                                 e.get("count") if isinstance(e, dict) else None)
                                for e in value]
            else:
                errors[name] = value
            continue
        if is_rate(value):
            rates.append((name, rate_cells(value)))
        elif isinstance(value, dict):
            if all(v is None for v in value.values()):  # nothing computed: no table of n/a
                if value:
                    figures.append((name, f"none computed ({', '.join(map(str, value))})"))
                continue
            if all(v is None or is_rate(v) for v in value.values()) and any(
                    is_rate(v) for v in value.values()):
                tables.append(_rate_table(name, value))
            else:
                tables.append(_dict_table(name, value))
        elif isinstance(value, list):
            if value and all(isinstance(v, dict) for v in value):
                tables.append(_records_table(name, value))
            elif value:
                figures.append((name, _text(value)))
        elif value is not None:
            figures.append((name, _text(value, name)))
    return {"rates": rates, "figures": figures, "tables": tables, "errors": errors}


def models_view(metrics: dict[str, Any] | None) -> dict[str, Any] | None:
    """A multi-model run's stored rows and pairs, each pair linked to its comparison; or None."""
    if not metrics or not isinstance(metrics.get("rows"), list):
        return None
    rows = [{"model": r.get("model"), "run": r.get("run"), "status": r.get("status"),
             "metric": r.get("metric") or "",
             "headline": fmt_rate(r["headline"]) if r.get("headline") else "n/a"}
            for r in metrics["rows"]]
    pairs = []
    for p in metrics.get("pairs") or []:
        cells = {"model_a": p.get("model_a"), "model_b": p.get("model_b"),
                 "compare_url": (f"/compare?{urlencode({'a': p['run_a'], 'b': p['run_b']})}"
                                 if p.get("run_a") and p.get("run_b") else None)}
        if p.get("error"):
            pairs.append({**cells, "error": p["error"]})
            continue
        pairs.append({**cells, "n": p.get("n"), "delta": fmt_delta(p, p.get("kind") or "binary"),
                      "p": fmt_p(p.get("p_value")), "p_holm": fmt_p(p.get("p_holm"))
                      if p.get("p_holm") is not None else "", "test": p.get("test") or "",
                      "verdict": p.get("verdict") or ""})
    return {"task": metrics.get("task"), "rows": rows, "pairs": pairs}
