"""Reports from the store: ``report.md``, ``report.html`` (one self-contained file), ``results.jsonl``.

Reports read only the store: the metrics, headline and report data (sections,
recommendations, official exports) a run stored when it ended (see
:mod:`assay.store.described`). They never import a task's code and never write the
store, so a run of a deleted task file still reports. A run stopped half way has no
metrics yet: its report shows its samples and says the metrics come when it finishes
or is resumed. A run described without its task's code (an old run whose task file is
gone) reports its stored metrics with the first rate as its headline, without sections.

The HTML is rendered by Jinja2 with autoescaping on, so every dataset or model string is
escaped; charts are inline SVG.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_open, atomic_write_text
from assay.core.types import SampleResult
from assay.engine.failures import error_hint
from assay.metrics.format import fmt_rate
from assay.metrics.run import NOT_FINISHED_NOTE, stored_metrics
from assay.reports.values import fmt_value, model_facts, setting_text, settings_text
from assay.store.described import first_rate, run_headline, run_report
from assay.store.described import is_rate as is_rate
from assay.store.sqlite import Store

__all__ = ["fmt_value", "is_rate"]  # fmt_value: imported from here by the CLI and viewer

_TEMPLATES = Path(__file__).parent / "templates"


def headline(metrics: dict[str, Any], name: str | None = None
             ) -> tuple[str, dict[str, Any]] | None:
    """The benchmark's headline rate: ``name`` when given (``None`` if it is unset),
    else the first rate in the metrics."""
    if name is not None:
        value = metrics.get(name)
        return (name, value) if is_rate(value) and value.get("value") is not None else None
    return first_rate(metrics)


def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_line(run: dict[str, Any]) -> str:
    """Why a failed run failed, with a hint where the cause is a usual one (a base URL
    without ``/v1``, a missing key): ``This run failed: 3 of 3 samples failed; ...``."""
    error = str((run.get("stats") or {}).get("error") or "too many samples failed")[:300]
    hint = error_hint(error)
    return f"This run failed: {error}." + (f" Hint: {hint}." if hint else "")


def _verdict(r: SampleResult) -> str:
    if r.error is not None:
        return "error"
    v = r.score_value()
    if v is None:
        return "unscored"
    if v in (0.0, 1.0):
        return "correct" if v == 1.0 else "wrong"
    return f"{v:.2f}"


def _detail(r: SampleResult) -> str:
    """Why a sample was wrong (the primary score's explanation), empty otherwise."""
    if r.error is not None or not r.scores:
        return ""
    s = next(iter(r.scores.values()))
    return "" if s.get("value") == 1.0 else str(s.get("explanation") or "")


def _extraction(r: SampleResult) -> str:
    """How the answer was found in the output (when the scorer records it)."""
    if not r.scores:
        return ""
    meta = next(iter(r.scores.values())).get("metadata") or {}
    return str(meta.get("extraction") or "")


#: the most per-sample rows a report shows (the full list is in results.jsonl)
MAX_SAMPLE_ROWS = 1000


def shown_samples(results: list[SampleResult],
                  limit: int = MAX_SAMPLE_ROWS) -> list[SampleResult]:
    """The samples a report lists: all of them up to ``limit``; past it, errors and
    wrong answers first, then the rest, each group in dataset order."""
    if len(results) <= limit:
        return results
    rank = {"error": 0, "wrong": 1}
    order = sorted(range(len(results)), key=lambda i: rank.get(_verdict(results[i]), 2))
    keep = sorted(order[:limit])
    return [results[i] for i in keep]


def _with_texts(store: Store, run_id: str, results: list[SampleResult]) -> list[SampleResult]:
    """``results`` with their input, target and output, read back for these samples only."""
    if all(r.input is not None for r in results):
        return results
    return list(store.iter_results(run_id, transcripts=False,
                                   keys=[(r.sample_id, r.epoch) for r in results]))


def sample_rows(results: list[SampleResult]) -> list[dict[str, Any]]:
    """Per-sample table rows (question, target, prediction, verdict, error)."""
    rows = []
    for r in results:
        question = r.input
        if isinstance(question, list):  # message list: show the last user turn
            users = [m.get("content") for m in question if m.get("role") == "user"]
            question = users[-1] if users else question
        rows.append({
            "id": r.sample_id if r.epoch == 0 else f"{r.sample_id}#{r.epoch}",
            "question": _short(question),
            "target": _short(r.target, 120),
            "prediction": _short(r.prediction if r.prediction is not None else r.output, 160),
            "verdict": _verdict(r),
            "error": r.error or "",
            "detail": _detail(r),
            "extraction": _extraction(r),
        })
    return rows


def md_cell(value: Any) -> str:
    """A Markdown table cell: ``|`` escaped, newlines as spaces (the ``md`` filter)."""
    return str(value).replace("|", "\\|").replace("\n", " ")


def rows_markdown(rows: list[dict[str, Any]], extraction: bool) -> str:
    """The sample table's Markdown rows (the template's ``finalize`` escapes ``&<>``).

    Rendered here rather than in the template: a loop of a thousand rows costs several
    times more in Jinja than in Python.
    """
    lines = []
    for s in rows:
        shown = s["error"] if s["verdict"] == "error" else s["prediction"]
        line = (f"| {md_cell(s['id'])} | {md_cell(s['question'])} | {md_cell(s['target'])} | "
                f"{md_cell(shown)} | {s['verdict']} | {md_cell(s['detail'])} |")
        if extraction:
            line += f" {md_cell(s['extraction'])} |"
        lines.append(line)
    return "\n".join(lines)


def rows_html(rows: list[dict[str, Any]], extraction: bool) -> Any:
    """The sample table's HTML rows, every value escaped (as ``Markup`` for the template)."""
    from markupsafe import Markup, escape  # startup

    out = []
    for s in rows:
        if s["verdict"] == "error":
            shown = f'<span class="error">{escape(s["error"])}</span>'
        else:
            shown = escape(s["prediction"])
        verdict = escape(s["verdict"])
        line = (f'<tr><td>{escape(s["id"])}</td><td class="q">{escape(s["question"])}</td>'
                f'<td class="q">{escape(s["target"])}</td><td class="q">{shown}</td>'
                f'<td class="{verdict}">{verdict}</td><td>{escape(s["detail"])}</td>')
        if extraction:
            line += f'<td>{escape(s["extraction"])}</td>'
        out.append(line + "</tr>")
    return Markup("\n".join(out))


def build_context(store: Store, run_id: str, *, results: list[SampleResult] | None = None,
                  metrics: dict[str, Any] | None = None) -> dict[str, Any]:
    """Everything the templates need, read from the store (never from a task's code).

    ``results`` may be passed when the caller has just read them from the store; they
    may be lean (``Store.results(texts=False)``): the texts of the samples a report
    lists are read for those samples only. ``metrics`` is ignored: a report shows the
    metrics stored with the run (kept for callers that passed them).
    """
    del metrics
    run = store.get_run(run_id)
    if results is None:
        results = store.results(run["id"], transcripts=False, texts=False)
    stored = stored_metrics(run)
    metrics = stored or {}
    described = run_report(run)
    head = run_headline(run)
    if head is not None:
        headline_text = f"{head[0]} {fmt_rate(head[1])}"
    elif stored is None:
        headline_text = (f"no metrics: this run is {run['status']}; {NOT_FINISHED_NOTE}"
                         if run["status"] != "finished" else "no metrics stored")
    else:
        headline_text = "no scored samples"
    return {
        "run": run,
        # why a run failed (every sample errored, a crash): said under the headline
        "failure": failure_line(run) if run["status"] == "failed" else "",
        "results": results,
        "metrics": metrics,
        "metric_rows": metric_rows(metrics),
        "metric_notes": metric_notes(metrics, described),
        "model_rows": model_facts(run),
        "rates": [(k, v) for k, v in metrics.items() if is_rate(v) and v.get("value") is not None],
        "top_errors": metrics.get("top_errors") or [],
        "headline": head,
        "headline_text": headline_text,
        "samples": (rows := sample_rows(shown := _with_texts(
            store, run["id"], shown_samples(results)))),
        "samples_total": len(results),
        "samples_note": ("" if len(shown) == len(results) else
                         f"Showing {len(shown):,} of {len(results):,} samples: errors and "
                         "wrong answers first, then the rest in dataset order. Every sample "
                         "is in results.jsonl."),
        "show_extraction": (extraction := any(row["extraction"] for row in rows)),
        "sample_rows_md": rows_markdown(rows, extraction),
        "sample_rows_html": rows_html(rows, extraction),
        "sections": ([{"title": "About this report", "note": described["note"]}]
                     if described.get("note") else []) + list(described.get("sections") or []),
        "recommendations": described.get("recommendations") or [],
        "described": described,
        "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["created_at"])),
        "dataset_items": [(k, _short(settings_text(v), 200)) for k, v in run["dataset"].items()],
        "spec_items": [(k.replace("_", " "), _short(setting_text(k, v), 200))
                       for k, v in run["spec"].items()
                       if v not in (None, {}, []) and k not in _SHOWN_WITH_MODEL],
    }


#: run settings shown in the Model rows (:func:`model_facts`), not again under the settings
_SHOWN_WITH_MODEL = ("model", "base_url", "params", "base_url_has_secrets")


def _is_note(name: str, value: Any) -> bool:
    return isinstance(value, str) and name.endswith("_note")


def metric_rows(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """The metrics table: every scalar or rate, each formatted by its kind
    (:func:`fmt_value`); notes (``*_note`` texts) are shown apart (:func:`metric_notes`)."""
    return [(k, fmt_value(v, k)) for k, v in metrics.items()
            if not isinstance(v, list) and not (isinstance(v, dict) and not is_rate(v))
            and not _is_note(k, v)]


def metric_notes(metrics: dict[str, Any], described: dict[str, Any]) -> list[str]:
    """The metrics' notes, each once: a note a report section already says is left out."""
    said = " ".join([str(sec.get("note") or "") for sec in described.get("sections") or []]
                    + [str(c) for sec in described.get("sections") or []
                       for row in sec.get("rows") or [] for c in row])
    return list(dict.fromkeys(v for k, v in metrics.items()
                              if _is_note(k, v) and v not in said))


def md_escape(value: Any) -> Any:
    """Text made inert in Markdown: ``&``, ``<`` and ``>`` as entities.

    Markdown viewers render raw HTML, so a ``<script>`` or ``<img onerror>`` from a
    dataset or a model reply must not reach ``report.md`` as markup.
    """
    if not isinstance(value, str):
        return value
    return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def template_cache_dir() -> Path:
    """Where compiled report templates are kept: ``$XDG_CACHE_HOME/assay/templates``
    (``~/.cache/assay/templates``), shared by every workspace of this user."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "assay" / "templates"


def _env(markdown: bool = False) -> Any:
    """The template environment: HTML autoescaped; Markdown escaped by ``finalize``.

    Compiled templates are kept in :func:`template_cache_dir` (Jinja's bytecode cache,
    keyed by the template source's checksum and Python's bytecode version), which saves
    compiling them on every run; an unwritable cache folder only costs that time.
    """
    from jinja2 import (  # startup
        Environment,
        FileSystemBytecodeCache,
        FileSystemLoader,
        select_autoescape,
    )

    try:
        # one folder per flavour: ``finalize`` is compiled into the template code, so a
        # Markdown template's bytecode must never be loaded by the HTML environment
        cache_dir = template_cache_dir() / ("markdown" if markdown else "html")
        cache_dir.mkdir(parents=True, exist_ok=True)
        cache = FileSystemBytecodeCache(str(cache_dir))
    except (OSError, RuntimeError):  # RuntimeError: no home directory to find
        cache = None
    env = Environment(
        loader=FileSystemLoader(str(_TEMPLATES)),
        bytecode_cache=cache,
        autoescape=select_autoescape(["html", "j2.html"]),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=md_escape if markdown else None,
    )
    env.filters["md"] = lambda s: str(s).replace("|", "\\|").replace("\n", " ")
    return env


def write_results_jsonl(lines: Any, path: Path) -> None:
    """One JSON object per sample result, from :meth:`Store.iter_result_lines` (streamed)."""
    with atomic_open(path) as f:
        for line in lines:
            f.write(line + "\n")


def write_reports(store: Store, run_id: str, out_dir: Path | None = None, *,
                  results: list[SampleResult] | None = None,
                  metrics: dict[str, Any] | None = None) -> dict[str, Path]:
    """Write ``report.md``, ``report.html`` and ``results.jsonl``; returns their paths,
    with those of the official exports the run wrote when it ended (:func:`stored_exports`).

    ``results``: what the caller just read from the store (``metrics`` is ignored).
    """
    ctx = build_context(store, run_id, results=results, metrics=metrics)
    out = out_dir or store.runs_dir / ctx["run"]["id"]
    out.mkdir(parents=True, exist_ok=True)
    env, md_env = _env(), _env(markdown=True)
    paths = {
        "markdown": out / "report.md",
        "html": out / "report.html",
        "results": out / "results.jsonl",
    }
    atomic_write_text(paths["markdown"], md_env.get_template("report.md.j2").render(**ctx), encoding="utf-8")
    atomic_write_text(paths["html"], env.get_template("report.html").render(**ctx), encoding="utf-8")
    # the full results, transcripts included, streamed from the store
    write_results_jsonl(store.iter_result_lines(ctx["run"]["id"]), paths["results"])
    paths.update(stored_exports(store, ctx["run"], out))
    return paths


def stored_exports(store: Store, run: dict[str, Any], out: Path) -> dict[str, Path]:
    """The official exports the run wrote when it ended (its report data lists them, in
    its run folder), copied into ``out`` when that is another folder; an export whose
    file is gone is left out."""
    folder = store.runs_dir / run["id"]
    paths: dict[str, Path] = {}
    for name, rel in (run_report(run).get("exports") or {}).items():
        src = Path(rel) if Path(rel).is_absolute() else folder / rel
        if not src.is_file():
            continue
        dest = src if Path(rel).is_absolute() else out / rel
        if dest.resolve() != src.resolve():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest)
        paths[name] = dest
    return paths


def write_sections_report(out_dir: Path, *, title: str, subtitle: str = "",
                          facts: list[tuple[str, Any]] | None = None,
                          sections: list[dict[str, Any]] | None = None,
                          recommendations: list[str] | None = None,
                          stem: str = "report") -> dict[str, Path]:
    """A report made only of sections (used for reports that span several runs)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    env, md_env = _env(), _env(markdown=True)
    ctx = {"title": title, "subtitle": subtitle, "facts": facts or [],
           "sections": sections or [], "recommendations": recommendations or []}
    paths = {"markdown": out_dir / f"{stem}.md", "html": out_dir / f"{stem}.html"}
    atomic_write_text(paths["markdown"], md_env.get_template("sections_report.md.j2").render(**ctx),
                                 encoding="utf-8")
    atomic_write_text(paths["html"], env.get_template("sections_report.html").render(**ctx),
                             encoding="utf-8")
    return paths
