"""Command groups whose commands load on first use, so ``assay --help`` imports no command.

Each lazy command is named with where it lives and its one-line help (the help listing
shows that line without importing the command; ``tests/cli/test_lazy_help.py`` checks that
it matches the command's own). A command module is imported when its command runs or
shows its own ``--help``, and imports what it needs at its top.
"""

from __future__ import annotations

import importlib
from typing import Any

import click


class LazyGroup(click.Group):
    """A group whose commands live in other modules, imported when first asked for.

    ``lazy`` maps a command name to ``("module:attribute", "its one-line help")``.
    """

    def __init__(self, *args: Any, lazy: dict[str, tuple[str, str]] | None = None,
                 **kwargs: Any) -> None:
        kwargs.setdefault("no_args_is_help", True)
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy or {})

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*super().list_commands(ctx), *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            module, _, attr = self.lazy[cmd_name][0].partition(":")
            self.add_command(getattr(importlib.import_module(module), attr), cmd_name)
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands and their one-line help, without importing a lazy one."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = []
        for name in names:
            if name in self.commands or name not in self.lazy:
                cmd = self.get_command(ctx, name)
                if cmd is None or cmd.hidden:
                    continue
                rows.append((name, cmd.get_short_help_str(limit)))
            else:
                rows.append((name, click.utils.make_default_short_help(self.lazy[name][1],
                                                                      limit)))
        with formatter.section("Commands"):
            formatter.write_dl(rows)
