"""``assay report RUN`` and ``assay score RUN``: a stored run's reports, and its scores again."""

from __future__ import annotations

from pathlib import Path

import click

from assay.engine.finalize import describe_old_runs, exports_for_report
from assay.errors import ConfigError
from assay.metrics.format import fmt_rate
from assay.pipelines.datagen import pipeline_dir, pipeline_record
from assay.pipelines.models import is_models_run, write_models_report
from assay.plan.report import write_plan_report
from assay.reports.datagen import write_pipeline_report
from assay.reports.render import write_reports
from assay.reports.summary import write_summary
from assay.rescore import rescore
from assay.store.described import run_headline
from assay.store.sqlite import Store, workspace_dir
from assay.tasks.options import parse_assignments


def existing_store(run_id: str) -> Store:
    """The workspace's store; where there is none, a one-line error naming ``run_id``
    (no store is created)."""
    path = workspace_dir() / "assay.db"
    if not path.is_file():
        raise ConfigError(f"no run {run_id!r}: there is no store at {path} yet, so 'assay "
                          "list runs' lists none; run something first ('assay run ...'), or "
                          "set ASSAY_HOME to the workspace that holds assay.db")
    return Store(path)


@click.command("report")
@click.argument("run_id")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Folder for the reports.")
@click.option("--summary", is_flag=True,
              help="Write only the one-page summary (summary.md, summary.html) for a product "
              "owner; the full report stays for engineers.")
def report(run_id: str, out: Path | None, summary: bool) -> None:
    """Write a run's reports again, from the store.

    report.md, report.html and results.jsonl for RUN_ID (its id or a unique prefix); with
    --summary, the one-page summary instead."""
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the reports")
    store = existing_store(run_id)
    try:
        # runs an older assay finished without a description are described once (their
        # task's code asked here, where it is present; reports then read only the store)
        describe_old_runs(store)
        if summary:
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
            if record["kind"] == "plan":
                written = write_plan_report(store, record["id"], out)
            elif is_models_run(record):
                written = write_models_report(store, record["id"], out)
            else:
                written = write_pipeline_report(store, pipeline_record(store, record["id"]),
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
@click.option("--judge-base-url", default=None, metavar="URL",
              help="The judge's endpoint (default: ASSAY_JUDGE_BASE_URL, else the provider's: "
              "OPENAI_BASE_URL, then OpenAI); never the endpoint of the model under test. Its "
              "key: ASSAY_JUDGE_API_KEY, else OPENAI_API_KEY.")
@click.option("--no-report", is_flag=True, help="Do not write the new run's reports.")
def score(run_id: str, scorer: str | None, task_option: tuple[str, ...],
          judge_model: tuple[str, ...], judge_base_url: str | None, no_report: bool) -> None:
    """Score a stored run again, with no call to the model under test.

    RUN_ID: its id or a unique prefix. The new scores are a new run linked to it; a judged
    task's judge is asked again (from the response cache when it is the same judge)."""
    store = existing_store(run_id)
    try:
        record = store.get_run(run_id)
        if record["kind"] != "task":
            raise ConfigError(f"run {record['id']} is a {record['kind']} run, with no samples of "
                              "its own; score one of its child runs (see 'assay list runs')")
        done = rescore(store, record["id"], scorer=scorer,
                       options=parse_assignments(task_option),
                       judge_model=(None if not judge_model else judge_model[0]
                                    if len(judge_model) == 1 else list(judge_model)),
                       judge_base_url=judge_base_url)
        run = store.get_run(done.run_id)
        judged = (f"; {done.judge_calls} calls to {', '.join(done.judges)} "
                  f"({done.judge_cache_hits} answered by the response cache)"
                  if done.judges else "")
        click.echo(f"run {done.run_id} scores run {done.parent_id} again: {done.rescored} "
                   f"samples scored, {done.errors} errors, no call to the model under "
                   f"test{judged}")
        head = run_headline(run)  # stored with the new run when it was finalized
        if head:
            click.echo(f"{head[0]}: {fmt_rate(head[1])}")
        if not no_report:
            for kind, path in write_reports(store, done.run_id).items():
                click.echo(f"{kind}: {path}")
    finally:
        store.close()
