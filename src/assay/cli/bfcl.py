"""``assay run bfcl`` and ``assay bfcl score``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from assay.cli.app import bfcl_app, run_app
from assay.cli.common import run_command
from assay.core.atomic import atomic_open
from assay.errors import ConfigError

Category = Annotated[str, typer.Option(
    "--category", help="Category, group (non_live, live, ast, all_single_turn) or comma list.")]
DataDir = Annotated[str | None, typer.Option(
    "--bfcl-data-dir", help="A gorilla clone or its bfcl_eval/data (default: installed "
    "bfcl_eval, then the cache filled by 'assay data pull bfcl').")]


def parse_weights(text: str | None) -> dict[str, float] | None:
    """``cat=w,cat=w`` into a dict."""
    if not text:
        return None
    out: dict[str, float] = {}
    for item in text.split(","):
        cat, sep, w = item.partition("=")
        try:
            out[cat.strip()] = float(w)
        except ValueError:
            sep = ""
        if not sep:
            raise ConfigError(f"--weights expects CATEGORY=NUMBER pairs, got {item!r}")
    return out


@run_app.command("bfcl")
@run_command("bfcl")
def run_bfcl(
    category: Category = "simple_python",
    mode: Annotated[str, typer.Option(
        help="fc: native tool calls; prompt: the official prompt and text decoding.")] = "fc",
    bfcl_data_dir: DataDir = None,
    underscore_to_dot: Annotated[bool | None, typer.Option(
        "--underscore-to-dot/--no-underscore-to-dot",
        help="Expect '.' in function names as '_' (default: on for fc, off for prompt).")] = None,
    tolerant: Annotated[bool, typer.Option(
        "--tolerant/--no-tolerant",
        help="Also report the labelled tolerant score (calls in prose, fences or JSON).")] = True,
    weights: Annotated[str | None, typer.Option(
        help="Weights for a weighted accuracy, e.g. simple_python=2,multiple=1.")] = None,
    official: Annotated[bool, typer.Option(
        "--official", help="Also run the official 'bfcl evaluate' (needs bfcl-eval installed) "
        "and show its numbers beside ours.")] = False,
    max_tokens: Annotated[int | None, typer.Option(help="Max tokens per reply (default 512).")] = None,
) -> Any:
    """Tool calling on BFCL v4, with verdicts that match the official checker."""
    options = dict(
        category=category, mode=mode, bfcl_data_dir=bfcl_data_dir,
        underscore_to_dot=underscore_to_dot, tolerant=tolerant,
        weights=parse_weights(weights), max_tokens=max_tokens,
    )
    if not official:
        return options

    def show_official(result: Any) -> None:
        from assay.benchmarks.bfcl.official import run_official

        typer.echo(run_official(result.run_id).summary())

    return options, show_official


@bfcl_app.command("score")
def score(
    results: Annotated[Path, typer.Option(
        "--results", help="A BFCL_v4_<category>_result.json file or a folder of them.")],
    output: Annotated[Path | None, typer.Option(
        "--output", "-o", help="Write one verdict per entry here (JSONL).")] = None,
    bfcl_data_dir: DataDir = None,
    underscore_to_dot: Annotated[bool | None, typer.Option(
        "--underscore-to-dot/--no-underscore-to-dot",
        help="Expect '.' in names as '_' (default: on for FC-style lines, off for text).")] = None,
) -> None:
    """Score official-format result files without running a model."""
    from assay.benchmarks.bfcl.score_files import score_results

    report = score_results(results, data_dir=bfcl_data_dir, underscore_to_dot=underscore_to_dot)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(output) as f:
            for v in report.verdicts:
                f.write(json.dumps(v, ensure_ascii=False) + "\n")
    typer.echo(report.summary())
    if output:
        typer.echo(f"verdicts: {output}")
