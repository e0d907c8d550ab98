"""``assay run qa``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from assay.cli.common import run_command
from assay.errors import ConfigError


@run_command("qa")
@click.option("--data", "-d", default=None,
              help="Dataset: a .jsonl/.json/.csv file or a Hugging Face dataset id.")
@click.option("--split", default=None, help="HF split (default 'test').")
@click.option("--config", default=None, help="HF dataset config name.")
@click.option("--question-key", default=None, help="Field holding the question.")
@click.option("--answer-key", default=None, help="Field holding the answer.")
@click.option("--choices-key", default=None, help="Field holding multiple-choice options.")
@click.option("--id-key", default=None, help="Field holding the sample id.")
@click.option("--scorer", default=None,
              help="exact | normalized | includes | numeric | f1 | choice | math "
              "(default: inferred).")
@click.option("--tolerance", type=float, default=None,
              help="Absolute tolerance for the numeric scorer.")
@click.option("--template", default=None,
              help="Jinja2 prompt template with {{ question }}, {{ choices }}, "
              "{{ row.<field> }}.")
@click.option("--system-prompt", default=None, help="System message for every sample.")
@click.option("--max-tokens", type=int, default=None,
              help="Max tokens per answer (default 256).")
def run_qa(data: str | None, split: str | None, config: str | None, question_key: str | None,
           answer_key: str | None, choices_key: str | None, id_key: str | None,
           scorer: str | None, tolerance: float | None, template: str | None,
           system_prompt: str | None, max_tokens: int | None,
           resume: str | None) -> dict[str, Any]:
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
