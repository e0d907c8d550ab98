"""``assay run gaia`` and ``assay gaia score``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from assay.cli.app import gaia_app, run_app
from assay.cli.common import run_command
from assay.core.atomic import atomic_open

Scorer = Annotated[str, typer.Option(
    help="official (the leaderboard's rules) or lenient (the book's, with its bugs fixed).")]


@run_app.command("gaia")
@run_command("gaia")
def run_gaia(
    data_dir: Annotated[str | None, typer.Option(
        "--data-dir", help="A local copy of gaia-benchmark/GAIA (either layout); otherwise it "
        "is downloaded with $HF_TOKEN.")] = None,
    split: Annotated[str, typer.Option(help="validation or test (answers hidden).")] = "validation",
    level: Annotated[int | None, typer.Option(help="Only this level (1, 2 or 3).")] = None,
    scorer: Scorer = "official",
    inline_limit: Annotated[int | None, typer.Option(
        help="Characters of a text attachment put into the prompt (default 20000).")] = None,
    system_prompt: Annotated[str | None, typer.Option(
        help="Replace the official GAIA system prompt (not leaderboard-comparable).")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Max tokens per reply (default 1024).")] = None,
) -> dict[str, Any]:
    """GAIA tasks with the leaderboard's scorer; writes a submission file and its guide."""
    return dict(
        data_dir=data_dir, split=split, level=level, scorer=scorer,
        inline_limit=inline_limit, system_prompt=system_prompt, max_tokens=max_tokens,
    )


@gaia_app.command("score")
def score(
    answers: Annotated[Path, typer.Option(
        "--answers", help="Gold answers JSONL (task_id, Final answer[, Level]); a GAIA "
        "metadata.jsonl works.")],
    predictions: Annotated[Path, typer.Option(
        "--predictions", help="Predictions JSONL (task_id, model_answer), the submission format.")],
    scorer: Scorer = "official",
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write one verdict per task here (JSONL).")] = None,
) -> None:
    """Score existing answers without running a model."""
    from assay.benchmarks.gaia.score_files import score_predictions

    report = score_predictions(answers, predictions, scorer)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(output) as f:
            for v in report.verdicts:
                f.write(json.dumps({"task_id": v["task_id"], "correct": v["correct"]}) + "\n")
    typer.echo(report.summary())
    if output:
        typer.echo(f"verdicts: {output}")
