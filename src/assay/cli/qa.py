"""``assay run qa``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from assay.cli.app import run_app
from assay.cli.common import Resume, run_command
from assay.errors import ConfigError


@run_app.command("qa")
@run_command("qa")
def run_qa(
    data: Annotated[str | None, typer.Option(
        "--data", "-d", help="Dataset: a .jsonl/.json/.csv file or a Hugging Face dataset id.")] = None,
    split: Annotated[str | None, typer.Option(help="HF split (default 'test').")] = None,
    config: Annotated[str | None, typer.Option(help="HF dataset config name.")] = None,
    question_key: Annotated[str | None, typer.Option(help="Field holding the question.")] = None,
    answer_key: Annotated[str | None, typer.Option(help="Field holding the answer.")] = None,
    choices_key: Annotated[str | None, typer.Option(help="Field holding multiple-choice options.")] = None,
    id_key: Annotated[str | None, typer.Option(help="Field holding the sample id.")] = None,
    scorer: Annotated[str | None, typer.Option(
        help="exact | normalized | includes | numeric | f1 | choice | math (default: inferred).")] = None,
    tolerance: Annotated[float | None, typer.Option(
        help="Absolute tolerance for the numeric scorer.")] = None,
    template: Annotated[str | None, typer.Option(
        help="Jinja2 prompt template with {{ question }}, {{ choices }}, {{ row.<field> }}.")] = None,
    system_prompt: Annotated[str | None, typer.Option(help="System message for every sample.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Max tokens per answer (default 256).")] = None,
    resume: Resume = None,
) -> dict[str, Any]:
    """Question answering on any dataset with a question and an answer field."""
    if not resume and not data:
        raise ConfigError("missing --data FILE (a .jsonl/.json/.csv file or a Hugging Face id)")
    if template and Path(template).is_file():
        template = Path(template).read_text(encoding="utf-8")
    return dict(
        data=data, split=split, config=config, question_key=question_key,
        answer_key=answer_key, choices_key=choices_key, id_key=id_key, scorer=scorer,
        tolerance=tolerance, template=template, system_prompt=system_prompt,
        max_tokens=max_tokens,
    )
