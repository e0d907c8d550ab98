"""The click groups every command module registers on.

Sub-commands are loaded lazily: ``assay run qa`` imports ``assay.cli.qa`` and nothing
else, so the command line starts in the time it takes to import click.
"""

from __future__ import annotations

import click

from assay.cli.lazy import LazyGroup
from assay.core.version import __version__

STATE = {"debug": False}


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"assay {__version__}")
        ctx.exit()


@click.group(
    cls=LazyGroup,
    lazy={"report": "assay.cli.main:report", "compare": "assay.cli.compare:compare",
          "history": "assay.cli.compare:history", "review": "assay.cli.datagen:review",
          "plan": "assay.cli.plan:plan",
          "score": "assay.cli.main:score",
          "view": "assay.cli.view:view"},
    help="Evaluate LLM agents and LLMs honestly: official scorers, confidence intervals, "
    "runs that resume. Start with: assay run qa --data examples/qa_example.jsonl --model local",
    context_settings={"help_option_names": ["--help"]},
)
@click.option("--version", is_flag=True, callback=_version, expose_value=False, is_eager=True,
              help="Print the version and exit.")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def app(debug: bool) -> None:
    """assay: evaluate LLM agents and LLMs."""
    STATE["debug"] = debug


def _group(name: str, help: str, lazy: dict[str, str]) -> LazyGroup:  # noqa: A002
    group = LazyGroup(name, help=help, lazy=lazy)
    app.add_command(group)
    return group


def _run_group() -> LazyGroup:
    from assay.cli.run import TaskGroup

    group = TaskGroup(
        "run", help="Run a task against a model or agent: a task name (see 'assay list "
        "tasks'), FILE.py[@NAME] or FILE.yaml. Task options are flags (see 'assay run TASK "
        "--help') or -T KEY=VALUE. Results go to the workspace store (./assay-runs, or "
        "$ASSAY_HOME) and reports to assay-runs/runs/<run_id>/.",
        short_help="Run a task against a model or agent.")
    app.add_command(group)
    return group


run_app = _run_group()
list_app = _group("list", "List runs, tasks, metrics or model providers.",
                  {"runs": "assay.cli.main:list_runs",
                   "tasks": "assay.cli.main:list_tasks",
                   "models": "assay.cli.main:list_models",
                   "metrics": "assay.cli.metrics_cmd:metrics"})
data_app = _group("data", "Fetch official datasets into the workspace cache.",
                  {"pull": "assay.cli.data:pull", "list": "assay.cli.data:list_data"})
datagen_app = _group(
    "datagen", "Generated-data quality: generate, judge, win rate, verify, or all in one "
    "pipeline.", {name: f"assay.cli.datagen:{name}"
                  for name in ("generate", "judge", "winrate", "verify", "pipeline")})
bfcl_app = _group("bfcl", "BFCL tools that need no model: score existing result files.",
                  {"score": "assay.cli.bfcl:score"})
gaia_app = _group("gaia", "GAIA tools that need no model: score existing answers.",
                  {"score": "assay.cli.gaia:score"})
