"""``assay --help`` lists every command without importing one, and what it lists is each
command's own one-line help."""

from __future__ import annotations

import subprocess
import sys

import click

from assay.cli.app import app
from assay.cli.lazy import LazyGroup


def _lazy_groups() -> list[tuple[str, LazyGroup]]:
    groups = [("assay", app)]
    groups += [(f"assay {name}", cmd) for name, cmd in app.commands.items()
               if isinstance(cmd, LazyGroup)]
    return groups


def test_the_listed_help_is_each_commands_own() -> None:
    ctx = click.Context(app)
    checked = 0
    for where, group in _lazy_groups():
        for name, (_target, listed) in group.lazy.items():
            command = group.get_command(ctx, name)
            assert command is not None, f"{where} {name}: {_target} is not there"
            assert listed == command.get_short_help_str(10**6), (
                f"'{where} --help' lists {name} as {listed!r}; its own help says "
                f"{command.get_short_help_str(10**6)!r} (change the line in assay/cli/app.py)")
            checked += 1
    assert checked >= 20


def test_help_imports_no_command() -> None:
    code = ("import sys\nsys.argv = ['assay', '--help']\nfrom assay.cli.main import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\n"
            "print('MODULES', ' '.join(sorted(m for m in sys.modules if m.startswith('assay'))),"
            " file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    line = next(x for x in p.stderr.splitlines() if x.startswith("MODULES"))
    loaded = set(line.split()[1:])
    assert "Commands:" in p.stdout and "score" in p.stdout and "datagen" in p.stdout
    commands = {m for m in loaded if m.startswith("assay.cli.")} - {
        "assay.cli.app", "assay.cli.lazy", "assay.cli.main"}
    assert commands == set(), f"'assay --help' imported {sorted(commands)}"
    assert not any(m.startswith(("assay.engine", "assay.tasks", "assay.store")) for m in loaded)
