"""``assay gaia score``: existing answers scored without a model."""

from __future__ import annotations

import json
from pathlib import Path

import click

from assay.core.atomic import atomic_open
from assay.tasks.gaia.score_files import score_predictions

scorer_option = click.option(
    "--scorer", default="official", show_default=True,
    help="official (the leaderboard's rules) or lenient (the Hello-Agents book's quasi-exact match, its bugs fixed).")


@click.command("score")
@click.option("--answers", type=click.Path(path_type=Path), required=True,
              help="Gold answers JSONL (task_id, Final answer[, Level]); a GAIA "
              "metadata.jsonl works.")
@click.option("--predictions", type=click.Path(path_type=Path), required=True,
              help="Predictions JSONL (task_id, model_answer), the submission format.")
@scorer_option
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
              help="Write one verdict per task here (JSONL).")
def score(answers: Path, predictions: Path, scorer: str, output: Path | None) -> None:
    """Score existing answers without running a model."""
    report = score_predictions(answers, predictions, scorer)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(output) as f:
            for v in report.verdicts:
                f.write(json.dumps({"task_id": v["task_id"], "correct": v["correct"]}) + "\n")
    click.echo(report.summary())
    if output:
        click.echo(f"verdicts: {output}")
