"""``assay report RUN``: a stored run's reports, from the store alone (nothing is written
to it, and no task's code is imported)."""

from __future__ import annotations

from pathlib import Path

import click

from assay.errors import ConfigError
from assay.plan.report import write_plan_report
from assay.reports.csv_export import write_samples_csv
from assay.reports.datagen import pipeline_dir, pipeline_record, write_pipeline_report
from assay.reports.models import is_models_run, write_models_report
from assay.reports.render import write_reports
from assay.reports.summary import write_summary
from assay.store.sqlite import Store, workspace_dir


def existing_store(run_id: str, *, readonly: bool = True) -> Store:
    """The workspace's store (read-only unless ``readonly`` is false); where there is
    none, a one-line error naming ``run_id`` (no store is created)."""
    path = workspace_dir() / "assay.db"
    if not path.is_file():
        raise ConfigError(f"no run {run_id!r}: there is no store at {path} yet, so 'assay "
                          "list runs' lists none; run something first ('assay run ...'), or "
                          "set ASSAY_HOME to the workspace that holds assay.db")
    return Store(path, readonly=readonly)


@click.command("report")
@click.argument("run_id")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Folder for the reports.")
@click.option("--summary", is_flag=True,
              help="Write only the one-page summary (summary.md, summary.html) for a product "
              "owner; the full report stays for engineers.")
@click.option("--csv", "as_csv", is_flag=True,
              help="Write only samples.csv: one row per sample (sample_id, epoch, input, "
              "target, output, answer, a score:NAME column per score, error, latency_s, "
              "input_tokens, output_tokens), quoted by Python's csv module, UTF-8. For "
              "spreadsheets, a text cell that begins with = + - @, a tab or a carriage "
              "return gets a leading ' so it is never run as a formula (OWASP's advice).")
def report(run_id: str, out: Path | None, summary: bool, as_csv: bool) -> None:
    """Write a run's reports again, from the store.

    report.md, report.html and results.jsonl for RUN_ID (its id or a unique prefix); with
    --summary, the one-page summary instead; with --csv, samples.csv."""
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the reports")
    if summary and as_csv:
        raise ConfigError("give --summary or --csv, not both")
    store = existing_store(run_id)
    try:
        record = store.get_run(run_id)
        if as_csv:
            if record["kind"] != "task":
                raise ConfigError(f"run {record['id']} is a {record['kind']} run, with no "
                                  "samples of its own; give --csv one of its child runs "
                                  "(see 'assay list runs')")
            folder = out or store.runs_dir / record["id"]
            written = {"csv": write_samples_csv(store, record["id"], folder / "samples.csv")}
        elif summary:
            if record["kind"] != "task":
                raise ConfigError(f"run {record['id']} is a {record['kind']} run: its report "
                                  f"(assay report {record['id']}) is already a summary across "
                                  "its steps; give --summary one of its child runs")
            written = write_summary(store, record["id"], out)
        elif record["kind"] == "plan":  # a parent run: the report across its steps
            written = write_plan_report(store, record["id"], out)
        elif is_models_run(record):
            written = write_models_report(store, record["id"], out)
        elif record["kind"] != "task":
            written = write_pipeline_report(store, pipeline_record(store, record["id"]),
                                            out or pipeline_dir(record["id"]))
        else:
            written = write_reports(store, record["id"], out)
        for kind, path in written.items():
            click.echo(f"{kind}: {path}")
        if (record["kind"] == "plan" and "reported_as" not in record["dataset"]) or (
                record["kind"] == "task" and record["status"] == "finished"
                and "metric_facts" not in (record.get("report") or {})):
            click.echo(f"note: run {record['id']} was stored by an older assay: its report "
                       "shows it as stored; 'assay store migrate' describes it with its "
                       "task's code", err=True)
    finally:
        store.close()
