"""``assay list metrics``: the metric registry as a table, or as JSON for scripts and planners."""

from __future__ import annotations

import json
import re
import textwrap

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from assay.metrics.registry import DIMENSIONS, all_metrics

#: the table is used when its description column can be at least this wide; on a
#: narrower terminal each metric is a block of two lines
DESCRIPTION_MIN_WIDTH = 36
# a sentence ends at a period followed by a space and a capital ("et al. 2019" does not end one)
_SENTENCE_END = re.compile(r"(?<=\.)\s+(?=[A-Z])")


def first_sentence(text: str) -> str:
    """The first sentence of a description (the whole text when it has one sentence)."""
    return _SENTENCE_END.split(text, maxsplit=1)[0]


@click.command("metrics")
@click.option("--dimension", type=click.Choice(DIMENSIONS), default=None,
              help="Only the metrics that measure this dimension.")
@click.option("--json", "as_json", is_flag=True,
              help="The full metadata (description, usage, ...) as one JSON list, for scripts.")
def metrics(dimension: str | None, as_json: bool) -> None:
    """Metrics that tasks and plans can name, and what each measures.

    Each metric's name, aliases, level, dimension, category and the first sentence of its
    description; --json gives the full description and usage."""
    infos = [m for m in all_metrics() if dimension is None or m.dimension == dimension]
    if as_json:
        click.echo(json.dumps([m.to_dict() for m in infos], indent=2))
        return
    if not infos:
        click.echo(f"no metric measures {dimension}")
        return
    console = Console()
    rows = [(m.name, ", ".join(m.aliases), m.level, m.dimension, m.category,
             first_sentence(m.description)) for m in infos]
    # the narrowest each field column can be without breaking a word
    widths = [max(len(w) for row in rows for w in re.split(r"[\s,]+", row[i]))
              for i in range(5)]
    if sum(widths) + 2 * 6 + DESCRIPTION_MIN_WIDTH <= console.width:
        table = Table("metric", "aliases", "level", "dimension", "category", "description",
                      box=box.SIMPLE_HEAD)
        table.columns[-1].overflow = "fold"  # a word longer than the column is folded
        for row in rows:
            table.add_row(*row)
        console.print(table)
    else:  # too narrow for a table: one block per metric
        console.print(Text("metric  (level, dimension, category)  aliases", style="bold"))
        for name, aliases, level, dimension, category, description in rows:
            head = Text(name, style="bold")
            head.append(f"  ({level}, {dimension}, {category})")
            if aliases:
                head.append(f"  {aliases}", style="dim")
            console.print(head)
            # wrapped here, not padded by rich: no trailing blanks when piped or copied
            click.echo(textwrap.fill(description, width=max(console.width, 40),
                                     initial_indent="    ", subsequent_indent="    ",
                                     break_on_hyphens=False))
    click.echo(f"{len(infos)} metrics; full text: assay list metrics --json")
