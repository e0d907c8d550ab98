"""The ``assay`` command line (click; ``rich`` for tables).

User errors (:class:`AssayError`) print one line and exit with status 2;
``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import click

from assay.cli.app import STATE, app
from assay.errors import AssayError, ConfigError


@click.command("report")
@click.argument("run_id")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Folder for the reports.")
@click.option("--summary", is_flag=True,
              help="Write only the one-page summary (summary.md, summary.html) for a product "
              "owner; the full report stays for engineers.")
def report(run_id: str, out: Path | None, summary: bool) -> None:
    """Regenerate report.md, report.html and results.jsonl for a run (RUN_ID: its id or a
    unique prefix) from the store; with --summary, the one-page summary instead."""
    from assay.engine.finalize import describe_old_runs, exports_for_report
    from assay.reports.render import write_reports
    from assay.store.sqlite import Store

    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the reports")
    store = Store()
    try:
        # runs an older assay finished without a description are described once (their
        # task's code asked here, where it is present; reports then read only the store)
        describe_old_runs(store)
        if summary:
            from assay.reports.summary import write_summary

            record = store.get_run(run_id)
            if record["kind"] != "task":
                raise ConfigError(f"run {record['id']} is a {record['kind']} run: its report "
                                  f"(assay report {record['id']}) is already a summary across "
                                  "its steps; give --summary one of its child runs")
            for kind, path in write_summary(store, record["id"], out).items():
                click.echo(f"{kind}: {path}")
            return
        record = store.get_run(run_id)
        if record["kind"] != "task":  # a parent run: the report across its steps
            from assay.pipelines.datagen import pipeline_dir, pipeline_record
            from assay.plan.report import write_plan_report
            from assay.reports.datagen import write_pipeline_report

            written = write_plan_report(store, record["id"], out) if record["kind"] == "plan" \
                else write_pipeline_report(store, pipeline_record(store, record["id"]),
                                           out or pipeline_dir(record["id"]))
            for kind, path in written.items():
                click.echo(f"{kind}: {path}")
            return
        paths = write_reports(store, record["id"], out)
        folder = out or store.runs_dir / record["id"]
        exported, note = exports_for_report(store, record, folder)
        paths.update(exported)
        for kind, path in paths.items():
            click.echo(f"{kind}: {path}")
        if note:
            click.echo(f"note: {note}", err=True)
    finally:
        store.close()


@click.command("score")
@click.argument("run_id")
@click.option("--scorer", default=None,
              help="Score with this scorer instead (e.g. lenient on a GAIA run; exact, "
              "normalized, numeric, ... on a qa run).")
@click.option("-T", "--task-option", "task_option", multiple=True, metavar="KEY=VALUE",
              help="Change a task option that only affects scoring; repeatable.")
@click.option("--judge-model", multiple=True, metavar="MODEL",
              help="Judge the stored outputs again with this model (the tasks with a judge: "
              "MT-Bench, converse, rubric, win rate); repeat it for a jury. The model under "
              "test is never called.")
@click.option("--no-report", is_flag=True, help="Do not write the new run's reports.")
def score(run_id: str, scorer: str | None, task_option: tuple[str, ...],
          judge_model: tuple[str, ...], no_report: bool) -> None:
    """Score a run's stored outcomes again (RUN_ID: its id or a unique prefix), with no
    call to the model under test, as a new run linked to it; a judged task's judge is
    asked again (from the response cache when it is the same judge)."""
    from assay.metrics.format import fmt_rate
    from assay.reports.render import write_reports
    from assay.rescore import rescore
    from assay.store.described import run_headline
    from assay.store.sqlite import Store
    from assay.tasks.options import parse_assignments

    store = Store()
    try:
        record = store.get_run(run_id)
        if record["kind"] != "task":
            raise ConfigError(f"run {record['id']} is a {record['kind']} run, with no samples of "
                              "its own; score one of its child runs (see 'assay list runs')")
        done = rescore(store, record["id"], scorer=scorer,
                       options=parse_assignments(task_option),
                       judge_model=(None if not judge_model else judge_model[0]
                                    if len(judge_model) == 1 else list(judge_model)))
        run = store.get_run(done.run_id)
        judged = (f"; judge: {done.judge_calls} calls, {done.judge_cache_hits} from the cache"
                  if done.judge_calls else "")
        click.echo(f"run {done.run_id} scores run {done.parent_id} again: {done.rescored} "
                   f"samples scored, {done.errors} errors, 0 model calls{judged}")
        head = run_headline(run)  # stored with the new run when it was finalized
        if head:
            click.echo(f"{head[0]}: {fmt_rate(head[1])}")
        if not no_report:
            for kind, path in write_reports(store, done.run_id).items():
                click.echo(f"{kind}: {path}")
    finally:
        store.close()


@click.command("runs")
@click.option("--limit", type=int, default=20, show_default=True, help="How many runs.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line, for scripts.")
def list_runs(limit: int, as_json: bool) -> None:
    """Recent runs in the workspace store."""
    from assay.store.sqlite import Store

    store = Store()
    try:
        runs = store.list_runs(limit)
        sessions = store.list_plan_sessions(limit)
    finally:
        store.close()
    if as_json:
        import json

        for r in runs:
            click.echo(json.dumps({
                "id": r["id"], "task": r["task"], "model": r["model"].get("model"),
                "status": r["status"], "samples": r["samples"], "errors": r["errors"],
                "resumable": bool(r["resumable"]), "created_at": r["created_at"],
                "parent": r.get("parent_id"), "kind": r["kind"]}))
        return
    from rich.console import Console
    from rich.table import Table

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
    from assay.tasks.gallery.entry import all_entries
    from assay.tasks.registry import available, resolve

    rows: list[tuple[str, str, str]] = []
    if files:
        for f in files:
            if f.endswith((".yaml", ".yml")):
                ref = resolve(f)
                rows.append((ref.ref, f"file {f}", ref.description))
                continue
            from assay.tasks.registry import declared_in

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
    from assay.tasks.gallery.source import cached
    from assay.tasks.gallery.task import readiness_text

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
    from assay.models.registry import listing

    forms = listing()
    width = max((len(form) for form, _ in forms), default=0)
    for form, what in forms:
        click.echo(f"{form:{width}s}  {what}")


def main() -> None:
    """Console-script entry point: one line and exit 2 on user errors."""
    try:
        # Without standalone mode click returns (not raises) the code of ctx.exit(n).
        rc = app.main(standalone_mode=False)
        if isinstance(rc, int) and rc:
            sys.exit(rc)
    except AssayError as e:
        if STATE["debug"]:
            raise
        from assay.core.redact import scrub  # an option's value may be echoed in the error

        click.echo(f"error: {scrub(str(e))}", err=True)
        sys.exit(2)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except (click.Abort, KeyboardInterrupt):
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.UsageError as e:
        if STATE["debug"]:
            raise
        # one line, like every other user error; the command's --help has the rest
        where = f" (see '{e.ctx.command_path} --help')" if e.ctx is not None else ""
        from assay.core.redact import scrub

        message = scrub(" ".join(e.format_message().split()))
        click.echo(f"error: {message}{where}", err=True)
        sys.exit(2)
    except click.ClickException as e:
        e.show()
        sys.exit(e.exit_code)


if __name__ == "__main__":
    main()
