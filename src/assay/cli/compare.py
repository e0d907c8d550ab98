"""``assay compare RUN_A RUN_B`` and ``assay history TASK``: is B better than A, and how has
a task's score moved over time."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import click

from assay.cli.columns import wrapped
from assay.compare import compare_runs
from assay.compare.history import task_history
from assay.compare.history_render import history_lines, write_history
from assay.compare.render import summary_lines, write_comparison
from assay.errors import ConfigError
from assay.store.sqlite import Store


def _out_dir(out: Path | None, default: Path) -> Path:
    if out is not None and out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out} is a file; give a folder for the comparison")
    return out or default


def _emit(data: dict[str, Any], lines: list[str], paths: dict[str, Path], as_json: bool) -> None:
    """Print ``data`` as JSON, or its text lines and the files written."""
    if as_json:
        click.echo(json.dumps(data, ensure_ascii=False))
        return
    for line in wrapped(lines):
        click.echo(line)
    for kind, path in paths.items():
        click.echo(f"{kind}: {path}")


@click.command("compare")
@click.argument("run_a")
@click.argument("run_b")
@click.option("--fail-if-worse", is_flag=True,
              help="Exit with status 1 when B is significantly worse than A on the compared "
              "score (for CI gates).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True,
              help="Significance level; intervals are at 1 - alpha.")
@click.option("--score", default=None,
              help="The score to compare (default: the primary score, each sample's first).")
@click.option("--by", default=None,
              help="Sample metadata field for per-category rows (default: category, level, "
              "subject, ... whichever splits the samples).")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Folder for compare.md, compare.html and compare.json (default: "
              "assay-runs/runs/compare/A_vs_B).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the comparison as JSON instead of text.")
@click.option("--seed", type=int, default=0, show_default=True,
              help="Seed of the paired bootstrap (continuous scores).")
def compare(run_a: str, run_b: str, fail_if_worse: bool, alpha: float, score: str | None,
            by: str | None, out: Path | None, as_json: bool, seed: int) -> None:
    """Compare run B with run A on the samples they share.

    RUN_A and RUN_B are run ids or unique prefixes. Pass/fail scores get McNemar's exact
    test, continuous ones a paired bootstrap; samples that errored in either run are left
    out and counted. Prints the configuration's differences, the verdict, per-category
    differences and the flipped samples; writes Markdown, HTML and JSON.
    """
    store = Store(readonly=True)
    try:
        result = compare_runs(store, run_a, run_b, score=score, by=by, alpha=alpha, seed=seed)
        folder = _out_dir(out, store.runs_dir / "compare"
                          / f"{result['a']['id']}_vs_{result['b']['id']}")
    finally:
        store.close()
    _emit(result, summary_lines(result), write_comparison(result, folder), as_json)
    if fail_if_worse and result["primary"]["verdict"] == "B worse":
        click.echo(f"B is significantly worse than A (p={result['primary']['p_value']:.4g} < "
                   f"{alpha:g}): failing", err=True)
        raise click.exceptions.Exit(1)


@click.command("history")
@click.argument("task")
@click.option("--model", default=None,
              help="Only runs of this model (its exact name, else a part of it).")
@click.option("--alpha", type=click.FloatRange(0, 1, min_open=True, max_open=True),
              default=0.05, show_default=True, help="Significance level of the drop tests.")
@click.option("--score", default=None,
              help="The score the drop tests compare (default: the primary score).")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Only the most recent N runs.")
@click.option("--out", type=click.Path(path_type=Path), default=None,
              help="Folder for history.md, history.html and history.json (default: "
              "assay-runs/runs/history/TASK).")
@click.option("--json", "as_json", is_flag=True, help="Print the history as JSON.")
@click.option("--fail-on-drop", is_flag=True,
              help="Exit with status 1 when the latest run is a significant drop.")
@click.option("--fingerprint", default=None,
              help="Show the runs of this configuration (its fingerprint or a unique prefix; "
              "default: the newest run's).")
@click.option("--all", "mix", is_flag=True,
              help="Show every configuration, one series each, every run marked with its "
              "fingerprint.")
def history(task: str, model: str | None, alpha: float, score: str | None, limit: int | None,
            out: Path | None, as_json: bool, fail_on_drop: bool, fingerprint: str | None,
            mix: bool) -> None:
    """A task's primary metric over time, run by run, with intervals.

    Every run of TASK with its 95% interval; significant drops between a model's
    consecutive runs are flagged. One configuration (its fingerprint) at a time, the
    newest run's unless --fingerprint names another; --all mixes them.
    """
    store = Store(readonly=True)
    try:
        hist = task_history(store, task, model=model, score=score, alpha=alpha, limit=limit,
                            fingerprint=fingerprint, mix=mix)
        stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", task + (f"_{model}" if model else ""))
        folder = _out_dir(out, store.runs_dir / "history" / stem.strip("._"))
    finally:
        store.close()
    _emit(hist, history_lines(hist), write_history(hist, folder), as_json)
    if fail_on_drop and hist["points"] and hist["points"][-1]["drop"]:
        click.echo(f"the latest run {hist['points'][-1]['id']} is a significant drop: failing",
                   err=True)
        raise click.exceptions.Exit(1)
