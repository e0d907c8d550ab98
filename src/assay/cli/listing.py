"""``assay list runs | tasks | models``: what the workspace and the installation hold."""

from __future__ import annotations

import json
import time
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from assay.errors import AssayError, ConfigError
from assay.models.registry import listing
from assay.store.sqlite import Store
from assay.tasks.gallery.entry import all_entries
from assay.tasks.gallery.source import cached
from assay.tasks.gallery.task import readiness_text
from assay.tasks.registry import available, declared_in, resolve


@click.command("runs")
@click.option("--limit", type=int, default=20, show_default=True, help="How many runs.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line, for scripts.")
def list_runs(limit: int, as_json: bool) -> None:
    """Recent runs in the workspace store."""
    store = Store()
    try:
        runs = store.list_runs(limit)
        sessions = store.list_plan_sessions(limit)
    finally:
        store.close()
    if as_json:
        for r in runs:
            click.echo(json.dumps({
                "id": r["id"], "task": r["task"], "model": r["model"].get("model"),
                "status": r["status"], "samples": r["samples"], "errors": r["errors"],
                "resumable": bool(r["resumable"]), "created_at": r["created_at"],
                "parent": r.get("parent_id"), "kind": r["kind"]}))
        return

    table = Table("run", "task", "model", "status", "samples", "errors", "resumable",
                  "created")
    for col in (0, 7):
        table.columns[col].no_wrap = True
    for r in runs:
        table.add_row(r["id"], r["task"], str(r["model"].get("model")), r["status"],
                      str(r["samples"]), str(r["errors"]), "yes" if r["resumable"] else "",
                      time.strftime("%Y-%m-%d %H:%M", time.localtime(r["created_at"])))
    Console().print(table)
    kinds = {r["kind"] for r in runs if r["resumable"]}
    if "task" in kinds:
        click.echo("resume a run with: assay run <task> --resume <run>")
    if "plan" in kinds:
        click.echo("resume a plan run with: assay run <plan.yaml> --resume <run>")
    if "pipeline" in kinds:
        click.echo("resume a pipeline with: assay datagen pipeline --resume <run>")
    paused = [s for s in sessions if s["status"] != "finished"]
    for s in paused:
        click.echo(f"planning session {s['id']} ({s['status']}): {s['request'][:60]}")
    if paused:
        click.echo("continue a planning session with: assay plan --resume <session>")


@click.command("tasks")
@click.argument("files", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option("--category", default=None, help="Only gallery entries of this category.")
@click.option("--json", "as_json", is_flag=True, help="Print the gallery entries as JSON.")
def list_tasks(files: tuple[str, ...], category: str | None, as_json: bool) -> None:
    """Tasks that can be run by name, with their source (built-in, plugin or gallery), then
    the gallery's entries with category, size, data source, readiness and whether their data
    is cached; with FILES, the tasks those .py or .yaml files declare."""
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
    for name, source, description in rows:
        click.echo(f"{name:{width}s}  {source:18s} {description}")
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
              "cached": (cached(e) is not None) if e.source else None,
              "primary_metric": e.metrics.primary, "tags": e.tags,
              "description": e.description} for e in chosen]
    if as_json:
        click.echo(json.dumps(items, indent=1))
        return
    click.echo(f"gallery ({len(items)} entries; run one with: assay run NAME --model M, "
               "fetch its data with: assay data pull NAME)")
    head = ("name", "category", "size", "source", "readiness", "cached")
    table = [head] + [(i["name"], i["category"], str(i["size"] or "?"), i["source"],
                       i["readiness"], {True: "yes", False: "no", None: "-"}[i["cached"]])
                      for i in items]
    widths = [max(len(r[c]) for r in table) for c in range(len(head))]
    for r in table:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())


@click.command("models")
def list_models() -> None:
    """Model providers (the ``assay.models`` entry points, plugins included) and how to
    name them."""
    forms = listing()
    width = max((len(form) for form, _ in forms), default=0)
    for form, what in forms:
        click.echo(f"{form:{width}s}  {what}")
