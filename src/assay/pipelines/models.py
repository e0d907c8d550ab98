"""One task on several models: ``assay run TASK --model A --model B``.

The run is a parent run of kind ``pipeline`` (task name :data:`NAME`; its spec's task
options hold the task, the models and the task's options; its engine settings are the
ones every child inherits) driven by the one parent-run driver
(:mod:`assay.pipelines.parent`): one child run of the task per model, in the order the
models were given. A model whose run fails (its endpoint unreachable, every sample
errored) is recorded and the others still run; the parent then ends ``failed``.
``--resume PARENT`` keeps the finished children, continues an interrupted one with the
engine's resume and runs the rest.

When the children have run, the comparison is stored as the parent's metrics: each
model's headline with its interval, and for each pair of models the paired test on the
samples both scored (:func:`assay.compare.compare_runs`; Holm-adjusted p-values across the
pairs). ``report.md`` in the parent's run folder shows it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.api import make_spec
from assay.compare import compare_runs
from assay.compare.paired import holm
from assay.compare.render import fmt_delta, fmt_p
from assay.core.atomic import atomic_write_text
from assay.engine.runner import RunSpec
from assay.errors import ConfigError
from assay.metrics.format import fmt_rate
from assay.pipelines.parent import ALL_ENGINE_FIELDS, ParentRun, StepFailed, engine_settings
from assay.reports.render import md_escape
from assay.store.described import run_headline
from assay.store.sqlite import Store
from assay.tasks.registry import resolve

__all__ = ["NAME", "ModelsResult", "comparison", "comparison_lines", "is_models_run",
           "resume_models", "start_models", "write_models_report"]

#: the task name of a multi-model parent run (its kind is ``pipeline``)
NAME = "multi_model"
#: the paired-test fields kept for each pair of models
_TEST_FIELDS = ("n", "delta", "ci_low", "ci_high", "p_value", "test", "significant",
                "verdict")


@dataclass
class ModelsResult:
    """What a multi-model run did: the parent, each model's child run, the comparison."""

    run_id: str
    task: str
    #: model -> its child run id (``None``: it did not run)
    children: dict[str, str | None]
    #: model -> why its run failed
    failures: dict[str, str] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    reports: dict[str, Path] = field(default_factory=dict)


def is_models_run(record: dict[str, Any]) -> bool:
    """Whether a stored run is a multi-model parent run."""
    return record.get("kind") == "pipeline" and record.get("task") == NAME


def start_models(store: Store, task: str, models: list[str], *,
                 task_options: dict[str, Any], engine: dict[str, Any], quiet: bool = True,
                 echo: Callable[[str], Any] | None = None,
                 on_created: Callable[[str], Any] | None = None) -> ModelsResult:
    """Run ``task`` once per model in ``models`` as child runs of a new parent run.

    ``task_options`` and ``engine`` are those of ``assay run`` (see :func:`make_spec`);
    they are checked before anything is stored. ``on_created`` is called with the
    parent's id once it is in the store.
    """
    repeated = sorted({m for m in models if models.count(m) > 1})
    if repeated:
        raise ConfigError(f"--model {repeated[0]} is given more than once; give each model once")
    if len(models) < 2:
        raise ConfigError("a multi-model run needs two models or more (--model A --model B)")
    # the task's options checked, and its files made absolute (a resume from another folder)
    checked = make_spec(task, models[0], task_options=task_options, engine=engine)
    settings = engine_settings(checked, ALL_ENGINE_FIELDS)
    spec = RunSpec(task=NAME, model=models[0],
                   task_options={"task": checked.task, "models": list(models),
                                 "options": checked.task_options}, **settings)
    parent = ParentRun.create(store, spec, kind="pipeline",
                              model={"model": ", ".join(models), "models": list(models)},
                              dataset={"task": checked.task}, quiet=quiet,
                              on_created=on_created)
    return _drive(parent, echo)


def resume_models(store: Store, run_id: str, *, task: str | None = None,
                  overrides: dict[str, Any] | None = None, quiet: bool = True,
                  echo: Callable[[str], Any] | None = None) -> ModelsResult:
    """Continue the multi-model run ``run_id``: finished children are kept, an
    interrupted one resumed, the rest run. ``task``: the task the user named (refused
    when it is not the run's). ``overrides``: settings that may change on resume."""
    record = store.get_run(run_id)
    stored_task = record["spec"]["task_options"]["task"]
    if task is not None and task != stored_task:
        raise ConfigError(f"run {record['id']} runs {stored_task} on several models; resume it "
                          f"with assay run {stored_task} --resume {record['id']}")
    parent = ParentRun.reopen(store, record["id"], kind="pipeline", what="multi-model run",
                              overrides=overrides, quiet=quiet)
    return _drive(parent, echo)


def _drive(parent: ParentRun, echo: Callable[[str], Any] | None) -> ModelsResult:
    """Run every model's child (the parent-run driver records each step)."""
    opts = parent.spec.task_options
    task, models, options = opts["task"], list(opts["models"]), dict(opts["options"])
    settings = engine_settings(parent.spec, ALL_ENGINE_FIELDS)
    name = resolve(task).name  # the task name its child runs are stored under
    children: dict[str, str | None] = dict.fromkeys(models)
    failures: dict[str, str] = {}

    def body(run: ParentRun) -> dict[str, Any]:
        for i, model in enumerate(models):
            try:
                children[model] = run.step(f"model{i + 1}", task, model, options,
                                           engine=settings, names=(name,), echo=echo,
                                           label=model)
            except StepFailed as e:
                failures[model] = str(e)
                children[model] = _recorded_run(run, f"model{i + 1}")
        return comparison(run.store, task, children)

    summary = parent.drive(body)
    for model, child in children.items():
        if child is not None and model not in failures:
            record = parent.store.get_run(child)
            if record["status"] == "failed":
                failures[model] = str(record["stats"].get("error") or "the run failed")
    result = ModelsResult(parent.id, task, children, failures, summary)
    result.reports = write_models_report(parent.store, parent.id)
    return result


def _recorded_run(parent: ParentRun, key: str) -> str | None:
    entry = next((s for s in parent.steps if s["key"] == key), None)
    return entry["run"] if entry else None


def comparison(store: Store, task: str, children: dict[str, str | None]) -> dict[str, Any]:
    """The comparison of a multi-model run's children, JSON-ready: each model's headline
    (``rows``) and the paired test of each pair on the samples both scored (``pairs``:
    B against A, A the model given first; ``p_holm`` adjusted across the pairs)."""
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


def _test_line(pair: dict[str, Any]) -> str:
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
        lines.extend("  " + _test_line(p) for p in pairs)
    elif len(rows) > 1:
        lines.append("no pair to test: fewer than two models have a headline")
    return lines


def write_models_report(store: Store, run_id: str, out: Path | None = None) -> dict[str, Path]:
    """``report.md`` of a multi-model run (its comparison, from the store) in ``out``
    (default: the parent's run folder); returns ``{"markdown": path}``."""
    record = store.get_run(run_id)
    summary = record.get("metrics") or {}
    if "rows" not in summary:  # stopped before the comparison was stored
        opts = record["spec"]["task_options"]
        runs = {s["key"]: s.get("run") for s in record["steps"]}
        children = {m: runs.get(f"model{i + 1}") for i, m in enumerate(opts["models"])}
        summary = comparison(store, opts["task"], children)
    lines = [f"# {md_escape(summary.get('task'))} on {len(summary['rows'])} models",
             "", f"Run {record['id']} ({record['status']}): one child run per model.", "",
             "| model | run | status | headline (95% interval) |", "|---|---|---|---|"]
    for r in summary["rows"]:
        shown = (f"{r['metric']} {fmt_rate(r['headline'])}" if r.get("headline") else "n/a")
        lines.append(f"| {_cell(r['model'])} | {r.get('run') or '-'} | {r['status']} | "
                     f"{_cell(shown)} |")
    if summary.get("pairs"):
        lines += ["", "## Paired tests on shared samples", ""]
        lines += [f"- {_cell(_test_line(p))}" for p in summary["pairs"]]
    folder = out or store.runs_dir / record["id"]
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "report.md"
    atomic_write_text(path, "\n".join(lines) + "\n")
    return {"markdown": path}


def _cell(text: Any) -> str:
    return str(md_escape(str(text))).replace("|", "\\|").replace("\n", " ")
