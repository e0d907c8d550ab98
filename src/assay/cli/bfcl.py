"""``assay bfcl score``: official-format result files scored without a model."""

from __future__ import annotations

import json
from pathlib import Path

import click

from assay.core.atomic import atomic_open
from assay.tasks.bfcl.score_files import score_results

data_dir_option = click.option(
    "--bfcl-data-dir", default=None,
    help="A gorilla clone or its bfcl_eval/data (default: installed bfcl_eval, then the "
    "cache filled by 'assay data pull bfcl').")


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
    report = score_results(results, data_dir=bfcl_data_dir, underscore_to_dot=underscore_to_dot)
    if output:
        output.parent.mkdir(parents=True, exist_ok=True)
        with atomic_open(output) as f:
            for v in report.verdicts:
                f.write(json.dumps(v, ensure_ascii=False) + "\n")
    click.echo(report.summary())
    if output:
        click.echo(f"verdicts: {output}")
