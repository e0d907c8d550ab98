"""The typer applications every command module registers on."""

from __future__ import annotations

from typing import Annotated

import typer

from assay import __version__

app = typer.Typer(
    name="assay",
    help="Evaluate LLM agents and LLMs honestly: official scorers, confidence intervals, "
    "runs that resume. Start with: assay run qa --data examples/qa_example.jsonl --model local",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
run_app = typer.Typer(
    help="Run a benchmark against a model or agent. Results go to the workspace store "
    "(./assay-runs, or $ASSAY_HOME) and reports to assay-runs/runs/<run_id>/.",
    no_args_is_help=True,
)
list_app = typer.Typer(help="List runs, benchmarks or model providers.", no_args_is_help=True)
data_app = typer.Typer(help="Fetch official datasets into the workspace cache.",
                       no_args_is_help=True)
bfcl_app = typer.Typer(help="BFCL tools that need no model: score existing result files.",
                       no_args_is_help=True)
app.add_typer(run_app, name="run")
app.add_typer(list_app, name="list")
app.add_typer(data_app, name="data")
gaia_app = typer.Typer(help="GAIA tools that need no model: score existing answers.",
                       no_args_is_help=True)
datagen_app = typer.Typer(
    help="Generated-data quality: generate, judge, win rate, verify, or all in one pipeline.",
    no_args_is_help=True)
app.add_typer(datagen_app, name="datagen")
app.add_typer(bfcl_app, name="bfcl")
app.add_typer(gaia_app, name="gaia")

STATE = {"debug": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"assay {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[bool, typer.Option("--version", callback=_version, is_eager=True,
                                          help="Print the version and exit.")] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks for errors.")] = False,
) -> None:
    """assay: evaluate LLM agents and LLMs."""
    STATE["debug"] = debug


