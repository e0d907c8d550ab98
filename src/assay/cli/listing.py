"""``assay list runs | tasks | models``: what the workspace and the installation hold."""

from __future__ import annotations

import difflib
import json
import textwrap
from typing import Any

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.cli.columns import columns, table_lines
from assay.core.paths import find_workspace, workspace_dir, workspace_note
from assay.errors import AssayError, ConfigError, DatasetError
from assay.models.registry import listing
from assay.pipelines.models import is_models_run
from assay.reports.models import models_label
from assay.reports.values import cost_cell
from assay.store.described import run_cost, run_headline
from assay.store.sqlite import Store
from assay.tasks.capabilities import CAPABILITIES, STANDINGS, Measure
from assay.tasks.gallery.entry import all_entries
from assay.tasks.gallery.source import cached
from assay.tasks.gallery.task import readiness_text
from assay.tasks.registry import available, declared_in, plannable_tasks, resolve

#: the run's id is its creation time (``20261126-113951-ea146c``), so no date column
_RUN_COLUMNS = ("run", "task / model", "status", "n", "err", "cost", "headline")


def _short_value(value: Any) -> str:
    if not isinstance(value, (int, float)):
        return str(value)
    return f"{value:.3f}" if abs(value) < 10 else f"{value:.4g}"


def _fit(text: str, width: int, *, middle: bool = True) -> str:
    """``text`` in ``width`` characters, cut to "…" when longer: in its middle, so both the
    start (the provider) and the end (the model's size, a version) stay, or at its end (a
    task's or metric's name reads from its start: ``choice_acc…``)."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    tail = (width - 1) // 2 if middle else 0
    return text[:width - 1 - tail] + "…" + (text[-tail:] if tail else "")


def _task_and_model(run: dict[str, Any], width: int) -> str:
    """The task and its model on one line of ``width`` (a multi-model run: its label)."""
    if run.get("label"):
        return _fit(run["label"], width)
    task, model = run["task"], str(run["model"].get("model"))
    if len(task) + 1 + len(model) <= width:
        return f"{task} {model}"
    task = _fit(task, max(width // 2, width - 1 - len(model)), middle=False)
    return f"{task} {_fit(model, width - 1 - len(task))}"


def _headline(run: dict[str, Any], width: int | None = None) -> str:
    """``metric value`` (the metric's name shortened to fit ``width``, never the value)."""
    head = run.get("headline_entry")
    if not head:
        return "-"
    value = _short_value(head[1].get("value"))
    name = head[0] if width is None else _fit(head[0], max(width - 1 - len(value), 1),
                                              middle=False)
    return f"{name} {value}"


def _run_json(run: dict[str, Any]) -> dict[str, Any]:
    head = run.get("headline_entry")  # as stored when it ended (None: none, or a parent)
    return {"id": run["id"], "task": run["task"], "model": run["model"].get("model"),
            "status": run["status"], "samples": run["samples"], "errors": run["errors"],
            "resumable": bool(run["resumable"]), "created_at": run["created_at"],
            "parent": run.get("parent_id"), "kind": run["kind"],
            "headline": None if head is None else {
                "metric": head[0], **{k: head[1].get(k) for k in ("value", "ci_low", "ci_high")}},
            "error": (run["stats"] or {}).get("error") if run["status"] == "failed" else None,
            "cost_usd": (run_cost(run) or {}).get("usd"),  # null: a price unknown, or not kept
            **({"models": run["models"]} if run.get("models") else {})}


def _no_store(as_json: bool, as_jsonl: bool) -> None:
    """What ``list runs`` says where there is no store: one line (``[]`` for ``--json``)."""
    path, how = find_workspace()
    if as_json or as_jsonl:
        if as_json:
            click.echo("[]")
        return
    where = (f"$ASSAY_HOME ({path}) holds no assay.db" if how == "env" else
             "no workspace here or above (runs go to ./assay-runs, or set ASSAY_HOME)")
    click.echo(f"no runs yet: {where}")


@click.command("runs")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Only the newest N runs (default: every run).")
@click.option("--json", "as_json", is_flag=True, help="The runs as one JSON array, for scripts.")
@click.option("--jsonl", "as_jsonl", is_flag=True, help="One JSON object per run and line.")
def list_runs(limit: int | None, as_json: bool, as_jsonl: bool) -> None:
    """Every run in the workspace store, newest first.

    The workspace is $ASSAY_HOME, else the nearest assay-runs/ holding assay.db in this
    folder or one above it, else ./assay-runs; nothing is created."""
    if as_json and as_jsonl:
        raise ConfigError("give --json (one array) or --jsonl (one object per line), not both")
    path = workspace_dir() / "assay.db"
    if not path.is_file():
        _no_store(as_json, as_jsonl)
        return
    note = workspace_note()
    store = Store(path, readonly=True)
    try:
        runs = store.list_runs(limit or -1)  # SQLite's LIMIT -1: no limit
        total = store.count_runs() if limit else len(runs)
        sessions = store.list_plan_sessions(-1)
        for r in runs:  # the headline stored when each run ended
            record = store.get_run(r["id"])
            r["headline_entry"] = run_headline(record) if r["kind"] == "task" else None
            if is_models_run(r):  # the task it ran on several models
                r["models"] = [str(m) for m in record["model"].get("models") or []]
                r["label"] = models_label(record)
    finally:
        store.close()
    shown = (f"showing {len(runs)} of {total} runs (--limit {limit}; without it, "
             "every run)" if len(runs) < total else None)
    if as_json or as_jsonl:
        for line in (note, shown):  # on stderr: the output stays one JSON document
            if line:
                click.echo(line, err=True)
        if as_json:
            click.echo(json.dumps([_run_json(r) for r in runs], indent=1))
        else:
            for r in runs:
                click.echo(json.dumps(_run_json(r)))
        return
    if note:
        click.echo(note)
    if runs:
        console = Console(highlight=False)
        table = _runs_table(runs, console.width)
        # a terminal too narrow even for the ids and counts wraps the rows; nothing is cut
        console.width = max(console.width, sum(c.width or 0 for c in table.columns)
                            + 2 * (len(table.columns) - 1))
        with console.capture() as shown_table:
            console.print(table)
        for line in shown_table.get().splitlines():  # no padding after the last column
            click.echo(line.rstrip())
    else:
        click.echo(f"no runs yet in {path.parent}")
    if shown:
        click.echo(shown)
    _resume_hints(runs)
    paused = [s for s in sessions if s["status"] != "finished"]
    for s in paused:
        click.echo(f"planning session {s['id']} ({s['status']}): {s['request'][:60]}")
    if paused:
        click.echo("continue a planning session with: assay plan --resume <session>")


def _runs_table(runs: list[dict[str, Any]], width: int) -> Table:
    """The runs as a table, one line per run in ``width`` columns: the run's id, status,
    counts and cost whole; the task, model and headline metric shortened with "…" where
    needed."""
    fixed = {name: max([len(name), *(len(cell(r)) for r in runs)]) for name, cell in (
        ("run", lambda r: r["id"]), ("status", lambda r: r["status"]),
        ("n", lambda r: str(r["samples"])), ("err", lambda r: str(r["errors"])),
        ("cost", cost_cell))}
    room = width - sum(fixed.values()) - 2 * (len(_RUN_COLUMNS) - 1)  # two spaces between
    task_full = max([len("task / model"), *(len(_task_and_model(r, 1 << 16)) for r in runs)])
    head_full = max([len("headline"), *(len(_headline(r)) for r in runs)])
    # the headline keeps at least half the room; the task and model take the rest
    head_w = max(min(head_full, max(room - task_full, room // 2)), 8)
    task_w = max(min(task_full, room - head_w), 8)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for name in _RUN_COLUMNS:
        table.add_column(name, no_wrap=True, overflow="ellipsis",
                         justify="right" if name in ("n", "err") else "left",
                         width=fixed.get(name) or (task_w if name == "task / model" else head_w))
    for r in runs:
        parent = r["kind"] != "task"
        table.add_row(
            r["id"], _task_and_model(r, task_w),
            Text(r["status"], style=_STATUS_STYLE.get(r["status"], "")),
            "-" if parent else str(r["samples"]), "-" if parent else str(r["errors"]),
            cost_cell(r), _headline(r, head_w))
    return table


#: how a status is shown on a terminal (nothing on a pipe: rich drops colour there)
_STATUS_STYLE = {"failed": "red", "interrupted": "yellow", "running": "cyan", "finished": "green"}


def _resume_hints(runs: list[dict[str, Any]]) -> None:
    """One line per kind of resumable run: the command that resumes it."""
    resumable = [r for r in runs if r["resumable"]]
    if any(r["kind"] == "task" for r in resumable):
        click.echo("resume a run that failed, stopped or has errors: "
                   "assay run <task> --resume <run>")
    if any(r["kind"] == "plan" for r in resumable):
        click.echo("resume a plan run with: assay run <plan.yaml> --resume <run>")
    if any(is_models_run(r) for r in resumable):
        click.echo("resume a multi-model run with: assay run <task> --resume <run>")
    if any(r["kind"] == "pipeline" and not is_models_run(r) for r in resumable):
        click.echo("resume a pipeline with: assay datagen pipeline --resume <run>")


@click.command("tasks")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--category", default=None, help="Only gallery entries of this category.")
@click.option("--capability", default=None,
              help="The tasks that measure this capability, the field's standard ones first.")
@click.option("--json", "as_json", is_flag=True, help="Print the gallery entries as JSON.")
def list_tasks(files: tuple[str, ...], category: str | None, capability: str | None,
               as_json: bool) -> None:
    """Tasks that can be run by name, and the gallery's entries.

    Each task with its source (built-in, plugin or gallery), then the gallery's entries
    with category, size, data source, readiness and whether their data is cached; with
    FILES, the tasks those .py or .yaml files declare."""
    if capability is not None:
        _list_capability(capability, as_json)
        return
    rows: list[tuple[str, str, str]] = []
    if files:
        for f in files:
            if f.endswith((".yaml", ".yml")):
                ref = resolve(f)
                rows.append((ref.ref, f"file {f}", ref.description))
                continue
            for name in declared_in(f):
                ref = resolve(f"{f}@{name}")
                rows.append((f"{f}@{name}", "file", ref.description))
    else:
        entries = all_entries()
        if as_json or category:
            _list_gallery(entries, category, as_json)
            return
        for name, source in available().items():
            if source == "gallery":
                continue
            try:
                ref = resolve(name)
                description = ref.description + _declared(ref.info)
            except AssayError as e:
                description = f"(cannot load: {e})"
            rows.append((name, source, description))
    width = max((len(r[0]) for r in rows), default=4)
    source_w = max((len(r[1]) for r in rows), default=0)
    indent = " " * (width + source_w + 4)
    for name, source, description in rows:  # the description wraps under itself
        click.echo(textwrap.fill(description, columns(), initial_indent=indent,
                                 subsequent_indent=indent).replace(
            indent, f"{name:{width}s}  {source:{source_w}s}  ", 1))
    if not files:
        click.echo("")
        _list_gallery(all_entries(), None, False)


def _declared(info: Any) -> str:
    """What a task declares, in brackets: category, agent, roles, data to pull."""
    parts = [info.category] if info.category else []
    if info.agent and info.category != "agent":
        parts.append("agent")
    if info.roles:
        parts.append("roles: " + ", ".join(info.roles))
    if info.data:
        parts.append("data: assay data pull " + " / ".join(s.name for s in info.data))
    return f" [{'; '.join(parts)}]" if parts else ""


def measured_by(capability: str) -> list[tuple[str, Measure, str]]:
    """``(task, its measure, readiness)`` of every task measuring ``capability``, by standing."""
    found = [(e.name, m, e.readiness.status) for e in all_entries().values()
             for m in e.measures if m.capability == capability]
    found += [(n, m, "ready") for n, listed in plannable_tasks().items()
              for m in listed.info.measures if m.capability == capability]
    return sorted(found, key=lambda x: (STANDINGS.index(x[1].standing), x[0]))


def _list_capability(capability: str, as_json: bool) -> None:
    if capability not in CAPABILITIES:
        close = difflib.get_close_matches(capability, list(CAPABILITIES), n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ConfigError(f"unknown capability {capability!r}{hint}; capabilities: "
                          f"{', '.join(CAPABILITIES)}")
    found = measured_by(capability)
    if as_json:
        click.echo(json.dumps([{"name": n, "standing": m.standing, "why": m.why,
                                "status": status} for n, m, status in found], indent=1))
        return
    click.echo(f"{capability}: {CAPABILITIES[capability].describe}")
    if not found:
        click.echo("no task measures it yet; add one as a task file (assay run FILE.yaml)")
        return
    width = max(len(n) for n, _, _ in found)
    for name, m, status in found:
        note = "" if status == "ready" else f" ({status}: not runnable yet)"
        click.echo(f"  {name:{width}s}  {m.standing:10s} {m.why}{note}")


def _cached_state(entry: Any) -> bool | str:
    """Whether an entry's data is cached (``"changed"``: no longer as pulled)."""
    try:
        return cached(entry) is not None
    except DatasetError:
        return "changed"


def _list_gallery(entries: dict[str, Any], category: str | None, as_json: bool) -> None:
    """The gallery's entries: name, category, size, source, readiness, cached."""
    chosen = [e for e in entries.values() if category in (None, e.category)]
    if category and not chosen:
        cats = sorted({e.category for e in entries.values()})
        raise ConfigError(f"no gallery entry has category {category!r}; categories: "
                          f"{', '.join(cats)}")
    items = [{"name": e.name, "aliases": e.aliases, "category": e.category,
              "size": e.size, "eval_type": e.eval_type,
              "source": e.source.describe() if e.source else f"task {e.task}",
              "readiness": readiness_text(e), "status": e.readiness.status,
              "cached": _cached_state(e) if e.source else None,
              "primary_metric": e.metrics.primary, "tags": e.tags,
              "measures": [m.model_dump() for m in e.measures],
              "description": e.description} for e in chosen]
    if as_json:
        click.echo(json.dumps(items, indent=1))
        return
    click.echo(textwrap.fill(f"gallery ({len(items)} entries; run one with: assay run NAME "
                             "--model M; fetch its data with: assay data pull NAME)", columns()))
    head = ("name", "category", "size", "source", "checks", "cached")
    table = [head] + [(e.name, e.category, str(e.size or "?"), _source(e), _checks(e),
                       {True: "yes", False: "no", None: "-"}.get(i["cached"], str(i["cached"])))
                      for e, i in zip(chosen, items, strict=True)]
    for line in table_lines(table, give=(1, 3)):
        click.echo(line)
    click.echo(textwrap.fill("checks: how many of a smoke test, golden answers and real data it passed; "
                             "an entry in full: assay run NAME --help", columns()))


def _source(entry: Any) -> str:
    """Where an entry's data comes from, short: the package, the dataset or the task."""
    src = entry.source
    if src is None:
        return f"task {entry.task}"
    return src.wheel.package if src.wheel else src.hf.id if src.hf else "file"


def _checks(entry: Any) -> str:
    r = entry.readiness
    if r.status == "planned":
        return "planned"
    return f"{sum((r.smoke_tested, r.golden_checked, r.real_data_checked))} of 3"


@click.command("models")
def list_models() -> None:
    """Model providers and how to name them.

    Every assay.models entry point, plugins included."""
    forms = listing()
    width = max((len(form) for form, _ in forms), default=0)
    for form, what in forms:
        click.echo(f"{form:{width}s}  {what}")
