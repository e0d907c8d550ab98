"""``assay run bfcl`` and ``assay bfcl score``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from assay.cli.common import run_command
from assay.core.atomic import atomic_open
from assay.errors import ConfigError

data_dir_option = click.option(
    "--bfcl-data-dir", default=None,
    help="A gorilla clone or its bfcl_eval/data (default: installed bfcl_eval, then the "
    "cache filled by 'assay data pull bfcl').")


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


@run_command("bfcl")
@click.option("--category", default="simple_python", show_default=True,
              help="Category, group (non_live, live, ast, all_single_turn) or comma list.")
@click.option("--mode", default="fc", show_default=True,
              help="fc: native tool calls; prompt: the official prompt and text decoding.")
@data_dir_option
@click.option("--underscore-to-dot/--no-underscore-to-dot", default=None,
              help="Expect '.' in function names as '_' (default: on for fc, off for prompt).")
@click.option("--tolerant/--no-tolerant", default=True, show_default=True,
              help="Also report the labelled tolerant score (calls in prose, fences or JSON).")
@click.option("--weights", default=None,
              help="Weights for a weighted accuracy, e.g. simple_python=2,multiple=1.")
@click.option("--official", is_flag=True,
              help="Also run the official 'bfcl evaluate' (needs bfcl-eval installed) and "
              "show its numbers beside ours.")
@click.option("--max-tokens", type=int, default=None, help="Max tokens per reply (default 512).")
def run_bfcl(category: str, mode: str, bfcl_data_dir: str | None,
             underscore_to_dot: bool | None, tolerant: bool, weights: str | None,
             official: bool, max_tokens: int | None) -> Any:
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

        click.echo(run_official(result.run_id).summary())

    return options, show_official


@click.command("score")
@click.option("--results", type=click.Path(path_type=Path), required=True,
              help="A BFCL_v4_<category>_result.json file or a folder of them.")
@click.option("--output", "-o", type=click.Path(path_type=Path), default=None,
              help="Write one verdict per entry here (JSONL).")
@data_dir_option
@click.option("--underscore-to-dot/--no-underscore-to-dot", default=None,
              help="Expect '.' in names as '_' (default: on for FC-style lines, off for text).")
def score(results: Path, output: Path | None, bfcl_data_dir: str | None,
          underscore_to_dot: bool | None) -> None:
    """Score official-format result files without running a model."""
    from assay.benchmarks.bfcl.score_files import score_results

    report = score_results(results, data_dir=bfcl_data_dir, underscore_to_dot=underscore_to_dot)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(output) as f:
            for v in report.verdicts:
                f.write(json.dumps(v, ensure_ascii=False) + "\n")
    click.echo(report.summary())
    if output:
        click.echo(f"verdicts: {output}")
