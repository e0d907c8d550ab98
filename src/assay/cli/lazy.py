"""Command groups whose commands load on first use: each is named with its module and one-line
help (``tests/cli/test_lazy_help.py`` checks it matches), so ``assay --help`` imports none."""

from __future__ import annotations

import difflib
import importlib
import shutil
from typing import Any

import click

#: groups with more commands than this are not listed in an unknown-command error
_LISTED_AT_MOST = 15
#: words ending in a full stop that do not end a sentence
_ABBREVIATIONS = {"al.", "e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "no."}
#: the widest a command listing grows on a wide terminal
_WIDEST = 160


class LazyGroup(click.Group):
    """A group whose commands live in other modules, imported when first asked for
    (``lazy``: a command name -> ``("module:attribute", "its one-line help")``)."""

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

    def known_names(self) -> list[str]:
        """The command names this group has, without importing a lazy one."""
        return sorted({*self.commands, *self.lazy})

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """As click's, but an unknown name gets the nearest names or the group that has it."""
        name = args[0] if args else ""
        if (name and not name.startswith("-") and not ctx.resilient_parsing
                and self.get_command(ctx, name) is None):
            raise click.UsageError(unknown_command_message(ctx, self, name), ctx=ctx)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands, one line each (cut to the width), without importing a lazy one."""
        names = self.list_commands(ctx)
        if not names:
            return
        # the listing may use the whole terminal (click stops its paragraphs at 80 columns)
        width = max(formatter.width, min(shutil.get_terminal_size().columns, _WIDEST) - 2)
        limit = max(width - formatter.current_indent - 6 - max(len(n) for n in names), 20)
        rows = []
        for name in names:
            if name in self.commands or name not in self.lazy:
                cmd = self.get_command(ctx, name)
                if cmd is None or cmd.hidden:
                    continue
                text = cmd.short_help or cmd.help or ""
            else:
                text = self.lazy[name][1]
            rows.append((name, one_line(text, limit)))
        with formatter.section("Commands"):
            wide = click.HelpFormatter(width=width)
            wide.current_indent = formatter.current_indent
            wide.write_dl(rows)
            formatter.write(wide.getvalue())
        word = (self.subcommand_metavar or "COMMAND").split()[0]
        formatter.write_paragraph()
        formatter.write_text(f"See '{ctx.command_path} {word} --help' for a "
                             f"{word.lower()}'s options.")


def one_line(text: str, limit: int) -> str:
    """A help text's first sentence on one line, cut at a word to ``limit`` (``...``)."""
    words = text.split("\n\n")[0].split()
    if words and words[0] == "\b":  # click's no-rewrap marker
        words = words[1:]
    for i, word in enumerate(words):
        if (word.endswith(".") and word.lower() not in _ABBREVIATIONS
                and not (len(word) == 2 and word[0].isupper())):
            words = words[:i + 1]
            break
    line = " ".join(words)
    if len(line) <= limit:
        return line
    cut = line[:max(limit - 3, 1)]
    if " " in cut:
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(",;:(-– ") + "..."


def command_paths(root: click.Group, root_name: str) -> dict[str, list[str]]:
    """Every command name under ``root`` (one level of sub-groups, no lazy import) with
    the command lines that reach it (``{"score": ["assay score", "assay bfcl score"]}``)."""
    found: dict[str, list[str]] = {}
    top = root.known_names() if isinstance(root, LazyGroup) else sorted(root.commands)
    for name in top:
        found.setdefault(name, []).append(f"{root_name} {name}")
        sub = root.commands.get(name)
        if isinstance(sub, LazyGroup) and sub.lazy:
            for inner in sub.known_names():
                found.setdefault(inner, []).append(f"{root_name} {name} {inner}")
    return found


def unknown_command_message(ctx: click.Context, group: click.Group, name: str) -> str:
    """One line for a command ``group`` lacks: where else it lives, else the nearest names."""
    names = group.known_names() if isinstance(group, LazyGroup) else group.list_commands(ctx)
    message = f"no command {name!r} in '{ctx.command_path}'"
    root = ctx.find_root()
    here = f"{ctx.command_path} {name}"
    elsewhere = []
    if isinstance(root.command, click.Group):
        paths = command_paths(root.command, root.info_name or "assay")
        elsewhere = sorted((p for p in paths.get(name, []) if p != here), key=len)
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    near = [repr(c) for c in close] + [f"'{p}'" for p in elsewhere]
    if near:
        message += f"; did you mean {' or '.join(near[:3])}?"
    if names and len(names) <= _LISTED_AT_MOST:
        message += f"; its commands: {', '.join(names)}"
    return message
