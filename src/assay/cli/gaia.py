"""``assay run gaia`` and ``assay gaia score``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from assay.cli.common import run_command
from assay.core.atomic import atomic_open

scorer_option = click.option(
    "--scorer", default="official", show_default=True,
    help="official (the leaderboard's rules) or lenient (the book's, with its bugs fixed).")


@run_command("gaia")
@click.option("--data-dir", default=None,
              help="A local copy of gaia-benchmark/GAIA (either layout); otherwise it is "
              "downloaded with $HF_TOKEN.")
@click.option("--split", default="validation", show_default=True,
              help="validation or test (answers hidden).")
@click.option("--level", type=int, default=None, help="Only this level (1, 2 or 3).")
@scorer_option
@click.option("--inline-limit", type=int, default=None,
              help="Characters of a text attachment put into the prompt (default 20000).")
@click.option("--system-prompt", default=None,
              help="Replace the official GAIA system prompt (not leaderboard-comparable).")
@click.option("--max-tokens", type=int, default=None,
              help="Max tokens per reply (default 1024).")
def run_gaia(data_dir: str | None, split: str, level: int | None, scorer: str,
             inline_limit: int | None, system_prompt: str | None,
             max_tokens: int | None) -> dict[str, Any]:
    """GAIA tasks with the leaderboard's scorer; writes a submission file and its guide."""
    return dict(
        data_dir=data_dir, split=split, level=level, scorer=scorer,
        inline_limit=inline_limit, system_prompt=system_prompt, max_tokens=max_tokens,
    )


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
    from assay.benchmarks.gaia.score_files import score_predictions

    report = score_predictions(answers, predictions, scorer)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(output) as f:
            for v in report.verdicts:
                f.write(json.dumps({"task_id": v["task_id"], "correct": v["correct"]}) + "\n")
    click.echo(report.summary())
    if output:
        click.echo(f"verdicts: {output}")
