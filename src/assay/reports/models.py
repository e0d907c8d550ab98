"""The report of a multi-model run (:mod:`assay.pipelines.models`): its stored comparison."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from assay.compare import compare_runs
from assay.compare.paired import holm
from assay.errors import ConfigError
from assay.metrics.format import fmt_rate
from assay.reports.pages import fmt_delta, fmt_p, write_pages
from assay.store.described import run_headline
from assay.store.sqlite import Store

__all__ = ["NAME", "child_label", "comparison", "comparison_lines", "is_models_run",
           "models_label", "test_line", "write_models_report"]

#: the task name of a multi-model parent run (its kind is ``pipeline``)
NAME = "multi_model"


_TEST_FIELDS = ("n", "delta", "ci_low", "ci_high", "p_value", "test", "significant",
                "verdict")


def is_models_run(record: dict[str, Any]) -> bool:
    return record.get("kind") == "pipeline" and record.get("task") == NAME


def _models(run: dict[str, Any]) -> list[str]:
    model = run.get("model") if isinstance(run.get("model"), dict) else {}
    return [str(m) for m in model.get("models") or []]


def models_label(run: dict[str, Any]) -> str | None:
    """``arc_easy on 2 models``: what a multi-model parent (a run record, or a row of the
    runs list, which has no ``kind``) is called everywhere; ``None`` for any other run."""
    if run.get("task") != NAME or run.get("kind", "pipeline") != "pipeline":
        return None
    dataset = run.get("dataset") if isinstance(run.get("dataset"), dict) else {}
    return f"{dataset.get('task') or 'a task'} on {len(_models(run))} models"


def child_label(parent: dict[str, Any], child: dict[str, Any]) -> str | None:
    """``model 1 of 2: openai/a``: which of a multi-model parent's models ``child`` ran;
    ``None`` when ``parent`` is not one (a plan's step is a step)."""
    if models_label(parent) is None:
        return None
    models = _models(parent)
    model = child.get("model") if isinstance(child.get("model"), dict) else {}
    name = str(model.get("model") or "")
    if name not in models:  # not a model the parent names (a store edited by hand)
        return f"one of {len(models)} models"
    return f"model {models.index(name) + 1} of {len(models)}: {name}"


def comparison(store: Store, task: str, children: dict[str, str | None]) -> dict[str, Any]:
    """Each child's headline (``rows``) and each pair's paired test on the samples both
    scored (``pairs``: B against A, A given first; ``p_holm`` adjusted across pairs)."""
    rows: list[dict[str, Any]] = []
    for model, child in children.items():
        if child is None:
            rows.append({"model": model, "run": None, "status": "not run"})
            continue
        record = store.get_run(child)
        head = run_headline(record)
        rows.append({"model": model, "run": record["id"], "status": record["status"],
                     "metric": head[0] if head else None, "headline": head[1] if head else None,
                     "errors": record["stats"].get("errors"),
                     "samples": record["stats"].get("samples")})
    scored = [r for r in rows if r.get("headline")]
    pairs: list[dict[str, Any]] = []
    for a, b in itertools.combinations(scored, 2):
        pair: dict[str, Any] = {"model_a": a["model"], "model_b": b["model"],
                                "run_a": a["run"], "run_b": b["run"]}
        try:
            compared = compare_runs(store, a["run"], b["run"])
        except ConfigError as e:
            pair["error"] = str(e)
        else:
            pair.update({"score": compared["score"], "kind": compared["kind"],
                         "shared": compared["shared"], "excluded": compared["excluded"],
                         "mean_a": compared["primary"].get("a"),
                         "mean_b": compared["primary"].get("b"),
                         **{k: compared["primary"].get(k) for k in _TEST_FIELDS}})
        pairs.append(pair)
    tested = [p for p in pairs if p.get("p_value") is not None]
    for pair, adjusted in zip(tested, holm([p["p_value"] for p in tested]), strict=True):
        pair["p_holm"] = adjusted
    return {"task": task, "rows": rows, "pairs": pairs}


def test_line(pair: dict[str, Any]) -> str:
    """``openai/b vs openai/a: -0.250 [...] p=0.5000 (mcnemar_exact, n=4): verdict``."""
    head = f"{pair['model_b']} vs {pair['model_a']}: "
    if pair.get("error"):
        return head + f"not compared: {pair['error']}"
    holm_p = f", Holm {fmt_p(pair['p_holm'])}" if pair.get("p_holm") not in (
        None, pair.get("p_value")) else ""
    return (head + f"{fmt_delta(pair, pair.get('kind') or 'binary')} p={fmt_p(pair['p_value'])}"
            f"{holm_p} ({pair.get('test')}, n={pair.get('n')}): {pair.get('verdict')}")


def comparison_lines(summary: dict[str, Any]) -> list[str]:
    """The comparison as terminal lines: a table of headlines, then the paired tests."""
    rows = summary.get("rows") or []
    width = max([len("model"), *(len(r["model"]) for r in rows)])
    metric = next((r["metric"] for r in rows if r.get("metric")), "headline")
    lines = [f"{'model':{width}}  {'run':22}  {metric} (95% interval)"]
    for r in rows:
        shown = fmt_rate(r["headline"]) if r.get("headline") else r["status"]
        if r.get("metric") and r["metric"] != metric:
            shown = f"{r['metric']} {shown}"
        lines.append(f"{r['model']:{width}}  {r.get('run') or '-':22}  {shown}")
    pairs = summary.get("pairs") or []
    if pairs:
        lines.append("paired tests on the samples both scored (second model minus first):")
        lines.extend("  " + test_line(p) for p in pairs)
    elif len(rows) > 1:
        lines.append("no pair to test: fewer than two models have a headline")
    return lines


def write_models_report(store: Store, run_id: str, out: Path | None = None) -> dict[str, Path]:
    """``report.md`` and ``report.html`` in ``out`` (default: the parent's run folder)."""
    record = store.get_run(run_id)
    summary = record.get("metrics") or {}
    if "rows" not in summary:  # stopped before the comparison was stored
        opts = record["spec"]["task_options"]
        runs = {s["key"]: s.get("run") for s in record["steps"]}
        children = {m: runs.get(f"model{i + 1}") for i, m in enumerate(opts["models"])}
        summary = comparison(store, opts["task"], children)
    tests = [test_line(p) for p in summary.get("pairs") or []]
    return write_pages(out or store.runs_dir / record["id"], "models",
                       {"record": record, "summary": summary, "tests": tests,
                        "label": models_label(record)}, stem="report")
