"""``assay store migrate``: the runs an older assay stored, upgraded once, explicitly."""

from __future__ import annotations

import click

from assay.engine.upgrade import upgrade_runs
from assay.errors import ConfigError
from assay.store.sqlite import Store, workspace_dir


@click.command("migrate")
def migrate() -> None:
    """Upgrade the runs an older assay stored, with their tasks' code.

    Describes each finished run stored before runs described themselves (metrics,
    headline, report sections, official exports) from its task's code where importable;
    reports, the viewer, compare and history only read, so show such runs as stored."""
    path = workspace_dir() / "assay.db"
    if not path.is_file():
        raise ConfigError(f"there is no store at {path}; set ASSAY_HOME to the workspace "
                          "that holds assay.db")
    store = Store(path)
    try:
        done = upgrade_runs(store)
    finally:
        store.close()
    click.echo(f"{path}: {done} run{'' if done == 1 else 's'} upgraded")
