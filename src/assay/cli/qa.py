"""``assay run qa``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.app import run_app
from assay.cli.common import (
    BaseUrl,
    Epochs,
    Limit,
    MaxConn,
    Model,
    NoCache,
    Params,
    Quiet,
    Resume,
    Retries,
    SampleIds,
    SampleTimeout,
    Seed,
    Temperature,
    Timeout,
    engine_options,
    execute_run,
)
from assay.errors import ConfigError


@run_app.command("qa")
def run_qa(
    data: Annotated[str | None, typer.Option(
        "--data", "-d", help="Dataset: a .jsonl/.json/.csv file or a Hugging Face dataset id.")] = None,
    model: Model = "local",
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
    base_url: BaseUrl = None,
    limit: Limit = None,
    sample_ids: SampleIds = None,
    max_connections: MaxConn = 32,
    timeout: Timeout = 120.0,
    sample_timeout: SampleTimeout = None,
    max_retries: Retries = 5,
    epochs: Epochs = 1,
    seed: Seed = None,
    temperature: Temperature = None,
    param: Params = None,
    no_cache: NoCache = False,
    resume: Resume = None,
    quiet: Quiet = False,
) -> None:
    """Question answering on any dataset with a question and an answer field."""
    if not resume and not data:
        raise ConfigError("missing --data FILE (a .jsonl/.json/.csv file or a Hugging Face id)")
    if template and Path(template).is_file():
        template = Path(template).read_text(encoding="utf-8")
    execute_run(
        "qa", resume=resume, quiet=quiet, model=model,
        engine_options=engine_options(
            base_url=base_url, limit=limit, sample_ids=sample_ids,
            max_connections=max_connections, timeout=timeout, sample_timeout=sample_timeout,
            max_retries=max_retries, epochs=epochs, seed=seed, no_cache=no_cache, param=param,
            temperature=temperature,
        ),
        benchmark_options=dict(
            data=data, split=split, config=config, question_key=question_key,
            answer_key=answer_key, choices_key=choices_key, id_key=id_key, scorer=scorer,
            tolerance=tolerance, template=template, system_prompt=system_prompt,
            max_tokens=max_tokens,
        ),
    )
