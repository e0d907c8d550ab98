"""``assay run TASK --model A --model B``: the multi-model parent run from the command line."""

from __future__ import annotations

from typing import Any

import click

from assay.cli.common import sigterm_as_interrupt
from assay.core.failures import error_hint
from assay.pipelines.models import comparison_lines, is_models_run, resume_models, start_models
from assay.store.sqlite import Store

__all__ = ["is_models_run", "run_models"]


def run_models(store: Store, task: str, models: list[str], *, resume: str | None,
                quiet: bool, engine_options: dict[str, Any], task_options: dict[str, Any],
                overrides: dict[str, Any] | None = None) -> Any:
    """``assay run TASK --model A --model B`` (or ``--resume`` of such a run): a child
    run per model, then the comparison table; exit 1 when a model's run failed."""
    try:
        with sigterm_as_interrupt():
            if resume:
                done = resume_models(store, resume, task=task, overrides=overrides,
                                     quiet=quiet, echo=click.echo)
            else:
                done = start_models(store, task, models, task_options=task_options,
                                    engine=engine_options, quiet=quiet, echo=click.echo,
                                    on_created=lambda pid: click.echo(f"multi-model run {pid}"))
    except KeyboardInterrupt:
        click.echo(f"interrupted; finished runs are saved. Resume with: assay run {task} "
                   "--resume <multi-model run id> (see 'assay list runs')", err=True)
        raise SystemExit(130) from None
    click.echo(f"multi-model run {done.run_id}: {done.label}")
    for line in comparison_lines(done.summary):
        click.echo(line)
    for kind, path in done.reports.items():
        click.echo(f"{kind}: {path}")
    for model, why in done.failures.items():
        click.echo(f"{model} failed: {why}", err=True)
        hint = error_hint(why)
        if hint:
            click.echo(f"hint: {hint}", err=True)
    if done.failures:
        click.echo(f"nothing is lost: fix the cause, then assay run {task} --resume "
                   f"{done.run_id}", err=True)
        raise SystemExit(1)
    return done
