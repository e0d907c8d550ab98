"""Text for a terminal of any width: lines wrapped under themselves, tables whose long
columns give way with "…" while names, counts and ids stay whole."""

from __future__ import annotations

import shutil
import textwrap
from collections.abc import Iterable, Sequence

import click

#: the width of a pipe: nothing cut or wrapped, for grep and scripts
PIPE_WIDTH = 1 << 16


def columns() -> int:
    """The terminal's width in columns: ``$COLUMNS``, else the terminal's, else (a pipe)
    :data:`PIPE_WIDTH`."""
    return shutil.get_terminal_size((PIPE_WIDTH, 24)).columns


def wrapped(lines: Iterable[str], width: int | None = None) -> list[str]:
    """Each line in ``width`` columns: a longer one goes on under itself, four spaces further
    in than it starts, its words whole (a word longer than the width, a path, stays whole)."""
    width = width or columns()
    return [part for line in lines for part in textwrap.wrap(
        line, width, subsequent_indent=" " * (len(line) - len(line.lstrip()) + 4),
        break_long_words=False, break_on_hyphens=False) or [line]]


def echo_wrapped(text: str) -> None:
    """``text`` (lines) printed in the terminal's width, as :func:`wrapped` says."""
    click.echo("\n".join(wrapped(text.splitlines())))


def cut(value: str, width: int) -> str:
    """``value`` in ``width`` characters, its end replaced by "…" where it is longer."""
    return value if len(value) <= width else value[:max(width - 1, 0)] + "…"


def table_lines(rows: Sequence[Sequence[str]], give: Sequence[int],
                width: int | None = None) -> list[str]:
    """``rows`` (the first the header) as aligned lines in ``width`` columns: the columns in
    ``give`` give up width, the widest first, down to 4 each; the others stay whole."""
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    room = (width or columns()) - 2 * (len(widths) - 1)
    while sum(widths) > room:
        widest = max(give, key=lambda c: widths[c])
        if widths[widest] <= 4:
            break
        widths[widest] -= 1
    return ["  ".join(cut(v, w).ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
            for r in rows]
