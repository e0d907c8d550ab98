"""A run's options laid out for its page, and its files listed and served read-only:
only the plain files its own folder lists (no sub-folder, link or ``..``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from aiohttp import web

from assay.reports.models import models_label
from assay.reports.values import original_judges, roles_text
from assay.store.queries import model_label
from assay.store.sqlite import Store
from assay.web.state import PageError, run_or_404, state_of

__all__ = ["FILE_TYPES", "REPORT_CSP", "run_file", "run_files", "run_options"]

#: how each kind of run file is answered (anything else is a download)
FILE_TYPES = {".md": "text/plain", ".txt": "text/plain", ".jsonl": "text/plain",
              ".json": "application/json", ".csv": "text/plain", ".html": "text/html",
              ".yaml": "text/plain", ".yml": "text/plain", ".log": "text/plain"}

#: a stored HTML report may use its own inline styles and nothing else (no script: sandbox)
REPORT_CSP = ("default-src 'none'; style-src 'unsafe-inline'; img-src data:; sandbox; "
              "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")

_MAX_FILES = 200
_SPEC_SHOWN = ("limit", "epochs", "seed", "max_connections", "max_retries", "timeout",
               "sample_timeout", "rpm", "cache", "max_error_rate", "executor", "workers",
               "ray_address", "endpoints")


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, (str, int, float)) for v in value):
        return ", ".join(map(str, value))  # a list of names reads as one, not as JSON
    return json.dumps(value, ensure_ascii=False, default=str)


def _first_score_name(store: Store, run_id: str) -> str:
    row = store._db.execute("SELECT scores FROM samples WHERE run_id = ? AND error IS NULL"
                            " LIMIT 1", (run_id,)).fetchone()
    try:
        scores = json.loads(row[0]) if row and row[0] else {}
    except ValueError:
        return ""
    return ", ".join(str(k) for k in scores) if isinstance(scores, dict) else ""


def run_options(store: Store, run: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """Settings as (name, value) rows by group: model, scoring, task options, generation, run."""
    spec = run["spec"] if isinstance(run.get("spec"), dict) else {}
    model = run["model"] if isinstance(run.get("model"), dict) else {}
    options = spec.get("task_options") if isinstance(spec.get("task_options"), dict) else {}
    params = spec.get("params") if isinstance(spec.get("params"), dict) else {}
    model_rows = [("model", model_label(model))] + [
        (str(k), roles_text(v) if k == "roles" else _text(v)) for k, v in model.items()
        if k not in ("model", "name", "spec", "agent", "inner") and v not in (None, "", {}, [])]
    agent = model.get("agent")
    if isinstance(agent, dict):  # the model with an agent: what it is, in words
        model_rows.insert(1, ("agent", str(agent.get("label") or agent.get("name"))))
    if judges := original_judges(run):  # a re-scoring's roles are its own; the original's apart
        model_rows.append(("original run's judge", judges))
    if models_label(run):  # a multi-model parent: each model, and its task's own options
        model_rows = [(f"model {i}", str(m)) for i, m in enumerate(model["models"], 1)]
        options = {"task": options.get("task"), **(options.get("options") or {})}
    scorer = options.get("scorer")
    scoring = [("scorer", _text(scorer) if scorer else "the task's default")]
    if names := _first_score_name(store, run["id"]):
        scoring.append(("scores", names))
    headline = run.get("headline")
    if isinstance(headline, dict) and headline.get("metric"):
        scoring.append(("headline metric", str(headline["metric"])))
    generation = [(str(k), _text(v)) for k, v in params.items()]
    if spec.get("seed") is not None:
        generation.append(("seed", _text(spec["seed"])))
    return {
        "model": model_rows, "scoring": scoring,
        "task options": [(str(k), _text(v)) for k, v in options.items() if k != "scorer"],
        "generation": generation,
        "run": [(k, _text(spec[k])) for k in _SPEC_SHOWN if spec.get(k) is not None
                and (k, spec[k]) != ("executor", "local")]}


def _folder(store_path: Path, run_id: str) -> Path:
    return store_path.parent / "runs" / run_id


def run_files(store_path: Path, run_id: str) -> list[dict[str, Any]]:
    """The plain files (name, size) in the run's folder, by name."""
    folder = _folder(store_path, run_id)
    if not folder.is_dir() or "/" in run_id or run_id in (".", ".."):
        return []
    files = [{"name": p.name, "size": p.stat().st_size} for p in sorted(folder.iterdir())
             if p.is_file() and not p.is_symlink()]
    return files[:_MAX_FILES]


def _file_response(path: Path) -> web.StreamResponse:
    kind = FILE_TYPES.get(path.suffix.lower())
    if kind is None:
        return web.FileResponse(path, headers={
            "Content-Type": "application/octet-stream",
            "Content-Disposition": "attachment"})
    response = web.FileResponse(path, headers={"Content-Type": f"{kind}; charset=utf-8"})
    if kind == "text/html":
        response.headers["Content-Security-Policy"] = REPORT_CSP
    return response


async def run_file(request: web.Request) -> web.StreamResponse:
    """``/run/<id>/files/<name>``: a file the run's folder lists, else a 404."""
    st = state_of(request)
    run_id = (await st.call(run_or_404, request.match_info["run_id"]))["id"]
    name = request.match_info["name"]
    listed = {f["name"] for f in run_files(st.store_path, run_id)}
    if name not in listed:
        raise PageError(404, "File not found", f"run {run_id} has no file {name!r}")
    return _file_response(_folder(st.store_path, run_id) / name)
