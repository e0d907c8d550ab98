"""``report.md``, ``report.html`` (self-contained) and ``results.jsonl`` of a stored run.

Reads only what the run stored when it ended (:mod:`assay.store.described`), never a task's
code, so a run of a deleted task file still reports; an unfinished run shows its samples."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

from assay.core.atomic import atomic_open
from assay.core.failures import error_hint
from assay.core.types import SampleResult
from assay.metrics.format import fmt_rate
from assay.metrics.run import NOT_FINISHED_NOTE, stored_metrics
from assay.reports.pages import md_cell, write_pages
from assay.reports.values import (
    cost_rows,
    fmt_value,
    model_facts,
    rescored_from,
    setting_text,
    settings_text,
)
from assay.scoring import target_letters
from assay.store.described import is_rate as is_rate
from assay.store.described import run_headline, run_report
from assay.store.sqlite import Store

__all__ = ["fmt_value", "is_rate"]  # fmt_value: imported from here by the CLI and viewer

def _short(value: Any, limit: int = 300) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def failure_line(run: dict[str, Any]) -> str:
    """``This run failed: ...``, with a hint for a usual cause (a base URL without /v1)."""
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
    """All up to ``limit``; past it, errors and wrong answers first (in dataset order)."""
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


def shown_target(target: Any, metadata: dict[str, Any] | None) -> str:
    """A sample's target as its answer is shown: a multiple-choice one as the letter the
    prompt asks for (``A``, never the index ``0`` beside the model's ``A``)."""
    choices = (metadata or {}).get("choices")
    letters = target_letters(target, choices)
    return letters or ("" if target is None else _short(target, 120))


def sample_rows(results: list[SampleResult]) -> list[dict[str, Any]]:
    """Per-sample table rows (question, target, answer, verdict, error): the answer is the
    one extracted from the output; where none was, the start of the output, said so."""
    rows = []
    for r in results:
        question = r.input
        if isinstance(question, list):  # message list: show the last user turn
            users = [m.get("content") for m in question if m.get("role") == "user"]
            question = users[-1] if users else question
        rows.append({
            "id": r.sample_id if r.epoch == 0 else f"{r.sample_id}#{r.epoch}",
            "question": _short(question), "target": shown_target(r.target, r.metadata),
            "answer": "" if r.prediction is None else _short(r.prediction, 160),
            "output": "" if r.prediction is not None else _short(r.output or "", 160),
            "verdict": _verdict(r), "error": r.error or "", "detail": _detail(r),
            "extraction": _extraction(r)})
    return rows


def rows_markdown(rows: list[dict[str, Any]], extraction: bool) -> str:
    """The sample table's Markdown rows (built here: a 1000-row loop is far slower in Jinja)."""
    lines = []
    for s in rows:
        shown = (s["error"] if s["verdict"] == "error" else
                 s["answer"] or (f"(no answer) output: {s['output']}" if s["output"] else ""))
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
        elif s["output"]:
            shown = f'<span class="muted">(no answer) output:</span> {escape(s["output"])}'
        else:
            shown = escape(s["answer"])
        verdict = escape(s["verdict"])
        line = (f'<tr><td>{escape(s["id"])}</td><td class="q">{escape(s["question"])}</td>'
                f'<td class="q">{escape(s["target"])}</td><td class="q">{shown}</td>'
                f'<td class="{verdict}">{verdict}</td><td>{escape(s["detail"])}</td>')
        if extraction:
            line += f'<td>{escape(s["extraction"])}</td>'
        out.append(line + "</tr>")
    return Markup("\n".join(out))


def build_context(store: Store, run_id: str) -> dict[str, Any]:
    """The templates' context, from the store; texts are read for the listed samples only."""
    run = store.get_run(run_id)
    # texts only for the shown samples: all of them, read at once, up to the limit
    whole = store.sample_totals(run["id"])["samples"] <= MAX_SAMPLE_ROWS
    results = store.results(run["id"], transcripts=False, texts=whole)
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
        # a re-scoring (assay score): (the original run, what re-scored it), said at the top
        "rescored": rescored_from(run),
        "results": results, "metrics": metrics, "metric_rows": metric_rows(metrics),
        "metric_notes": metric_notes(metrics, described), "model_rows": model_facts(run),
        "cost_rows": cost_rows(run),  # what its calls cost, why a limit stopped it
        # (name, rate, the top of its scale): a proportion's 1, else the run's own scale
        # (MT-Bench's 1-10), so a bar is drawn on the scale its table shows; a figure off
        # every scale (a perplexity) has no bar
        "rates": [(k, v, top) for k, v in metrics.items()
                  if is_rate(v) and v.get("value") is not None
                  and 0 <= v["value"] and max(v["value"], v.get("ci_high") or 0) <= (
                      top := 1.0 if "successes" in v else _scale_top(metrics))],
        "top_errors": metrics.get("top_errors") or [],
        "headline": head, "headline_text": headline_text,
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
        "recommendations": described.get("recommendations") or [], "described": described,
        "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(run["created_at"])),
        "dataset_items": [(k, _short(settings_text(v), 200)) for k, v in run["dataset"].items()],
        "spec_items": [(k.replace("_", " "), _short(setting_text(k, v), 200))
                       for k, v in run["spec"].items()
                       if v not in (None, {}, []) and k not in _SHOWN_WITH_MODEL]}


#: run settings shown in the Model rows (:func:`model_facts`), not again under the settings
_SHOWN_WITH_MODEL = ("model", "base_url", "params", "base_url_has_secrets")


def _scale_top(metrics: dict[str, Any]) -> float:
    """The top of the scale a run's means are on (``metrics["scale"]``, e.g. ``[1, 10]``)."""
    scale = metrics.get("scale")
    ok = isinstance(scale, list) and len(scale) == 2 and isinstance(scale[1], (int, float))
    return float(scale[1]) if ok and scale[1] > 0 else 1.0


def _is_note(name: str, value: Any) -> bool:
    return isinstance(value, str) and name.endswith("_note")


def metric_rows(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """Every scalar or rate, formatted by its kind; ``*_note`` texts go to metric_notes."""
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


def write_results_jsonl(lines: Any, path: Path) -> None:
    """One JSON object per sample result, streamed."""
    with atomic_open(path) as f:
        for line in lines:
            f.write(line + "\n")


def write_reports(store: Store, run_id: str, out_dir: Path | None = None) -> dict[str, Path]:
    """``report.md``, ``report.html``, ``results.jsonl`` and the stored exports; their paths."""
    ctx = build_context(store, run_id)
    out = out_dir or store.runs_dir / ctx["run"]["id"]
    paths = write_pages(out, "report", ctx)
    # the full results, transcripts included, streamed from the store
    paths["results"] = out / "results.jsonl"
    write_results_jsonl(store.iter_result_lines(ctx["run"]["id"]), paths["results"])
    paths.update(stored_exports(store, ctx["run"], out))
    return paths


def stored_exports(store: Store, run: dict[str, Any], out: Path) -> dict[str, Path]:
    """The run's stored exports, copied into ``out`` if another folder (a gone file left out)."""
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
